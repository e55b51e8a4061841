import Foundation
import Testing

/// No `try!` anywhere in the product, and every force-unwrap that remains
/// says why it cannot fail, in a comment on its line or the line above. A
/// new `!` on input or I/O must become a thrown error instead, or be argued.
@Suite struct ForceUnwrapTests {
    static let sources = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Sources")

    /// `x!`, `f()!`, `a[i]!` followed by anything but `=` (which is `!=`).
    var unwrap: Regex<AnyRegexOutput> { get throws { try Regex(#"[\])A-Za-z0-9_]!(?!=)"#) } }
    /// A `!` inside a string literal is text, not an unwrap.
    var stringLiteral: Regex<AnyRegexOutput> { get throws { try Regex(#""(?:[^"\\]|\\.)*""#) } }

    struct Site: CustomStringConvertible {
        var file: String, line: Int, text: String
        var description: String { "\(file):\(line): \(text.trimmingCharacters(in: .whitespaces))" }
    }

    func swiftFiles() throws -> [URL] {
        let e = try #require(FileManager.default.enumerator(at: Self.sources, includingPropertiesForKeys: nil))
        return e.compactMap { $0 as? URL }.filter { $0.pathExtension == "swift" }.sorted { $0.path < $1.path }
    }

    func isComment(_ line: Substring) -> Bool { line.trimmingCharacters(in: .whitespaces).hasPrefix("//") }

    @Test func theProductHasNoTryBang() throws {
        var found: [Site] = []
        for url in try swiftFiles() {
            let lines = try String(contentsOf: url, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
            for (i, l) in lines.enumerated() where !isComment(l) && l.contains("try!") {
                found.append(Site(file: url.lastPathComponent, line: i + 1, text: String(l)))
            }
        }
        #expect(found.isEmpty, "try! in the product:\n\(found.map(\.description).joined(separator: "\n"))")
    }

    @Test func everyForceUnwrapSaysWhyItCannotFail() throws {
        let unwrap = try unwrap, stringLiteral = try stringLiteral
        var unexplained: [Site] = []
        var total = 0
        for url in try swiftFiles() {
            let lines = try String(contentsOf: url, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
            for (i, l) in lines.enumerated() where !isComment(l) {
                let code = String(l.split(separator: "//", maxSplits: 1, omittingEmptySubsequences: false).first ?? "")
                    .replacing(stringLiteral, with: "\"\"")
                guard code.contains(unwrap) else { continue }
                total += 1
                let explained = l.contains("//") || (i > 0 && isComment(lines[i - 1]))
                if !explained { unexplained.append(Site(file: url.lastPathComponent, line: i + 1, text: String(l))) }
            }
        }
        #expect(total > 0, "the scan found no force-unwrap at all: is it reading Sources/?")
        #expect(unexplained.isEmpty, "force-unwraps without a reason:\n\(unexplained.map(\.description).joined(separator: "\n"))")
    }
}
