import Foundation
import FamilySync

public enum PairQRCommand {
    static let formats = ["png", "svg", "terminal", "text"]

    public static let spec = CommandSpec(
        name: "pair-qr",
        abstract: "Make a one-time pairing offer and draw it as a QR code",
        discussion: """
            pair-qr registers a fresh one-time pairing offer in the owner's store and prints it as one line of JSON on standard output: family (the family UUID), nonce (160 bits from the kernel's random generator, in base32), expiresAt, addr (the owner's HOST:PORT, or null) and qr (the exact text in the code). On a store that has no family yet, it first creates one, with this device as its owner.

            The code carries about 100 characters of upper-case ASCII in QR's alphanumeric mode, never more than 120: FS1/FAMILY/NONCE/EXPIRES/HOST:PORT, where FS1 is the format version and EXPIRES is in Unix seconds. It grants nothing by itself: a device redeems it with peer-sync join, in a live handshake with the owner's device, while the offer is open, and only once. Every call makes a new nonce; offers are never reused.

            The code is drawn as a PNG (-o FILE, written whole or not at all), an SVG, plain text (## for a dark module), or, without -o, with Unicode half blocks on standard error, so standard output stays JSON. The terminal drawing sets black on white explicitly and includes the quiet zone, so a phone reads it off a dark or a light terminal.

            --list prints the open offers, one JSON line each; --close NONCE, or --close all, ends offers early, as when the pairing sheet is closed. A member's store makes no offers: pair-qr says so and exits 77, changing nothing.
            """,
        options: [
            CommonOptions.db,
            OptionSpec("ttl", valueName: "DURATION", help: "How long the offer stays open (at most 1d).", default: "10m"),
            OptionSpec("addr", valueName: "HOST:PORT", help: "The address members reach this device at, carried in the code (an IPv6 host without brackets)."),
            OptionSpec("output", short: "o", valueName: "FILE", help: "Write the code to FILE; its format comes from --format, else from FILE's extension (.png, .svg, .txt), else PNG.", completion: .file),
            OptionSpec("format", valueName: "FORMAT", help: "How to draw the code: png or svg (need -o), text (to FILE, or stderr), terminal (stderr).",
                       default: "terminal, or from FILE", completion: .values(formats)),
            OptionSpec("size", valueName: "N", help: "Pixels (PNG) or SVG units per module, 1 to 64.", default: "8"),
            OptionSpec("margin", valueName: "N", help: "The quiet zone around the code, in modules, 0 to 64.", default: "4"),
            OptionSpec("level", valueName: "LEVEL", help: "Error correction: L 7%, M 15%, Q 25%, H 30% of the code may be damaged.", default: "M",
                       completion: .values(QRCode.Level.allCases.map(\.rawValue))),
            .flag("list", help: "Print the open offers, one JSON line each, and make none."),
            OptionSpec("close", valueName: "NONCE", help: "End the open offer NONCE, or every open offer with 'all'; prints {\"closed\":N}."),
            CommonOptions.now, CommonOptions.quiet,
        ],
        examples: [
            Example("Make an offer and save its code as a PNG to print or show on a tablet:", "pair-qr --db owner.db --addr 192.168.1.20:7433 -o pair.png"),
            Example("Show the code in the terminal (on standard error) and keep the offer JSON:", "pair-qr --db owner.db > offer.json"),
            Example("An SVG with a high error-correction level and a wide margin:", "pair-qr --db owner.db --level H --margin 6 -o pair.svg"),
            Example("On the new device, scan a photo of the code and join:", "pair-scan photo.jpg | peer-sync join --db kid.db"),
            Example("Close every open offer when the pairing sheet is put away:", "pair-qr --db owner.db --close all"),
        ],
        seeAlso: AllTools.seeAlso(except: "pair-qr")
    )

