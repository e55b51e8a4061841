@testable import FamilySync
import Foundation
import Testing

/// Record authorship in the star (docs/protocol.md §7.4 "Authorship"): a
/// member originates versions only under its own device ID. The owner takes
/// a version that names another device from a member only with that device's
/// tag; a member takes one that names itself from another member only with
/// its own. A relay of a version its author tagged (after the owner's store
/// went back to a copy, or from a member that pulled it back) is taken.
@Suite struct RecordAuthorshipTests {
    /// A version as a member that turned against the household writes it into its own store.
    static func forged(_ id: String, by device: String, at time: Timestamp, v: Int, tail: String = "}") -> String {
        #"{"id":"\#(id)","type":"note","modifiedAt":"\#(time.rfc3339)","deviceId":"\#(device)","deleted":false,"data":{"v":\#(v)}"# + tail
    }

    /// Lines put into `d`'s store as they are (merge-records --db FILE does so: a store takes its own user's word).
    static func plant(_ h: InProcessHousehold, _ d: InProcessHousehold.Device, _ lines: [String]) throws {
        _ = try Store(path: d.path).applyRemote(try lines.map { try Record(line: $0) }, now: h.clock(d))
    }

    static func line(_ d: InProcessHousehold.Device, _ id: String) throws -> String {
        try #require(try InProcessHousehold.rows(d.path)[id]).line
    }

