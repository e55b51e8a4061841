import FoundationEssentials
import Glibc
import FamilySync

public enum PairScanCommand {
    public static let spec = CommandSpec(
        name: "pair-scan",
        abstract: "Decode pairing QR codes from PNG, JPEG and PNM images",
        discussion: """
            pair-scan reads each image (PNG in any colour type, bit depth and interlacing; baseline and progressive JPEG, turned upright by its EXIF orientation; PGM and PPM, plain or binary), finds the family-sync pairing offer in it and prints the offer as one line of JSON: version, family, nonce, expiresAt, addr and qr, the form peer-sync join reads. The offer is checked strictly: the FS1 version, an upper-case UUID, a 32-character base32 nonce, an expiry in Unix seconds that has not passed (by --now or the clock) and a HOST:PORT address if one is given. When the image holds several codes, pair-scan uses the one valid, open offer among them and says so on standard error; two different open offers are refused, since which family to join is not for pair-scan to guess. A code that is not a valid, open offer prints nothing, and pair-scan says on standard error what it found instead.

            --raw prints the text of every QR code in the image, each once, in reading order (rows top to bottom, left to right; a code drawn inside another after it), one line each and always valid UTF-8 (to a terminal, control, line-separator and format characters such as bidi overrides are shown escaped as \\u{XXXX}, so a code cannot drive the terminal; to a pipe or file the text is exact): data under an ECI is converted from the character set the ECI names (ISO 8859-1 to -16, Shift-JIS, UTF-8, UTF-16, Big5, GB 18030, EUC-KR, Windows code pages); byte-mode data without an ECI, all of a code's at once, is guessed as its maker most likely wrote it: UTF-8 when it is valid UTF-8; Shift_JIS when it reads as Japanese (three half-width katakana in a row, two double-byte characters in a row, or a kanji-mode segment in the same code) or would hold C1 control codes as ISO 8859-1; ISO 8859-1 when it reads as Latin text (an accented letter on its own inside a word) or fits neither (binary data, shown byte for byte); kanji mode is Shift_JIS. Shift_JIS is read as Japanese producers mean it: 0x5C is the backslash (a MECARD's http\\://) and 0x7E the tilde, not the yen sign and overline, and Windows-31J's NEC and IBM rows are read too. Bytes that fit two character sets with evidence for both or for neither are an unclear guess, and a code that two reads (two engines, or two steps) give different texts for is in doubt: such a code is not certain, and --raw and the offer leave it out and say so on standard error (nothing decoded, never a wrong text). --bytes writes instead the exact bytes of every segment of each code, end to end with nothing added (for binary payloads; an unclear character set does not matter there, a disagreement does). --json prints one JSON object per code, certain or not: text, certain (false when the text is in doubt), charset (name, source: eci, guess or none, clear, and reason, the evidence that decided it, so a guess is told from a declaration), disagreeing (the texts other reads gave), bytes (base64), modes, eci (the first ECI, or null), segments (mode, eci and base64 bytes of each), version, level, corners (the code's four corners in image pixels clockwise from its own top-left) and sequence. zbar hands over a code's bytes only, so a code only zbar could find is read again by ZXing, redrawn square and upright from zbar's corners (as it is and inverted), for its segments; only where ZXing cannot read even that are modes, eci, segments, version and level null.

            A structured-append sequence (one text split over up to 16 symbols) is one code once every part is read, wherever the parts lie: its parts joined in sequence order and decided as one text (a character may straddle two parts, and an ECI stays in force into the next part). Its corners are those of its first part, and sequence gives total, parity and each part's version, level and corners (null for a code on its own). A sequence with a part missing, or with two different symbols for one part, is left out, never printed in part, and pair-scan says on standard error which parts it read.

            Photos are hard: light-on-dark codes, low contrast, uneven light and glare, blur, small codes in large pictures, rotation by any angle, mirrored codes, perspective, noisy JPEGs. pair-scan runs two QR engines, ZXing-C++ and zbar, on a ladder of preprocessed versions of the image, most useful for their cost first (half size, mirrored, inverted, the image as it is, thresholded as a whole, locally normalized, sharpened, blurred, the code redrawn square from its own finder and alignment patterns, enlarged, codes of a few pixels a module found by their finder patterns and drawn again larger), two at a time on two cores, and stops at the first that finds what it looks for. Every read passes the engine's error correction and pair-scan's own parse of the code's bitstream; a code that cannot be read exactly is reported as nothing decoded, never guessed at.

            Images are checked before they are decoded: a file over 128 MiB, or an image over 67108864 pixels (64 Mi, about 67 megapixels) or 65536 pixels a side, is refused without allocating its pixels; so are a progressive JPEG with more than 256 scans, truncated files and non-image input, each with a message naming the file. With several files, a bad one does not stop the others. The exit status is 0 only when every file gave a code (an offer, or with --raw, --bytes or --json any code, for --raw and --bytes one beyond doubt); otherwise it is the status of the first file that did not: 1 nothing decoded or not a valid offer, 65 an unreadable or oversized image, 66 a missing file, 74 a read error.
            """,
        options: [
            .flag("raw", help: "Print the text of every QR code found, one per line, as UTF-8, instead of the offer JSON."),
            .flag("bytes", help: "Write the exact bytes of every QR code found, end to end, instead of the offer JSON."),
            .flag("json", help: "Print every QR code found as one line of JSON: text, bytes, modes, ECI, segments, corners."),
            CommonOptions.now, CommonOptions.quiet,
        ],
        arguments: [ArgumentSpec("FILE", help: "An image file, or - for standard input.", optional: true, repeating: true, default: "-")],
        examples: [
            Example("Join the family shown in a photo of the owner's code:", "pair-scan photo.jpg | peer-sync join --db kid.db"),
            Example("Print whatever QR codes a set of screenshots hold:", "pair-scan --raw shot1.png shot2.png"),
            Example("Save a binary payload exactly as coded:", "pair-scan --bytes code.png > payload.bin"),
            Example("Where each code is, and how it is coded:", "pair-scan --json poster.jpg"),
            Example("Check that a freshly made code reads back:", "pair-qr --db owner.db -o pair.png && pair-scan pair.png"),
            Example("Scan a frame from a camera pipeline on standard input:", "some-camera-tool --pgm | pair-scan -"),
        ],
        seeAlso: AllTools.seeAlso(except: "pair-scan") + ["zbarimg(1)"]
    )
}

extension PairScanCommand {
    /// This tool's options, one case each (see `OptionName`).
    public enum Option: String, OptionName {
        case now
        case quiet
        case raw
        case bytes
        case json
    }
}
