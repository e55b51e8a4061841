import Glibc
import Testing
@testable import FamilySync
@testable import FamilySyncImaging

/// Japanese codes read as their makers meant them: Shift_JIS byte-mode data
/// without an ECI (half-width katakana alone, MECARD and vCard with their
/// backslash escapes, URLs with a tilde), kanji mode beside byte mode, and
/// Latin-1 that must not be taken for Japanese. The invariant: a text given
/// as certain is exactly the text the maker encoded; where the bytes could
/// as well be another text, the read says so instead.
@Suite struct JapaneseTextTests {
    /// `s` as a Japanese producer writes it: Windows-31J (backslash and tilde at 0x5C and 0x7E).
    static func sjis(_ s: String) -> [UInt8] {
        let cd = iconv_open("CP932", "UTF-8")
        precondition(cd != iconv_t(bitPattern: -1))
        defer { iconv_close(cd) }
        var input = Array(s.utf8).map { CChar(bitPattern: $0) }
        var out = [CChar](repeating: 0, count: input.count * 2 + 8)
        let n = input.withUnsafeMutableBufferPointer { ib in
            out.withUnsafeMutableBufferPointer { ob in
                var ip: UnsafeMutablePointer<CChar>? = ib.baseAddress, op: UnsafeMutablePointer<CChar>? = ob.baseAddress
                var il = ib.count, ol = ob.count
                precondition(iconv(cd, &ip, &il, &op, &ol) != -1, "not in CP932: \(s)")
                return ob.count - ol
            }
        }
        return out.prefix(n).map { UInt8(bitPattern: $0) }
    }

    struct Sample: CustomStringConvertible {
        var name: String
        var segments: [QRCode.Segment]
        var text: String
        var description: String { name }
    }