    @Test func theOwnerTakesNoVersionAMemberMadeUpForAnotherDevice() throws {
        let h = try InProcessHousehold(members: 2, start: Timestamp(rfc3339: "2026-05-01T00:00:00.000Z")!)
        let (hostile, honest) = (h.members[0], h.members[1])
        try h.edit(h.owner, (1...3).map { #"{"id":"o-\#($0)","type":"note","data":{"v":0}}"# })
        try h.edit(honest, [#"{"id":"m-1","type":"note","data":{"v":0}}"#])
        try h.sync(honest)
        try h.sync(hostile)
        let held = try InProcessHousehold.rows(h.owner.path)
        let o3 = try #require(held["o-3"])
        h.now = h.now.adding(.minutes(1))
        let later = h.clock(hostile)
        // A well-formed tag, made by the owner, but over other bytes.
        let stolen = String(try #require(held["o-2"]).line.suffix(Authorship.plainTail))
        try Self.plant(h, hostile, [
            Self.forged("o-1", by: h.owner.id, at: later, v: 66),
            Self.forged("o-2", by: h.owner.id, at: later, v: 66, tail: stolen),
            Self.forged("m-1", by: honest.id, at: later, v: 66),
            Self.forged("new", by: h.owner.id, at: later, v: 66),
            // The greater device ID at the very time of the owner's version: it would win the tie.
            Self.forged("o-3", by: "FFFFFFFF-FFFF-4FFF-8FFF-FFFFFFFFFFFF", at: Timestamp(milliseconds: o3.time), v: 66),
            // Its own version: a member may edit any record under its own name.
            Self.forged("h-1", by: hostile.id, at: later, v: 1),
        ])
        let (client, server) = try h.sync(hostile)
        #expect(server.recordsUnattributed == 5)
        let after = try InProcessHousehold.rows(h.owner.path)
        for id in ["o-1", "o-2", "o-3", "m-1"] {
            #expect(after[id]?.line == held[id]?.line, "\(id) on the owner: \(after[id]?.line ?? "none")")
        }
        #expect(after["new"] == nil)
        #expect(after["h-1"]?.line.contains(#""v":1"#) == true, "the member's own version is taken")
        #expect(client.localDigest != client.peerDigest, "the stores differ: the owner did not take what the member holds")
        // Nothing of it reaches the honest member.
        try h.sync(honest)
        for id in ["o-1", "o-2", "o-3", "m-1"] { #expect(try Self.line(honest, id) == held[id]?.line) }
        #expect(try InProcessHousehold.rows(honest.path)["new"] == nil)
    }

    /// The owner's store put back from a copy taken before the family's last edits: a member hands
    /// back the owner's own edit and another member's, each with its author's tag, and the owner
    /// takes both, though their authors (the owner itself, and a member that does not sync again)
    /// are not the member that relays them. The rule without tags would refuse both for good.
    @Test func aRestoredOwnerTakesBackWhatAMemberRelaysWithItsAuthorsTag() throws {
        let h = try InProcessHousehold(members: 2, start: Timestamp(rfc3339: "2026-05-01T00:00:00.000Z")!)
        let (gone, relay) = (h.members[0], h.members[1])
        let copy = h.dir + "/owner-copy.db"
        _ = try Store(path: h.owner.path).backup(to: copy)
        h.now = h.now.adding(.hours(1))
        try h.edit(h.owner, [#"{"id":"o-1","type":"note","data":{"v":1}}"#])
        try h.edit(gone, [#"{"id":"g-1","type":"note","data":{"v":1}}"#])
        try h.sync(gone)
        try h.sync(relay)
        let (o1, g1) = (try Self.line(h.owner, "o-1"), try Self.line(h.owner, "g-1"))
        #expect(o1.contains(#""authorship":""#) && g1.contains(#""authorship":""#), "stamped edits carry their author's tag")
        try h.restore(h.owner, from: copy)
        #expect(try InProcessHousehold.rows(h.owner.path)["o-1"] == nil)
        let (_, server) = try h.sync(relay)
        #expect(server.recordsUnattributed == 0)
        #expect(try Self.line(h.owner, "o-1") == o1)
        #expect(try Self.line(h.owner, "g-1") == g1)
        try h.sync(relay)
        #expect(try InProcessHousehold.digest(relay.path) == InProcessHousehold.digest(h.owner.path))
    }

    /// No member can pass off, through another member, a version as that member's own:
    /// a member takes from another member a version naming itself only with its own tag.
    @Test func aMemberTakesFromAnotherNoVersionNamingItselfThatItDidNotMake() throws {
        let h = try InProcessHousehold(members: 2, start: Timestamp(rfc3339: "2026-05-01T00:00:00.000Z")!)
        let (hostile, victim) = (h.members[0], h.members[1])
        try h.edit(victim, [#"{"id":"v-1","type":"note","data":{"v":0}}"#])
        try h.sync(victim)
        try h.sync(hostile)
        let genuine = try Self.line(victim, "v-1")
        h.now = h.now.adding(.minutes(1))
        try Self.plant(h, hostile, [Self.forged("v-1", by: victim.id, at: h.clock(hostile), v: 66)])
        var refused: Int64 = 0
        for p in try h.writeBundle(from: hostile, to: victim, maxBytes: nil) { refused += try h.applyBundle(p, at: victim).recordsUnattributed }
        #expect(refused == 1)
        #expect(try Self.line(victim, "v-1") == genuine)
        try h.sync(victim)
        #expect(try Self.line(h.owner, "v-1") == genuine)
    }

    /// A member pulls back a version another member's clock ran ahead on (a bundle between them):
    /// the copy keeps the author's tag, with the time its author gave. Its author is revoked before
    /// it reaches the owner; the member that pulled it back hands it on, and the owner takes it.
    @Test func aVersionAMemberPulledBackStillSpeaksForItsAuthor() throws {
        let h = try InProcessHousehold(members: 2, start: Timestamp(rfc3339: "2026-05-01T00:00:00.000Z")!)
        let (ahead, relay) = (h.members[0], h.members[1])
        try h.sync(ahead)
        try h.sync(relay)
        ahead.offset = .days(30)
        h.now = h.now.adding(.hours(1))
        try h.edit(ahead, [#"{"id":"a-1","type":"note","data":{"v":1}}"#])
        for p in try h.writeBundle(from: ahead, to: relay, maxBytes: nil) { _ = try h.applyBundle(p, at: relay) }
        let made = try #require(try InProcessHousehold.rows(ahead.path)["a-1"])
        let copy = try #require(try InProcessHousehold.rows(relay.path)["a-1"])
        #expect(copy.time < made.time, "the member pulls the version back to its reading of the family's clock")
        #expect(copy.line.hasSuffix("/\(Timestamp(milliseconds: made.time).rfc3339)\"}"), "\(copy.line)")
        try h.revoke(ahead)
        let (_, server) = try h.sync(relay)
        #expect(server.recordsUnattributed == 0)
        #expect(try Self.line(h.owner, "a-1") == copy.line)
    }
}
