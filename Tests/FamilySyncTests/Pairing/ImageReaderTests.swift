import Foundation
import Testing
@testable import FamilySync
@testable import FamilySyncImaging

/// Every supported encoding of one black-and-white QR raster must decode to
/// the same pixels (and so to the same code); damaged and hostile files must
/// fail with a clear error before allocating their claimed size.
@Suite struct ImageReaderTests {
    static let text = "FS1/0F6B8E52-8B0C-4B5E-9D59-2B7D1B0E7E11/ABCDEFGHIJKLMNOPQRSTUVWXYZ234567/1790000000/"
    static let raster: GrayImage = try! TestImages.code(text, module: 3, margin: 4)

    static func samples(_ color: TestPNG.ColorType, depth: Int) -> [[Int]] {
        let maxv = (1 << depth) - 1
        return raster.pixels.map { p in
            let dark = p < 128
            switch color {
            case .gray: return [dark ? 0 : maxv]
            case .rgb: return dark ? [0, 0, 0] : [maxv, maxv, maxv]
            case .palette: return [dark ? 1 : 0]
            case .grayAlpha: return dark ? [0, maxv] : [0, 0]  // light modules transparent, shown on white
            case .rgba: return dark ? [0, 0, 0, maxv] : [maxv, 0, 0, 0]
            }
        }
    }

    static let pngCases: [(TestPNG.ColorType, Int, Bool)] = [
        (.gray, 1, false), (.gray, 2, false), (.gray, 4, false), (.gray, 8, false), (.gray, 16, false),
        (.palette, 1, false), (.palette, 8, false), (.rgb, 8, false), (.rgb, 16, false),
        (.grayAlpha, 8, false), (.grayAlpha, 16, false), (.rgba, 8, false), (.rgba, 16, false),
        (.gray, 8, true), (.palette, 4, true), (.rgba, 16, true), (.gray, 1, true),
    ]

    @Test(arguments: 0..<pngCases.count)
    func pngEveryColourTypeDepthAndInterlace(index: Int) throws {
        let (color, depth, interlaced) = ImageReaderTests.pngCases[index]
        let r = ImageReaderTests.raster
        let png = TestPNG.encode(width: r.width, height: r.height, color: color, depth: depth,
                                 samples: ImageReaderTests.samples(color, depth: depth),
                                 palette: [(255, 255, 255), (0, 0, 0)], interlaced: interlaced)
        let img = try ImageReader.decode(png)
        #expect(img == r, "\(color) \(depth)-bit interlaced=\(interlaced)")
        #expect(QRReader().scan(img).texts == [ImageReaderTests.text])
    }

    @Test func pngFromLibpngRoundTrips() throws {
        let r = ImageReaderTests.raster
        #expect(try PNGCodec.decode(PNGCodec.encode(r)) == r)
    }

    static func jpeg(progressive: Bool, rgb: Bool = false) throws -> [UInt8] {
        let r = ImageReaderTests.raster
        let px = rgb ? r.pixels.flatMap { [$0, $0, $0] } : r.pixels
        return try JPEGCodec.encode(pixels: px, width: r.width, height: r.height, components: rgb ? 3 : 1, quality: 90, progressive: progressive)
    }

