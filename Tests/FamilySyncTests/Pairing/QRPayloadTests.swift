import Foundation
import Testing
@testable import FamilySync
@testable import FamilySyncImaging

/// `--raw` text must be exactly what the code holds: no charset guessing.
@Suite struct QRPayloadTests {
    static func roundTrip(_ segments: [QRCode.Segment]) throws -> [[UInt8]] {
        let code = try QRCode.encode(segments: segments, level: .M)
        let img = QRRenderer(code: code, margin: 4, moduleSize: 4).raster()
        return QRReader().scan(img).payloads.map(QRPayload.text)
    }

    static let sjisNihongo: [UInt8] = [0x93, 0xFA, 0x96, 0x7B, 0x8C, 0xEA]  // 日本語 in Shift-JIS

    @Test func utf8InByteModeStaysUTF8() throws {
        // Text zbar's guesser turns into Shift-JIS mojibake when asked to guess.
        for s in ["日本語のテキスト", "Grüße aus Köln — ½ €", "Привет, мир", "emoji 👍🏽 ok"] {
            #expect(try QRPayloadTests.roundTrip([.bytes(Array(s.utf8))]) == [Array(s.utf8)], "\(s)")
        }
    }

    @Test(arguments: [
        (UInt32(26), Array("Łódź ünïcödé".utf8), "Łódź ünïcödé"),
        (UInt32(3), [0x63, 0x61, 0x66, 0xE9, 0x20, 0xA9], "café ©"),
        (UInt32(20), QRPayloadTests.sjisNihongo, "日本語"),
    ])
    func eciDeclaredCharsetsBecomeUTF8(eci: UInt32, bytes: [UInt8], expected: String) throws {
        #expect(try QRPayloadTests.roundTrip([.eci(eci), .bytes(bytes)]) == [Array(expected.utf8)])
    }

    @Test func kanjiModeIsShiftJIS() throws {
        #expect(try QRPayloadTests.roundTrip([.kanji(QRPayloadTests.sjisNihongo)]) == [Array("日本語".utf8)])
        #expect(try QRPayloadTests.roundTrip([.alphanumeric("ID:"), .kanji(QRPayloadTests.sjisNihongo)]) == [Array("ID:日本語".utf8)])
    }

    @Test func binaryStaysBinary() throws {
        var rng = SplitMix64(seed: 5)
        for n in [1, 17, 64, 200] {
            var b = rng.bytes(n)
            if n > 2 { b[0] = 0xFF; b[1] = 0x00 }  // never valid UTF-8
            #expect(try QRPayloadTests.roundTrip([.bytes(b)]) == [b], "\(n) bytes")
        }
        let allBytes = (0...255).map { UInt8($0) }
        #expect(try QRPayloadTests.roundTrip([.bytes(allBytes)]) == [allBytes])
    }

    @Test func textRules() {
        #expect(QRPayload.text(Array("plain".utf8)) == Array("plain".utf8))
        #expect(QRPayload.text([0x41] + QRPayloadTests.sjisNihongo) == Array("A日本語".utf8))
        // A lone high byte, or a pair outside kanji mode's range, is binary.
        #expect(QRPayload.text([0x41, 0x93]) == [0x41, 0x93])
        #expect(QRPayload.text([0xA0, 0xA1]) == [0xA0, 0xA1])
        #expect(QRPayload.text([0xF0, 0x40]) == [0xF0, 0x40])
    }
}
