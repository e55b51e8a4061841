import FamilySync

/// Every fuzz target by name: one per parser of outside bytes. Each takes
/// the bytes and must return, whatever they are: a crash, a leak, a hang or
/// a failed `precondition` is a finding. `make fuzz` runs each under
/// libFuzzer (Fuzzing/); `make test` replays the checked-in corpus and every
/// past finding (Fuzzing/Corpus, Fuzzing/Regressions) through the same functions.
public enum FuzzTargets {
    public typealias Entry = @Sendable (UnsafeRawBufferPointer) -> Void

    public struct Target: Sendable {
        public var name: String
        /// What the target feeds the bytes to.
        public var parses: String
        /// Image readers run far fewer inputs a second than text parsers.
        public var isImageReader: Bool
        public var run: Entry
    }

    public static let all: [Target] = [
        Target(name: "record-line", parses: "one NDJSON record line: scanner (both modes), Record, line rewrite", isImageReader: false, run: CoreFuzzEntries.recordLine),
        Target(name: "record-merge", parses: "two record files (NUL between) through merge-records' merge", isImageReader: false, run: CoreFuzzEntries.recordMerge),
        Target(name: "json", parses: "the JSON parser, with a serialize/parse round trip", isImageReader: false, run: CoreFuzzEntries.json),
        Target(name: "frames", parses: "the frame decoder fed in pieces, each frame to its message decoder", isImageReader: false, run: CoreFuzzEntries.frames),
        Target(name: "message", parses: "one frame (type byte + payload) through its message decoder", isImageReader: false, run: CoreFuzzEntries.message),
        Target(name: "jws", parses: "compact JWS split, header, payload as each kind", isImageReader: false, run: CoreFuzzEntries.compactJWS),
        Target(name: "jws-header", parses: "a JWS header segment", isImageReader: false, run: CoreFuzzEntries.jwsHeader),
        Target(name: "jws-payload", parses: "a JWS payload segment as each kind", isImageReader: false, run: CoreFuzzEntries.signedPayload),
        Target(name: "proof-verifier", parses: "the whole proof verifier at a fixed time (first byte: kind and policy)", isImageReader: false, run: { CoreFuzzEntries.proofVerifier($0, verifier: FuzzRoots.verifier) }),
        Target(name: "base64url", parses: "Base64URL and standard Base64, with a round trip", isImageReader: false, run: CoreFuzzEntries.base64),
        Target(name: "x509", parses: "DER/PEM handed to OpenSSL as certificates and keys", isImageReader: false, run: CoreFuzzEntries.x509),
        Target(name: "raw-signature", parses: "r‖s → DER on both curves, with a round trip", isImageReader: false, run: CoreFuzzEntries.rawSignature),
        Target(name: "sealed-names", parses: "a PSK identity tried with fixed keys; a bundle header's JSON (first byte odd)", isImageReader: false, run: CoreFuzzEntries.sealedNames),
        Target(name: "pairing-offer", parses: "pairing offer text and join's offer input", isImageReader: false, run: CoreFuzzEntries.pairingOffer),
        Target(name: "times", parses: "RFC 3339 timestamps and durations", isImageReader: false, run: CoreFuzzEntries.times),
        Target(name: "cli", parses: "the command-line parser and its typed values (NUL-separated argv)", isImageReader: false, run: CLIFuzzEntries.arguments),
        Target(name: "qr-bitstream", parses: "QR data codewords to segments (modes, ECI, kanji, structured append) and text", isImageReader: false, run: ImagingFuzzEntries.qrBitstream),
        Target(name: "qr-segments", parses: "QR segments (modes, ECI, kanji) drawn, scanned back and decoded", isImageReader: true, run: ImagingFuzzEntries.qrSegments),
        Target(name: "pnm", parses: "the PNM reader", isImageReader: true, run: ImagingFuzzEntries.pnm),
        Target(name: "png", parses: "the PNG reader (libpng)", isImageReader: true, run: ImagingFuzzEntries.png),
        Target(name: "jpeg", parses: "the JPEG reader (libjpeg) and the EXIF orientation", isImageReader: true, run: ImagingFuzzEntries.jpeg),
        Target(name: "image", parses: "pair-scan's image reading: format sniffing, decoding, orientation", isImageReader: true, run: ImagingFuzzEntries.image),
    ]

    public static func named(_ name: String) -> Target? { all.first { $0.name == name } }
}
