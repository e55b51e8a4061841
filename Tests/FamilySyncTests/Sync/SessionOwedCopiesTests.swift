@testable import FamilySync
import Foundation
import Testing

/// Causality with copies owed in a session (docs/protocol.md §7.4 "Copies
/// owed"): the owner pulled a member's version back (it came in a bundle,
/// bounded by a family clock the owner has since set back), and an edit on
/// the owner replaced that copy before it went back. In the next session the
/// member, which still holds its own later-dated version, sends it again; it
/// must not beat the edit the owner made after seeing it, on either store.
@Suite struct SessionOwedCopiesTests {
    @Test func anOwnerEditOfACopyThatNeverWentBackBeatsTheMembersVersionSentAgain() throws {
        let (h, m) = try BundleReturnsTests.household(ownerEdits: true)
        let before = try #require(try InProcessHousehold.rows(m.path)["r"])
        #expect(before.line.contains(#""v":1"#))
        let (client, _) = try h.sync(m)
        for d in h.all {
            let r = try #require(try InProcessHousehold.rows(d.path)["r"])
            #expect(r.line.contains(#""v":2"#), "the owner's later edit wins on \(d.path.suffix(9)): \(r.line)")
        }
        #expect(client.localDigest != nil && client.localDigest == client.peerDigest, "one session: the copy went ahead of the edit")
        #expect(try InProcessHousehold.digest(m.path) == InProcessHousehold.digest(h.owner.path))
    }

    /// The member's own new edit, made after it saw the owner's, still wins: only the very
    /// version the copy was made of stands aside.
    @Test func theMembersNextEditStillWins() throws {
        let (h, m) = try BundleReturnsTests.household(ownerEdits: true)
        try h.sync(m)
        h.now = h.now.adding(.hours(1))
        try h.edit(m, [#"{"id":"r","type":"note","data":{"v":1}}"#])
        try h.sync(m)
        for d in h.all {
            let r = try #require(try InProcessHousehold.rows(d.path)["r"])
            #expect(r.line.contains(#""v":1"#), "the member's edit after the owner's wins on \(d.path.suffix(9)): \(r.line)")
        }
        #expect(try InProcessHousehold.digest(m.path) == InProcessHousehold.digest(h.owner.path))
    }

    /// A copy is owed until the member's HELLO says it holds the owner's change that made it.
    @Test func theCopyIsOwedUntilASessionShowsTheMemberHoldsIt() throws {
        let (h, m) = try BundleReturnsTests.household(ownerEdits: true)
        let owner = try Store(path: h.owner.path)
        #expect(try owner.supersededReturns(peer: m.id).count == 1)
        // Cut before anything of the owner's reached the member: still owed.
        try h.interruptedSync(m, cutAfter: 200)
        #expect(try owner.supersededReturns(peer: m.id).count == 1)
        try h.sync(m)
        try h.sync(m)
        #expect(try owner.supersededReturns(peer: m.id).isEmpty)
        #expect(try InProcessHousehold.rows(m.path)["r"]?.line.contains(#""v":2"#) == true)
    }

    /// Two deletes of one record by one member, an edit between them, look alike (a delete's
    /// content is only that it is deleted): the second is not a copy of the first. The owner's
    /// clock is behind since the first, so it pulls the second back where it arrives, to just
    /// after the first; neither side may keep the first as the second's copy (seed 6540).
    @Test func aSecondDeleteIsNotTakenForACopyOfTheFirst() throws {
        let h = try InProcessHousehold(members: 1, start: Timestamp(rfc3339: "2026-03-01T00:00:00.000Z")!)
        let m = h.members[0]
        try h.edit(m, [#"{"id":"r","type":"note","data":{"v":0}}"#])
        try h.sync(m)
        h.now = h.now.adding(.days(1))
        try h.edit(m, [#"{"id":"r","deleted":true}"#])
        try h.sync(m)
        let first = try #require(try h.rows(h.owner)["r"])
        h.owner.offset = .days(-30)
        h.now = h.now.adding(.days(1))
        try h.edit(m, [#"{"id":"r","type":"note","data":{"v":1}}"#])
        h.now = h.now.adding(.hours(1))
        try h.edit(m, [#"{"id":"r","deleted":true}"#])
        try h.sync(m)
        try h.sync(m)
        for d in h.all {
            let r = try #require(try h.rows(d)["r"])
            #expect(r.deleted && r.time > first.time, "the second delete, made after the edit, wins on \(d.path.suffix(9)): \(r.line)")
        }
        #expect(try h.digest(m) == h.digest(h.owner))
    }
}
