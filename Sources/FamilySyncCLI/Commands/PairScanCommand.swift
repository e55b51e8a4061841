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
}

extension PairScanCommand {
    /// This tool's options, one case each (see `OptionName`).
    public enum Option: String, OptionName {
        case now
        case quiet
        case raw
    }
}
