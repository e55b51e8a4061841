import Foundation
import Testing
@testable import FamilySync
@testable import FamilySyncImaging

/// Structured append: a message split over several symbols reads as one
/// text, its parts joined in sequence order wherever they lie; a sequence
/// with a part missing is left out and reported, never printed in part.
@Suite struct StructuredAppendTests {
    /// The parts of a sequence rendered, and laid out left to right in the given order of indexes.
    static func layout(_ codes: [QRCode], order: [Int], extra: GrayImage? = nil, module: Int = 3) -> GrayImage {
        let tiles = codes.map { QRRenderer(code: $0, margin: 4, moduleSize: module).raster() }
        let all = order.map { tiles[$0] } + (extra.map { [$0] } ?? [])
        let width = all.reduce(20) { $0 + $1.width + 20 }, height = (all.map(\.height).max() ?? 0) + 40
        var canvas = GrayImage(width: width, height: height, fill: 255)
        var x = 20
        for t in all {
            TestImages.paste(t, into: &canvas, x: x, y: 20)
            x += t.width + 20
        }
        return canvas
    }

    /// "Grüße aus Köln, 東京 und 大阪" in UTF-8, cut so that a multi-byte character straddles the cut.
    static let message = Array("Grüße aus Köln, 東京 und 大阪 – ein Gruß in drei Teilen".utf8)
    static func thirds(_ b: [UInt8]) -> [[QRCode.Segment]] {
        // Byte 3 is the second byte of "ü"; byte 18 is inside "東".
        [[.bytes(Array(b[0..<3]))], [.bytes(Array(b[3..<18]))], [.bytes(Array(b[18...]))]]
    }

    @Test func aCompleteSequenceReadsAsOneTextInSequenceOrder() throws {
        let parts = try QRCode.encodeSequence(parts: StructuredAppendTests.thirds(StructuredAppendTests.message), level: .M)
        #expect(parts.count == 3)
        // Laid out out of order: the text still follows the sequence's own order.
        let img = StructuredAppendTests.layout(parts, order: [2, 0, 1])
        let r = QRReader().scan(img)
        try #require(r.codes.count == 1, "\(r.texts)")
        let c = r.codes[0]
        #expect(c.text == String(decoding: StructuredAppendTests.message, as: UTF8.self))
        #expect(c.bytes == StructuredAppendTests.message)
        #expect(c.parts.count == 3)
        #expect(c.parts.map { $0.stream?.structuredAppend?.index } == [0, 1, 2])
        // The code's corners are its first part's, which was drawn second from the left.
        #expect(c.corners == c.parts[0].corners)
        #expect(c.parts[0].center.x > c.parts[2].center.x && c.parts[0].center.x < c.parts[1].center.x)
        #expect(r.incompleteSequences.isEmpty)
    }

    @Test func aSequenceWithAPartMissingIsLeftOutAndSaysWhichPartsWereRead() throws {
        let parts = try QRCode.encodeSequence(parts: StructuredAppendTests.thirds(StructuredAppendTests.message), level: .M)
        let alone = QRRenderer(code: try QRCode.encode(segments: [.bytes(Array("stands alone".utf8))], level: .M), margin: 4, moduleSize: 3).raster()
        let img = StructuredAppendTests.layout(parts, order: [0, 2], extra: alone)
        let r = QRReader().scan(img)
        #expect(r.texts == ["stands alone"])
        #expect(!r.seen.contains { $0.stream?.structuredAppend != nil })
        try #require(r.incompleteSequences.count == 1)
        let s = r.incompleteSequences[0]
        #expect(s.total == 3 && s.found == [0, 2] && !s.conflicting)
        #expect(s.summary.hasSuffix("parts 1, 3 of 3 read"), "\(s.summary)")
        // Nothing but the incomplete sequence: nothing read (and the whole ladder was tried for the missing part).
        let only = QRReader().scan(StructuredAppendTests.layout(parts, order: [1]))
        #expect(only.codes.isEmpty)
        #expect(only.incompleteSequences.map(\.found) == [[1]])
    }

