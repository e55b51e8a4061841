import FoundationEssentials
import Glibc
import FamilySync

public enum MergeRecordsCommand {
    static let stamp = OptionSpec.flag("stamp",
        help: "Store mode: the input holds edits made on this device. Each record gets deviceId = this device and modifiedAt = now (or 1 ms after the version held, when that is later), and, once the store is in a family, this device's authorship tag as its last field (any tag it came with is replaced); modifiedAt, deviceId and deleted may be absent, and a delete may be only {\"id\":ID,\"deleted\":true}. A record whose content equals the version held is unchanged (it keeps its modifiedAt and deviceId), so a stamp is safe to repeat. A record naming a photo the store does not hold is warned about on standard error.")
    static let export = OptionSpec.flag("export",
        help: "Store mode: write the store's records as NDJSON to standard output, sorted by id in byte order, tombstones included.")
    static let since = OptionSpec("since", valueName: "SEQ",
        help: "With --export: only records changed after change number SEQ, oldest change first (the incremental form).")
    static let cursor = OptionSpec("cursor", valueName: "FILE",
        help: "With --export: read SEQ from FILE (0 when FILE does not exist), export the changes after it, then replace FILE with the last change number written. Repeating the command exports only what changed since.",
        completion: .file)
    static let addPhoto: OptionSpec = {
        var o = OptionSpec("add-photo", kind: .repeating, valueName: "FILE",
            help: "Store mode: keep the bytes of FILE, and of every FILE after it (--add-photo photos/*.jpg), in the store, named by their lowercase SHA-256 hex, and print {\"file\",\"sha256\",\"size\"} per file. Records name photos by that hash. All files go in one transaction.",
            completion: .file)
        o.takesArguments = true
        return o
    }()
    static let onlyID = OptionSpec("id", kind: .repeating, valueName: "ID",
        help: "With --export: only the record ID. Repeatable.")
    static let onlyType = OptionSpec("type", kind: .repeating, valueName: "TYPE",
        help: "With --export: only records of type TYPE. Repeatable.")
    static let live = OptionSpec.flag("live", help: "With --export: only live records, no tombstones.")
    static let deleted = OptionSpec.flag("deleted", help: "With --export: only tombstones.")
    static let diff = OptionSpec.flag("diff",
        help: "Why two devices disagree: merge-records --diff A B, each a store or an export, prints for every id whose versions differ one JSON line {\"id\",\"a\",\"b\",\"winner\",\"rule\"}: both versions (null where one has none), which a sync keeps (a, b, or null when each keeps its own) and by which rule. Exit 0 when they agree, 1 when they differ.")
    static let backup = OptionSpec("backup", valueName: "FILE",
        help: "Store mode: write a consistent copy of the whole store to FILE and its photos to FILE-photos and FILE-photos-pack (new files, mode 0600), safe while peer-sync or another merge-records writes to the store; prints {\"backup\",\"photoFile\",\"photoPack\",\"bytes\",\"records\",\"photos\",\"changeSeq\"}.",
        completion: .file)
    static let explain = OptionSpec.flag("explain",
        help: "Write, per id, which rule decided as one JSON line on standard error.")
    static let explainFile = OptionSpec("explain-file", valueName: "PATH",
        help: "Write the --explain lines to PATH instead of standard error.", completion: .file)

    /// Photos not held that one --stamp run names on standard error, one line each.
    static let photoWarningsShown = 20

