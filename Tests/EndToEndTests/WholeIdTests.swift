import Foundation
import Testing
import FamilySync

/// A record id is a whole string everywhere, U+0000 included: the store
/// binds and reads ids by their length, so no id stands for a shorter one.
@Suite(.serialized) struct WholeIdTests {
    /// Whether `store` holds the id "n", U+0000, "ul" live, asked without binding the id.
    static func holdsNULId(_ store: String) throws -> Bool {
        try Store(path: store).db.scalarInt("SELECT count(*) FROM records WHERE id = 'n' || char(0) || 'ul' AND deleted = 0") == 1
    }

    /// A store restored from an old copy drops what the family purged since
    /// and keeps every record its peer sends it: the id with U+0000 the
    /// owner sends is kept (read only up to its NUL it would be "n", which the owner never sent).
    @Test func aRestoredStoreKeepsARecordWhoseIdHoldsNUL() throws {
        let h = try Star(members: 2)
        defer { h.stop() }
        let (a, b) = (h.members[0], h.members[1])
        try h.edit(a, day: 0, ["{\"id\":\"n\\u0000ul\",\"type\":\"receipt\",\"data\":{}}", HouseholdStarTests.receipt("r-3", "first")])
        try h.rounds(2, day: 0)
        for s in h.all { #expect(try Self.holdsNULId(s), "\(s)") }
        let copy = h.dir.file("a-backup.db")
        #expect(try Tools.run("merge-records", ["--db", a, "--backup", copy]).status == 0)
        try h.edit(b, day: 1, ["{\"id\":\"r-3\",\"type\":\"receipt\",\"deleted\":true}"])
        try h.rounds(3, day: 1)
        try h.purgeAtOwner(day: 92, expected: 1)
        try Household.restore(a, from: copy)
        let r = try h.sync(a, day: 93)
        #expect(r.status == 0, "\(r.err)")
        #expect(try !Star.has(a, "r-3"), "the purged record is dropped")
        #expect(try Self.holdsNULId(a), "the id with U+0000 the owner sent was dropped")
        try h.rounds(1, day: 93)
        #expect(Set(try h.all.map { try Household.digest($0) }).count == 1)
    }
}
