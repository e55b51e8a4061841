import Foundation
import Testing
@testable import FamilySync

/// What the product uses in place of the parts of Foundation that
/// FoundationEssentials lacks gives Foundation's answers: the tests have
/// Foundation, so each is compared with it on seeded inputs.
@Suite struct EssentialsTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().path

    /// Foundation (with ICU's data, some 30 MB a binary) stays out of the tools.
    @Test func noProductSourceImportsFoundation() throws {
        for target in ["FamilySync", "FamilySyncCLI", "FamilySyncImaging", "family-sync", "family-sync-qr"] {
            let dir = Self.root + "/Sources/" + target
            let e = try #require(FileManager.default.enumerator(atPath: dir))
            for case let rel as String in e where rel.hasSuffix(".swift") {
                let text = try String(contentsOfFile: dir + "/" + rel, encoding: .utf8)
                let imports = text.split(separator: "\n").filter { $0.hasPrefix("import Foundation") && $0 != "import FoundationEssentials" }
                #expect(imports.isEmpty, "Sources/\(target)/\(rel): \(imports)")
            }
        }
    }

    /// NSString's answers (its Linux build traps on some inputs, so they are written out).
    @Test func pathPartsAreNSStrings() {
        let cases: [(path: String, directory: String, last: String, ext: String)] = [
            ("/a/b", "/a", "b", ""), ("/a/b/", "/a", "b", ""), ("/a", "/", "a", ""), ("/", "/", "/", ""),
            ("a", "", "a", ""), ("a/b.c", "a", "b.c", "c"), ("", "", "", ""), ("a/.d", "a", ".d", ""),
            ("f.tar.gz", "", "f.tar.gz", "gz"), ("e.", "", "e.", ""), ("../x.png", "..", "x.png", "png"),
        ]
        for c in cases {
            #expect(PathText.directory(c.path) == c.directory, "directory of '\(c.path)'")
            #expect(PathText.lastComponent(c.path) == c.last, "last component of '\(c.path)'")
            #expect(PathText.fileExtension(c.path) == c.ext, "extension of '\(c.path)'")
        }
        #expect(PathText.appending("a", "b") == "a/b")
        #expect(PathText.appending("a/", "b") == "a/b")
        #expect(PathText.appending("/", "b") == "/b")
        #expect(PathText.appending("", "b") == "b")
    }

    /// A path is its directory and its last component put together again.
    @Test(arguments: [1, 2, 3])
    func aPathIsItsDirectoryAndLastComponentOnSeededPaths(seed: UInt64) {
        var rng = SplitMix64(seed: seed)
        let pieces = ["a", "b.c", ".d", "e.", "f.tar.gz", "..", ".", "g h"]
        for _ in 0..<2000 {
            var path = (0..<Int.random(in: 1...4, using: &rng)).map { _ in pieces.randomElement(using: &rng)! }.joined(separator: "/")
            if Bool.random(using: &rng) { path = "/" + path }
            let typed = Bool.random(using: &rng) ? path + "/" : path
            #expect(PathText.appending(PathText.directory(typed), PathText.lastComponent(typed)) == path, "'\(typed)'")
            #expect(!PathText.lastComponent(typed).contains("/"))
        }
    }

    @Test(arguments: [1, 2, 3])
    func trimmingIsFoundationsOnSeededText(seed: UInt64) {
        var rng = SplitMix64(seed: seed)
        let alphabet: [Character] = [" ", "\t", "\n", "\r\n", "\u{00A0}", "\u{2003}", "\u{3000}", "\u{2028}", "\u{85}", "a", "é", "Z", "1", "\u{1F600}"]
        for _ in 0..<2000 {
            let s = String((0..<Int.random(in: 0...8, using: &rng)).map { _ in alphabet.randomElement(using: &rng)! })
            #expect(s.trimmingWhiteSpace() == s.trimmingCharacters(in: .whitespaces), "\(Array(s.unicodeScalars))")
            #expect(s.trimmingWhiteSpace(newlines: true) == s.trimmingCharacters(in: .whitespacesAndNewlines), "\(Array(s.unicodeScalars))")
        }
    }

    @Test func cFormatIsStringFormatForTheFormatsTheToolsUse() {
        var rng = SplitMix64(seed: 7)
        for _ in 0..<2000 {
            let d = Double.random(in: -1e7...1e7, using: &rng) / Double([1, 10, 1000, 1e6].randomElement(using: &rng)!)
            for f in ["%.1f", "%.2f kB", "%.6g"] {
                #expect(String(cFormat: f, d) == String(format: f, d), "\(f) of \(d)")
            }
            let u = UInt32.random(in: 0...0xFFFF, using: &rng)
            #expect(String(cFormat: "\\u%04x", u) == String(format: "\\u%04x", u))
            #expect(String(cFormat: "0x%02x", UInt32(u & 0xFF)) == String(format: "0x%02x", UInt32(u & 0xFF)))
        }
        // Longer than the first buffer.
        #expect(String(cFormat: "%.1f", 1e80) == String(format: "%.1f", 1e80))
    }

    /// A timed wait that nobody signals ends by itself, holding the lock again;
    /// one that is signalled returns true.
    @Test func aConditionsTimedWaitEndsAndASignalWakesIt() {
        let c = ThreadCondition()
        c.lock()
        #expect(c.wait(until: ThreadCondition.deadline(after: 0.01)) == false)
        c.unlock()
        let flag = Locked(false)
        Threads.detach {
            c.lock()
            flag.withLock { $0 = true }
            c.signal()
            c.unlock()
        }
        c.lock()
        while !flag.withLock({ $0 }) { _ = c.wait(until: ThreadCondition.deadline(after: 60)) }
        c.unlock()
        #expect(flag.withLock { $0 })
    }
}
