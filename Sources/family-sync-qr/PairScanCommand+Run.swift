import FoundationEssentials
import Glibc
import FamilySync
import FamilySyncCLI
import FamilySyncImaging

/// What pair-scan does; its declaration lives with the other tools' in FamilySyncCLI.
extension PairScanCommand {
    /// How much of an unexpected code's text a diagnostic quotes.
    static let quotedTextLimit = 60

    /// What is written for the codes of an image.
    enum Output { case offer, raw, bytes, json }

    public static func run(_ ctx: ToolContext) throws -> ExitStatus {
        var files = ctx.args.arguments("FILE")
        if files.isEmpty { files = ["-"] }
        if files.filter({ $0 == "-" }).count > 1 { throw ToolError.usage("standard input (-) can be read only once") }
        let chosen = [(Option.raw, Output.raw), (.bytes, .bytes), (.json, .json)].filter { ctx.args.flag($0.0) }
        if chosen.count > 1 { throw ToolError.usage("--\(chosen[0].0.rawValue) and --\(chosen[1].0.rawValue) cannot be used together") }
        let output = chosen.first?.1 ?? .offer
        let reader = QRReader()
        var status = ExitStatus.success
        for (i, file) in files.enumerated() {
            let name = file == "-" ? "<stdin>" : file
            if files.count > 1 { ctx.progress("scanning \(name) (\(i + 1)/\(files.count))") }
            do {
                let bytes = try ImageReader.readFile(file)
                let image: GrayImage
                do { image = try ImageReader.decode(bytes) } catch { throw ToolError(.dataError, "\(name): \(error)") }
                if output == .offer {
                    try scanOffer(image, name: name, reader: reader, ctx: ctx)
                } else {
                    try scanAll(image, name: name, output: output, reader: reader, ctx: ctx)
                }
            } catch {
                // Standard output failing, or a fault of this program, ends the
                // run; anything else is this file's.
                let e = ctx.failure(error)
                if ctx.out.failure != nil || e.status == .software { throw error }
                ctx.endProgress()
                ctx.warn(e.message)
                if status == .success { status = e.status }
            }
        }
        ctx.endProgress()
        return status
    }

    static func scanAll(_ image: GrayImage, name: String, output: Output, reader: QRReader, ctx: ToolContext) throws {
        let result = reader.scan(image)
        warnIncomplete(result, name: name, ctx: ctx)
        guard !result.codes.isEmpty else { throw ToolError(.negative, "\(name): no QR code found") }
        var printed = 0
        for c in result.codes {
            // --json prints every code with its doubt said; the others print only what is beyond doubt.
            if output != .json, let doubt = doubt(c, bytesOnly: output == .bytes) {
                ctx.warn("\(name): left out a QR code whose text is not certain (\(doubt)); --json shows it")
                continue
            }
            printed += 1
            switch output {
            // To a terminal, the code's control and bidi characters are shown escaped; a pipe gets its bytes.
            case .raw: try ctx.out.write(Array((isatty(1) == 1 ? DisplayText.escaped(c.text) : c.text).utf8) + [0x0A])
            case .bytes: try ctx.out.write(c.bytes)
            case .json: try ctx.out.writeLine(json(c))
            case .offer: break
            }
        }
        if printed == 0 { throw ToolError(.negative, "\(name): nothing decoded beyond doubt") }
    }

    /// Why a code's text (or, for --bytes, its bytes) is not certain; nil when it is.
    static func doubt(_ c: ScannedCode, bytesOnly: Bool = false) -> String? {
        if let other = c.disagreeing.first {
            var q = ""
            JSONValue.writeString(String(other.prefix(quotedTextLimit)), to: &q)
            return "another read of it gave \(q)"
        }
        if !bytesOnly, !c.charset.clear { return "character set \(c.charset.reason)" }
        return nil
    }

    /// Structured-append sequences left out for a missing (or conflicting) part.
    static func warnIncomplete(_ result: QRReader.Result, name: String, ctx: ToolContext) {
        for s in result.incompleteSequences { ctx.warn("\(name): left out a \(s.summary)") }
    }

