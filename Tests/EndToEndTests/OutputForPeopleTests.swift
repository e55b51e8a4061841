import Foundation
import Testing
import FamilySync

/// Output for people and for pipes: a reader that closes the pipe ends a
/// tool quietly, and a byte-order mark an editor put at the start of the
/// input is no part of it.
@Suite struct OutputForPeopleTests {
    /// `tool ... | head -1`: the tool stops quietly with 141 (documented), as cat does.
    @Test func aClosedPipeEndsQuietlyWith141() throws {
        let dir = TempDir()
        let db = dir.file("s.db")
        var edits = ""
        for i in 0..<5000 { edits += "{\"id\":\"r-\(i)\",\"type\":\"note\",\"data\":{\"text\":\"a line long enough to fill a pipe quickly \(i)\"}}\n" }
        #expect(try Tools.run("merge-records", ["--db", db, "--stamp"], input: edits).status == 0)
        let script = "\"$0\" --db \"$1\" --export 2>\"$2\" | head -1 >/dev/null; echo \"${PIPESTATUS[0]}\""
        let r = try Tools.run("/bin/bash", ["-c", script, Tools.path("merge-records"), db, dir.file("err")])
        #expect(r.out == "141\n", "\(r.out) \(r.err)")
        #expect((try String(contentsOfFile: dir.file("err"), encoding: .utf8)).isEmpty)
        // The exit-status table says so.
        let man = try Tools.run("merge-records", ["--generate-manpage"]).out
        #expect(man.contains("141"))
    }

    static let bom = "\u{FEFF}"

    /// A UTF-8 byte-order mark at the start of input is skipped, in every reader.
    @Test func aByteOrderMarkAtTheStartIsSkipped() throws {
        let dir = TempDir()
        let line = "{\"id\":\"a\",\"type\":\"note\",\"modifiedAt\":\"2026-01-01T00:00:00.000Z\",\"deviceId\":\"D\",\"deleted\":false,\"data\":{}}\n"
        // Store mode (a line reader) and pure mode (the whole input in memory).
        let applied = try Tools.run("merge-records", ["--db", dir.file("s.db")], input: Self.bom + line)
        #expect(applied.status == 0, "\(applied.err)")
        #expect(applied.json?.int("applied") == 1)
        let local = dir.write("local.ndjson", Self.bom + line)
        let pure = try Tools.run("merge-records", [local, dir.write("remote.ndjson", "")])
        #expect(pure.status == 0, "\(pure.err)")
        #expect(pure.out == line)
        // jws-verify reads the token after the mark.
        let pki = OpenSSLPKI.shared
        let t = try pki.token(payload: pki.transaction().json)
        let v = try Tools.run("jws-verify", ["--root", pki.rootPEM, "--bundle-id", "com.example.family", "--now", pki.madeAt.adding(.days(1)).rfc3339],
                              input: Self.bom + t + "\n")
        #expect(v.status == 0, "\(v.out) \(v.err)")
        // A mark anywhere else is no mark: it is named as the bad byte it is.
        let later = try Tools.run("merge-records", ["--db", dir.file("s.db")], input: line + Self.bom + line)
        #expect(later.status == 65, "\(later.err)")
        #expect(later.err.contains("<stdin>:2"), "\(later.err)")
    }
}
