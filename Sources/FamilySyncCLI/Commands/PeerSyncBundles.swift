import FamilySync
import Glibc

/// `peer-sync bundle` and `peer-sync unbundle`: a session's data carried as
/// files, for two devices with no link at all (docs/protocol.md §12b).
extension PeerSyncCommand {
    static let bundle = CommandSpec(
        name: "bundle",
        abstract: "Write what a device has not acknowledged yet to an encrypted file",
        discussion: """
        Writes a bundle for DEVICE: everything of this store's that DEVICE \
        has not acknowledged in a bundle yet (records, the photos they name \
        that this store holds, and the photos DEVICE last said it wants), the \
        family's roster and the owner's purge records, sealed with AES-256-GCM \
        under a key only the two devices can derive (DEVICE's own key between \
        the owner's device and a member, the family key between members). \
        Carry it by any means (a USB stick, mail, a shared folder) and apply \
        it there with peer-sync unbundle, which writes the reply that moves \
        this side on. A first bundle, and the first after either store was \
        restored from a copy, carries everything. With --max-bytes the bundle \
        is cut into parts of about that size, PATH, PATH.2, PATH.3 and so on, \
        each applying on its own in any order (a record and its photos are \
        always in one part). Prints {"to", "parts", "records", "photos", \
        "purgeRecords", "clamped", "bytes", "after", "upTo", "full"}. \
        Like a session it takes the store's one session slot: while a session \
        runs it exits 75.
        """,
        options: [CommonOptions.db,
                  OptionSpec("to", valueName: "DEVICE", help: "The device the bundle is for: its name, its ID, or a unique prefix of its ID (4 characters or more).", completion: revocable),
                  OptionSpec("output", short: "o", valueName: "PATH", help: "Where to write the bundle (a regular file; parts after the first go to PATH.2, PATH.3, ...).", completion: .file),
                  OptionSpec("max-bytes", valueName: "SIZE", help: "Cut the bundle into parts of at most about SIZE bytes each (a number, or with K, M or G for KiB, MiB, GiB; at least \(BundleLimits.minPartBytes >> 20)M)."),
                  root, CommonOptions.now, CommonOptions.quiet],
        examples: [Example("Take the owner's news to grandma's tablet on a USB stick:", "peer-sync bundle --db owner.db --to 7F3A -o /media/usb/for-tablet.fsb")]
    )

    static let unbundle = CommandSpec(
        name: "unbundle",
        abstract: "Apply bundles another device wrote for this one",
        discussion: """
        Applies each FILE, a bundle or a part of one that another device of \
        the family wrote for this device, exactly as a session's data: \
        records by last-writer-wins with the same time and authorship \
        rules, the owner's \
        purge records, the roster and the proof. Each part is authenticated \
        whole before anything is applied, then applied in one transaction, \
        so a part cut off, changed or sealed for someone else changes \
        nothing (65, or 77 for another device or family, an unknown or \
        revoked writer, a key this device lacks, or a header changed: a \
        part's header is sealed, so no family or device is named in clear, \
        and one no key here opens cannot be told apart). A part applied already \
        is refused (65) and changes nothing; so is one older than a bundle \
        from the same device applied already (it carries nothing newer). \
        Prints one JSON object per part. With --reply it then writes a \
        bundle back to the writer (as peer-sync bundle --to does): what this \
        store has for it, and how far it now holds the writer's changes, \
        which moves the writer on.
        """,
        options: [CommonOptions.db,
                  OptionSpec("reply", valueName: "PATH", help: "After applying, write a bundle back to the writer at PATH (every FILE must be from the same device).", completion: .file),
                  OptionSpec("max-bytes", valueName: "SIZE", help: "With --reply: cut the reply into parts of at most about SIZE bytes (as bundle --max-bytes)."),
                  root, CommonOptions.now, CommonOptions.quiet],
        arguments: [ArgumentSpec("FILE", help: "A bundle, or one part of one.", optional: false, repeating: true)],
        examples: [Example("Apply the owner's bundle on the tablet and write the reply:", "peer-sync unbundle --db tablet.db --reply /media/usb/for-owner.fsb /media/usb/for-tablet.fsb*")]
    )

    static func runBundle(_ ctx: ToolContext) throws -> ExitStatus {
        guard let to = ctx.args.value(Option.to) else { throw ToolError.usage("--to: which device the bundle is for") }
        guard let path = ctx.args.value(Option.output), !path.isEmpty else { throw ToolError.usage("-o/--output: where to write the bundle") }
        let store = try ctx.store(create: false)
        // A device's name, as the owner's roster carries it, names it too.
        let named = try store.devices().filter { $0.name == to }
        let peer = named.count == 1 ? named[0] : try device(matching: to, option: "--to", store)
        return try writeBundle(ctx, store: store, to: peer.deviceID, path: path, option: "-o")
    }