    public static let spec = CommandSpec(
        name: "merge-records",
        abstract: "Merge record sets by last-writer-wins; apply, stamp and export the store",
        discussion: """
        merge-records applies the last-writer-wins rule of family-sync to NDJSON records, one JSON object per line: {"id","type","modifiedAt","deviceId","deleted","data","photos","authorship"}. It is the same code peer-sync applies records with.

        Pure mode, merge-records [--now TIME] LOCAL REMOTE, reads two record sets (either may be -, standard input) and writes the merged set to standard output, one line per id, sorted by id in byte order. For each id the version kept is chosen by the rule below; duplicates of an id inside one input are resolved by the same rule, so a change log is a valid input. Winners are written verbatim: the original bytes of the line, unknown fields included, with only modifiedAt rewritten when it is not already in canonical form or was clamped (a clamped line keeps its authorship tag, with the time its author gave after the digits; a line whose time is rewritten otherwise loses it).

        Store mode, merge-records --db STORE [FILE] (or with $FAMILY_SYNC_DB naming the store and at most one FILE), applies the records of FILE (default -) to the store in one transaction, all or nothing, and prints one JSON summary: received, applied (replaced or created the held version), keptLocal (lost to the held version), unchanged (the same version as held), clamped, resurrected (a live version replaced a tombstone) and deleted (a tombstone replaced a live version). --stamp applies local edits instead, --export writes the store out, --add-photo keeps photo files, --backup copies the store.

        Backups: a store is three files, STORE, STORE-photos-pack (the photos' bytes, written there once) and STORE-photos (where each photo is in the pack). While peer-sync serves, recent changes live in the store's write-ahead log (STORE-wal), so copying the store file alone may miss them. --backup FILE writes the whole store as of one moment to FILE, with SQLite's VACUUM INTO inside one read transaction, and the photos it holds to FILE-photos and FILE-photos-pack, while other processes keep writing; FILE holds exactly the photos FILE-photos-pack has. To restore, stop the tools using the store, put FILE in place of STORE, FILE-photos in place of STORE-photos and FILE-photos-pack in place of STORE-photos-pack, and remove STORE-wal, STORE-shm and STORE-photos-journal. A store put back without its photos keeps its records, and its photos are wanted again from its peers. A restored store is safe to sync: its peers see that it remembers an older last session and both send everything, and records the family purged since the copy was taken are not brought back (docs/protocol.md, "No resurrection").

        The rule, for one id, an incoming (REMOTE) version against the held (LOCAL) one:

        1. Clamp: a REMOTE modifiedAt later than now + 5 minutes is set to now + 5 minutes, and stored so. LOCAL versions are never clamped.

        2. The later modifiedAt wins.

        3. A tie between a live version and a tombstone: the live version wins (an edit after a delete beats the delete).

        4. Any other tie: the greater deviceId in byte order wins. The same deviceId and time is the same version, and the held one is kept (in one input, the one read first).

        5. The winner is kept verbatim; applying never re-stamps it.

        Timestamps: any RFC 3339 offset is accepted; times are compared and written in UTC at millisecond precision, as YYYY-MM-DDTHH:MM:SS.sssZ (finer digits are truncated), so every device normalizes the same way.

        Validation: every line must be a JSON object (strict RFC 8259: UTF-8, escapes, numbers; nesting at most 64 deep; the keys of every object unique, data and the objects inside it included; between tokens only spaces and tabs, no CR) with a non-empty string id, type and deviceId, an RFC 3339 modifiedAt, deleted true or false, data an object (or null) and photos an array of 64-character lowercase hex strings (or null), an authorship tag, when there is one, as the line's last field written ,"authorship":"<32 lowercase hex digits>" (or with /<modifiedAt> after the digits), and at most 1048576 bytes. Blank lines are skipped; a CR just before the line feed ends the line (CR LF files) and is not part of the record. The first bad line is reported as merge-records: FILE:LINE: field: problem with exit status 65; then nothing is written to standard output in pure mode, and the store is left unchanged in store mode.

        Looking at data: --export takes --id, --type (both repeatable) and --live or --deleted to write only those records. --diff A B compares two stores or exports (a store is recognized by its SQLite header): for each id whose versions differ it prints {"id","a","b","winner","rule"}, both versions as held (null where a side has none), which one a sync between them keeps (a or b; null when the rule finds the same version, so each side keeps its own and they never agree) and by which rule; nothing when they agree (exit 0), else exit 1.

        The --explain lines are JSON: in pure mode {"id","rule","winner":"local"|"remote","versions","clamped"}, in store mode {"line","id","rule","winner":"incoming"|"held","clamped"}; rule is one of new (no other version), later-wins, live-beats-tombstone, greater-device, same-version.
        """,
        options: [OptionSpec("db", valueName: "PATH",
                              help: "The store. Applying records (or --stamp, --add-photo) creates a missing one, and standard error says so (created a new store at PATH); --export and --backup need it to exist (status 66).",
                              default: CommonOptions.db.defaultValue, completion: .file),
                   stamp, export, since, cursor, onlyID, onlyType, live, deleted, addPhoto, backup, diff, explain, explainFile, CommonOptions.now, CommonOptions.quiet],
        arguments: [
            ArgumentSpec("LOCAL", help: "Pure mode: the records held here. Store mode: the records to apply (FILE).", default: "- in store mode"),
            ArgumentSpec("REMOTE", help: "Pure mode: the incoming records, the only ones clamped."),
        ],
        examples: [
            Example("Merge a peer's export into ours, without touching a store:", "merge-records mine.ndjson theirs.ndjson > merged.ndjson"),
            Example("Apply a peer's records to the store and see the summary:", "merge-records --db kid.db theirs.ndjson"),
            Example("Record local edits (modifiedAt and deviceId are filled in):",
                    "echo '{\"id\":\"r-9\",\"type\":\"receipt\",\"data\":{\"total\":\"12.50\"}}' |\n  merge-records --db kid.db --stamp"),
            Example("Keep a photo and name it from a record:",
                    "h=$(merge-records --db kid.db --add-photo receipt.jpg | jq -r .sha256)\necho \"{\\\"id\\\":\\\"r-9\\\",\\\"type\\\":\\\"receipt\\\",\\\"photos\\\":[\\\"$h\\\"]}\" | merge-records --db kid.db --stamp"),
            Example("Export only what changed since the last run:", "merge-records --db kid.db --export --cursor kid.cursor > changes.ndjson"),
            Example("Back up the store while peer-sync serves it:", "merge-records --db kid.db --backup kid-$(date +%F).db"),
            Example("See which rule decided each id:", "merge-records --explain-file why.ndjson a.ndjson b.ndjson > merged.ndjson"),
            Example("Only the live receipts, or one record:", "merge-records --db kid.db --export --type receipt --live\nmerge-records --db kid.db --export --id r-9"),
            Example("Why do the two devices disagree?", "merge-records --diff owner.db kid.db | jq -c '{id, winner, rule}'"),
        ],
        seeAlso: AllTools.seeAlso(except: "merge-records")
    )

