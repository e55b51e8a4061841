import Foundation
import Testing
@testable import FamilySync
@testable import FamilySyncImaging

/// pair-scan end to end: offers, --raw texts, several files, stdin, and bad input.
@Suite struct PairScanTests {
    static let now = "2026-11-30T10:00:00Z"
    static let offer = "FS1/0F6B8E52-8B0C-4B5E-9D59-2B7D1B0E7E11/ABCDEFGHIJKLMNOPQRSTUVWXYZ234567/1796119200/192.168.1.20:7433"

    static func png(_ segments: [QRCode.Segment], in d: TempDir, _ name: String) throws -> String {
        let img = QRRenderer(code: try QRCode.encode(segments: segments, level: .M), margin: 4, moduleSize: 4).raster()
        let p = d.file(name)
        _ = FileManager.default.createFile(atPath: p, contents: Data(try PNGCodec.encode(img)))
        return p
    }

    static func offerPNG(_ d: TempDir, _ name: String = "offer.png", text: String = offer) throws -> String {
        try png([.alphanumeric(text)], in: d, name)
    }

    @Test func printsTheOfferJSON() throws {
        let d = TempDir()
        let r = try Tools.run("pair-scan", ["--now", PairScanTests.now, try PairScanTests.offerPNG(d)])
        #expect(r.status == 0, "\(r.err)")
        #expect(r.err.isEmpty)
        #expect(r.out == "{\"version\":1,\"family\":\"0F6B8E52-8B0C-4B5E-9D59-2B7D1B0E7E11\",\"nonce\":\"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567\",\"expiresAt\":\"2026-12-01T10:00:00.000Z\",\"addr\":\"192.168.1.20:7433\",\"qr\":\"\(PairScanTests.offer)\"}\n")
    }

    @Test func aCodeThatIsNotAnOfferSaysWhatItFound() throws {
        let d = TempDir()
        let url = try PairScanTests.png([.bytes(Array("https://example.com/pair?x=1".utf8))], in: d, "url.png")
        let r = try Tools.run("pair-scan", ["--now", PairScanTests.now, url])
        #expect(r.status == 1)
        #expect(r.out.isEmpty)
        #expect(r.err == "pair-scan: \(url): found a QR code that is not a pairing offer: \"https://example.com/pair?x=1\"\n")
        let raw = try Tools.run("pair-scan", ["--raw", url])
        #expect(raw.status == 0 && raw.out == "https://example.com/pair?x=1\n")
    }

    @Test(arguments: [
        ("FS1/0F6B8E52-8B0C-4B5E-9D59-2B7D1B0E7E11/ABCDEFGH/1796032800/", "nonce"),
        ("FS2/0F6B8E52-8B0C-4B5E-9D59-2B7D1B0E7E11/ABCDEFGHIJKLMNOPQRSTUVWXYZ234567/1796032800/", "version"),
        ("FS1/NOT-A-UUID/ABCDEFGHIJKLMNOPQRSTUVWXYZ234567/1796032800/", "family"),
        ("FS1/0F6B8E52-8B0C-4B5E-9D59-2B7D1B0E7E11/ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", "text"),
    ])
    func invalidOffersAreNegativeAndNameTheField(text: String, field: String) throws {
        let d = TempDir()
        let p = try PairScanTests.offerPNG(d, text: text)
        let r = try Tools.run("pair-scan", ["--now", PairScanTests.now, p])
        #expect(r.status == 1)
        #expect(r.out.isEmpty)
        #expect(r.err.contains("not a valid pairing offer (\(field):"), "\(r.err)")
    }

    @Test func anExpiredOfferIsRefused() throws {
        let d = TempDir()
        let r = try Tools.run("pair-scan", ["--now", "2026-12-01T10:00:00Z", try PairScanTests.offerPNG(d)])
        #expect(r.status == 1)
        #expect(r.out.isEmpty)
        #expect(r.err.contains("the pairing offer expired at 2026-12-01T10:00:00.000Z"))
    }