    @Test(arguments: [(false, false), (true, false), (false, true), (true, true)])
    func jpegBaselineAndProgressive(progressive: Bool, rgb: Bool) throws {
        let data = try ImageReaderTests.jpeg(progressive: progressive, rgb: rgb)
        if progressive { #expect(data.contains(0xC2) && ImageReaderTests.markers(data).contains(0xC2)) }
        let img = try ImageReader.decode(data)
        #expect(img.width == ImageReaderTests.raster.width && img.height == ImageReaderTests.raster.height)
        #expect(QRReader().scan(img).texts == [ImageReaderTests.text])
    }

    static func markers(_ d: [UInt8]) -> [UInt8] {
        var i = 2, out: [UInt8] = []
        while i + 4 <= d.count, d[i] == 0xFF {
            out.append(d[i + 1])
            if d[i + 1] == 0xDA { break }
            i += 2 + (Int(d[i + 2]) << 8 | Int(d[i + 3]))
        }
        return out
    }

    /// An APP1 Exif segment holding only the orientation tag.
    static func exif(_ orientation: Int, bigEndian: Bool) -> [UInt8] {
        func u16(_ v: Int) -> [UInt8] { bigEndian ? [UInt8(v >> 8), UInt8(v & 0xFF)] : [UInt8(v & 0xFF), UInt8(v >> 8)] }
        func u32(_ v: Int) -> [UInt8] { bigEndian ? u16(v >> 16) + u16(v & 0xFFFF) : u16(v & 0xFFFF) + u16(v >> 16) }
        let tiff = (bigEndian ? [0x4D, 0x4D] : [0x49, 0x49]) + u16(42) + u32(8) + u16(1) + u16(0x0112) + u16(3) + u32(1) + u16(orientation) + u16(0) + u32(0)
        let body: [UInt8] = Array("Exif".utf8) + [0, 0] + tiff
        return [0xFF, 0xE1, UInt8((body.count + 2) >> 8), UInt8((body.count + 2) & 0xFF)] + body
    }

    @Test(arguments: 1...8)
    func jpegExifOrientationTurnsTheImageUpright(orientation: Int) throws {
        // An asymmetric image (a code in one corner) stored as a camera would
        // store it for this orientation, then read back.
        let code = try TestImages.code(ImageReaderTests.text, module: 2, margin: 2)
        var upright = GrayImage(width: code.width + 40, height: code.height + 10, fill: 255)
        for y in 0..<code.height { for x in 0..<code.width { upright[x, y] = code[x, y] } }
        let o = try #require(ExifOrientation(rawValue: orientation))
        let stored = ImageReaderTests.inverse(o, upright)
        #expect(o.apply(to: stored) == upright)
        let jpeg = try JPEGCodec.encode(pixels: stored.pixels, width: stored.width, height: stored.height, quality: 95)
        let withExif = Array(jpeg[0..<2]) + ImageReaderTests.exif(orientation, bigEndian: orientation % 2 == 0) + Array(jpeg[2...])
        #expect(ExifOrientation.read(jpeg: withExif) == o)
        let img = try ImageReader.decode(withExif)
        #expect(img.width == upright.width && img.height == upright.height)
        // Mirrored codes do not read: only the upright image gives the text.
        #expect(QRReader().scan(img).texts == [ImageReaderTests.text])
    }

    /// The stored pixels that `o` turns into `img`.
    static func inverse(_ o: ExifOrientation, _ img: GrayImage) -> GrayImage {
        let inv: [ExifOrientation: ExifOrientation] = [.up: .up, .upMirrored: .upMirrored, .down: .down, .downMirrored: .downMirrored,
                                                       .leftMirrored: .leftMirrored, .right: .left, .rightMirrored: .rightMirrored, .left: .right]
        return inv[o]!.apply(to: img)
    }

    @Test func pnmPlainAndBinaryGrayAndColour() throws {
        let r = ImageReaderTests.raster
        let p5 = PNMCodec.encodePGM(r)
        let p2 = Array("P2\n# a comment\n\(r.width) \(r.height)\n255\n".utf8) + Array(r.pixels.map { String($0) }.joined(separator: " ").utf8)
        let p6 = Array("P6 \(r.width) \(r.height) 255\n".utf8) + r.pixels.flatMap { [$0, $0, $0] }
        let p3 = Array("P3\n\(r.width) \(r.height)\n15\n".utf8) + Array(r.pixels.map { $0 < 128 ? "0 0 0" : "15 15 15" }.joined(separator: "\n").utf8)
        let p5wide = Array("P5\n\(r.width) \(r.height)\n65535\n".utf8) + r.pixels.flatMap { [$0, $0] }
        for (name, data) in [("P5", p5), ("P2", p2), ("P6", p6), ("P3", p3), ("P5 16-bit", p5wide)] {
            #expect(try ImageReader.decode(data) == r, "\(name)")
        }
    }

    // MARK: Bad input

    static func expectError(_ data: [UInt8], _ check: (ImageError) -> Bool, _ comment: Comment? = nil) {
        do {
            _ = try ImageReader.decode(data)
            Issue.record("decoded bad input: \(comment?.rawValue ?? "")")
        } catch {
            #expect(check(error), "\(error) \(comment?.rawValue ?? "")")
        }
    }

    @Test func emptyAndNonImageInput() {
        ImageReaderTests.expectError([], { $0 == .empty })
        ImageReaderTests.expectError(Array("hello, world\n".utf8), { "\($0)".contains("not an image") && "\($0)".contains("text") })
        ImageReaderTests.expectError(Array("GIF89a".utf8) + [1, 0, 1, 0], { "\($0)".contains("GIF") })
        ImageReaderTests.expectError(Array("<svg xmlns='x'/>".utf8), { "\($0)".contains("SVG") })
        ImageReaderTests.expectError([0, 1, 2, 3, 0xFF, 0xFE], { "\($0)".contains("binary data") })
    }

    @Test func truncatedFilesOfEveryFormat() throws {
        let r = ImageReaderTests.raster
        let png = try PNGCodec.encode(r)
        let jpg = try ImageReaderTests.jpeg(progressive: false)
        let pjpg = try ImageReaderTests.jpeg(progressive: true)
        let pgm = PNMCodec.encodePGM(r)
        for (name, data) in [("PNG", png), ("JPEG", jpg), ("progressive JPEG", pjpg), ("PGM", pgm)] {
            for cut in [data.count / 2, data.count - 20, 20, 9] where cut < data.count {  // (a PNG missing only IEND is whole)
                ImageReaderTests.expectError(Array(data.prefix(cut)), { e in
                    if case .truncated = e { return true }
                    if case .corrupt = e { return true }
                    return false
                }, "\(name) cut at \(cut)")
            }
        }
    }

    @Test func corruptPNGChecksumAndData() throws {
        var png = try PNGCodec.encode(ImageReaderTests.raster)
        png[20] ^= 0xFF  // inside IHDR: its CRC no longer matches
        ImageReaderTests.expectError(png, { "\($0)".contains("PNG") })
        var jpg = try ImageReaderTests.jpeg(progressive: false)
        for i in stride(from: 2, to: 200, by: 7) { jpg[i] = 0x13 }  // trample the headers
        ImageReaderTests.expectError(jpg, { "\($0)".contains("JPEG") })
    }

    @Test func decompressionBombsAreRefusedFromTheHeader() {
        // Tiny files claiming huge images: refused before any pixel buffer exists.
        let pngBomb = PNGCodec.signature + TestPNG.chunk("IHDR", TestPNG.be32(60000) + TestPNG.be32(60000) + [1, 0, 0, 0, 0])
            + TestPNG.chunk("IDAT", TestPNG.zlibStored([0])) + TestPNG.chunk("IEND", [])
        ImageReaderTests.expectError(Array(pngBomb), { e in
            if case let .tooLarge(m) = e { return m.contains("60000×60000") && m.contains("\(ImageLimits.maxPixels)") }
            return false
        }, "PNG")
        let pnmBomb = Array("P5\n50000 50000\n255\n".utf8) + [0, 0, 0]
        ImageReaderTests.expectError(pnmBomb, { e in if case .tooLarge = e { return true }; return false }, "PGM")
        let strip = Array("P5\n100000 1\n255\n".utf8)
        ImageReaderTests.expectError(strip, { e in if case .tooLarge = e { return true }; return false }, "strip")
        ImageReaderTests.expectError(Array("P5\n0 10\n255\n".utf8), { e in if case .corrupt = e { return true }; return false }, "zero width")
    }

    @Test func jpegBombIsRefusedFromTheHeader() throws {
        // A real JPEG whose SOF claims 65000×65000.
        var jpg = try ImageReaderTests.jpeg(progressive: false)
        var i = 2
        while i + 9 < jpg.count {
            let m = jpg[i + 1]
            if m == 0xC0 || m == 0xC2 {
                jpg[i + 5] = 0xFD; jpg[i + 6] = 0xE8; jpg[i + 7] = 0xFD; jpg[i + 8] = 0xE8
                break
            }
            i += 2 + (Int(jpg[i + 2]) << 8 | Int(jpg[i + 3]))
        }
        ImageReaderTests.expectError(jpg, { e in
            if case let .tooLarge(m) = e { return m.contains("65000×65000") }
            return false
        })
    }

    @Test func pnmBadHeaders() {
        for (bad, needle) in [("P5\nx 10\n255\n", "width"), ("P5\n10 10\n0\n", "maxval"), ("P5\n10 10\n70000\n", "maxval"),
                              ("P2\n2 1\n15\n3 99\n", "over maxval"), ("P5\n4", "height")] {
            ImageReaderTests.expectError(Array(bad.utf8), { "\($0)".contains(needle) }, "\(bad)")
        }
    }

    /// Random bytes behind a real PNG, JPEG or PNM signature: never a crash
    /// and never an image, always the image error that says what is wrong.
    @Test func garbageAfterAValidSignatureNeverCrashes() {
        var rng = SplitMix64(seed: 99)
        for sig in [PNGCodec.signature, [0xFF, 0xD8, 0xFF], Array("P5\n".utf8)] {
            for n in [0, 1, 16, 300, 5000] {
                let data = sig + rng.bytes(n)
                let e = #expect(throws: ImageError.self, "\(sig.prefix(3)) + \(n) random bytes") { try ImageReader.decode(data) }
                #expect(e.map { !"\($0)".isEmpty } ?? true)
            }
        }
    }
}