    public static func run(_ ctx: ToolContext) throws -> ExitStatus {
        let a = ctx.args
        let inputs = a.positionals
        let filters = [Option.id, .type, .live, .deleted].filter { a.isSet($0) }.map(\.rawValue)
        if let f = filters.first, !a.flag(Option.export) { throw ToolError.usage("--\(f) goes with --export") }
        if a.flag(Option.live) && a.flag(Option.deleted) { throw ToolError.usage("give --live or --deleted, not both") }
        if a.flag(Option.diff) {
            if a.isSet(Option.db) || a.flag(Option.stamp) || a.flag(Option.export) || a.isSet(Option.addPhoto) || a.isSet(Option.backup) {
                throw ToolError.usage("--diff compares two stores or exports: merge-records --diff A B")
            }
            guard inputs.count == 2 else { throw ToolError.usage(inputs.isEmpty ? "--diff: missing A and B" : "--diff: missing B") }
            return try RecordDiff.run(ctx, a: inputs[0], b: inputs[1])
        }
        // $FAMILY_SYNC_DB names the store as --db does; two inputs still mean pure mode.
        let storeMode = a.isSet(Option.db) || (ctx.storeNamed && inputs.count < 2) || a.flag(Option.stamp) || a.flag(Option.export)
            || a.isSet(Option.since) || a.isSet(Option.cursor) || a.isSet(Option.addPhoto) || a.isSet(Option.backup)
        if (a.isSet(Option.since) || a.isSet(Option.cursor)) && !a.flag(Option.export) {
            throw ToolError.usage("--since and --cursor go with --export")
        }
        if a.isSet(Option.since) && a.isSet(Option.cursor) { throw ToolError.usage("give --since or --cursor, not both") }
        let modes = [a.flag(Option.stamp), a.flag(Option.export), a.isSet(Option.addPhoto), a.isSet(Option.backup)].filter { $0 }.count
        if modes > 1 { throw ToolError.usage("--stamp, --export, --add-photo and --backup are separate modes; give one") }

        guard storeMode else {
            guard inputs.count == 2 else {
                throw ToolError.usage(inputs.isEmpty ? "missing LOCAL and REMOTE (or --db STORE to use the store)" : "missing REMOTE (or --db STORE to apply one input to the store)")
            }
            return try runPure(ctx, local: inputs[0], remote: inputs[1])
        }
        if let target = a.value(Option.backup) {
            if let extra = inputs.first { throw ToolError.usage("unexpected argument '\(extra)' (--backup reads no records)") }
            let store = try ctx.store(create: false)
            let copy = try store.backup(to: target)
            try ctx.out.writeLine(.object([("backup", .string(target)), ("photoFile", .string(copy.photoFile)),
                                           ("photoPack", .string(copy.photoPack)), ("bytes", .int(copy.bytes)),
                                           ("records", .int(copy.records)), ("photos", .int(copy.photos)), ("changeSeq", .int(copy.changeSeq))]))
            return .success
        }
        if a.flag(Option.export) {
            if let extra = inputs.first { throw ToolError.usage("unexpected argument '\(extra)' (--export reads no records)") }
        } else if a.isSet(Option.addPhoto) {
            // `--add-photo photos/*.jpg`: the shell's other words are photos too.
            return try runAddPhotos(ctx, a.values(Option.addPhoto) + inputs)
        } else if inputs.count > 1 {
            throw ToolError.usage("store mode applies one input; unexpected argument '\(inputs[1])'")
        }
        if a.flag(Option.export) { return try runExport(ctx) }
        return try runApply(ctx, input: inputs.first ?? "-", stamping: a.flag(Option.stamp))
    }

