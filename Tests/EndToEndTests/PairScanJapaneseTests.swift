import Foundation
import Testing
@testable import FamilySync
@testable import FamilySyncImaging

private let qrencodePath = "/usr/bin/qrencode"

/// Japanese codes made by qrencode(1) from Shift_JIS input, as Japanese
/// producers make them: in 8-bit mode (-8) and with kanji mode for the
/// double-byte characters (-k, which leaves half-width katakana and ASCII
/// in byte mode). pair-scan reads each back exactly; a code whose bytes fit
/// two character sets is left out of --raw and flagged in --json.
@Suite(.disabled(if: !FileManager.default.isExecutableFile(atPath: qrencodePath),
                 "qrencode is not installed (Debian qrencode; make test installs it)"))
struct PairScanJapaneseTests {
    static let qrencode = qrencodePath

    /// `s` in Windows-31J, by iconv(1).
    static func sjis(_ s: String) throws -> Data {
        let r = try Tools.run("/usr/bin/iconv", ["-f", "UTF-8", "-t", "CP932"], stdin: Data(s.utf8))
        guard r.status == 0 else { throw HarnessError("iconv: \(r.err)") }
        return r.stdout
    }

    /// A PNG of `input` made by `qrencode FLAG`.
    static func code(_ input: Data, flag: String, in d: TempDir, _ name: String) throws -> String {
        let src = d.file(name + ".in"), png = d.file(name + ".png")
        _ = FileManager.default.createFile(atPath: src, contents: input)
        let r = try Tools.run(qrencode, [flag, "-s", "4", "-r", src, "-o", png])
        guard r.status == 0 else { throw HarnessError("qrencode \(flag): \(r.err)") }
        return png
    }

    static let texts = [
        "ﾃﾞｻﾞｲﾝ",
        "ｶﾀｶﾅ ﾃｷｽﾄ",
        #"MECARD:N:山田,太郎;SOUND:ﾔﾏﾀﾞ,ﾀﾛｳ;URL:http\://example.jp/~yamada/;NOTE:会議室\;3F;;"#,
        "BEGIN:VCARD\r\nVERSION:3.0\r\nN:山田;太郎;;;\r\nORG:株式会社ｻﾝﾌﾟﾙ\\, 東京\r\nEND:VCARD",
        "［外側ＱＲコード］*ﾀﾞﾌﾞﾙQR*",
        "ソフト表示能力 C:\\ﾃﾞｰﾀ ~",
    ]

    @Test(arguments: ["-8", "-k"])
    func qrencodesShiftJISCodesReadExactly(flag: String) throws {
        let d = TempDir()
        let files = try PairScanJapaneseTests.texts.enumerated().map { i, t in
            try PairScanJapaneseTests.code(try PairScanJapaneseTests.sjis(t), flag: flag, in: d, "code\(i)")
        }
        let r = try Tools.run("pair-scan", ["--raw"] + files)
        #expect(r.status == 0, "\(r.err)")
        #expect(r.err.isEmpty)
        #expect(r.out == PairScanJapaneseTests.texts.map { $0 + "\n" }.joined())
    }

    @Test func jsonSaysTheGuessAndWhy() throws {
        let d = TempDir()
        let mixed = try PairScanJapaneseTests.code(try PairScanJapaneseTests.sjis("［外側ＱＲコード］*ﾀﾞﾌﾞﾙQR*"), flag: "-k", in: d, "mixed")
        let r = try Tools.run("pair-scan", ["--json", mixed])
        #expect(r.status == 0, "\(r.err)")
        let v = try JSONParser.parse(r.out)
        #expect(v["text"] == .string("［外側ＱＲコード］*ﾀﾞﾌﾞﾙQR*"))
        #expect(v["certain"] == .bool(true))
        #expect(v["charset"] == .object([("name", .string("Shift_JIS")), ("source", .string("guess")), ("clear", .bool(true)),
                                          ("reason", .string("5 half-width katakana in a row, a kanji-mode segment in the code"))]))
        #expect(v["modes"] == .array([.string("kanji"), .string("byte")]))
        #expect(v["disagreeing"] == .array([]))
    }

    @Test func anUnclearGuessIsLeftOutOfRawAndFlaggedInJSON() throws {
        let d = TempDir()
        // ｱｲ in Shift_JIS, or ±² in ISO 8859-1: nothing tells which.
        let p = try PairScanJapaneseTests.code(Data([0xB1, 0xB2]), flag: "-8", in: d, "kana")
        let raw = try Tools.run("pair-scan", ["--raw", p])
        #expect(raw.status == 1 && raw.out.isEmpty)
        #expect(raw.err == "pair-scan: \(p): left out a QR code whose text is not certain (character set unclear: fits Shift_JIS and ISO-8859-1 with nothing to tell them apart); --json shows it\npair-scan: \(p): nothing decoded beyond doubt\n")
        let json = try Tools.run("pair-scan", ["--json", p])
        #expect(json.status == 0, "\(json.err)")
        let v = try JSONParser.parse(json.out)
        #expect(v["certain"] == .bool(false))
        #expect(v["charset"]?["clear"] == .bool(false))
        #expect(v["charset"]?["source"] == .string("guess"))
        #expect(v["bytes"] == .string("sbI="))
        // The bytes are certain whatever their character set.
        let bytes = try Tools.run("pair-scan", ["--bytes", p])
        #expect(bytes.status == 0 && Array(bytes.stdout) == [0xB1, 0xB2])
    }
}
