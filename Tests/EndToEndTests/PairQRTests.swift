import Foundation
import Testing
@testable import FamilySync
@testable import FamilySyncImaging

/// pair-qr end to end: the offer JSON, the store, and every drawing read
/// back by pair-scan.
@Suite struct PairQRTests {
    static let now = "2026-11-30T10:00:00Z"

    static func json(_ line: String) throws -> JSONValue { try JSONParser.parse(line) }

    /// Scans a raster with the built pair-scan (through a PGM file).
    static func scan(_ img: GrayImage, in dir: TempDir, name: String, now: String = now) throws -> ToolResult {
        let p = dir.file(name + ".pgm")
        _ = FileManager.default.createFile(atPath: p, contents: Data(PNMCodec.encodePGM(img)))
        return try Tools.run("pair-scan", ["--now", now, p])
    }

    /// Rasterizes the SVG pair-qr writes (a viewBox in modules, one path of
    /// `Mx yhNv1h-Nz` rectangles), `scale` pixels a module.
    static func rasterizeSVG(_ svg: String, scale: Int = 4) throws -> GrayImage {
        let vb = try #require(svg.firstMatch(of: /viewBox="0 0 (\d+) (\d+)"/))
        let side = try #require(Int(vb.1))
        #expect(Int(vb.2) == side)
        #expect(svg.contains("fill=\"#ffffff\"") && svg.contains("<path fill=\"#000000\""))
        var img = GrayImage(width: side * scale, height: side * scale, fill: 255)
        let d = try #require(svg.firstMatch(of: /d="([^"]*)"/)).1
        var count = 0
        for m in d.matches(of: /M(\d+) (\d+)h(\d+)v1h-(\d+)z/) {
            let x = Int(m.1)!, y = Int(m.2)!, w = Int(m.3)!
            #expect(Int(m.4)! == w)
            for py in (y * scale)..<((y + 1) * scale) { for px in (x * scale)..<((x + w) * scale) { img[px, py] = 0 } }
            count += 1
        }
        #expect(count > 50)
        return img
    }