    /// Where --explain lines go, if anywhere: standard error, or a file
    /// (see OutputFile) that takes its new contents only when all went well.
    struct ExplainSink {
        let stream: FamilySync.OutputStream
        let file: OutputFile?
        func write(_ bytes: [UInt8]) throws { try stream.write(bytes) }
        func finish() throws {
            try stream.flush()
            try file?.commit()
        }
    }

    static func explainStream(_ ctx: ToolContext) throws -> ExplainSink? {
        if let path = ctx.args.value(Option.explainFile) {
            let file = try OutputFile(path: path)
            return ExplainSink(stream: FamilySync.OutputStream(fd: file.fd), file: file)
        }
        return ctx.args.flag(Option.explain) ? ExplainSink(stream: FamilySync.OutputStream(fd: 2), file: nil) : nil
    }

    static func runPure(_ ctx: ToolContext, local: String, remote: String) throws -> ExitStatus {
        if local == "-" && remote == "-" { throw ToolError.usage("LOCAL and REMOTE cannot both be standard input") }
        Interruption.whatIsKept("the merged output written is incomplete")
        let l = try RecordInput(path: local)
        let r = try RecordInput(path: remote)
        let ex = try explainStream(ctx)
        var line: [UInt8] = []
        let explain: ((RecordMerge.Explanation) throws -> Void)? = ex.map { stream in
            { e in
                line.removeAll(keepingCapacity: true)
                line += Array("{\"id\":".utf8)
                RecordLine.appendJSONString(e.id, to: &line)
                line += Array(",\"rule\":\"\(e.rule.rawValue)\",\"winner\":\"\(e.fromRemote ? "remote" : "local")\",\"versions\":\(e.versions),\"clamped\":\(e.clamped)}\n".utf8)
                try stream.write(line)
            }
        }
        _ = try RecordMerge.merge(local: l, remote: r, now: ctx.now, explain: explain) { try ctx.out.write($0) }
        try ex?.finish()
        return .success
    }

