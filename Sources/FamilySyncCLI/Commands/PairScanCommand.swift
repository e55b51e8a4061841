import Foundation
import FamilySync

public enum PairScanCommand {
    public static let spec = CommandSpec(
        name: "pair-scan",
        abstract: "Decode pairing QR codes from PNG, JPEG and PNM images",
        discussion: """
            pair-scan reads each image (PNG in any colour type, bit depth and interlacing; baseline and progressive JPEG, turned upright by its EXIF orientation; PGM and PPM, plain or binary), finds the family-sync pairing offer in it and prints the offer as one line of JSON: version, family, nonce, expiresAt, addr and qr, the form peer-sync join reads. The offer is checked strictly: the FS1 version, an upper-case UUID, a 32-character base32 nonce, an expiry in Unix seconds that has not passed (by --now or the clock) and a HOST:PORT address if one is given. A code that is not a valid, open offer prints nothing, and pair-scan says on standard error what it found instead.

            --raw prints the text of every QR code found, one line each, with no charset guessing: UTF-8 stays UTF-8; data a code declares with an ECI (ISO 8859, Shift-JIS, UTF-8) is converted to UTF-8; kanji-mode data is converted from Shift-JIS; bytes that are none of these are printed as they are.

            Photos are hard: light-on-dark codes, low contrast, uneven light and glare, blur, small codes in large pictures, rotation, perspective, noisy JPEGs. pair-scan runs zbar on a ladder of preprocessed versions of the image, most useful for their cost first (the image as it is, inverted, half size, sharpened, the code redrawn square from its own finder and alignment patterns, locally normalized, contrast stretched, enlarged, adaptively thresholded; each light-on-dark as well where it helps), two at a time on two cores, and stops at the first that finds a code. Every read passes zbar's error correction; an uncertain read is reported as nothing decoded, never guessed at.

            Images are checked before they are decoded: a file over 128 MiB, or an image over 67108864 pixels (64 Mi, about 67 megapixels) or 65536 pixels a side, is refused without allocating its pixels; so are a progressive JPEG with more than 256 scans, truncated files and non-image input, each with a message naming the file. With several files, a bad one does not stop the others. The exit status is 0 only when every file gave a code (an offer, or with --raw any code); otherwise it is the status of the first file that did not: 1 nothing decoded or not a valid offer, 65 an unreadable or oversized image, 66 a missing file, 74 a read error.
            """,
        options: [
            .flag("raw", help: "Print the text of every QR code found, one per line, instead of the offer JSON."),
            CommonOptions.now, CommonOptions.quiet,
        ],
        arguments: [ArgumentSpec("FILE", help: "An image file, or - for standard input.", optional: true, repeating: true, default: "-")],
        examples: [
            Example("Join the family shown in a photo of the owner's code:", "pair-scan photo.jpg | peer-sync join --db kid.db"),
            Example("Print whatever QR codes a set of screenshots hold:", "pair-scan --raw shot1.png shot2.png"),
            Example("Check that a freshly made code reads back:", "pair-qr --db owner.db -o pair.png && pair-scan pair.png"),
            Example("Scan a frame from a camera pipeline on standard input:", "some-camera-tool --pgm | pair-scan -"),
        ],
        seeAlso: AllTools.seeAlso(except: "pair-scan") + ["zbarimg(1)"]
    )

    /// How much of an unexpected code's text a diagnostic quotes.
    static let quotedTextLimit = 60

    public static func run(_ ctx: ToolContext) throws -> ExitStatus {
        var files = ctx.args.arguments("FILE")
        if files.isEmpty { files = ["-"] }
        if files.filter({ $0 == "-" }).count > 1 { throw ToolError.usage("standard input (-) can be read only once") }
        let raw = ctx.args.flag("raw")
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