    /// Reads the half-block drawing back: each character is two modules.
    static func rasterizeTerminal(_ text: String, scale: Int = 4) throws -> GrayImage {
        let plain = text.replacing(/\u{1B}\[[0-9;]*m/, with: "")
        let lines = plain.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map { Array($0) }
        let w = try #require(lines.first?.count)
        #expect(lines.allSatisfy { $0.count == w })
        var img = GrayImage(width: w * scale, height: lines.count * 2 * scale, fill: 255)
        for (row, line) in lines.enumerated() {
            for (x, c) in line.enumerated() {
                let (top, bottom): (Bool, Bool)
                switch c {
                case " ": (top, bottom) = (false, false)
                case "\u{2580}": (top, bottom) = (true, false)
                case "\u{2584}": (top, bottom) = (false, true)
                case "\u{2588}": (top, bottom) = (true, true)
                default: Issue.record("unexpected character \(c)"); return img
                }
                for (half, dark) in [(0, top), (1, bottom)] where dark {
                    for py in ((row * 2 + half) * scale)..<((row * 2 + half + 1) * scale) { for px in (x * scale)..<((x + 1) * scale) { img[px, py] = 0 } }
                }
            }
        }
        return img
    }

    static func rasterizeText(_ text: String, scale: Int = 4) throws -> GrayImage {
        let lines = text.split(separator: "\n").map { Array($0) }
        let w = try #require(lines.first?.count) / 2
        var img = GrayImage(width: w * scale, height: lines.count * scale, fill: 255)
        for (y, line) in lines.enumerated() {
            #expect(line.count == 2 * w)
            for x in 0..<w where line[2 * x] == "#" {
                #expect(line[2 * x + 1] == "#")
                for py in (y * scale)..<((y + 1) * scale) { for px in (x * scale)..<((x + 1) * scale) { img[px, py] = 0 } }
            }
        }
        return img
    }

    @Test func pngRoundTripCreatesTheFamilyAndPrintsTheOffer() throws {
        let d = TempDir()
        let db = d.file("owner.db"), png = d.file("pair.png")
        let r = try Tools.run("pair-qr", ["--db", db, "--now", PairQRTests.now, "--addr", "192.168.1.20:7433", "-o", png])
        #expect(r.status == 0, "\(r.err)")
        // The only word on stderr: the store it made (the code went to the file).
        #expect(r.err == "pair-qr: created a new store at \(db)\n", "\(r.err)")
        #expect(r.lines.count == 1)
        let j = try PairQRTests.json(r.lines[0])
        let qr = try #require(j["qr"]?.stringValue)
        #expect(qr.utf8.count <= 120 && QRCode.isAlphanumeric(qr))
        #expect(j["expiresAt"]?.stringValue == "2026-11-30T10:10:00.000Z")
        #expect(j["addr"]?.stringValue == "192.168.1.20:7433")
        let store = try Store(path: db, create: false)
        let fam = try #require(try store.family())
        #expect(fam.role == .owner && fam.id == j["family"]?.stringValue)
        #expect(try store.openOffers(now: Timestamp(rfc3339: PairQRTests.now)!).map(\.nonce) == [j["nonce"]?.stringValue])
        let s = try Tools.run("pair-scan", ["--now", PairQRTests.now, png])
        #expect(s.status == 0, "\(s.err)")
        #expect(s.out == r.out)
        // PNG on disk is a real PNG of the default size: 8 px a module, 4 modules of quiet zone.
        let img = try PNGCodec.decode(Array(try Data(contentsOf: URL(fileURLWithPath: png))))
        #expect(img.width % 8 == 0 && (img.width / 8 - 8 - 21) % 4 == 0)
    }

    @Test func svgRoundTrip() throws {
        let d = TempDir()
        let r = try Tools.run("pair-qr", ["--db", d.file("o.db"), "--now", PairQRTests.now, "-o", d.file("pair.svg")])
        #expect(r.status == 0, "\(r.err)")
        let svg = try String(contentsOfFile: d.file("pair.svg"), encoding: .utf8)
        let s = try PairQRTests.scan(try PairQRTests.rasterizeSVG(svg), in: d, name: "svg")
        #expect(s.status == 0, "\(s.err)")
        #expect(s.out == r.out)
    }

    /// A pipe gets plain half blocks, no escape at all, that still scan: a
    /// block is ink, so dark modules are drawn dark on the page.
    @Test func terminalDrawingToAPipeHasNoEscapesAndScansAsPrinted() throws {
        let d = TempDir()
        // A store made beforehand: standard error then holds the drawing alone (no "created a new store").
        _ = try Store(path: d.file("o.db"))
        let r = try Tools.run("pair-qr", ["--db", d.file("o.db"), "--now", PairQRTests.now])
        #expect(r.status == 0)
        #expect(r.lines.count == 1)
        #expect(!r.err.contains("\u{1B}"), "escape written to a pipe")
        let lines = r.err.split(separator: "\n")
        // Four modules of quiet zone: the first two lines are blank, and every line starts with four blanks.
        #expect(lines[0].allSatisfy { $0 == " " } && lines[1].allSatisfy { $0 == " " })
        #expect(lines.allSatisfy { $0.hasPrefix("    ") && $0.hasSuffix("    ") })
        let s = try PairQRTests.scan(try PairQRTests.rasterizeTerminal(r.err), in: d, name: "term")
        #expect(s.status == 0, "\(s.err)")
        #expect(s.out == r.out)
    }

    /// On a terminal (a pseudo-terminal made by script(1)) the drawing sets
    /// black on white on every line and resets it, and still scans.
    @Test func terminalDrawingOnATerminalSetsItsColours() throws {
        let d = TempDir()
        let cmd = "\(Tools.path("pair-qr")) --db \(d.file("o.db")) --now \(PairQRTests.now) > \(d.file("offer.json"))"
        let r = try Tools.run("/usr/bin/script", ["-q", "-e", "-c", cmd, d.file("typescript")])
        #expect(r.status == 0, "\(r.err)")
        let drawn = try String(contentsOfFile: d.file("typescript"), encoding: .utf8)
            .replacingOccurrences(of: "\r\n", with: "\n")
        let lines = drawn.split(separator: "\n").filter { $0.contains("\u{1B}[30;107m") }
        #expect(lines.count > 10)
        #expect(lines.allSatisfy { $0.hasPrefix("\u{1B}[30;107m") && $0.hasSuffix("\u{1B}[0m") })
        let s = try PairQRTests.scan(try PairQRTests.rasterizeTerminal(lines.joined(separator: "\n") + "\n"), in: d, name: "term")
        #expect(s.status == 0, "\(s.err)")
        #expect(s.out == (try String(contentsOfFile: d.file("offer.json"), encoding: .utf8)))
    }

    @Test func textRoundTripToAFileAndToStderr() throws {
        let d = TempDir()
        let r = try Tools.run("pair-qr", ["--db", d.file("o.db"), "--now", PairQRTests.now, "-o", d.file("pair.txt")])
        #expect(r.status == 0, "\(r.err)")
        let text = try String(contentsOfFile: d.file("pair.txt"), encoding: .utf8)
        let s = try PairQRTests.scan(try PairQRTests.rasterizeText(text), in: d, name: "text")
        #expect(s.out == r.out)
        let e = try Tools.run("pair-qr", ["--db", d.file("o.db"), "--now", PairQRTests.now, "--format", "text"])
        #expect(e.status == 0)
        let s2 = try PairQRTests.scan(try PairQRTests.rasterizeText(e.err), in: d, name: "text2")
        #expect(s2.out == e.out)
    }

    @Test func sizeMarginAndLevelShapeTheImage() throws {
        let d = TempDir()
        func side(_ args: [String]) throws -> (Int, String) {
            let p = d.file("p\(args.joined()).png")
            let r = try Tools.run("pair-qr", ["--db", d.file("o.db"), "--now", PairQRTests.now, "-o", p] + args)
            #expect(r.status == 0, "\(r.err)")
            return (try PNGCodec.decode(Array(try Data(contentsOf: URL(fileURLWithPath: p)))).width, p)
        }
        let (l, _) = try side(["--level", "L", "--size", "1", "--margin", "0"])
        let (h, _) = try side(["--level", "H", "--size", "1", "--margin", "0"])
        #expect(h > l)  // more error correction, a bigger symbol
        let (big, p) = try side(["--level", "H", "--size", "3", "--margin", "2"])
        #expect(big == (h + 4) * 3)
        #expect(try Tools.run("pair-scan", ["--now", PairQRTests.now, p]).status == 0)
    }

    @Test func everyCallIsAFreshNonceAndListAndCloseManageThem() throws {
        let d = TempDir()
        let db = d.file("o.db")
        var nonces: [String] = []
        for _ in 0..<3 {
            let r = try Tools.run("pair-qr", ["--db", db, "--now", PairQRTests.now, "-o", d.file("p.png")])
            nonces.append(try #require(try PairQRTests.json(r.lines[0])["nonce"]?.stringValue))
        }
        #expect(Set(nonces).count == 3)
        let list = try Tools.run("pair-qr", ["--db", db, "--now", PairQRTests.now, "--list"])
        #expect(list.status == 0 && list.err.isEmpty)
        #expect(try list.lines.compactMap { try PairQRTests.json($0)["nonce"]?.stringValue }.sorted() == nonces.sorted())
        let c = try Tools.run("pair-qr", ["--db", db, "--now", PairQRTests.now, "--close", nonces[1]])
        #expect(c.status == 0 && c.out == "{\"closed\":1}\n")
        let again = try Tools.run("pair-qr", ["--db", db, "--now", PairQRTests.now, "--close", nonces[1]])
        #expect(again.status == 1 && again.out == "{\"closed\":0}\n")
        #expect(again.err.contains("pair-qr: no open offer has nonce \(nonces[1])"))
        // Expired offers are not listed.
        #expect(try Tools.run("pair-qr", ["--db", db, "--now", "2026-11-30T10:10:00Z", "--list"]).out.isEmpty)
        let all = try Tools.run("pair-qr", ["--db", db, "--now", PairQRTests.now, "--close", "all"])
        #expect(all.out == "{\"closed\":2}\n")
        #expect(try Tools.run("pair-qr", ["--db", db, "--now", PairQRTests.now, "--list"]).out.isEmpty)
    }

    @Test func aMembersStoreMakesNoOffersAndStaysUnchanged() throws {
        let d = TempDir()
        let db = d.file("member.db")
        do {
            let s = try Store(path: db)
            try s.write { try s.joinFamily(id: "0F6B8E52-8B0C-4B5E-9D59-2B7D1B0E7E11", ownerDevice: "OWNER", secret: SecretBytes([UInt8](repeating: 7, count: 32)), now: Timestamp(rfc3339: PairQRTests.now)!) }
        }
        let r = try Tools.run("pair-qr", ["--db", db, "--now", PairQRTests.now, "-o", d.file("p.png")])
        #expect(r.status == 77)
        #expect(r.out.isEmpty)
        #expect(r.err.contains("pair-qr: this store is a member of family 0F6B8E52-8B0C-4B5E-9D59-2B7D1B0E7E11"))
        #expect(!FileManager.default.fileExists(atPath: d.file("p.png")))
        let s = try Store(path: db, create: false)
        #expect(try s.db.scalarInt("SELECT count(*) FROM offers") == 0)
        #expect(try s.family()?.role == .member)
    }

    @Test(arguments: [
        (["--ttl", "0s"], "--ttl"), (["--ttl", "soon"], "--ttl"), (["--ttl", "2d"], "longer than"),
        (["--level", "X"], "--level"), (["--size", "0"], "--size"), (["--size", "65"], "--size"), (["--margin=-1"], "--margin"),
        (["--addr", "nohost"], "HOST:PORT"), (["--addr", "a b:80"], "cannot carry"), (["--format", "png"], "needs -o"),
        (["--format", "svg"], "needs -o"), (["-o", "-"], "name a file"), (["--format", "terminal", "-o", "x.png"], "no -o"),
        (["--list", "--addr", "h:1"], "--addr"), (["--list", "--close", "all"], "cannot be combined"), (["--close", "nope"], "nonce"),
        (["--addr", String(repeating: "a", count: 40) + ".example:7433"], "longer than 120"),
    ] as [([String], String)])
    func usageErrorsExit64AndTouchNoStore(args: [String], needle: String) throws {
        let d = TempDir()
        let r = try Tools.run("pair-qr", ["--db", d.file("o.db"), "--now", PairQRTests.now] + args)
        #expect(r.status == 64, "\(args): \(r.err)")
        #expect(r.out.isEmpty)
        #expect(r.err.hasPrefix("pair-qr: ") && r.err.contains(needle), "\(r.err)")
        #expect(!FileManager.default.fileExists(atPath: d.file("o.db")) || args.contains("--addr"))
        let s = try? Store(path: d.file("o.db"), create: false)
        #expect(try s?.db.scalarInt("SELECT count(*) FROM offers") ?? 0 == 0)
    }

    @Test func anUnwritableOutputIsAnIOErrorAndTheOfferIsClosed() throws {
        let d = TempDir()
        let db = d.file("o.db")
        let r = try Tools.run("pair-qr", ["--db", db, "--now", PairQRTests.now, "-o", d.file("no/such/dir/p.png")])
        #expect(r.status == 74)
        #expect(r.out.isEmpty)
        #expect(r.err.contains("no/such/dir/p.png"))
        #expect(try Tools.run("pair-qr", ["--db", db, "--now", PairQRTests.now, "--list"]).out.isEmpty)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: d.path).filter { $0.hasPrefix(".pair-qr") }
        #expect(leftovers.isEmpty)
    }

    @Test func aStoreThatIsNotAStoreIsRefused() throws {
        let d = TempDir()
        let junk = d.write("junk.db", "not a database at all, just text\n")
        let before = try Data(contentsOf: URL(fileURLWithPath: junk))
        let r = try Tools.run("pair-qr", ["--db", junk, "--now", PairQRTests.now])
        #expect(r.status == 65)
        #expect(r.err.contains("not a family-sync store"))
        #expect(try Data(contentsOf: URL(fileURLWithPath: junk)) == before)
    }
}
