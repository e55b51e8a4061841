import Foundation
import Testing
@testable import FamilySync
@testable import FamilySyncImaging

@_silgen_name("QRspec_getDataLength") func libqrencodeDataLength(_ version: Int32, _ level: Int32) -> Int32

/// A code's text is what the code means: every encoding case made with
/// libqrencode, read back through the scanner, its bitstream parsed by
/// `QRBitstream` and decided by `QRText`.
@Suite struct QRTextTests {
    static func read(_ segments: [QRCode.Segment], level: QRCode.Level = .M) throws -> ScannedCode {
        let code = try QRCode.encode(segments: segments, level: level)
        let img = QRRenderer(code: code, margin: 4, moduleSize: 4).raster()
        let r = QRReader().scan(img)
        try #require(r.codes.count == 1, "\(r.codes.count) codes")
        return r.codes[0]
    }

    static let sjisNihongo: [UInt8] = [0x93, 0xFA, 0x96, 0x7B, 0x8C, 0xEA]  // 日本語 in Shift-JIS
    /// 日本語のテキスト in Shift-JIS, as Japanese generators write it in byte mode.
    static let sjisSentence: [UInt8] = [0x93, 0xFA, 0x96, 0x7B, 0x8C, 0xEA, 0x82, 0xCC, 0x83, 0x65, 0x83, 0x4C, 0x83, 0x58, 0x83, 0x67]

    @Test func utf8InByteMode() throws {
        for s in ["日本語のテキスト", "Grüße aus Köln — ½ €", "Привет, мир", "emoji 👍🏽 ok"] {
            let c = try QRTextTests.read([.bytes(Array(s.utf8))])
            #expect(c.text == s)
            #expect(c.bytes == Array(s.utf8))
            #expect(c.stream?.segments.map(\.mode) == [.byte])
            #expect(c.stream?.segments.first?.eci == nil)
        }
    }

    @Test func shiftJISInByteModeWithoutECI() throws {
        let c = try QRTextTests.read([.bytes(QRTextTests.sjisSentence)])
        #expect(c.text == "日本語のテキスト")
        #expect(c.bytes == QRTextTests.sjisSentence)
    }

    @Test func isoLatin1InByteModeWithoutECI() throws {
        let latin1: [UInt8] = [0x63, 0x61, 0x66, 0xE9, 0x20, 0xA9, 0x20, 0x72, 0xE9, 0x73, 0x75, 0x6D, 0xE9]  // café © résumé
        let c = try QRTextTests.read([.bytes(latin1)])
        #expect(c.text == "café © résumé")
        #expect(c.bytes == latin1)
    }

    @Test(arguments: [
        (UInt32(3), [0x63, 0x61, 0x66, 0xE9, 0x20, 0xA9] as [UInt8], "café ©"),
        (UInt32(20), QRTextTests.sjisNihongo, "日本語"),
        (UInt32(26), Array("Łódź ünïcödé".utf8), "Łódź ünïcödé"),
        // ECI 3 on bytes that would be valid UTF-8: the ECI wins over any guess.
        (UInt32(3), Array("é".utf8), "Ã©"),
        // ECI 20 on bytes that would pass as ISO 8859-1: still Shift-JIS.
        (UInt32(20), [0xB1, 0xB2], "ｱｲ"),
    ])
    func eciNamesTheCharset(eci: UInt32, bytes: [UInt8], expected: String) throws {
        let c = try QRTextTests.read([.eci(eci), .bytes(bytes)])
        #expect(c.text == expected)
        #expect(c.bytes == bytes)
        #expect(c.stream?.segments.map(\.eci) == [eci])
    }

    @Test func kanjiMode() throws {
        let c = try QRTextTests.read([.kanji(QRTextTests.sjisNihongo)])
        #expect(c.text == "日本語")
        #expect(c.stream?.segments.map(\.mode) == [.kanji])
        let mixed = try QRTextTests.read([.alphanumeric("ID:"), .kanji(QRTextTests.sjisNihongo), .numeric("42")])
        #expect(mixed.text == "ID:日本語42")
        #expect(mixed.stream?.segments.map(\.mode) == [.alphanumeric, .kanji, .numeric])
    }

