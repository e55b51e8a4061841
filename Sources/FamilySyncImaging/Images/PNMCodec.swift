import FamilySync
/// Netpbm gray and colour maps: P2 and P3 (plain text), P5 and P6 (binary),
/// maxval up to 65535 (two bytes, big-endian, when over 255).
public enum PNMCodec {
    public static func decode(_ b: [UInt8], maxPixels: Int = ImageLimits.maxPixels) throws(ImageError) -> GrayImage {
        guard b.count >= 2, b[0] == UInt8(ascii: "P"), let kind = Optional(b[1]),
              [UInt8(ascii: "2"), UInt8(ascii: "3"), UInt8(ascii: "5"), UInt8(ascii: "6")].contains(kind) else {
            throw ImageError.unknownFormat("not a PGM/PPM image")
        }
        let name = "P" + String(UnicodeScalar(kind))
        var pos = 2
        func skipSpaceAndComments() {
            while pos < b.count {
                let c = b[pos]
                if c == UInt8(ascii: "#") {
                    while pos < b.count, b[pos] != 0x0A, b[pos] != 0x0D { pos += 1 }
                } else if c == 0x20 || c == 0x09 || c == 0x0A || c == 0x0D || c == 0x0B || c == 0x0C {
                    pos += 1
                } else { return }
            }
        }
        func number(_ field: String) throws(ImageError) -> Int {
            skipSpaceAndComments()
            guard pos < b.count else { throw ImageError.truncated("truncated \(name) header: no \(field)") }
            var v = 0, digits = 0
            while pos < b.count, b[pos] >= 0x30, b[pos] <= 0x39 {
                v = v * 10 + Int(b[pos] - 0x30)
                digits += 1
                pos += 1
                if v > 1 << 30 { throw ImageError.corrupt("corrupt \(name) header: \(field) is out of range") }
            }
            guard digits > 0 else { throw ImageError.corrupt("corrupt \(name) header: \(field) is not a number") }
            return v
        }
        let width = try number("width"), height = try number("height"), maxval = try number("maxval")
        guard (1...65535).contains(maxval) else { throw ImageError.corrupt("corrupt \(name) header: maxval \(maxval) is not 1 to 65535") }
        try ImageLimits.check(width: width, height: height, format: name, maxPixels: maxPixels)
        let channels = (kind == UInt8(ascii: "3") || kind == UInt8(ascii: "6")) ? 3 : 1
        let count = width * height
        var pixels = [UInt8](repeating: 0, count: count)
        @inline(__always) func scale(_ v: Int) -> Int { maxval == 255 ? v : (min(v, maxval) * 255 + maxval / 2) / maxval }
        @inline(__always) func luma(_ r: Int, _ g: Int, _ bl: Int) -> UInt8 { UInt8((r * 77 + g * 150 + bl * 29 + 128) >> 8) }
        if kind == UInt8(ascii: "5") || kind == UInt8(ascii: "6") {
            // Exactly one whitespace byte separates the header from the raster.
            guard pos < b.count else { throw ImageError.truncated("truncated \(name): no pixel data") }
            pos += 1
            let bytesPer = maxval > 255 ? 2 : 1
            let need = count * channels * bytesPer
            guard b.count - pos >= need else {
                throw ImageError.truncated("truncated \(name): \(b.count - pos) bytes of pixel data, \(need) needed")
            }
            b.withUnsafeBufferPointer { src in
                var p = pos
                @inline(__always) func sample() -> Int {
                    if bytesPer == 1 { p += 1; return Int(src[p - 1]) }
                    p += 2
                    return Int(src[p - 2]) << 8 | Int(src[p - 1])
                }
                for i in 0..<count {
                    if channels == 1 {
                        pixels[i] = UInt8(scale(sample()))
                    } else {
                        let r = scale(sample()), g = scale(sample()), bl = scale(sample())
                        pixels[i] = luma(r, g, bl)
                    }
                }
            }
        } else {
            for i in 0..<count {
                if channels == 1 {
                    let v = try number("pixel \(i + 1)")
                    guard v <= maxval else { throw ImageError.corrupt("corrupt \(name): pixel \(i + 1) is \(v), over maxval \(maxval)") }
                    pixels[i] = UInt8(scale(v))
                } else {
                    var rgb = [0, 0, 0]
                    for c in 0..<3 {
                        let v = try number("pixel \(i + 1)")
                        guard v <= maxval else { throw ImageError.corrupt("corrupt \(name): pixel \(i + 1) is \(v), over maxval \(maxval)") }
                        rgb[c] = scale(v)
                    }
                    pixels[i] = luma(rgb[0], rgb[1], rgb[2])
                }
            }
        }
        return GrayImage(width: width, height: height, pixels: pixels)
    }

    /// A binary PGM (P5), the simplest lossless form to hand to other tools.
    public static func encodePGM(_ img: GrayImage) -> [UInt8] {
        Array("P5\n\(img.width) \(img.height)\n255\n".utf8) + img.pixels
    }
}
