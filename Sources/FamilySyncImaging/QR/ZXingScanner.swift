import FamilySync
import ZXingBridge

/// ZXing-C++ (Debian's libzxing-dev) as a QR engine: it finds, samples and
/// error-corrects codes; the data codewords it hands back are parsed here by
/// `QRBitstream`, so its own charset guessing never touches the text.
struct ZXingScanner: Sendable {
    struct Options: OptionSet, Sendable {
        let rawValue: Int32
        static let tryHarder = Options(rawValue: Int32(FS_ZXING_TRY_HARDER))
        static let tryRotate = Options(rawValue: Int32(FS_ZXING_TRY_ROTATE))
        static let tryDownscale = Options(rawValue: Int32(FS_ZXING_TRY_DOWNSCALE))
        static let globalHistogram = Options(rawValue: Int32(FS_ZXING_GLOBAL_HISTOGRAM))
        static let standard: Options = [.tryHarder, .tryRotate, .tryDownscale]
    }

    var options: Options = .standard

    /// Every code whose bitstream parses; a code that error-corrects but
    /// does not parse is not read.
    func scan(_ image: GrayImage) -> [ScannedCode] {
        guard image.width > 0, image.height > 0 else { return [] }
        var list: UnsafeMutablePointer<fs_zxing_code>?
        let n = image.pixels.withUnsafeBufferPointer {
            fs_zxing_read($0.baseAddress, Int32(image.width), Int32(image.height), Int32(image.width), options.rawValue, &list)
        }
        guard n > 0, let list else { return [] }
        defer { fs_zxing_free(list, n) }
        var out: [ScannedCode] = []
        for i in 0..<Int(n) {
            let c = list[i]
            guard let level = QRErrorCorrection(rawValue: String(UnicodeScalar(UInt8(bitPattern: c.ec_level)))),
                  let words = c.codewords else { continue }
            let codewords = Array(UnsafeBufferPointer(start: words, count: Int(c.codeword_count)))
            guard let stream = try? QRBitstream(codewords: codewords, level: level) else { continue }
            let k = withUnsafeBytes(of: c.corners) { Array($0.bindMemory(to: Int32.self)) }
            let corners = (0..<4).map { ImagePoint(x: Double(k[2 * $0]), y: Double(k[2 * $0 + 1])) }
            out.append(ScannedCode(stream: stream, corners: corners))
        }
        return out
    }
}