    @Test func anECIStaysInForceIntoTheNextPart() throws {
        // Shift-JIS under ECI 20 in the first part; the second part goes on without declaring it again.
        let first: [UInt8] = [0x82, 0xB1, 0x82, 0xF1, 0x82, 0xC9]  // こんに in Shift-JIS
        let second: [UInt8] = [0x82, 0xBF, 0x82, 0xCD]  // ちは
        let parts = try QRCode.encodeSequence(parts: [[.eci(20), .bytes(first)], [.bytes(second)]], level: .M)
        let r = QRReader().scan(StructuredAppendTests.layout(parts, order: [0, 1]))
        #expect(r.texts == ["こんにちは"])
        #expect(r.codes.first?.stream?.segments.map(\.eci) == [20, 20])
    }

    @Test func twoSequencesAndASingleCodeInOneImage() throws {
        let a = try QRCode.encodeSequence(parts: [[.bytes(Array("first sequence, ".utf8))], [.bytes(Array("part two".utf8))]], level: .M)
        let b = try QRCode.encodeSequence(parts: [[.alphanumeric("SECOND ")], [.alphanumeric("SEQUENCE ")], [.numeric("12345")]], level: .M)
        let single = try QRCode.encode(segments: [.bytes(Array("single".utf8))], level: .M)
        // Row: a1, b2, single, b0, a0, b1.
        let img = StructuredAppendTests.layout([a[0], a[1], b[0], b[1], b[2], single], order: [1, 4, 5, 2, 0, 3])
        let r = QRReader().scan(img)
        // Reading order by where each sequence starts: single (x 3rd), b (part 0 4th), a (part 0 5th).
        #expect(r.texts == ["single", "SECOND SEQUENCE 12345", "first sequence, part two"])
        #expect(r.incompleteSequences.isEmpty)
    }

    @Test func twoDifferentSymbolsForOnePartAreNotGuessedBetween() throws {
        // Two sequences forced onto the same parity and total.
        let a = try QRCode.encodeSequence(parts: [[.bytes(Array("alpha one ".utf8))], [.bytes(Array("alpha two".utf8))]], level: .M, parity: 0x42)
        let b = try QRCode.encodeSequence(parts: [[.bytes(Array("beta one ".utf8))], [.bytes(Array("beta two".utf8))]], level: .M, parity: 0x42)
        let r = QRReader().scan(StructuredAppendTests.layout([a[0], a[1], b[0]], order: [0, 1, 2]))
        #expect(r.codes.isEmpty, "\(r.texts)")
        #expect(r.incompleteSequences.count == 1 && r.incompleteSequences[0].conflicting)
    }

    @Test func theSameSequencePrintedTwiceIsTwoCodes() throws {
        let s = try QRCode.encodeSequence(parts: [[.bytes(Array("twice ".utf8))], [.bytes(Array("over".utf8))]], level: .M)
        let r = QRReader().scan(StructuredAppendTests.layout([s[0], s[1]], order: [0, 1, 0, 1]))
        #expect(r.texts == ["twice over", "twice over"])
    }

    @Test func zbarsPartsAreReadAgainForTheirHeaders() throws {
        // zbar joins a sequence by index alone; its parts are taken apart and
        // re-read with ZXing, whose bitstream says which part of which sequence each is.
        let parts = try QRCode.encodeSequence(parts: [[.bytes(Array("joined ".utf8))], [.bytes(Array("by zbar".utf8))]], level: .M)
        let img = StructuredAppendTests.layout(parts, order: [1, 0])
        let zbar = ZBarScanner().scan(img)
        #expect(zbar.count == 2 && zbar.allSatisfy { $0.isUnheadedPart && $0.stream == nil })
        let headed = zbar.map { ZBarReread.withSegments($0, in: img) }
        #expect(Set(headed.map { $0.stream?.structuredAppend?.index }) == [0, 1])
        let merged = QRReader.merge([headed])
        #expect(merged.map(\.text) == ["joined by zbar"])
        #expect(merged.first?.parts.count == 2)
        // Through a zbar step of the ladder, the same.
        let step = QRReader.Step(name: "gray", engine: .zbar, make: { QRReader.Rendition(image: $0.base, toPhoto: { $0 }) })
        #expect(QRReader.merge([QRReader.read(step, QRReader.Rungs(base: img), ZBarScanner())]).map(\.text) == ["joined by zbar"])
    }

