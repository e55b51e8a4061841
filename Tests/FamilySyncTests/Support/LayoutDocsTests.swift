import Foundation
import Testing

/// The README's Layout and docs/design.md name files so a newcomer finds a
/// concern by file name: every file they name exists, and the concerns a
/// reader looks for first are named.
@Suite struct LayoutDocsTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().path

    static func treeFileNames() throws -> Set<String> {
        var names = Set<String>()
        for top in ["Sources", "Tests"] {
            let e = try #require(FileManager.default.enumerator(atPath: root + "/" + top))
            for case let rel as String in e { names.insert((rel as NSString).lastPathComponent) }
        }
        return names
    }

    static func named(in text: String) -> [String] {
        let re = try! NSRegularExpression(pattern: "[A-Za-z_]+\\.(swift|c|h)\\b")
        return re.matches(in: text, range: NSRange(text.startIndex..., in: text)).map { String(text[Range($0.range, in: text)!]) }
    }

    @Test func everyFileTheDocsNameExists() throws {
        let files = try Self.treeFileNames()
        for doc in ["README.md", "docs/design.md"] {
            let text = try String(contentsOfFile: Self.root + "/" + doc, encoding: .utf8)
            let names = Self.named(in: text).filter { $0 != "main.swift" && $0 != "Package.swift" }
            #expect(!names.isEmpty, "\(doc) names no file")
            for n in names {
                let present = files.contains(n)
                #expect(present, "\(doc) names \(n), which is not in Sources/ or Tests/")
            }
        }
    }

    /// Only the Store wing runs SQL: no other source calls the database
    /// handle, and none holds an SQL statement.
    @Test func onlyTheStoreSpeaksSQL() throws {
        let re = try NSRegularExpression(pattern: #"\bdb\.(run|execute|scalar|query|prepare|transaction)|"\s*(SELECT|INSERT|UPDATE|DELETE|BEGIN|COMMIT|PRAGMA|CREATE TABLE)\s"#)
        let e = try #require(FileManager.default.enumerator(atPath: Self.root + "/Sources"))
        var checked = 0
        for case let rel as String in e where rel.hasSuffix(".swift") && !rel.hasPrefix("FamilySync/Store/") {
            let text = try String(contentsOfFile: Self.root + "/Sources/" + rel, encoding: .utf8)
            checked += 1
            for line in text.split(separator: "\n") where !line.trimmingCharacters(in: .whitespaces).hasPrefix("//") {
                let s = String(line)
                let hit = re.firstMatch(in: s, range: NSRange(s.startIndex..., in: s)) != nil
                #expect(!hit, "Sources/\(rel) speaks SQL: \(s.trimmingCharacters(in: .whitespaces))")
            }
        }
        #expect(checked > 100)
    }

    @Test func theLayoutNamesWhereTheMainConcernsLive() throws {
        let readme = try String(contentsOfFile: Self.root + "/README.md", encoding: .utf8)
        let layout = try #require(readme.components(separatedBy: "## Layout").dropFirst().first?.components(separatedBy: "\n## ").first)
        for n in ["LWWRule.swift", "ChainCheck.swift", "PhotoWaves.swift", "BusyReply.swift", "Transport/", "ErrorMapping.swift"] {
            #expect(layout.contains(n), "the README's Layout does not name \(n)")
        }
    }
}
