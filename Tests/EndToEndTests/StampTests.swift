import Foundation
import Testing
import FamilySync

/// merge-records --stamp is safe to repeat, a delete needs only its id, and
/// a photo named but not held is said; peer-sync status lists wanted photos.
@Suite struct StampTests {
    static let t1 = "2026-11-01T10:00:00.000Z", t2 = "2026-11-02T10:00:00.000Z"

    func stamp(_ db: String, _ text: String, at now: String) throws -> ToolResult {
        try Tools.run("merge-records", ["--db", db, "--stamp", "--now", now], input: text)
    }

    @Test func restampingUnchangedContentKeepsTheVersion() throws {
        let dir = TempDir()
        let db = dir.file("s.db")
        let edits = "{\"id\":\"r-1\",\"type\":\"receipt\",\"data\":{\"total\":\"12.50\"}}\n{\"id\":\"r-2\",\"type\":\"receipt\",\"data\":{\"total\":\"3.00\"}}\n"
        var r = try stamp(db, edits, at: Self.t1)
        #expect(r.status == 0 && r.json?.int("applied") == 2, "\(r.err)")
        let before = try Tools.run("merge-records", ["--db", db, "--export"]).out
        // A retry, and the store's own export piped back: nothing is re-stamped.
        r = try stamp(db, edits, at: Self.t2)
        #expect(r.json?.int("unchanged") == 2 && r.json?.int("applied") == 0, "\(r.out)")
        r = try stamp(db, before, at: Self.t2)
        #expect(r.json?.int("unchanged") == 2 && r.json?.int("applied") == 0, "\(r.out)")
        #expect(try Tools.run("merge-records", ["--db", db, "--export"]).out == before, "same modifiedAt and deviceId")
        // A real change is stamped.
        r = try stamp(db, "{\"id\":\"r-1\",\"type\":\"receipt\",\"data\":{\"total\":\"13.00\"}}\n", at: Self.t2)
        #expect(r.json?.int("applied") == 1)
        #expect(try Tools.run("merge-records", ["--db", db, "--export"]).out.contains(Self.t2))
    }

    @Test func aDeleteNeedsOnlyItsId() throws {
        let dir = TempDir()
        let db = dir.file("s.db")
        _ = try stamp(db, "{\"id\":\"r-2\",\"type\":\"receipt\",\"data\":{\"total\":\"3.00\"}}\n", at: Self.t1)
        var r = try stamp(db, "{\"id\":\"r-2\",\"deleted\":true}\n", at: Self.t2)
        #expect(r.status == 0 && r.json?.int("deleted") == 1, "\(r.err)")
        let line = try #require(try Store(path: db).db.scalarText("SELECT line FROM records WHERE id = 'r-2'"))
        // The tombstone carries the held type, so every peer accepts it.
        let rec = try Record(line: line)
        #expect(rec.deleted && rec.type == "receipt", "\(line)")
        // Deleting again is unchanged; an id the store does not hold needs its type.
        r = try stamp(db, "{\"id\":\"r-2\",\"deleted\":true}\n", at: Self.t2)
        #expect(r.json?.int("unchanged") == 1, "\(r.out)")
        let before = try Household.fingerprint(db)
        r = try stamp(db, "{\"id\":\"nope\",\"deleted\":true}\n", at: Self.t2)
        #expect(r.status == 65 && r.err.contains("'type': missing"), "\(r.err)")
        #expect(try Household.fingerprint(db) == before)
    }

    @Test func aPhotoNotHeldIsWarnedAboutAndListedAsWanted() throws {
        let dir = TempDir()
        let db = dir.file("s.db")
        let hash = String(repeating: "ab", count: 32)
        let r = try stamp(db, "{\"id\":\"r-9\",\"type\":\"receipt\",\"photos\":[\"\(hash)\"]}\n{\"id\":\"r-10\",\"type\":\"receipt\",\"photos\":[\"\(hash)\"]}\n", at: Self.t1)
        #expect(r.status == 0)
        #expect(r.err.contains("record r-10, r-9 names photo \(hash)"), "\(r.err)")
        let st = try #require(try Tools.run("peer-sync", ["status", "--db", db]).json)
        #expect(st.int("photos", "wanted") == 1)
        let list = try #require(st.at("photos", "wantedList")?.arrayValue)
        #expect(list.first?["sha256"]?.stringValue == hash)
        #expect(list.first?["records"]?.arrayValue?.compactMap(\.stringValue) == ["r-10", "r-9"])
        // Once the photo is held, nothing is said.
        let again = try stamp(db, "{\"id\":\"r-11\",\"type\":\"receipt\"}\n", at: Self.t2)
        #expect(again.err.isEmpty)
    }
}
