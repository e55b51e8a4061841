import FamilySync

/// zbar hands over a code's bytes only (segments joined, ECI data already
/// converted, a structured-append part without its header), so a code only
/// zbar read would carry no modes, ECI, version or level. Where zbar found
/// it, the code is redrawn square and upright from zbar's four corners
/// (through the homography they fix, which also undoes a mirror) and ZXing
/// reads the drawing; its bitstream is taken when it says what zbar read.
/// When ZXing cannot read even the redrawn code, a single code keeps zbar's
/// bytes and its segments stay unknown (a part, whose place in its sequence
/// is then unknown, is not used).
enum ZBarReread {
    /// Pixels a side of the redrawn code, before the quiet zone: the code's
    /// size in the photo, kept between these so small codes get a few
    /// pixels a module and large ones cost no more than they must.
    static let minSide = 240
    static let maxSide = 960

    /// zbar's copy of a part of a sequence that is not the last lacks the
    /// part's last byte (zbar 0.23.92 counts the separator it puts between
    /// parts into the part): the same part when all but that byte agree.
    static func isPart(_ bytes: [UInt8], of code: ScannedCode) -> Bool {
        code.isUnheadedPart && bytes.count == code.bytes.count + 1 && bytes.starts(with: code.bytes)
    }

    /// `code` with ZXing's bitstream where ZXing reads the code zbar located in `photo`.
    static func withSegments(_ code: ScannedCode, in photo: GrayImage) -> ScannedCode {
        guard code.stream == nil, code.parts.isEmpty, code.corners.count == 4 else { return code }
        let c = code.corners
        func dist(_ a: ImagePoint, _ b: ImagePoint) -> Double { ((a.x - b.x) * (a.x - b.x) + (a.y - b.y) * (a.y - b.y)).squareRoot() }
        let edge = (dist(c[0], c[1]) + dist(c[1], c[2]) + dist(c[2], c[3]) + dist(c[3], c[0])) / 4
        let side = Double(min(max(Int(edge), minSide), maxSide))
        // A quiet zone of a fifth of the side: at least four modules up to version 5, and ZXing needs less.
        let quiet = side / 5
        guard let hm = QRRectifier.homography(from: [(0, 0), (side, 0), (side, side), (0, side)], to: c.map { ($0.x, $0.y) }) else { return code }
        let drawn = QRRectifier.warp(photo, homography: hm, side: Int(side + 2 * quiet), offset: quiet)
        let normalized = drawn.locallyNormalized(radius: max(4, Int(side) / 24))
        // Light on dark as well: zbar may have read the code on an inverted rung.
        for image in [drawn, normalized, drawn.inverted(), normalized.inverted()] {
            for read in ZXingScanner().scan(image) {
                // A part of a sequence is taken only as such, and a single code only as one.
                guard let stream = read.stream, (stream.structuredAppend != nil) == code.isUnheadedPart,
                      stream.bytes == code.bytes || QRText.text(stream) == code.text || isPart(stream.bytes, of: code) else { continue }
                var out = code
                out.isUnheadedPart = false
                out.take(stream)
                return out
            }
        }
        return code
    }
}