    static func runApply(_ ctx: ToolContext, input: String, stamping: Bool) throws -> ExitStatus {
        let reader = try LineReader(path: input, maxLineBytes: Record.maxLineBytes)
        // One transaction: a stop part way leaves the store as it was.
        Interruption.whatIsKept("nothing of \(reader.name) was applied; the store is as it was")
        let store = try ctx.store()
        let ex = try explainStream(ctx)
        var line: [UInt8] = []
        let explain: ((ApplyExplanation) throws -> Void)? = ex.map { stream in
            { e in
                line.removeAll(keepingCapacity: true)
                line += Array("{\"line\":\(e.lineNumber),\"id\":".utf8)
                RecordLine.appendJSONString(e.id, to: &line)
                line += Array(",\"rule\":\"\(e.rule.rawValue)\",\"winner\":\"\(e.tookIncoming ? "incoming" : "held")\",\"clamped\":\(e.clamped)}\n".utf8)
                try stream.write(line)
            }
        }
        let wantedBefore = stamping ? Set(try store.wantedPhotoList(limit: Int.max, idsPerPhoto: 0).map(\.sha256)) : []
        let progress = InputProgress(ctx, unit: "records")
        let summary = try store.applyLines(reader, stamping: stamping, now: ctx.now, explain: explain) { n in
            progress.show(count: n, done: reader.position, size: reader.size)
        }
        ctx.endProgress()
        try ex?.finish()
        try ctx.out.writeLine(summary.json)
        if summary.untaggedInOthersNames > 0 {
            let n = summary.untaggedInOthersNames
            ctx.warn("\(n) record\(n == 1 ? "" : "s") of \(reader.name) name\(n == 1 ? "s" : "") another device as author and carr\(n == 1 ? "ies" : "y") no authorship tag: "
                     + "kept here, but the owner's device will not take \(n == 1 ? "it" : "them") from this member; to bring \(n == 1 ? "it" : "them") into the family, "
                     + "stamp \(n == 1 ? "it" : "them") (--stamp) or apply the file on the owner's device")
        }
        if stamping {
            // A photo named before it is added stays wanted: say so, once per photo.
            let fresh = try store.wantedPhotoList(limit: Int.max).filter { !wantedBefore.contains($0.sha256) }
            for w in fresh.prefix(MergeRecordsCommand.photoWarningsShown) {
                ctx.warn("record \(w.records.joined(separator: ", ")) names photo \(w.sha256), which this store does not hold; add it with --add-photo (until then it is wanted from peers)")
            }
            if fresh.count > MergeRecordsCommand.photoWarningsShown {
                ctx.warn("\(fresh.count - MergeRecordsCommand.photoWarningsShown) more photos named are not held (peer-sync status lists them)")
            }
        }
        return .success
    }

    static func runExport(_ ctx: ToolContext) throws -> ExitStatus {
        Interruption.whatIsKept("the export written is incomplete; the store is unchanged" + (ctx.args.isSet(Option.cursor) ? " and so is the cursor file" : ""))
        let store = try ctx.store(create: false)
        var after: Int64? = nil
        if let s = ctx.args.value(Option.since) {
            guard let n = Int64(s), n >= 0 else { throw ToolError.usage("--since: '\(s)' is not a change number (a whole number, 0 or more)") }
            after = n
        }
        let cursorPath = ctx.args.value(Option.cursor)
        if let cursorPath { after = try readCursor(cursorPath) }
        let nl: [UInt8] = [0x0A]
        let filter = try ExportFilter(ctx.args)
        if let after {
            // One read transaction, so the cursor matches exactly what was written.
            try store.read {
                let last = try store.forEachChange(afterSeq: after) { line, _ in
                    guard try filter.keeps(line) else { return }
                    try ctx.out.write(line)
                    try ctx.out.write(nl)
                }
                try ctx.out.flush()
                if let cursorPath { try writeCursor(cursorPath, last) }
            }
        } else {
            try store.forEachRecordLine { line in
                guard try filter.keeps(line) else { return }
                try ctx.out.write(line)
                try ctx.out.write(nl)
            }
        }
        return .success
    }