    public static func run(_ ctx: ToolContext) throws -> ExitStatus {
        let a = ctx.args
        let drawing = ["ttl", "addr", "output", "format", "size", "margin", "level"].filter { a.isSet($0) }
        if a.flag("list") || a.isSet("close") {
            if a.flag("list") && a.isSet("close") { throw ToolError.usage("--list and --close cannot be combined") }
            if let first = drawing.first { throw ToolError.usage("--\(first) makes no sense with --\(a.flag("list") ? "list" : "close")") }
        }
        if a.flag("list") {
            for offer in try ctx.store().openOffers(now: ctx.now) { try ctx.out.writeLine(offer.json) }
            return .success
        }
        if let target = a.value("close") { return try closeOffers(target, ctx) }

        let ttl = try a.timeSpan("ttl", default: PairingOffer.defaultTTL)
        guard ttl <= PairingOffer.maxTTL else { throw ToolError.usage("--ttl: \(ttl) is longer than the \(PairingOffer.maxTTL) an offer may stay open") }
        let address = a.value("addr")
        if let address {
            try PairingOffer.validateAddress(address)
            // The longest offer text this address can make, checked before the store is touched.
            let longest = PairingOffer(family: "00000000-0000-0000-0000-000000000000", nonce: String(repeating: "A", count: PairingOffer.nonceLength),
                                       expiresAt: Timestamp(milliseconds: 9_999_999_999_000), address: address)
            guard longest.text.utf8.count <= PairingOffer.maxTextLength else {
                throw ToolError.usage("--addr: '\(address)' makes the offer longer than \(PairingOffer.maxTextLength) characters")
            }
        }
        let size = try a.int("size", default: QRRenderer.defaultModuleSize, range: QRRenderer.moduleSizeRange)
        let margin = try a.int("margin", default: QRRenderer.defaultMargin, range: QRRenderer.marginRange)
        let level = QRCode.Level(rawValue: try a.choice("level", default: "M")) ?? .M
        let output = a.value("output")
        let format = try chooseFormat(a.value("format"), output: output)

        let store = try ctx.store()
        let offer = try store.makeOffer(ttl: ttl, address: address, now: ctx.now)
        do {
            let code = try QRCode.encode(alphanumeric: offer.text, level: level)
            let r = QRRenderer(code: code, margin: margin, moduleSize: size)
            if let output {
                let bytes: [UInt8]
                switch format {
                case "svg": bytes = Array(r.svg().utf8)
                case "text": bytes = Array(r.text().utf8)
                default: bytes = try r.png()
                }
                try writeAtomically(bytes, to: output)
            } else {
                let drawn = format == "text" ? r.text() : r.terminal()
                FileHandle.standardError.write(Data(drawn.utf8))
            }
        } catch {
            // An offer nobody can see is closed at once rather than left open.
            _ = try? store.closeOffers(nonce: offer.nonce, now: ctx.now)
            throw error
        }
        try ctx.out.writeLine(offer.json)
        return .success
    }

    static func chooseFormat(_ given: String?, output: String?) throws -> String {
        if let given {
            if output == nil, given == "png" || given == "svg" {
                throw ToolError.usage("--format \(given) needs -o FILE (standard output carries the offer JSON)")
            }
            if output != nil, given == "terminal" { throw ToolError.usage("--format terminal draws on standard error; it takes no -o FILE") }
            return given
        }
        guard let output else { return "terminal" }
        if output == "-" { throw ToolError.usage("-o -: standard output carries the offer JSON; name a file") }
        switch (output as NSString).pathExtension.lowercased() {
        case "svg": return "svg"
        case "txt", "text": return "text"
        default: return "png"
        }
    }

    static func closeOffers(_ target: String, _ ctx: ToolContext) throws -> ExitStatus {
        let all = target == "all"
        if !all {
            guard target.utf8.count == PairingOffer.nonceLength, target.utf8.allSatisfy(Base32.isAlphabet) else {
                throw ToolError.usage("--close: '\(target)' is neither 'all' nor a nonce (\(PairingOffer.nonceLength) base32 characters)")
            }
        }
        let n = try ctx.store().closeOffers(nonce: all ? nil : target, now: ctx.now)
        try ctx.out.writeLine(.object([("closed", .int(n))]))
        if !all && n == 0 {
            ctx.warn("no open offer has nonce \(target) (it may have expired, been used or been closed)")
            return .negative
        }
        return .success
    }

    /// Writes to a temporary file beside `path`, syncs it, and renames it over
    /// `path`: a reader never sees half a code.
    static func writeAtomically(_ bytes: [UInt8], to path: String) throws {
        let dir = (path as NSString).deletingLastPathComponent
        var template = Array(((dir.isEmpty ? "." : dir) + "/.pair-qr.XXXXXX").utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard fd >= 0 else { throw ToolError(.ioError, "\(path): cannot create a file there: \(String(cString: strerror(errno)))") }
        let tmp = String(decoding: template.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        var ok = false
        defer { if !ok { unlink(tmp) } }
        fchmod(fd, 0o644)
        var off = 0
        while off < bytes.count {
            let n = bytes.withUnsafeBytes { Foundation.write(fd, $0.baseAddress! + off, bytes.count - off) }
            if n < 0 {
                if errno == EINTR { continue }
                let e = errno
                close(fd)
                throw ToolError(.ioError, "\(path): write error: \(String(cString: strerror(e)))")
            }
            off += n
        }
        guard fsync(fd) == 0 else {
            let e = errno
            close(fd)
            throw ToolError(.ioError, "\(path): sync failed: \(String(cString: strerror(e)))")
        }
        close(fd)
        guard rename(tmp, path) == 0 else { throw ToolError(.ioError, "\(path): cannot replace: \(String(cString: strerror(errno)))") }
        ok = true
    }
}