    /// The corpus: every code here must read back exactly and with a clear charset.
    static let corpus: [Sample] = [
        // The bytes C3 DE BB DE B2 DD: ISO 8859-1 would make them ÃÞ»Þ²Ý.
        Sample(name: "half-width katakana alone", segments: [.bytes([0xC3, 0xDE, 0xBB, 0xDE, 0xB2, 0xDD])], text: "ﾃﾞｻﾞｲﾝ"),
        Sample(name: "half-width katakana words", segments: [.bytes(sjis("ｶﾀｶﾅ ﾃｷｽﾄ ｺｰﾄﾞ"))], text: "ｶﾀｶﾅ ﾃｷｽﾄ ｺｰﾄﾞ"),
        Sample(name: "half-width katakana beside ASCII", segments: [.bytes(sjis("QRｺｰﾄﾞ 2024"))], text: "QRｺｰﾄﾞ 2024"),
        Sample(name: "MECARD with escapes",
               segments: [.bytes(sjis(#"MECARD:N:山田,太郎;SOUND:ﾔﾏﾀﾞ,ﾀﾛｳ;TEL:0312345678;URL:http\://example.jp/~yamada/;NOTE:会議室\;3F;;"#))],
               text: #"MECARD:N:山田,太郎;SOUND:ﾔﾏﾀﾞ,ﾀﾛｳ;TEL:0312345678;URL:http\://example.jp/~yamada/;NOTE:会議室\;3F;;"#),
        Sample(name: "vCard with escapes",
               segments: [.bytes(sjis("BEGIN:VCARD\r\nVERSION:3.0\r\nN:山田;太郎;;;\r\nORG:株式会社ｻﾝﾌﾟﾙ\\, 東京支店\r\nNOTE:月曜\\n休み ~ 予約制\r\nURL:https://example.jp/~shop\r\nEND:VCARD"))],
               text: "BEGIN:VCARD\r\nVERSION:3.0\r\nN:山田;太郎;;;\r\nORG:株式会社ｻﾝﾌﾟﾙ\\, 東京支店\r\nNOTE:月曜\\n休み ~ 予約制\r\nURL:https://example.jp/~shop\r\nEND:VCARD"),
        // ソ, 表 and 能 end in 0x5C: a trail byte, not a backslash.
        Sample(name: "double-byte characters with a 0x5C trail byte", segments: [.bytes(sjis("ソフト表示能力 C:\\ﾃﾞｰﾀ"))], text: "ソフト表示能力 C:\\ﾃﾞｰﾀ"),
        Sample(name: "kanji mode beside half-width katakana in byte mode",
               segments: [.kanji(sjis("［外側ＱＲコード］")), .bytes(sjis("*ﾀﾞﾌﾞﾙQR*"))], text: "［外側ＱＲコード］*ﾀﾞﾌﾞﾙQR*"),
        Sample(name: "kanji mode beside two half-width katakana",
               segments: [.kanji(sjis("受付")), .bytes(sjis(" No.12 ｶﾅ"))], text: "受付 No.12 ｶﾅ"),
        Sample(name: "byte, kanji and numeric segments",
               segments: [.bytes(sjis("ﾁｹｯﾄ:")), .kanji(sjis("東京駅")), .numeric("20261202")], text: "ﾁｹｯﾄ:東京駅20261202"),
        Sample(name: "ECI 20 with a backslash", segments: [.eci(20), .bytes(sjis(#"\\server\共有"#))], text: #"\\server\共有"#),
        Sample(name: "a URL with a tilde", segments: [.bytes(sjis("http://example.jp/~tanaka/ｶﾀﾛｸﾞ.html"))], text: "http://example.jp/~tanaka/ｶﾀﾛｸﾞ.html"),
        Sample(name: "NEC row: circled digits", segments: [.bytes(sjis("会場①番"))], text: "会場①番"),
        Sample(name: "UTF-8 Japanese", segments: [.bytes(Array("ﾃﾞｻﾞｲﾝ 日本語".utf8))], text: "ﾃﾞｻﾞｲﾝ 日本語"),
        Sample(name: "Latin-1 words", segments: [.bytes([0x4D, 0xFC, 0x6C, 0x6C, 0x65, 0x72, 0x20, 0x69, 0x6E, 0x20, 0x4B, 0xF6, 0x6C, 0x6E])], text: "Müller in Köln"),
        Sample(name: "Latin-1 that fits Shift_JIS", segments: [.bytes([0x72, 0xE9, 0x73, 0x75, 0x6D, 0xE9, 0x73])], text: "résumés"),
    ]

    static func read(_ segments: [QRCode.Segment]) throws -> ScannedCode {
        let img = QRRenderer(code: try QRCode.encode(segments: segments, level: .M), margin: 4, moduleSize: 4).raster()
        let codes = QRReader().scan(img).codes
        try #require(codes.count == 1, "\(codes.count) codes")
        return codes[0]
    }

    @Test(arguments: corpus)
    func everyCodeReadsExactlyAndCertainly(sample: Sample) throws {
        let c = try JapaneseTextTests.read(sample.segments)
        #expect(c.text == sample.text)
        #expect(c.isCertain, "\(c.charset)")
        // zbar's bytes alone (no segments known) give the same text, or say they are not certain.
        let z = QRText.decode(zbarBytes: c.stream!.bytes)
        #expect(z.text == sample.text || !z.charset.clear, "zbar bytes: \(z.text) \(z.charset)")
    }

    @Test func theGuessSaysWhatDecidedIt() {
        let kana = QRCharsetGuess.guess([0xC3, 0xDE, 0xBB, 0xDE, 0xB2, 0xDD])
        #expect(kana == QRCharsetChoice(charset: "Shift_JIS", source: .guess, clear: true, reason: "6 half-width katakana in a row"))
        let words = QRCharsetGuess.guess(JapaneseTextTests.sjis("日本語"))
        #expect(words == QRCharsetChoice(charset: "Shift_JIS", source: .guess, clear: true,
                                         reason: "3 double-byte characters in a row; as ISO-8859-1 it would hold control codes"))
        #expect(QRCharsetGuess.guess(JapaneseTextTests.sjis("ｶﾅ"), kanjiInCode: true).clear)
        #expect(QRCharsetGuess.guess(Array("plain".utf8)) == QRCharsetChoice(charset: "UTF-8", source: .guess, clear: true, reason: "ASCII only"))
        let latin = QRCharsetGuess.guess([0x72, 0xE9, 0x73, 0x75, 0x6D, 0xE9, 0x73])
        #expect(latin.charset == "ISO-8859-1" && latin.clear)
        // C1 control codes: binary, or Shift_JIS lead bytes.
        #expect(QRCharsetGuess.guess([0x41, 0x93]).charset == "ISO-8859-1")
        #expect(QRCharsetGuess.guess([0x41, 0x93]).clear)
        #expect(QRCharsetGuess.guess([0x93, 0xFA]) == QRCharsetChoice(charset: "Shift_JIS", source: .guess, clear: true,
                                                                          reason: "as ISO-8859-1 it would hold control codes"))
        // ﾃｽﾄ、 is valid UTF-8 too (ýā): two-byte sequences only, against a katakana word.
        #expect(!QRCharsetGuess.guess(JapaneseTextTests.sjis("ﾃｽﾄ、Web")).clear)
        #expect(QRCharsetGuess.guess(Array("ありがとう".utf8)) == QRCharsetChoice(charset: "UTF-8", source: .guess, clear: true, reason: "valid UTF-8"))
        #expect(QRCharsetGuess.guess([0xFF, 0xFE]).charset == "ISO-8859-1")
    }

    @Test(arguments: [
        // ｱｲ or ±²: two high-bit bytes alone say nothing either way.
        [0xB1, 0xB2] as [UInt8],
        // ﾃ between spaces, or Ã.
        [0x20, 0xC3, 0x20],
        // ｱｲｳ and 鮎u…, or ±²³ and résumés: katakana in a row and accented Latin words.
        [0xB1, 0xB2, 0xB3, 0x20, 0x72, 0xE9, 0x73, 0x75, 0x6D, 0xE9, 0x73],
    ])
    func bytesThatFitTwoCharsetsAreAnUnclearGuess(bytes: [UInt8]) throws {
        let g = QRCharsetGuess.guess(bytes)
        #expect(!g.clear, "\(g)")
        #expect(g.reason.hasPrefix("unclear: "))
        let c = try JapaneseTextTests.read([.bytes(bytes)])
        #expect(!c.isCertain)
        #expect(c.bytes == bytes)
    }

    @Test func shiftJISBackslashAndTildeAreASCII() {
        #expect(QRText.convert([0x5C, 0x7E], from: "Shift_JIS") == "\\~")
        #expect(QRText.convert(JapaneseTextTests.sjis("表\\"), from: "Shift_JIS") == "表\\")
        // JIS X 0208's own mappings where Windows-31J has other ones, its rows where JIS X 0208 has none.
        #expect(QRText.convert([0x81, 0x60, 0x87, 0x40], from: "Shift_JIS") == "\u{301C}①")
        #expect(QRText.convert([0x41, 0x81], from: "Shift_JIS") == "A\u{FFFD}")
        #expect(QRText.convert([0x80, 0xA0, 0xFD], from: "Shift_JIS") == "\u{FFFD}\u{FFFD}\u{FFFD}")
    }

    /// Seeded texts as Japanese producers write them (ASCII words, half-width
    /// katakana words, kanji and kana words, punctuation) and as Latin-1
    /// writers do (words with an accent, signs): whenever the guess is
    /// clear, the text is exactly the one encoded, and nearly every one is clear.
    @Test func aClearGuessIsNeverAWrongText() {
        var rng = SplitMix64(seed: 0x5A_1215)
        let ascii = ["QR", "No.", "http://example.jp/~a", "TEL", "2026", "C:\\tmp", "ID", "a-b_c", "Web", "OK"]
        let kana = ["ﾃﾞｻﾞｲﾝ", "ｶﾀﾛｸﾞ", "ﾀﾞﾌﾞﾙ", "ｺｰﾄﾞ", "ﾁｹｯﾄ", "ｻﾝﾌﾟﾙ", "ｱｲｳ", "ﾒﾓ", "ｶﾅ", "ﾃｽﾄ"]
        let words = ["日本語", "東京", "予約", "会議室", "株式会社", "ありがとう", "カタカナ", "表示", "ソフト", "の"]
        let punct = [" ", ", ", "/", ":", "・", "、", "\\", "~", "-"]
        let latinWords = ["café", "naïve", "Müller", "résumé", "Köln", "déjà", "Ångström", "señor", "garçon", "Zürich", "über", "plain"]
        let signs = ["©", "°", "½", "±", "§", "£"]
        var japaneseUnclear = 0, latinUnclear = 0, wrong: [String] = []
        let n = 400
        for _ in 0..<n {
            var s = ""
            for _ in 0..<rng.int(2...7) {
                switch rng.int(0...3) {
                case 0: s += ascii[rng.int(0...ascii.count - 1)]
                case 1: s += kana[rng.int(0...kana.count - 1)]
                default: s += words[rng.int(0...words.count - 1)]
                }
                s += punct[rng.int(0...punct.count - 1)]
            }
            let g = QRCharsetGuess.guess(JapaneseTextTests.sjis(s))
            if !g.clear { japaneseUnclear += 1 } else if QRText.convert(JapaneseTextTests.sjis(s), from: g.charset!) != s { wrong.append(s) }
            var l = ""
            for _ in 0..<rng.int(1...6) {
                l += rng.int(0...5) == 0 ? signs[rng.int(0...signs.count - 1)] : latinWords[rng.int(0...latinWords.count - 1)]
                l += [" ", ", ", ". "][rng.int(0...2)]
            }
            let bytes = l.unicodeScalars.map { UInt8($0.value) }
            let h = QRCharsetGuess.guess(bytes)
            if !h.clear { latinUnclear += 1 } else if QRText.convert(bytes, from: h.charset!) != l { wrong.append(l) }
        }
        #expect(wrong.isEmpty, "clear but wrong: \(wrong.prefix(5))")
        #expect(japaneseUnclear * 20 <= n, "\(japaneseUnclear) of \(n) Japanese texts unclear")
        #expect(latinUnclear * 20 <= n, "\(latinUnclear) of \(n) Latin-1 texts unclear")
    }

    /// The corpus photographed: perspective, blur, glare and JPEG. A read is
    /// the exact text or nothing, never another text.
    @Test(arguments: [TestImages.Distortion.perspective, .blur, .glare, .jpeg])
    func photographedJapaneseCodesReadExactlyOrNotAtAll(kind: TestImages.Distortion) throws {
        var rng = SplitMix64(seed: 20_261_202)
        let reader = QRReader()
        var missed: [String] = [], wrong: [String] = []
        for s in JapaneseTextTests.corpus {
            let img = try TestImages.hard(kind, segments: s.segments, rng: &rng)
            for quarters in 0..<4 {
                let codes = reader.scan(img.rotatedQuarter(quarters)).codes.filter(\.isCertain)
                if !codes.contains(where: { $0.text == s.text }) { missed.append("\(s.name) at \(90 * quarters)°") }
                wrong += codes.filter { $0.text != s.text }.map { "\(s.name) at \(90 * quarters)°: \($0.text)" }
            }
        }
        #expect(wrong.isEmpty, "wrong texts: \(wrong)")
        #expect(missed.isEmpty, "not decoded: \(missed)")
    }
}

/// Two reads of one code that disagree make it not certain, in whatever
/// order the steps of the ladder deliver them; reads that agree, or codes in
/// other places (beside it, or drawn inside it), do not.
@Suite struct DisagreeingReadsTests {
    static func read(_ text: String, x: Double, y: Double, side: Double) throws -> ScannedCode {
        // Version 1-M: one byte-mode segment, the terminator, then padding to 16 codewords.
        var bits: [Int] = [0, 1, 0, 0] + (0..<8).map { (text.utf8.count >> (7 - $0)) & 1 }
        for b in text.utf8 { bits += (0..<8).map { Int(b >> (7 - UInt8($0))) & 1 } }
        bits += [0, 0, 0, 0]
        while bits.count % 8 != 0 { bits.append(0) }
        var words = stride(from: 0, to: bits.count, by: 8).map { i in UInt8(bits[i..<i + 8].reduce(0) { $0 << 1 | $1 }) }
        while words.count < 16 { words.append(words.count % 2 == 0 ? 0xEC : 0x11) }
        let stream = try QRBitstream(codewords: words, level: .M)
        let c = [ImagePoint(x: x, y: y), ImagePoint(x: x + side, y: y), ImagePoint(x: x + side, y: y + side), ImagePoint(x: x, y: y + side)]
        return ScannedCode(stream: stream, corners: c)
    }

    @Test func aDisagreementIsFoundWhateverTheOrderOfTheSteps() throws {
        let a = try Self.read("one text", x: 100, y: 100, side: 120)
        // The same code seen again a few pixels off, by another step, reading other bytes.
        let b = try Self.read("another text", x: 104, y: 97, side: 118)
        let again = try Self.read("one text", x: 98, y: 101, side: 121)
        let beside = try Self.read("beside", x: 400, y: 100, side: 120)
        let inside = try Self.read("inside", x: 140, y: 140, side: 40)
        var rng = SplitMix64(seed: 0xD15A)
        for _ in 0..<200 {
            var steps: [[ScannedCode]] = [[a], [b], [again], [beside], [inside]]
            for i in stride(from: steps.count - 1, to: 0, by: -1) { steps.swapAt(i, rng.int(0...i)) }
            // Some steps read two codes at once.
            if rng.int(0...1) == 1 { steps = [steps[0] + steps[1]] + steps.dropFirst(2) }
            let codes = QRReader.merge(steps)
            let here = codes.filter { $0.isSamePlace(as: a) }
            #expect(here.count == 1)
            #expect(here.allSatisfy { !$0.isCertain }, "\(here.map(\.text))")
            #expect(Set(here.flatMap { [$0.text] + $0.disagreeing }) == ["one text", "another text"])
            #expect(codes.filter { $0.text == "beside" || $0.text == "inside" }.allSatisfy { $0.isCertain })
            #expect(codes.count == 3)
        }
        // Agreeing reads stay certain.
        #expect(QRReader.merge([[a], [again]]).allSatisfy { $0.isCertain })
    }
}