    @Test func rawTextIsUTF8AndBytesAreExact() throws {
        let d = TempDir()
        let binary: [UInt8] = [0xFF, 0x00, 0x80, 0x0A, 0xC3, 0x28, 0xFE, 0x41]
        let sjis: [UInt8] = [0x93, 0xFA, 0x96, 0x7B, 0x8C, 0xEA, 0x82, 0xCC, 0x83, 0x65, 0x83, 0x4C, 0x83, 0x58, 0x83, 0x67]
        let files = [
            try PairScanTests.png([.bytes(Array("日本語のテキスト".utf8))], in: d, "utf8.png"),
            try PairScanTests.png([.bytes(sjis)], in: d, "sjis.png"),
            try PairScanTests.png([.eci(20), .bytes([0x93, 0xFA, 0x96, 0x7B])], in: d, "eci.png"),
            try PairScanTests.png([.kanji([0x93, 0xFA, 0x96, 0x7B, 0x8C, 0xEA])], in: d, "kanji.png"),
            try PairScanTests.png([.bytes(binary)], in: d, "bin.png"),
        ]
        let r = try Tools.run("pair-scan", ["--raw"] + files)
        #expect(r.status == 0, "\(r.err)")
        // Binary data without an ECI is ISO 8859-1 text: every line valid UTF-8.
        #expect(r.out == "日本語のテキスト\n日本語のテキスト\n日本\n日本語\n\u{FF}\u{00}\u{80}\n\u{C3}(\u{FE}A\n")
        #expect(String(validating: Array(r.stdout), as: UTF8.self) != nil)
        let bytes = try Tools.run("pair-scan", ["--bytes", files[1], files[4]])
        #expect(bytes.status == 0, "\(bytes.err)")
        #expect(Array(bytes.stdout) == sjis + binary)
    }

    @Test func jsonGivesTextBytesModesECIAndCorners() throws {
        let d = TempDir()
        let p = try PairScanTests.png([.eci(26), .bytes(Array("Grüße".utf8)), .numeric("2026")], in: d, "eci.png")
        let r = try Tools.run("pair-scan", ["--json", p])
        #expect(r.status == 0, "\(r.err)")
        #expect(r.out == #"{"text":"Grüße2026","certain":true,"charset":{"name":"UTF-8","source":"eci","clear":true,"reason":"ECI 26"},"disagreeing":[],"bytes":"R3LDvMOfZTIwMjY=","modes":["byte","numeric"],"eci":26,"segments":[{"mode":"byte","eci":26,"bytes":"R3LDvMOfZQ=="},{"mode":"numeric","eci":26,"bytes":"MjAyNg=="}],"version":1,"level":"M","corners":[[16,16],[100,16],[100,100],[16,100]],"sequence":null}"# + "\n")
        let both = try Tools.run("pair-scan", ["--json", "--raw", p])
        #expect(both.status == 64 && both.err.contains("cannot be used together"))
    }

    @Test func aStructuredAppendSequenceIsOneTextAndAnIncompleteOneIsLeftOutAndSaid() throws {
        let d = TempDir()
        let parts = try QRCode.encodeSequence(parts: [[.bytes(Array("one message ".utf8))], [.bytes(Array("in three ".utf8))], [.bytes(Array("symbols".utf8))]],
                                              level: .M, parity: 0x5A)
        func poster(_ order: [Int], _ name: String) throws -> String {
            let tiles = order.map { QRRenderer(code: parts[$0], margin: 4, moduleSize: 4).raster() }
            var canvas = GrayImage(width: tiles.reduce(20) { $0 + $1.width + 20 }, height: tiles.map(\.height).max()! + 40, fill: 255)
            var x = 20
            for t in tiles {
                for j in 0..<t.height { for i in 0..<t.width { canvas[x + i, 20 + j] = t[i, j] } }
                x += t.width + 20
            }
            let p = d.file(name)
            _ = FileManager.default.createFile(atPath: p, contents: Data(try PNGCodec.encode(canvas)))
            return p
        }
        let whole = try poster([1, 2, 0], "whole.png")
        let r = try Tools.run("pair-scan", ["--raw", whole])
        #expect(r.status == 0 && r.err.isEmpty, "\(r.err)")
        #expect(r.out == "one message in three symbols\n")
        let json = try Tools.run("pair-scan", ["--json", whole])
        #expect(json.out.contains(#""text":"one message in three symbols""#) && json.out.contains(#""sequence":{"total":3,"parity":90,"parts":[{"version":1,"#), "\(json.out)")
        let partial = try poster([0, 2], "partial.png")
        let p = try Tools.run("pair-scan", ["--raw", partial])
        #expect(p.status == 1 && p.out.isEmpty)
        #expect(p.err == "pair-scan: \(partial): left out a structured-append sequence (parity 0x5A): parts 1, 3 of 3 read\npair-scan: \(partial): no QR code found\n")
    }

