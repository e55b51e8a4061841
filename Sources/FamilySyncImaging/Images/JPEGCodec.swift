import FamilySync
import JPEGGlue
import Glibc

/// JPEG through libjpeg(-turbo): baseline and progressive, gray, YCbCr and
/// CMYK, decoded straight to gray; the EXIF orientation is applied so a
/// mirrored code reads the right way round.
public enum JPEGCodec {
    public static func decode(_ data: [UInt8], maxPixels: Int = ImageLimits.maxPixels) throws(ImageError) -> GrayImage {
        var out: UnsafeMutablePointer<UInt8>?
        var width: Int32 = 0, height: Int32 = 0, truncated: Int32 = 0, warnings: Int32 = 0
        var message = [CChar](repeating: 0, count: 256)
        let rc = data.withUnsafeBufferPointer { input in
            fs_jpeg_decode_gray(input.baseAddress, UInt(input.count), UInt64(maxPixels), Int32(ImageLimits.maxJPEGScans),
                                ImageLimits.maxJPEGMemory, &out, &width, &height, &truncated, &warnings, &message, message.count)
        }
        defer { free(out) }
        let text = String(decoding: message.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        switch Int(rc) {
        case Int(FS_JPEG_OK): break
        case Int(FS_JPEG_TOO_LARGE):
            try ImageLimits.check(width: Int(width), height: Int(height), format: "JPEG", maxPixels: maxPixels)
            throw ImageError.tooLarge("JPEG image is too large")
        case Int(FS_JPEG_NO_MEMORY):
            throw ImageError.tooLarge("JPEG image \(width)×\(height) does not fit in memory")
        default:
            if truncated != 0 || text.lowercased().contains("premature end") { throw ImageError.truncated("truncated JPEG: \(text)") }
            throw ImageError.corrupt("corrupt JPEG: \(text)")
        }
        // libjpeg fills a cut-off file with gray and only warns; a file that ends early is an error here.
        if truncated != 0 { throw ImageError.truncated("truncated JPEG: the data ends before the last scan line") }
        let w = Int(width), h = Int(height)
        do { try ImageLimits.check(width: w, height: h, format: "JPEG", maxPixels: maxPixels) }
        guard let out else { throw ImageError.corrupt("corrupt JPEG: no pixels") }
        let image = GrayImage(width: w, height: h, pixels: Array(UnsafeBufferPointer(start: out, count: w * h)))
        return ExifOrientation.read(jpeg: data).apply(to: image)
    }

    /// Encodes gray (1 component) or RGB (3) pixels; for tests and the benchmark corpus.
    /// With `maxOutputBytes`, an encode whose output would grow past it fails.
    public static func encode(pixels: [UInt8], width: Int, height: Int, components: Int = 1, quality: Int, progressive: Bool = false,
                              maxOutputBytes: Int? = nil) throws -> [UInt8] {
        precondition(pixels.count == width * height * components)
        var out: UnsafeMutablePointer<UInt8>?
        var size: UInt = 0
        var message = [CChar](repeating: 0, count: 256)
        let rc = pixels.withUnsafeBufferPointer {
            fs_jpeg_encode($0.baseAddress, Int32(width), Int32(height), Int32(components), Int32(quality), progressive ? 1 : 0,
                           UInt(max(0, maxOutputBytes ?? 0)), &out, &size, &message, message.count)
        }
        defer { free(out) }
        guard rc == 0, let out else {
            throw ImageError.encodeFailed("libjpeg could not encode: \(String(decoding: message.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self))")
        }
        return Array(UnsafeBufferPointer(start: out, count: Int(size)))
    }
}

/// The EXIF orientation tag (1–8): how the stored pixels must be turned (and
/// mirrored) to show the picture upright.
public enum ExifOrientation: Int, Sendable {
    case up = 1, upMirrored, down, downMirrored, leftMirrored, right, rightMirrored, left

    /// Finds the tag in a JPEG's APP1 "Exif" segment; `.up` when there is none
    /// or it cannot be read (orientation never makes a file unreadable).
    public static func read(jpeg b: [UInt8]) -> ExifOrientation {
        guard b.count > 4, b[0] == 0xFF, b[1] == 0xD8 else { return .up }
        var i = 2
        while i + 4 <= b.count {
            guard b[i] == 0xFF else { return .up }
            let marker = b[i + 1]
            if marker == 0xFF { i += 1; continue }
            if marker == 0xDA || marker == 0xD9 { return .up }  // start of scan: no metadata follows
            if (0xD0...0xD7).contains(marker) || marker == 0x01 { i += 2; continue }
            let len = Int(b[i + 2]) << 8 | Int(b[i + 3])
            guard len >= 2, i + 2 + len <= b.count else { return .up }
            if marker == 0xE1, len >= 8, Array(b[(i + 4)..<(i + 10)]) == [0x45, 0x78, 0x69, 0x66, 0, 0] {
                if let o = parseTIFF(Array(b[(i + 10)..<(i + 2 + len)])) { return o }
            }
            i += 2 + len
        }
        return .up
    }

    /// Reads tag 0x0112 from IFD0 of a TIFF structure.
    static func parseTIFF(_ t: [UInt8]) -> ExifOrientation? {
        guard t.count >= 8 else { return nil }
        let little: Bool
        if t[0] == 0x49 && t[1] == 0x49 { little = true } else if t[0] == 0x4D && t[1] == 0x4D { little = false } else { return nil }
        func u16(_ o: Int) -> Int? {
            guard o >= 0, o + 2 <= t.count else { return nil }
            return little ? Int(t[o]) | Int(t[o + 1]) << 8 : Int(t[o]) << 8 | Int(t[o + 1])
        }
        func u32(_ o: Int) -> Int? {
            guard let a = u16(o), let b = u16(o + 2) else { return nil }
            return little ? a | b << 16 : a << 16 | b
        }
        guard u16(2) == 42, let ifd = u32(4), let count = u16(ifd) else { return nil }
        for k in 0..<min(count, 512) {
            let e = ifd + 2 + k * 12
            guard let tag = u16(e) else { return nil }
            if tag == 0x0112 {
                guard u16(e + 2) == 3, let v = u16(e + 8) else { return nil }
                return ExifOrientation(rawValue: v)
            }
        }
        return nil
    }

    /// The upright image.
    public func apply(to img: GrayImage) -> GrayImage {
        if self == .up { return img }
        let w = img.width, h = img.height
        let swaps = rawValue >= 5
        let ow = swaps ? h : w, oh = swaps ? w : h
        var out = [UInt8](repeating: 0, count: w * h)
        img.pixels.withUnsafeBufferPointer { src in
            out.withUnsafeMutableBufferPointer { dst in
                for y in 0..<oh {
                    for x in 0..<ow {
                        // (sx, sy): the stored pixel shown at (x, y).
                        let sx: Int, sy: Int
                        switch self {
                        case .up: sx = x; sy = y
                        case .upMirrored: sx = w - 1 - x; sy = y
                        case .down: sx = w - 1 - x; sy = h - 1 - y
                        case .downMirrored: sx = x; sy = h - 1 - y
                        case .leftMirrored: sx = y; sy = x
                        case .right: sx = y; sy = h - 1 - x
                        case .rightMirrored: sx = w - 1 - y; sy = h - 1 - x
                        case .left: sx = w - 1 - y; sy = x
                        }
                        dst[y * ow + x] = src[sy * w + sx]
                    }
                }
            }
        }
        return GrayImage(width: ow, height: oh, pixels: out)
    }
}
