import FamilySync
/// The limits every image reader enforces, so hostile input (a decompression
/// bomb, an endless stream, a file of a million progressive scans) costs
/// bounded memory and time. One home for all of them.
public enum ImageLimits {
    /// The most pixels an image may declare: 2^26, about 67 megapixels, above
    /// the largest photos phone cameras save (50 MP) yet small enough that the
    /// grayscale copy stays at 64 MiB (the scanner works on a copy of at most
    /// `QRReader.maxWorkingPixels`).
    /// Checked against the header before any pixel buffer is allocated.
    public static let maxPixels = 1 << 26
    /// The longest side accepted, whatever the pixel count: a 1 × 67 000 000
    /// strip is never a photo of a QR code.
    public static let maxSide = 1 << 16
    /// The largest input file read, 128 MiB: well above any real photo, and a
    /// bound on what stdin may make us buffer.
    public static let maxFileBytes = 128 << 20
    /// The most scans a progressive JPEG may have. Real encoders write about
    /// 10; a crafted file with thousands makes libjpeg redo the whole image
    /// for each (a known denial of service).
    public static let maxJPEGScans = 256
    /// The most memory libjpeg may use for its own buffers (a progressive
    /// image keeps all coefficients): 1 GiB.
    public static let maxJPEGMemory = 1 << 30

    /// Rejects dimensions over the limits, naming them. `maxPixels` is lower
    /// only where a caller wants a smaller budget (the fuzz targets, so each
    /// input stays cheap); every tool reads with the limit above.
    static func check(width: Int, height: Int, format: String, maxPixels: Int = ImageLimits.maxPixels) throws(ImageError) {
        guard width > 0, height > 0 else { throw ImageError.corrupt("\(format) image has no pixels (\(width)×\(height))") }
        guard width <= maxSide, height <= maxSide, width * height <= maxPixels else {
            throw ImageError.tooLarge("\(format) image is \(width)×\(height); the limit is \(maxPixels) pixels (\(maxPixels / 1_000_000) megapixels) and \(maxSide) pixels a side")
        }
    }
}

/// Why an image could not be read (the message names the format and what
/// was wrong; the caller adds the file name), or could not be made: an
/// encoder that failed is a fault of this program, never of its input.
public enum ImageError: Error, CustomStringConvertible, Sendable, Equatable {
    case unknownFormat(String)
    case corrupt(String)
    case truncated(String)
    case tooLarge(String)
    case empty
    /// libpng, libjpeg or libqrencode could not make an image or a code.
    case encodeFailed(String)

    public var description: String {
        switch self {
        case let .unknownFormat(m), let .corrupt(m), let .truncated(m), let .tooLarge(m), let .encodeFailed(m): return m
        case .empty: return "empty file: no image data"
        }
    }
}