    /// Why a cursor must be a regular file (a link to one is fine).
    static let cursorMustBeAFile = "a cursor is read back on the next run, so it must be a file"

    /// The change number kept in a cursor file; 0 when the file does not exist yet.
    static func readCursor(_ path: String) throws -> Int64 {
        var st = stat()
        guard stat(path, &st) == 0 else { return 0 }  // none yet (or a dangling link: made on write)
        guard st.st_mode & S_IFMT == S_IFREG else {
            throw ToolError.usage("--cursor: \(path) \(OutputFile.describe(st.st_mode & S_IFMT)), not a regular file; \(cursorMustBeAFile)")
        }
        guard let data = FileManager.default.contents(atPath: path) else { throw ToolError.io("\(path): cannot read") }
        let text = String(decoding: data, as: UTF8.self).trimmingWhiteSpace(newlines: true)
        guard let n = Int64(text), n >= 0 else { throw ToolError.data("\(path):1: cursor: not a change number") }
        return n
    }

    /// Replaces the cursor file atomically (see OutputFile).
    static func writeCursor(_ path: String, _ seq: Int64) throws {
        try OutputFile.replace(path, with: Array("\(seq)\n".utf8), nonRegular: .refuse(reason: cursorMustBeAFile))
    }

    static func runAddPhotos(_ ctx: ToolContext, _ files: [String]) throws -> ExitStatus {
        Interruption.whatIsKept("no photo of this run was added; the store is as it was")
        let store = try ctx.store()
        let added = zip(files, try store.addPhotoFiles(files, now: ctx.now))
        for (f, (hash, size)) in added {
            try ctx.out.writeLine(.object([("file", .string(f)), ("sha256", .string(hash)), ("size", .int(size))]))
        }
        return .success
    }
}

extension MergeRecordsCommand {
    /// This tool's options, one case each (see `OptionName`).
    public enum Option: String, OptionName {
        case addPhoto = "add-photo"
        case cursor
        case db
        case explain
        case explainFile = "explain-file"
        case export
        case now
        case quiet
        case since
        case stamp
        case backup
        case deleted
        case diff
        case id
        case live
        case type
    }
}

/// --export's filters: ids, types, live or deleted. Without any, every
/// line is kept without being parsed.
struct ExportFilter {
    var ids: Set<String>
    var types: Set<String>
    var live: Bool
    var deleted: Bool

    init(_ a: ParsedArguments) throws {
        ids = Set(a.values(MergeRecordsCommand.Option.id))
        types = Set(a.values(MergeRecordsCommand.Option.type))
        live = a.flag(MergeRecordsCommand.Option.live)
        deleted = a.flag(MergeRecordsCommand.Option.deleted)
    }

    var isEmpty: Bool { ids.isEmpty && types.isEmpty && !live && !deleted }

    func keeps(_ line: UnsafeRawBufferPointer) throws -> Bool {
        if isEmpty { return true }
        let r: Record
        do { r = try Record(line: String(decoding: line, as: UTF8.self)) } catch { throw ToolError.data("a stored record does not parse: \(error)") }
        if !ids.isEmpty && !ids.contains(r.id) { return false }
        if !types.isEmpty && !types.contains(r.type) { return false }
        if live && r.deleted { return false }
        if deleted && !r.deleted { return false }
        return true
    }
}
