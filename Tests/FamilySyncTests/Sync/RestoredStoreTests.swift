@testable import FamilySync
import Foundation
import Testing

/// A store put back from a copy (docs/protocol.md §4.6) cannot tell which of
/// its own edits left it after the copy was made: the copy says "not sent yet"
/// of an edit that went out meanwhile. Causality must hold anyway: an edit made
/// on it after it saw a version beats that version everywhere, whatever the
/// device's clock says (docs/design.md §3.1).
@Suite struct RestoredStoreTests {
    /// A member edits `r` (seen by the owner before), a copy of its store is
    /// taken, and the edit goes out in a session; then the copy is put back.
    static func restoredMember() throws -> (InProcessHousehold, InProcessHousehold.Device) {
        let h = try InProcessHousehold(members: 1, start: Timestamp(rfc3339: "2026-03-01T00:00:00.000Z")!)
        let m = h.members[0]
        try h.edit(h.owner, [#"{"id":"r","type":"note","data":{"v":0}}"#])
        try h.sync(m)
        h.now = h.now.adding(.days(1))
        try h.edit(m, [#"{"id":"r","type":"note","data":{"v":1}}"#])
        let copy = h.dir + "/m-copy.db"
        _ = try h.store(m).backup(to: copy)
        h.now = h.now.adding(.hours(1))
        try h.sync(m)
        #expect(try h.rows(h.owner)["r"]?.line.contains(#""v":1"#) == true)
        try h.restore(m, from: copy)
        return (h, m)
    }

    static func expectDeletedEverywhere(_ h: InProcessHousehold, _ why: String) throws {
        for d in h.all {
            let r = try #require(try h.rows(d)["r"])
            #expect(r.deleted, "\(why): the delete, made after the edit it replaces, wins on \(d.path.suffix(9)): \(r.line)")
        }
    }

    /// The restored member's clock is 100 days behind (a CMOS reset after its last session): it
    /// deletes `r`, which it holds as its own edit, and carries the delete to the owner in a file,
    /// whose bound is its own reading of the family's clock, 100 days back.
    @Test func aDeleteOfAnOwnEditThatLeftAfterTheCopyWinsByFile() throws {
        let (h, m) = try Self.restoredMember()
        h.now = h.now.adding(.hours(1))
        m.offset = .days(-100)
        try h.edit(m, [#"{"id":"r","deleted":true}"#])
        try h.carry(from: m, to: h.owner)
        try h.carry(from: h.owner, to: m)
        try Self.expectDeletedEverywhere(h, "by files")
        try h.sync(m)
        try Self.expectDeletedEverywhere(h, "after a session")
        #expect(try h.digest(m) == h.digest(h.owner))
    }

    /// The same in a session, the owner's clock set back a month since the edit went out: the
    /// session's bound is below the edit the delete replaced.
    @Test func aDeleteOfAnOwnEditThatLeftAfterTheCopyWinsInASession() throws {
        let (h, m) = try Self.restoredMember()
        h.now = h.now.adding(.hours(1))
        h.owner.offset = .days(-30)
        try h.edit(m, [#"{"id":"r","deleted":true}"#])
        try h.sync(m)
        try h.sync(m)
        try Self.expectDeletedEverywhere(h, "in a session")
        #expect(try h.digest(m) == h.digest(h.owner))
    }

    /// The restored member's own edit that went out after the copy comes back to it, byte for
    /// byte, in the owner's file: it has left the store after all, and goes on as it is. Pulled
    /// back now to a clock 100 days behind, it would be a second copy the owner never takes,
    /// and files alone would never bring the two together (seed 2557).
    @Test func anUnsentEditAPeerSendsBackIsSentAsItIs() throws {
        let (h, m) = try Self.restoredMember()
        m.offset = .days(-100)
        try h.carry(from: h.owner, to: m)
        try h.carry(from: m, to: h.owner)
        try h.carry(from: h.owner, to: m)
        #expect(try h.digest(m) == h.digest(h.owner))
        #expect(try h.rows(m)["r"]?.line.contains(#""v":1"#) == true)
    }

    /// Bundles alone (docs/protocol.md §12b): a member writes a bundle the owner applies, then
    /// its store is put back from a copy taken before, and it makes as many new changes as the
    /// owner holds of the lost ones, reusing their change numbers. The owner's acknowledgement
    /// of the lost ones must not make the member skip the new ones.
    static func writerPutBack(newChanges: Int) throws -> (InProcessHousehold, InProcessHousehold.Device) {
        let h = try InProcessHousehold(members: 1, start: Timestamp(rfc3339: "2026-03-01T00:00:00.000Z")!)
        let m = h.members[0]
        try h.edit(m, [#"{"id":"a","type":"note","data":{"v":0}}"#])
        try h.carry(from: m, to: h.owner)
        try h.carry(from: h.owner, to: m)
        let copy = h.dir + "/m-copy.db"
        _ = try h.store(m).backup(to: copy)
        h.now = h.now.adding(.hours(1))
        try h.edit(m, (0..<3).map { #"{"id":"lost-\#($0)","type":"note"}"# })
        try h.carry(from: m, to: h.owner)
        try h.restore(m, from: copy)
        h.now = h.now.adding(.hours(1))
        for i in 0..<newChanges { try h.edit(m, [#"{"id":"new-\#(i)","type":"note"}"#]) }
        return (h, m)
    }

    /// Two rounds of files, the owner's first, then what the owner must hold.
    static func expectNewRecordsAtOwnerAfterTwoRounds(_ h: InProcessHousehold, _ m: InProcessHousehold.Device, _ count: Int) throws {
        for _ in 0..<2 {
            try h.carry(from: h.owner, to: m)
            try h.carry(from: m, to: h.owner)
        }
        #expect(try h.digest(m) == h.digest(h.owner))
        let owner = try h.rows(h.owner)
        for i in 0..<count { #expect(owner["new-\(i)"] != nil, "new-\(i), made after the store was put back, reaches the owner by files") }
    }

    @Test func aWriterPutBackFromACopyDoesNotSkipItsNewChanges() throws {
        let (h, m) = try Self.writerPutBack(newChanges: 3)
        try Self.expectNewRecordsAtOwnerAfterTwoRounds(h, m, 3)
    }

    /// More new changes than the lost ones, in small parts, the first part lost: what the
    /// other parts bring meets the lost history's range, but must not count as held.
    @Test func aLostPartFromAWriterPutBackIsSentAgain() throws {
        let (h, m) = try Self.writerPutBack(newChanges: 5)
        let parts = try h.writeBundle(from: m, to: h.owner, maxBytes: 300)
        #expect(parts.count > 2)
        for p in parts.dropFirst() { _ = try h.applyBundle(p, at: h.owner) }
        try Self.expectNewRecordsAtOwnerAfterTwoRounds(h, m, 5)
    }

    /// What the rule costs, and what still bounds it: a member whose clock jumped 200 days
    /// ahead after its last session edits `r` twice offline. The second edit leaves it no
    /// lower than just after the first (which it may have sent from a store since put back),
    /// so it leaves past the session's bound; the owner pulls it back where it arrives, the
    /// member takes the owner's copy, and an edit made an hour later on another device wins.
    @Test func anEditOfAnUnsentEditFromAClockAheadIsBoundedWhereItArrives() throws {
        let h = try InProcessHousehold(members: 2, start: Timestamp(rfc3339: "2026-03-01T00:00:00.000Z")!)
        let (fast, other) = (h.members[0], h.members[1])
        try h.edit(h.owner, [#"{"id":"r","type":"note","data":{"v":0}}"#])
        try h.sync(fast)
        try h.sync(other)
        h.now = h.now.adding(.days(1))
        fast.offset = .days(200)
        try h.edit(fast, [#"{"id":"r","type":"note","data":{"v":1}}"#])
        try h.edit(fast, [#"{"id":"r","type":"note","data":{"v":2}}"#])
        try h.sync(fast)
        // The session's clock runs on from the test's by the milliseconds the session takes.
        let bound = h.clock(h.owner).adding(LWW.maxClockSkew).milliseconds + 1_000
        let atOwner = try #require(try h.rows(h.owner)["r"])
        #expect(atOwner.line.contains(#""v":2"#) && atOwner.time <= bound, "pulled back where it arrived: \(atOwner.line), bound \(Timestamp(milliseconds: bound).rfc3339)")
        h.now = h.now.adding(.hours(1))
        try h.edit(other, [#"{"id":"r","type":"note","data":{"v":3}}"#])
        for _ in 0..<2 {
            try h.sync(other)
            try h.sync(fast)
        }
        try h.expectEveryStoreHolds("r", #""v":3"#, "the edit made an hour later wins")
    }
}
