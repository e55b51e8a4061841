import FamilySync
import Glibc

/// Reads an image file (or standard input) of any supported format,
/// recognised by its first bytes, never by its name.
public enum ImageReader {
    public enum Format: String, Sendable { case png = "PNG", jpeg = "JPEG", pnm = "PNM" }

    public static func sniff(_ b: [UInt8]) -> Format? {
        if b.count >= 8, Array(b[0..<8]) == PNGCodec.signature { return .png }
        if b.count >= 3, b[0] == 0xFF, b[1] == 0xD8, b[2] == 0xFF { return .jpeg }
        if b.count >= 2, b[0] == UInt8(ascii: "P"), [UInt8(ascii: "2"), UInt8(ascii: "3"), UInt8(ascii: "5"), UInt8(ascii: "6")].contains(b[1]) {
            return .pnm
        }
        return nil
    }

    /// Decodes bytes already in memory.
    public static func decode(_ bytes: [UInt8], maxPixels: Int = ImageLimits.maxPixels) throws(ImageError) -> GrayImage {
        guard !bytes.isEmpty else { throw ImageError.empty }
        switch sniff(bytes) {
        case .png: return try PNGCodec.decode(bytes, maxPixels: maxPixels)
        case .jpeg: return try JPEGCodec.decode(bytes, maxPixels: maxPixels)
        case .pnm: return try PNMCodec.decode(bytes, maxPixels: maxPixels)
        case nil: throw ImageError.unknownFormat("not an image pairing codes can be read from (\(describe(bytes))); expected PNG, JPEG, PGM or PPM")
        }
    }

    /// A few words on what unrecognised bytes look like, for the error message.
    static func describe(_ b: [UInt8]) -> String {
        if b.starts(with: Array("GIF8".utf8)) { return "a GIF image" }
        if b.starts(with: Array("RIFF".utf8)), b.count >= 12, Array(b[8..<12]) == Array("WEBP".utf8) { return "a WebP image" }
        if b.starts(with: [0x49, 0x49, 0x2A, 0]) || b.starts(with: [0x4D, 0x4D, 0, 0x2A]) { return "a TIFF image" }
        if b.starts(with: Array("BM".utf8)) { return "maybe a BMP image" }
        if b.starts(with: Array("%PDF".utf8)) { return "a PDF document" }
        if b.starts(with: [0x50, 0x4B, 3, 4]) { return "a ZIP archive" }
        if b.starts(with: [0x1F, 0x8B]) { return "gzip data" }
        let head = b.prefix(512)
        if head.contains(where: { $0 == 0 }) { return "binary data" }
        if let s = String(validating: head, as: UTF8.self) {
            let t = s.drop(while: { $0.isWhitespace })
            if t.hasPrefix("<svg") || t.hasPrefix("<?xml") { return "SVG or XML text; rasterize it first" }
            return "text"
        }
        return "binary data"
    }

    /// Reads a whole file ("-" is standard input), at most `ImageLimits.maxFileBytes`.
    /// A file that cannot be read, or is too big, is a `FileError`.
    public static func readFile(_ path: String) throws -> [UInt8] {
        let fd: Int32
        let name = path == "-" ? "<stdin>" : path
        if path == "-" {
            if StandardInput.wasClosed { throw StandardInput.closedError }
            fd = 0
        } else {
            fd = open(path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else {
                let e = errno
                throw FileError(.cannotOpen, path: path, code: e)
            }
        }
        defer { if fd != 0 { close(fd) } }
        var st = stat()
        if fstat(fd, &st) == 0 {
            if st.st_mode & S_IFMT == S_IFDIR { throw FileError(.isDirectory, path: name) }
            if st.st_mode & S_IFMT == S_IFREG, Int(st.st_size) > ImageLimits.maxFileBytes {
                throw FileError(.tooLarge, path: name, limit: ImageLimits.maxFileBytes, size: Int(st.st_size))
            }
        }
        var out: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            // Never nil: the chunk is 64 KiB.
            let n = chunk.withUnsafeMutableBytes { FileIO.read(fd, into: $0.baseAddress!, count: $0.count) }
            if n < 0 {
                throw FileError(.readFailed, path: name, code: errno)
            }
            if n == 0 { break }
            guard out.count + n <= ImageLimits.maxFileBytes else {
                throw FileError(.tooLarge, path: name, limit: ImageLimits.maxFileBytes)
            }
            out.append(contentsOf: chunk[0..<n])
        }
        return out
    }
}
