@testable import FamilySync
import Foundation
import Testing

/// A version the owner pulled back reaches it again from a device other than
/// the one that brought it (docs/protocol.md §7.4 "Copies owed"): member B's
/// edit travels to member A by file, A relays it to the owner, whose clock
/// has gone back a month, so the owner pulls it back; the owner edits the
/// record; then B sends its own version itself. The owner's edit, made after
/// it saw that version, must win on every store, in a session or by files.
@Suite struct RelayedCopiesTests {
    static func household() throws -> (InProcessHousehold, relay: InProcessHousehold.Device, author: InProcessHousehold.Device) {
        let h = try InProcessHousehold(members: 2, start: Timestamp(rfc3339: "2026-03-01T00:00:00.000Z")!)
        let (a, b) = (h.members[0], h.members[1])
        try h.edit(h.owner, [#"{"id":"r","type":"note","data":{"v":0}}"#])
        try h.sync(a)
        try h.sync(b)
        h.owner.offset = .days(-30)
        h.now = h.now.adding(.days(1))
        try h.edit(b, [#"{"id":"r","type":"note","data":{"v":1}}"#])
        try h.carry(from: b, to: a)
        try h.sync(a)
        let copy = try #require(try h.rows(h.owner)["r"])
        let original = try #require(try h.rows(b)["r"])
        #expect(copy.line.contains(#""v":1"#) && copy.time < original.time, "the owner pulls the relayed version back: \(copy.line)")
        h.now = h.now.adding(.hours(1))
        try h.edit(h.owner, [#"{"id":"r","type":"note","data":{"v":2}}"#])
        return (h, a, b)
    }

    static func expectOwnerEditEverywhere(_ h: InProcessHousehold) throws {
        try h.expectEveryStoreHolds("r", #""v":2"#, "the owner's edit, made after it saw v1, wins")
    }

    @Test func theAuthorSendingARelayedVersionItselfDoesNotBeatTheOwnersLaterEdit() throws {
        let (h, a, b) = try Self.household()
        for _ in 0..<2 {
            try h.sync(b)
            try h.sync(a)
        }
        try Self.expectOwnerEditEverywhere(h)
    }

    @Test func theSameByFiles() throws {
        let (h, a, b) = try Self.household()
        for _ in 0..<2 {
            for m in [b, a] {
                try h.carry(from: m, to: h.owner)
                try h.carry(from: h.owner, to: m)
            }
        }
        try Self.expectOwnerEditEverywhere(h)
    }

    /// A member pulls back a version it takes from another member (its reading of the family's
    /// clock is a month behind: its clock went back after its last session), then edits the
    /// record: its edit, made after it saw that version, must beat the version everywhere,
    /// though the version reaches the owner from its author as it was made.
    @Test func aMembersEditOfAVersionItPulledBackBeatsThatVersion() throws {
        let h = try InProcessHousehold(members: 2, start: Timestamp(rfc3339: "2026-03-01T00:00:00.000Z")!)
        let (author, slow) = (h.members[0], h.members[1])
        try h.edit(h.owner, [#"{"id":"r","type":"note","data":{"v":0}}"#])
        try h.sync(author)
        try h.sync(slow)
        slow.offset = .days(-30)
        h.now = h.now.adding(.days(1))
        try h.edit(author, [#"{"id":"r","type":"note","data":{"v":1}}"#])
        try h.carry(from: author, to: slow)
        let pulled = try #require(try h.rows(slow)["r"])
        let original = try #require(try h.rows(author)["r"])
        #expect(pulled.line.contains(#""v":1"#) && pulled.time < original.time, "the slow member pulls it back: \(pulled.line)")
        h.now = h.now.adding(.hours(1))
        try h.edit(slow, [#"{"id":"r","type":"note","data":{"v":2}}"#])
        for _ in 0..<2 {
            try h.sync(slow)
            try h.sync(author)
        }
        try h.expectEveryStoreHolds("r", #""v":2"#, "the slow member's edit, made after it saw v1, wins")
    }
}