    static func runUnbundle(_ ctx: ToolContext) throws -> ExitStatus {
        let files = ctx.args.arguments("FILE")
        guard !files.isEmpty else { throw ToolError.usage("FILE: give at least one bundle") }
        let reply = ctx.args.value(Option.reply)
        if let reply { try checkBundlePath(reply, option: "--reply") }
        _ = try bundleSize(ctx)
        let store = try ctx.store(create: false)
        let verifier = try verifier(ctx)
        var writers = Set<String>()
        var failure: ToolError?
        for file in files {
            do {
                let s = try Bundles.apply(store: store, path: file, now: ctx.now, verifier: verifier) { name, fields in
                    if name == "warning", let m = fields.first(where: { $0.0 == "message" })?.1.stringValue { ctx.warn(m) }
                }
                writers.insert(s.from)
                try ctx.out.writeLine(.object([
                    ("bundle", .string(s.path)), ("from", .string(s.from)), ("fromName", .optional(s.fromName)), ("write", .int(s.write)), ("part", .int(s.part)),
                    ("records", .object([("received", .int(s.recordsReceived)), ("applied", .int(s.recordsApplied)),
                                         ("purged", .int(s.recordsPurged)), ("clampedIn", .int(s.recordsClampedIn)),
                                         ("unattributed", .int(s.recordsUnattributed))])),
                    ("purgeRecords", .int(s.purgeRecords)),
                    ("photos", .object([("received", .int(s.photosReceived)), ("kept", .int(s.photosKept)), ("wanted", .int(s.photosWanted))])),
                    ("cursor", .int(s.cursor)),
                ]))
            } catch let e as BundleError where e.kind == .replayed || e.kind == .stale {
                // The store is as it was; the other files still apply.
                let t = ToolError(e, command: ctx.args.commandPath)
                ctx.warn(t.message)
                failure = failure ?? t
                if let f = e.from { writers.insert(f) }
            } catch {
                throw ToolError(error, command: ctx.args.commandPath)
            }
        }
        if let reply {
            guard writers.count == 1, let peer = writers.first else {
                throw ToolError.usage("--reply: the bundles come from \(writers.count) devices; a reply goes to one")
            }
            let status = try writeBundle(ctx, store: store, to: peer, path: reply, option: "--reply")
            if status != .success { return status }
        }
        try store.close()
        if let failure { throw failure }
        return .success
    }

    private static func writeBundle(_ ctx: ToolContext, store: Store, to peer: String, path: String, option: String) throws -> ExitStatus {
        try checkBundlePath(path, option: option)
        let s = try Bundles.write(store: store, to: peer, path: path, maxBytes: try bundleSize(ctx), now: ctx.now, verifier: try verifier(ctx)) { ctx.warn($0) }
        try ctx.out.writeLine(.object([
            ("to", .string(s.to)), ("parts", .array(s.parts.map { .string($0) })), ("records", .int(s.records)), ("photos", .int(s.photos)),
            ("purgeRecords", .int(s.purgeRecords)), ("clamped", .int(s.clamped)), ("bytes", .int(s.bytes)),
            ("after", .int(s.after)), ("upTo", .int(s.upTo)), ("full", .bool(s.full)),
        ]))
        return .success
    }

    /// A bundle is written beside its name and renamed into place, so its path must be a regular file or nothing yet.
    private static func checkBundlePath(_ path: String, option: String) throws {
        guard !path.isEmpty else { throw ToolError.usage("\(option): an empty path") }
        var st = stat()
        if lstat(path, &st) == 0, (st.st_mode & S_IFMT) != S_IFREG {
            throw ToolError.usage("\(option) \(path): not a regular file (a bundle is written to a file of its own, then renamed into place)")
        }
    }

    /// --max-bytes as bytes: digits, optionally followed by K, M or G (powers of 1024).
    static func bundleSize(_ ctx: ToolContext) throws -> Int64? {
        guard let text = ctx.args.value(Option.maxBytes) else { return nil }
        var digits = Substring(text)
        var shift: Int64 = 0
        switch digits.last {
        case "K", "k": shift = 10
        case "M", "m": shift = 20
        case "G", "g": shift = 30
        default: break
        }
        if shift > 0 { digits = digits.dropLast() }
        guard !digits.isEmpty, digits.utf8.allSatisfy({ (0x30...0x39).contains($0) }), digits.count <= 12, let n = Int64(digits) else {
            throw ToolError.usage("--max-bytes: '\(text)' is not a size (digits, optionally followed by K, M or G)")
        }
        let bytes = n << shift
        guard bytes >= BundleLimits.minPartBytes else { throw ToolError.usage("--max-bytes: at least \(BundleLimits.minPartBytes >> 20)M (a part holds a whole record batch)") }
        return bytes
    }
}