    @Test func binaryBytesAreExactAndTheTextIsLatin1() throws {
        var rng = SplitMix64(seed: 5)
        for n in [1, 17, 64, 200] {
            var b = rng.bytes(n)
            if n > 2 { b[0] = 0xFF; b[1] = 0x00 }  // never valid UTF-8
            let c = try QRTextTests.read([.bytes(b)])
            #expect(c.bytes == b, "\(n) bytes")
            #expect(String(validating: Array(c.text.utf8), as: UTF8.self) != nil)
        }
        let allBytes = (0...255).map { UInt8($0) }
        let c = try QRTextTests.read([.bytes(allBytes)])
        #expect(c.bytes == allBytes)
        #expect(c.text.unicodeScalars.map(\.value) == (0...255).map { UInt32($0) })
    }

    @Test func segmentsUnderSeveralECIs() throws {
        let c = try QRTextTests.read([.eci(3), .bytes([0xE9]), .eci(26), .bytes(Array("é".utf8)), .eci(20), .bytes([0x93, 0xFA])])
        #expect(c.text == "éé日")
        #expect(c.stream?.segments.map(\.eci) == [3, 26, 20])
    }

    @Test func guessingRules() {
        #expect(QRCharsetGuess.guess(Array("plain".utf8)).charset == "UTF-8")
        #expect(QRCharsetGuess.guess(QRTextTests.sjisSentence).charset == "Shift_JIS")
        // Latin-1 that happens to fit Shift-JIS's structure (é then s is a lead and trail byte) is not taken for it.
        #expect(QRCharsetGuess.guess([0x72, 0xE9, 0x73, 0x75, 0x6D, 0xE9, 0x73]).charset == "ISO-8859-1")
        #expect(QRCharsetGuess.guess([0x41, 0x93]).charset == "ISO-8859-1")
        #expect(QRCharsetGuess.guess([0xFF, 0xFE]).charset == "ISO-8859-1")
        // Invalid bytes under a declared charset become U+FFFD, never invalid UTF-8.
        #expect(QRText.convert([0x41, 0xFF, 0x42], from: "UTF-8") == "A\u{FFFD}B")
        #expect(QRText.convert([0x41, 0x81], from: "Shift_JIS") == "A\u{FFFD}")
    }

    @Test func theVersionTableIsLibqrencodes() {
        for (i, level) in [QRErrorCorrection.L, .M, .Q, .H].enumerated() {
            for v in 1...40 {
                #expect(QRBitstream.dataCodewords[level]![v - 1] == Int(libqrencodeDataLength(Int32(v), Int32(i))), "\(level) \(v)")
            }
        }
    }

    @Test func aBitstreamThatDoesNotParseIsNotRead() {
        // Version 1-M holds 16 data codewords. Mode 1111 does not exist.
        #expect(throws: QRBitstream.ParseError.badMode(15)) { try QRBitstream(codewords: [0xF0] + [UInt8](repeating: 0, count: 15), level: .M) }
        // A byte segment claiming 200 bytes in a 16-codeword symbol.
        #expect(throws: QRBitstream.ParseError.truncated) { try QRBitstream(codewords: [0x4C, 0x80] + [UInt8](repeating: 0, count: 14), level: .M) }
        // Numeric 999+1: ten bits of 1000 are no digits.
        #expect(throws: QRBitstream.ParseError.badValue("numeric 1000")) {
            try QRBitstream(codewords: [0x10, 0x0F, 0xE8] + [UInt8](repeating: 0, count: 13), level: .M)
        }
        #expect(throws: QRBitstream.ParseError.unknownSize) { try QRBitstream(codewords: [0x00, 0x00], level: .M) }
    }
}
