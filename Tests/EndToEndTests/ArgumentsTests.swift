import Foundation
import Testing
import FamilySync

/// Arguments as people type them: shell globs, the store named in the
/// environment, a closed standard input.
@Suite struct ArgumentsTests {
    @Test func addPhotoTakesEveryFileAGlobMakes() throws {
        let dir = TempDir()
        let db = dir.file("kid.db")
        try FileManager.default.createDirectory(atPath: dir.file("photos"), withIntermediateDirectories: true)
        let files = (1...4).map { i -> String in
            let f = dir.file("photos/\(i).jpg")
            _ = FileManager.default.createFile(atPath: f, contents: Data(Household.photo(i, size: 1000 + i)))
            return f
        }
        // What the shell makes of `--add-photo photos/*.jpg`.
        let r = try Tools.run("merge-records", ["--db", db, "--add-photo"] + files)
        #expect(r.status == 0, "\(r.err)")
        #expect(r.lines.count == 4)
        #expect(r.lines.compactMap { try? JSONParser.parse($0)["file"]?.stringValue } == files)
        #expect(try Household.photoCount(db) == 4)
        // Repeated --add-photo still works, mixed with the plain form.
        let r2 = try Tools.run("merge-records", ["--db", db, "--add-photo", files[0], "--add-photo", files[1], files[2]])
        #expect(r2.status == 0 && r2.lines.count == 3, "\(r2.err)")
        // One unreadable file: nothing is kept (one transaction).
        let before = try Household.fingerprint(db)
        let f5 = dir.file("photos/5.jpg")
        _ = FileManager.default.createFile(atPath: f5, contents: Data(Household.photo(5)))
        let bad = try Tools.run("merge-records", ["--db", db, "--add-photo", f5, dir.file("photos/missing.jpg")])
        #expect(bad.status == 66, "\(bad.err)")
        #expect(try Household.fingerprint(db) == before)
    }

    static let edit = "{\"id\":\"r-1\",\"type\":\"receipt\",\"modifiedAt\":\"2026-11-30T10:00:00Z\",\"deviceId\":\"D\",\"deleted\":false,\"data\":{}}\n"

    /// $FAMILY_SYNC_DB names the store for every store mode, exactly as --db does.
    @Test func familySyncDBWorksForEveryStoreMode() throws {
        let dir = TempDir()
        let db = dir.file("env.db")
        let env = ["FAMILY_SYNC_DB": db]
        let f = dir.write("theirs.ndjson", Self.edit)
        let apply = try Tools.run("merge-records", [f], env: env)
        #expect(apply.status == 0, "\(apply.err)")
        #expect(apply.json?.int("applied") == 1)
        let stdinApply = try Tools.run("merge-records", [], input: Self.edit.replacingOccurrences(of: "r-1", with: "r-2"), env: env)
        #expect(stdinApply.status == 0 && stdinApply.json?.int("applied") == 1, "\(stdinApply.err)")
        let stamp = try Tools.run("merge-records", ["--stamp"], input: "{\"id\":\"r-3\",\"type\":\"receipt\"}\n", env: env)
        #expect(stamp.status == 0, "\(stamp.err)")
        let export = try Tools.run("merge-records", ["--export"], env: env)
        #expect(export.status == 0 && export.lines.count == 3, "\(export.err)")
        // Two inputs are still the pure merge, store untouched.
        let before = try Household.fingerprint(db)
        let pure = try Tools.run("merge-records", [f, f], env: env)
        #expect(pure.status == 0 && pure.lines.count == 1, "\(pure.err)")
        #expect(try Household.fingerprint(db) == before)
        // jws-verify checks the store's proof: none kept, so free, with the store's reason.
        let check = try Tools.run("jws-verify", [], env: env)
        #expect(check.status == 1, "\(check.err)")
        #expect(check.json?["reason"]?.stringValue == "no-proof", "\(check.out)")
        let status = try Tools.run("peer-sync", ["status"], env: env)
        let device = try Household.device(db)
        #expect(status.status == 0 && status.json?["device"]?.stringValue == device, "\(status.err)")
        let gc = try Tools.run("tombstone-gc", ["--dry-run"], env: env)
        #expect(gc.status == 0, "\(gc.err)")
        // --db wins over the environment.
        let other = dir.file("other.db")
        let r = try Tools.run("merge-records", ["--db", other, f], env: env)
        let otherCount = try Household.recordCount(other)
        #expect(r.status == 0 && otherCount == 1)
        #expect(try Household.recordCount(db) == 3)
    }

    /// `<&-`: every mode that reads standard input says it is closed (66),
    /// and nothing lands on descriptor 0 to be read as input by mistake.
    @Test(arguments: [
        ("merge-records", ["--db", "STORE", "--stamp"]),
        ("merge-records", ["--db", "STORE"]),
        ("merge-records", ["-", "OTHER"]),
        ("jws-verify", ["--bundle-id", "com.example"]),
        ("jws-verify", ["--db", "STORE", "--save", "--bundle-id", "com.example"]),
        ("peer-sync", ["join", "--db", "STORE"]),
        ("pair-scan", []),
        ("pair-scan", ["-"]),
    ])
    func aClosedStandardInputIsNoInputInEveryMode(tool: String, args: [String]) throws {
        let dir = TempDir()
        let store = dir.file("s.db")
        let other = dir.write("other.ndjson", Self.edit)
        let argv = args.map { $0 == "STORE" ? store : $0 == "OTHER" ? other : $0 }
        let cmd = ([Tools.path(tool)] + argv).map { "'\($0)'" }.joined(separator: " ") + " <&-"
        let r = try Tools.run("/bin/sh", ["-c", cmd])
        #expect(r.status == 66, "\(r.err)")
        #expect(r.err.hasPrefix("\(tool): <stdin>: standard input is closed"), "\(r.err)")
        #expect(r.out.isEmpty, "\(r.out)")
        if FileManager.default.fileExists(atPath: store) {
            #expect(try Household.recordCount(store) == 0)
        }
    }
}
