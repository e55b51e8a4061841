import Foundation
import FamilySync
import FamilySyncCLI
import FamilySyncImaging

/// What pair-scan does; its declaration lives with the other tools' in FamilySyncCLI.
extension PairScanCommand {
    /// How much of an unexpected code's text a diagnostic quotes.
    static let quotedTextLimit = 60

    public static func run(_ ctx: ToolContext) throws -> ExitStatus {
        var files = ctx.args.arguments("FILE")
        if files.isEmpty { files = ["-"] }
        if files.filter({ $0 == "-" }).count > 1 { throw ToolError.usage("standard input (-) can be read only once") }
        let raw = ctx.args.flag(Option.raw)
        let reader = QRReader()
        var status = ExitStatus.success
        for (i, file) in files.enumerated() {
            let name = file == "-" ? "<stdin>" : file
            if files.count > 1 { ctx.progress("scanning \(name) (\(i + 1)/\(files.count))") }
            do {
                let bytes = try ImageReader.readFile(file)
                let image: GrayImage
                do { image = try ImageReader.decode(bytes) } catch { throw ToolError(.dataError, "\(name): \(error)") }
                if raw {
                    try scanRaw(image, name: name, reader: reader, ctx: ctx)
                } else {
                    try scanOffer(image, name: name, reader: reader, ctx: ctx)
                }
            } catch let e as ToolError {
                if e.status == .ioError, e.message.hasPrefix("write error on standard output") { throw e }
                ctx.endProgress()
                ctx.warn(e.message)
                if status == .success { status = e.status }
            }
        }
        ctx.endProgress()
        return status
    }

    static func scanRaw(_ image: GrayImage, name: String, reader: QRReader, ctx: ToolContext) throws {
        let result = reader.scan(image)
        guard !result.payloads.isEmpty else { throw ToolError(.negative, "\(name): no QR code found") }
        for p in result.payloads { try ctx.out.write(QRPayload.text(p) + [0x0A]) }
    }

    static func scanOffer(_ image: GrayImage, name: String, reader: QRReader, ctx: ToolContext) throws {
        @Sendable func offer(_ p: [UInt8]) -> PairingOffer? {
            guard let text = String(validating: p, as: UTF8.self) else { return nil }
            return try? PairingOffer(text: text)
        }
        let result = reader.scan(image) { found in found.contains { offer($0) != nil } }
        let offers = result.payloads.compactMap(offer)
        guard !offers.isEmpty else {
            guard let other = result.seen.first else { throw ToolError(.negative, "\(name): no QR code found") }
            let what = describe(other)
            if let text = String(validating: other, as: UTF8.self), text.hasPrefix("FS") {
                do { _ = try PairingOffer(text: text) } catch {
                    throw ToolError(.negative, "\(name): found a QR code that is not a valid pairing offer (\(error)): \(what)")
                }
            }
            throw ToolError(.negative, "\(name): found a QR code that is not a pairing offer: \(what)")
        }
        var seen: [String] = []
        for o in offers where !seen.contains(o.nonce) {
            seen.append(o.nonce)
            if o.expiresAt <= ctx.now {
                throw ToolError(.negative, "\(name): the pairing offer expired at \(o.expiresAt.rfc3339) (now is \(ctx.now.rfc3339)); ask for a new code")
            }
            try ctx.out.writeLine(o.json)
        }
    }

    /// A short, printable description of a code's payload for a diagnostic.
    static func describe(_ p: [UInt8]) -> String {
        guard let s = String(validating: p, as: UTF8.self) else { return "\(p.count) bytes of binary data" }
        var q = ""
        JSONValue.writeString(String(s.prefix(quotedTextLimit)), to: &q)
        return s.count > quotedTextLimit ? q + " (\(s.count) characters)" : q
    }
}