    /// One code as the JSON `--json` prints.
    static func json(_ c: ScannedCode) -> JSONValue {
        let point: (ImagePoint) -> JSONValue = { .array([.double(($0.x * 10).rounded() / 10), .double(($0.y * 10).rounded() / 10)]) }
        var fields: [(String, JSONValue)] = [
            ("text", .string(c.text)),
            ("certain", .bool(c.isCertain)),
            ("charset", .object([
                ("name", c.charset.charset.map { .string($0) } ?? .null),
                ("source", .string(c.charset.source.rawValue)),
                ("clear", .bool(c.charset.clear)),
                ("reason", .string(c.charset.reason)),
            ])),
            ("disagreeing", .array(c.disagreeing.map { .string($0) })),
            ("bytes", .string(Base64URL.encodeStandard(c.bytes))),
        ]
        if let s = c.stream {
            var modes: [String] = []
            for seg in s.segments where !modes.contains(seg.mode.rawValue) { modes.append(seg.mode.rawValue) }
            fields += [
                ("modes", .array(modes.map { .string($0) })),
                ("eci", s.segments.compactMap(\.eci).first.map { .int($0) } ?? .null),
                ("segments", .array(s.segments.map { seg in
                    .object([("mode", .string(seg.mode.rawValue)), ("eci", seg.eci.map { .int($0) } ?? .null),
                             ("bytes", .string(Base64URL.encodeStandard(seg.bytes)))])
                })),
                ("version", .int(s.version)),
                ("level", .string(s.level.rawValue)),
            ]
        } else {
            // zbar hands over the bytes only: segments, modes and ECI are unknown.
            fields += [("modes", .null), ("eci", .null), ("segments", .null), ("version", .null), ("level", .null)]
        }
        fields.append(("corners", .array(c.corners.map(point))))
        // A joined structured-append sequence: its parts in order, each where it is.
        if let sa = c.parts.first?.stream?.structuredAppend {
            fields.append(("sequence", .object([
                ("total", .int(sa.total)), ("parity", .int(Int(sa.parity))),
                ("parts", .array(c.parts.map { p in
                    .object([("version", p.stream.map { .int($0.version) } ?? .null),
                             ("level", p.stream.map { .string($0.level.rawValue) } ?? .null),
                             ("corners", .array(p.corners.map(point)))])
                })),
            ])))
        } else {
            fields.append(("sequence", .null))
        }
        return .object(fields)
    }

    static func scanOffer(_ image: GrayImage, name: String, reader: QRReader, ctx: ToolContext) throws {
        let now = ctx.now
        @Sendable func offer(_ c: ScannedCode) -> PairingOffer? {
            guard c.isCertain, let o = try? PairingOffer(text: c.text), o.expiresAt > now else { return nil }
            return o
        }
        let result = reader.scan(image) { found in found.contains { offer($0) != nil } }
        warnIncomplete(result, name: name, ctx: ctx)
        var offers: [PairingOffer] = []
        for o in result.codes.compactMap(offer) where !offers.contains(where: { $0.nonce == o.nonce }) { offers.append(o) }
        guard let chosen = offers.first else {
            guard let other = result.seen.first else { throw ToolError(.negative, "\(name): no QR code found") }
            let what = describe(other)
            if other.text.hasPrefix("FS") {
                do {
                    let o = try PairingOffer(text: other.text)
                    throw ToolError(.negative, "\(name): the pairing offer expired at \(o.expiresAt.rfc3339) (now is \(now.rfc3339)); ask for a new code")
                } catch let e as ToolError {
                    throw e
                } catch {
                    throw ToolError(.negative, "\(name): found a QR code that is not a valid pairing offer (\(error)): \(what)")
                }
            }
            throw ToolError(.negative, "\(name): found a QR code that is not a pairing offer: \(what)")
        }
        // Two different open offers: which family to join is not ours to guess.
        guard offers.count == 1 else {
            throw ToolError(.negative, "\(name): found \(offers.count) different pairing offers; show one code at a time")
        }
        if result.codes.count > 1 {
            ctx.warn("\(name): \(result.codes.count) QR codes; using the one valid pairing offer among them")
        }
        try ctx.out.writeLine(chosen.json)
    }

    /// A short, printable description of a code's text for a diagnostic.
    static func describe(_ c: ScannedCode) -> String {
        var q = ""
        JSONValue.writeString(String(c.text.prefix(quotedTextLimit)), to: &q)
        return c.text.count > quotedTextLimit ? q + " (\(c.text.count) characters)" : q
    }
}
