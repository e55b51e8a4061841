@testable import FamilySync
import Foundation
import Testing

/// Bundles alone (docs/protocol.md §12b): the owner's pulled-back copy of a
/// member's version goes back to the member even when an edit on the owner
/// replaced it first, so the member takes the copy and then the edit, and the
/// stores agree with no session.
@Suite struct BundleReturnsTests {
    /// A member that last heard the owner's clock before it went back a month edits
    /// a record; the owner pulls the edit back, edits the record, and sends a bundle.
    static func household(ownerEdits: Bool) throws -> (InProcessHousehold, InProcessHousehold.Device) {
        let h = try InProcessHousehold(members: 1, start: Timestamp(rfc3339: "2026-03-01T00:00:00.000Z")!)
        let m = h.members[0]
        try h.edit(h.owner, [#"{"id":"r","type":"note","data":{"v":0}}"#])
        try h.sync(m)
        h.owner.offset = .days(-30)
        h.now = h.now.adding(.days(1))
        try h.edit(m, [#"{"id":"r","type":"note","data":{"v":1}}"#])
        for p in try h.writeBundle(from: m, to: h.owner, maxBytes: nil) { _ = try h.applyBundle(p, at: h.owner) }
        let pulled = try #require(try InProcessHousehold.rows(h.owner.path)["r"])
        let own = try #require(try InProcessHousehold.rows(m.path)["r"])
        #expect(pulled.time < own.time, "the owner pulls the member's edit back to its clock")
        if ownerEdits {
            h.now = h.now.adding(.hours(1))
            try h.edit(h.owner, [#"{"id":"r","type":"note","data":{"v":2}}"#])
        }
        return (h, m)
    }

    @Test func anOwnerEditOfAPulledBackCopyReachesTheMemberByBundlesAlone() throws {
        let (h, m) = try Self.household(ownerEdits: true)
        // Two small parts, applied last part first: the copy leads every part.
        let parts = try h.writeBundle(from: h.owner, to: m, maxBytes: 300)
        for p in parts.reversed() { _ = try h.applyBundle(p, at: m) }
        #expect(try InProcessHousehold.digest(m.path) == InProcessHousehold.digest(h.owner.path))
        let r = try #require(try InProcessHousehold.rows(m.path)["r"])
        #expect(r.line.contains(#""v":2"#), "the owner's edit wins on the member: \(r.line)")
    }

    @Test func theCopyIsOwedUntilTheMemberAcknowledgesIt() throws {
        let (h, m) = try Self.household(ownerEdits: true)
        let owner = try Store(path: h.owner.path)
        #expect(try owner.supersededReturns(peer: m.id).count == 1)
        // A bundle lost on the way: the copy is still owed, and the member's version that comes
        // again (it does not know the owner has it) does not beat the edit made after the copy.
        _ = try h.writeBundle(from: h.owner, to: m, maxBytes: nil)
        for p in try h.writeBundle(from: m, to: h.owner, maxBytes: nil) { _ = try h.applyBundle(p, at: h.owner) }
        #expect(try owner.supersededReturns(peer: m.id).count == 1)
        let held = try #require(try InProcessHousehold.rows(h.owner.path)["r"])
        #expect(held.line.contains(#""v":2"#), "the owner keeps its edit: \(held.line)")
        // Delivered, and acknowledged in the member's next bundle: no longer.
        for p in try h.writeBundle(from: h.owner, to: m, maxBytes: nil) { _ = try h.applyBundle(p, at: m) }
        for p in try h.writeBundle(from: m, to: h.owner, maxBytes: nil) { _ = try h.applyBundle(p, at: h.owner) }
        #expect(try owner.supersededReturns(peer: m.id).isEmpty)
        #expect(try InProcessHousehold.digest(m.path) == InProcessHousehold.digest(h.owner.path))
    }

    /// Only the very version the copy was made of stands aside: the member's new edit back to
    /// the same content, made after it saw the owner's edit, comes in while the copy is owed.
    @Test func aNewEditWithTheSameContentIsNotTakenForTheOldOne() throws {
        let (h, m) = try Self.household(ownerEdits: true)
        // The owner's edit reaches the member in the last of several parts, the others lost:
        // the member's cursor stays behind the gap, so the copy stays owed.
        try h.edit(h.owner, [#"{"id":"a","type":"note","data":{"v":0}}"#, #"{"id":"b","type":"note","data":{"v":0}}"#])
        h.now = h.now.adding(.minutes(1))
        try h.edit(h.owner, [#"{"id":"r","type":"note","data":{"v":3}}"#])
        let parts = try h.writeBundle(from: h.owner, to: m, maxBytes: 300)
        #expect(parts.count > 1)
        _ = try h.applyBundle(try #require(parts.last), at: m)
        #expect(try InProcessHousehold.rows(m.path)["r"]?.line.contains(#""v":3"#) == true)
        h.now = h.now.adding(.hours(1))
        try h.edit(m, [#"{"id":"r","type":"note","data":{"v":1}}"#])
        for p in try h.writeBundle(from: m, to: h.owner, maxBytes: nil) { _ = try h.applyBundle(p, at: h.owner) }
        let r = try #require(try InProcessHousehold.rows(h.owner.path)["r"])
        #expect(r.line.contains(#""v":1"#), "the member's new edit reaches the owner: \(r.line)")
    }

    /// A session between the bundles: the member sends its version again, the owner keeps
    /// its edit and sends the copy ahead of it (SessionOwedCopiesTests), and a bundle after
    /// that keeps the stores equal.
    @Test func aBundleAfterASessionThatSentTheCopyKeepsTheStoresEqual() throws {
        let (h, m) = try Self.household(ownerEdits: true)
        try h.sync(m)
        #expect(try InProcessHousehold.digest(m.path) == InProcessHousehold.digest(h.owner.path))
        for p in try h.writeBundle(from: h.owner, to: m, maxBytes: nil) { _ = try h.applyBundle(p, at: m) }
        #expect(try InProcessHousehold.digest(m.path) == InProcessHousehold.digest(h.owner.path))
        #expect(try InProcessHousehold.rows(m.path)["r"]?.line.contains(#""v":2"#) == true)
    }

    @Test func aCopyNotReplacedGoesWithItsRowOnly() throws {
        let (h, m) = try Self.household(ownerEdits: false)
        #expect(try Store(path: h.owner.path).supersededReturns(peer: m.id).isEmpty)
        for p in try h.writeBundle(from: h.owner, to: m, maxBytes: nil) { _ = try h.applyBundle(p, at: m) }
        #expect(try InProcessHousehold.digest(m.path) == InProcessHousehold.digest(h.owner.path))
    }

    /// A member's edit, made after the owner's concurrent one and not sent yet, keeps the owner's
    /// version out when the owner's file brings it; then the member's clock has gone back 30 days
    /// since it last heard the family's, and its file pulls its edit back below the owner's, which
    /// wins there. The owner's version goes back to the member, whose acknowledgement covers it
    /// (seeds 3435, 4409, 9893): files alone agree again.
    @Test func aVersionThatBeatsWhatTheWriterSentGoesBackToIt() throws {
        let h = try InProcessHousehold(members: 1, start: Timestamp(rfc3339: "2026-03-01T00:00:00.000Z")!)
        let m = h.members[0]
        try h.edit(h.owner, [#"{"id":"r","type":"note","data":{"v":0}}"#])
        try h.sync(m)
        h.now = h.now.adding(.days(1))
        try h.edit(h.owner, [#"{"id":"r","type":"note","data":{"v":1}}"#])
        h.now = h.now.adding(.hours(1))
        try h.edit(m, [#"{"id":"r","type":"note","data":{"v":2}}"#])
        m.offset = .days(-30)
        try h.carry(from: h.owner, to: m)
        #expect(try h.rows(m)["r"]?.line.contains(#""v":2"#) == true, "the member's later edit keeps the owner's out")
        try h.carry(from: m, to: h.owner)
        try h.carry(from: h.owner, to: m)
        #expect(try h.digest(m) == h.digest(h.owner))
    }
}