    @Test func aMirroredSequenceStillJoins() throws {
        let parts = try QRCode.encodeSequence(parts: StructuredAppendTests.thirds(StructuredAppendTests.message), level: .M)
        let img = StructuredAppendTests.layout(parts, order: [0, 1, 2]).mirrored()
        #expect(QRReader().scan(img).texts == [String(decoding: StructuredAppendTests.message, as: UTF8.self)])
    }
}

/// Codes zbar alone read get their segments from ZXing reading the code
/// again where zbar found it, redrawn upright.
@Suite struct ZBarRereadTests {
    @Test func aZbarReadGetsItsModesAndECI() throws {
        let code = try QRCode.encode(segments: [.eci(26), .bytes(Array("Grüße".utf8)), .numeric("2026")], level: .M)
        // Mirrored, turned and off-centre: the redraw must undo all three.
        let img = TestImages.turned(QRRenderer(code: code, margin: 4, moduleSize: 4).raster(), degrees: 33, mirrored: true, side: 300)
        let zbar = ZBarScanner().scan(img)
        try #require(zbar.count == 1 && zbar[0].stream == nil)
        let c = ZBarReread.withSegments(zbar[0], in: img)
        let s = try #require(c.stream)
        #expect(s.segments.map(\.mode) == [.byte, .numeric] && s.segments.map(\.eci) == [26, 26])
        #expect(s.version == 1 && s.level == .M)
        #expect(c.text == "Grüße2026" && c.bytes == Array("Grüße2026".utf8))
        #expect(c.corners == zbar[0].corners)
    }

    @Test func aLightOnDarkCodeIsReadAgainInverted() throws {
        let code = try QRCode.encode(segments: [.alphanumeric("LIGHT ON DARK")], level: .Q)
        let img = QRRenderer(code: code, margin: 4, moduleSize: 5).raster()
        // zbar read it on an inverted rung: its corners, over the photo as it is (light on dark).
        let read = try #require(ZBarScanner().scan(img).first)
        let c = ZBarReread.withSegments(read, in: img.inverted())
        #expect(c.stream?.segments.map(\.mode) == [.alphanumeric] && c.stream?.level == .Q)
    }

    @Test func whereZXingCannotReadTheCodeTheSegmentsStayUnknown() throws {
        let code = try QRCode.encode(segments: [.bytes(Array("somewhere else".utf8))], level: .M)
        let img = QRRenderer(code: code, margin: 4, moduleSize: 4).raster()
        var read = try #require(ZBarScanner().scan(img).first)
        // Corners that point at blank paper: nothing there to read, so nothing is invented.
        var blank = GrayImage(width: img.width * 3, height: img.height, fill: 255)
        TestImages.paste(img, into: &blank, x: 0, y: 0)
        read.corners = read.corners.map { ImagePoint(x: $0.x + Double(img.width * 2), y: $0.y) }
        #expect(ZBarReread.withSegments(read, in: blank).stream == nil)
        // And a different code where zbar's corners point is not taken for this one.
        let other = QRRenderer(code: try QRCode.encode(segments: [.bytes(Array("another text".utf8))], level: .M), margin: 4, moduleSize: 4).raster()
        TestImages.paste(other, into: &blank, x: img.width * 2, y: 0)
        #expect(ZBarReread.withSegments(read, in: blank).stream == nil)
    }
}
