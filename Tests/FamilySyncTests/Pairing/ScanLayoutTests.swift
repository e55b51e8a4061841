import Foundation
import Testing
@testable import FamilySync
@testable import FamilySyncImaging

/// Every code in an image, each once, in reading order, in any orientation.
@Suite struct ScanLayoutTests {
    static func code(_ text: String, level: QRCode.Level = .M, module: Int = 4) throws -> GrayImage {
        try QRRenderer(code: QRCode.encode(segments: [.bytes(Array(text.utf8))], level: level), margin: 4, moduleSize: module).raster()
    }

    @Test func severalCodesInReadingOrder() throws {
        // Two rows of codes of different sizes, at slightly uneven heights.
        var canvas = GrayImage(width: 900, height: 640, fill: 255)
        let layout: [(String, Int, Int, Int)] = [
            ("top left", 30, 40, 4), ("top middle", 330, 20, 5), ("top right", 640, 60, 3),
            ("bottom left", 40, 360, 3), ("bottom right", 520, 340, 4),
        ]
        for (text, x, y, m) in layout { TestImages.paste(try ScanLayoutTests.code(text, module: m), into: &canvas, x: x, y: y) }
        let r = QRReader().scan(canvas)
        #expect(r.texts == layout.map(\.0))
        // Corners are where the codes are: each code's first corner near where it was pasted (plus the quiet zone).
        for (c, (_, x, y, m)) in zip(r.codes, layout) {
            #expect(abs(c.corners[0].x - Double(x + 4 * m)) <= Double(2 * m) && abs(c.corners[0].y - Double(y + 4 * m)) <= Double(2 * m), "\(c.text) at \(c.corners)")
        }
    }

    @Test func theSameTextTwiceIsTwoCodesButOneCodeIsReadOnce() throws {
        var canvas = GrayImage(width: 600, height: 300, fill: 255)
        let c = try ScanLayoutTests.code("twice")
        TestImages.paste(c, into: &canvas, x: 20, y: 40)
        TestImages.paste(c, into: &canvas, x: 320, y: 40)
        #expect(QRReader().scan(canvas).texts == ["twice", "twice"])
        #expect(QRReader().scan(try ScanLayoutTests.code("once")).texts == ["once"])
    }

    @Test func aCodeInsideACode() throws {
        // A level-H code carries a small code over its middle: the damage is
        // within what its error correction repairs, and both read, outer first.
        var outer = try QRRenderer(code: QRCode.encode(segments: [.bytes(Array(String(repeating: "outer code text ", count: 8).utf8))], level: .H),
                                   margin: 4, moduleSize: 6).raster()
        let inner = try ScanLayoutTests.code("inner", level: .L, module: 2)
        let x = (outer.width - inner.width) / 2, y = (outer.height - inner.height) / 2
        TestImages.paste(inner, into: &outer, x: x, y: y)
        let r = QRReader().scan(outer)
        #expect(r.texts == [String(repeating: "outer code text ", count: 8), "inner"])
    }

    static let angles: [Double] = [0, 90, 180, 270, 17, 45, 133, 222, 301]

    @Test(arguments: angles)
    func anyRotationAndMirror(degrees: Double) throws {
        let code = try ScanLayoutTests.code("turned \(Int(degrees))", module: 4)
        for mirrored in [false, true] {
            let img = TestImages.turned(code, degrees: degrees, mirrored: mirrored)
            let r = QRReader().scan(img)
            #expect(r.texts == ["turned \(Int(degrees))"], "\(degrees)° mirrored \(mirrored)")
            #expect(QRReader().scan(img.inverted()).texts == ["turned \(Int(degrees))"], "\(degrees)° mirrored \(mirrored), light on dark")
        }
    }

    @Test func cornersFollowTheCodeAsDrawn() throws {
        // Upside down, the code's own top-left corner is at the image's bottom right.
        let code = try ScanLayoutTests.code("corner")
        let r = QRReader().scan(code.rotatedQuarter(2))
        try #require(r.codes.count == 1)
        let c = r.codes[0].corners
        #expect(c[0].x > c[2].x && c[0].y > c[2].y, "\(c)")
    }
}