    @Test func theOneValidOfferAmongSeveralCodes() throws {
        let d = TempDir()
        let url = try QRRenderer(code: QRCode.encode(segments: [.bytes(Array("https://example.com/".utf8))], level: .M), margin: 4, moduleSize: 4).raster()
        let offer = try QRRenderer(code: QRCode.encode(alphanumeric: PairScanTests.offer, level: .M), margin: 4, moduleSize: 4).raster()
        let other = PairScanTests.offer.replacingOccurrences(of: "ABCDEFGH", with: "HGFEDCBA")
        let second = try QRRenderer(code: QRCode.encode(alphanumeric: other, level: .M), margin: 4, moduleSize: 4).raster()
        func poster(_ codes: [GrayImage], _ name: String) throws -> String {
            var canvas = GrayImage(width: codes.reduce(0) { $0 + $1.width + 20 }, height: codes.map(\.height).max()! + 40, fill: 255)
            var x = 10
            for c in codes {
                for j in 0..<c.height { for i in 0..<c.width { canvas[x + i, 20 + j] = c[i, j] } }
                x += c.width + 20
            }
            let p = d.file(name)
            _ = FileManager.default.createFile(atPath: p, contents: Data(try PNGCodec.encode(canvas)))
            return p
        }
        let r = try Tools.run("pair-scan", ["--now", PairScanTests.now, try poster([url, offer], "two.png")])
        #expect(r.status == 0, "\(r.err)")
        #expect(r.lines.count == 1 && r.out.contains(PairScanTests.offer))
        #expect(r.err.contains("2 QR codes; using the one valid pairing offer among them"))
        let raw = try Tools.run("pair-scan", ["--raw", try poster([url, offer], "two-raw.png")])
        #expect(raw.lines == ["https://example.com/", PairScanTests.offer])
        let two = try Tools.run("pair-scan", ["--now", PairScanTests.now, try poster([offer, second], "offers.png")])
        #expect(two.status == 1 && two.out.isEmpty)
        #expect(two.err.contains("found 2 different pairing offers"))
    }

    @Test func severalFilesOneBadDoesNotStopTheRest() throws {
        let d = TempDir()
        let good = try PairScanTests.offerPNG(d)
        let blank = d.file("blank.png")
        _ = FileManager.default.createFile(atPath: blank, contents: Data(try PNGCodec.encode(GrayImage(width: 64, height: 64, fill: 255))))
        let text = d.write("notes.txt", "shopping list\n")
        let missing = d.file("missing.png")
        let r = try Tools.run("pair-scan", ["--now", PairScanTests.now, good, missing, text, blank, good])
        #expect(r.status == 66)  // the first failure's status
        #expect(r.lines.count == 2)
        #expect(r.err.contains("pair-scan: \(missing): No such file or directory"))
        #expect(r.err.contains("pair-scan: \(text): not an image"))
        #expect(r.err.contains("pair-scan: \(blank): no QR code found"))
        let onlyBlank = try Tools.run("pair-scan", ["--now", PairScanTests.now, good, blank])
        #expect(onlyBlank.status == 1 && onlyBlank.lines.count == 1)
        let allGood = try Tools.run("pair-scan", ["--raw", good, good])
        #expect(allGood.status == 0 && allGood.lines == [PairScanTests.offer, PairScanTests.offer])
    }

