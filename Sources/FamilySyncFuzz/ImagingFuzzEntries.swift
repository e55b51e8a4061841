import FamilySync
import FamilySyncImaging

/// The image readers pair-scan runs on photos, and the QR payload decoding.
enum ImagingFuzzEntries {
    /// The pixel budget of the image targets: one megapixel, as OSS-Fuzz's
    /// image decoders do. A 200-byte header can declare 16 megapixels, and
    /// decoding that takes seconds, so with the tools' full limit most of the
    /// time would go to filling large gray images instead of trying inputs.
    /// Every branch of the readers is the same below the limit; the full
    /// limit itself is tested by the image tests.
    static let maxPixels = 1 << 20

    static func pnm(_ data: UnsafeRawBufferPointer) { check(try? PNMCodec.decode([UInt8](data), maxPixels: maxPixels)) }
    static func png(_ data: UnsafeRawBufferPointer) { check(try? PNGCodec.decode([UInt8](data), maxPixels: maxPixels)) }

    static func jpeg(_ data: UnsafeRawBufferPointer) {
        let bytes = [UInt8](data)
        let orientation = ExifOrientation.read(jpeg: bytes)
        guard let img = try? JPEGCodec.decode(bytes, maxPixels: maxPixels) else { return }
        check(img)
        check(orientation.apply(to: img))
    }

    static func image(_ data: UnsafeRawBufferPointer) {
        let bytes = [UInt8](data)
        _ = ImageReader.sniff(bytes)
        check(try? ImageReader.decode(bytes, maxPixels: maxPixels))
    }

    /// A decoded image is within the limits and holds exactly its pixels.
    static func check(_ img: GrayImage?) {
        guard let img else { return }
        precondition(img.width > 0 && img.height > 0 && img.width <= ImageLimits.maxSide && img.height <= ImageLimits.maxSide
                     && img.pixelCount <= maxPixels && img.pixels.count == img.pixelCount, "a decoded image breaks the limits")
    }

    /// Each level's data capacity per version (1-40), found through the
    /// public version lookup.
    static let capacities: [QRErrorCorrection: [Int]] = Dictionary(uniqueKeysWithValues: QRErrorCorrection.allCases.map { level in
        (level, (1...3000).filter { QRBitstream.version(level: level, dataCodewords: $0) != nil })
    })

    /// A symbol's data codewords parsed into segments (modes, ECI, kanji,
    /// structured append) and turned into text. The first byte picks the
    /// level and the version; the rest, cut or padded with QR's own pad
    /// codewords to that version's capacity, are the codewords.
    static func qrBitstream(_ data: UnsafeRawBufferPointer) {
        guard let first = data.first else { return }
        let levels = QRErrorCorrection.allCases
        let level = levels[Int(first) % levels.count]
        // capacities has every level of allCases.
        let sizes = capacities[level]!
        let capacity = sizes[Int(first >> 2) % sizes.count]
        var codewords = Array(data.dropFirst().prefix(capacity))
        while codewords.count < capacity { codewords.append(codewords.count % 2 == 0 ? 0xEC : 0x11) }
        guard let stream = try? QRBitstream(codewords: codewords, level: level) else { return }
        precondition(stream.level == level && sizes[stream.version - 1] == capacity, "a bitstream names another size")
        _ = QRText.text(stream)
        _ = QRText.text(zbarBytes: stream.bytes)
    }

    /// Segments described by the input (a mode byte, a length byte, then that
    /// many data bytes, repeated), encoded by libqrencode, drawn, scanned
    /// back and decoded: whatever the reader finds goes through QRPayload.
    static func qrSegments(_ data: UnsafeRawBufferPointer) {
        var segments: [QRCode.Segment] = []
        var i = 0
        let b = [UInt8](data)
        while i + 1 < b.count, segments.count < 8 {
            let mode = b[i], n = min(Int(b[i + 1]), b.count - i - 2)
            let body = Array(b[(i + 2)..<(i + 2 + n)])
            i += 2 + n
            switch mode % 5 {
            case 0: segments.append(.numeric(String(decoding: body.map { 0x30 + $0 % 10 }, as: UTF8.self)))
            case 1:
                let alphabet = Array("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ $%*+-./:".utf8)
                segments.append(.alphanumeric(String(decoding: body.map { alphabet[Int($0) % alphabet.count] }, as: UTF8.self)))
            case 2: segments.append(.bytes(body))
            case 3: segments.append(.kanji(body))
            default: segments.append(.eci(UInt32(body.first ?? 26)))
            }
        }
        guard !segments.isEmpty, let code = try? QRCode.encode(segments: segments, level: .L), code.version <= 10 else { return }
        let img = QRRenderer(code: code, margin: 2, moduleSize: 2).raster()
        for code in QRReader().scan(img).codes { _ = code.text }
    }
}
