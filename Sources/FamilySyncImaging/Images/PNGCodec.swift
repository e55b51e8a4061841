import FamilySync
import CPNG

/// PNG through libpng's simplified API, which converts every colour type and
/// bit depth (gray, palette, RGB, alpha, 16-bit, interlaced) to what we ask
/// for and reports errors as a message instead of a longjmp.
public enum PNGCodec {
    static let signature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]

    /// Decodes to 8-bit gray; transparency is composited onto white, as a
    /// viewer shows it. Dimensions are checked before the pixels are allocated.
    public static func decode(_ data: [UInt8], maxPixels: Int = ImageLimits.maxPixels) throws(ImageError) -> GrayImage {
        // libpng keeps a pointer to the input until finish_read: all of it runs in one borrow.
        let result: Result<GrayImage, ImageError> = data.withUnsafeBytes { input in
            var image = png_image()
            image.version = UInt32(PNG_IMAGE_VERSION)
            defer { png_image_free(&image) }
            guard png_image_begin_read_from_memory(&image, input.baseAddress, input.count) != 0 else {
                return .failure(classify(message(image), stage: "header"))
            }
            let width = Int(image.width), height = Int(image.height)
            do throws(ImageError) { try ImageLimits.check(width: width, height: height, format: "PNG", maxPixels: maxPixels) } catch { return .failure(error) }
            image.format = UInt32(PNG_FORMAT_GRAY)
            var pixels = [UInt8](repeating: 0, count: width * height)
            var white = png_color(red: 255, green: 255, blue: 255)
            let ok = pixels.withUnsafeMutableBytes { png_image_finish_read(&image, &white, $0.baseAddress, Int32(width), nil) }
            guard ok != 0 else { return .failure(classify(message(image), stage: "pixels")) }
            return .success(GrayImage(width: width, height: height, pixels: pixels))
        }
        return try result.get()
    }

    /// Encodes an 8-bit gray image.
    public static func encode(_ gray: GrayImage) throws -> [UInt8] {
        var image = png_image()
        image.version = UInt32(PNG_IMAGE_VERSION)
        image.width = UInt32(gray.width)
        image.height = UInt32(gray.height)
        image.format = UInt32(PNG_FORMAT_GRAY)
        var size: Int = 0
        let probe = gray.pixels.withUnsafeBytes { png_image_write_to_memory(&image, nil, &size, 0, $0.baseAddress, Int32(gray.width), nil) }
        guard probe != 0, size > 0 else {
            let m = message(image)
            png_image_free(&image)
            throw ImageError.encodeFailed("libpng could not encode the image: \(m)")
        }
        var out = [UInt8](repeating: 0, count: size)
        let ok = out.withUnsafeMutableBytes { o in
            gray.pixels.withUnsafeBytes { png_image_write_to_memory(&image, o.baseAddress, &size, 0, $0.baseAddress, Int32(gray.width), nil) }
        }
        defer { png_image_free(&image) }
        guard ok != 0 else { throw ImageError.encodeFailed("libpng could not encode the image: \(message(image))") }
        return Array(out.prefix(size))
    }

    static func message(_ image: png_image) -> String {
        var m = image.message
        return withUnsafeBytes(of: &m) { raw in
            let bytes = raw.prefix(while: { $0 != 0 })
            return String(decoding: bytes, as: UTF8.self)
        }
    }

    static func classify(_ message: String, stage: String) -> ImageError {
        let m = message.isEmpty ? "unreadable \(stage)" : message
        let lower = m.lowercased()
        if lower.contains("end of") || lower.contains("not enough") || lower.contains("truncat") || lower.contains("read error") {
            return .truncated("truncated PNG: \(m)")
        }
        if lower.contains("too large") || lower.contains("exceeds") {
            return .tooLarge("PNG image is too large: \(m)")
        }
        return .corrupt("corrupt PNG: \(m)")
    }
}