    @Test func readsStandardInput() throws {
        let d = TempDir()
        let data = try Data(contentsOf: URL(fileURLWithPath: try PairScanTests.offerPNG(d)))
        for args in [["-"], []] {
            let r = try Tools.run("pair-scan", ["--raw"] + args, stdin: data)
            #expect(r.status == 0 && r.out == PairScanTests.offer + "\n", "\(args)")
        }
        let twice = try Tools.run("pair-scan", ["-", "-"], stdin: data)
        #expect(twice.status == 64)
        let empty = try Tools.run("pair-scan", ["-"], stdin: Data())
        #expect(empty.status == 65 && empty.err == "pair-scan: <stdin>: empty file: no image data\n")
    }

    @Test func aHardPhotoAsJPEGReads() throws {
        // A low-contrast, tilted, noisy JPEG that plain zbar misses.
        let d = TempDir()
        let code = try QRRenderer(code: QRCode.encode(alphanumeric: PairScanTests.offer, level: .M), margin: 4, moduleSize: 4).raster()
        var img = GrayImage(width: code.width + 120, height: code.height + 80, fill: 150)
        var seed: UInt64 = 42
        for y in 0..<code.height { for x in 0..<code.width { img[x + 60, y + 40] = code[x, y] < 128 ? 128 : 156 } }
        for i in 0..<img.pixels.count {
            seed = seed &* 6364136223846793005 &+ 1442695040888963407
            img.pixels[i] = UInt8(max(0, min(255, Int(img.pixels[i]) + Int(seed >> 60) - 8)))
        }
        let jpg = d.file("photo.jpg")
        _ = FileManager.default.createFile(atPath: jpg, contents: Data(try JPEGCodec.encode(pixels: img.pixels, width: img.width, height: img.height, quality: 60)))
        let r = try Tools.run("pair-scan", ["--raw", jpg])
        #expect(r.status == 0, "\(r.err)")
        #expect(r.out == PairScanTests.offer + "\n")
    }

    @Test func badImagesGiveClearErrors() throws {
        let d = TempDir()
        let pngData = try Data(contentsOf: URL(fileURLWithPath: try PairScanTests.offerPNG(d)))
        let cases: [(String, Data, Int32, String)] = [
            ("empty.png", Data(), 65, "empty file: no image data"),
            ("cut.png", pngData.prefix(pngData.count / 2), 65, "truncated PNG"),
            ("bomb.pgm", Data("P5\n60000 60000\n255\n".utf8), 65, "the limit is \(ImageLimits.maxPixels) pixels"),
            ("page.html", Data("<html><body>hi</body></html>".utf8), 65, "not an image"),
            ("noise.bin", Data((0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 7919) }), 65, "not an image"),
            ("cut.pgm", Data("P5\n100 100\n255\n".utf8) + Data(count: 99), 65, "truncated P5"),
        ]
        for (name, data, status, needle) in cases {
            let p = d.file(name)
            _ = FileManager.default.createFile(atPath: p, contents: data)
            let r = try Tools.run("pair-scan", [p])
            #expect(r.status == status, "\(name): \(r.err)")
            #expect(r.out.isEmpty)
            #expect(r.err.hasPrefix("pair-scan: \(p): ") && r.err.contains(needle), "\(name): \(r.err)")
        }
        let dir = try Tools.run("pair-scan", [d.path])
        #expect(dir.status == 66 && dir.err.contains("is a directory"))
    }

    @Test func anOversizedFileIsRefusedWithoutReadingItAll() throws {
        let d = TempDir()
        let p = d.file("huge.pgm")
        _ = FileManager.default.createFile(atPath: p, contents: Data("P5\n1 1\n255\n".utf8))
        let h = try FileHandle(forWritingTo: URL(fileURLWithPath: p))
        try h.truncate(atOffset: UInt64(ImageLimits.maxFileBytes) + 1)  // sparse: no disk used
        try h.close()
        let r = try Tools.run("pair-scan", [p])
        #expect(r.status == 65)
        #expect(r.err.contains("the limit is \(ImageLimits.maxFileBytes) bytes"))
    }
}
