import Foundation
import Testing
@testable import FamilySync

/// docs/protocol.md §4.4, §4.5: the session after a join has no exception
/// (the owner knows nothing of the joining store's past, and needs not):
/// every purge batch goes to it, what they cover is refused and dropped,
/// what it made is kept; and in the session where the owner forgets a
/// member's acknowledgement points, `acked` is 0.
@Suite struct SessionAfterJoinTests {
    static let start = Timestamp(rfc3339: "2026-12-01T10:00:00.000Z")!

    /// A household whose owner deleted and purged `x`.
    static func purgedHousehold() throws -> InProcessHousehold {
        let h = try InProcessHousehold(members: 1, start: start)
        let m = h.members[0]
        try h.edit(h.owner, [#"{"id":"x","type":"note","data":{"v":1}}"#])
        try h.sync(m)
        h.now = h.now.adding(.minutes(1))
        try h.edit(h.owner, [#"{"id":"x","deleted":true}"#])
        try h.sync(m)
        try h.sync(m)
        h.now = h.now.adding(.days(92))
        try h.sync(m)
        try h.sync(m)
        #expect(try h.gc(h.owner).purged == 1)
        return h
    }

    @Test func aStoreNeverInTheFamilyGetsEveryPurgeBatchAndKeepsWhatItMade() throws {
        let h = try Self.purgedHousehold()
        // A store never in this family, holding a version of x older than the purged delete, and y, which it made.
        let path = h.dir + "/stranger.db"
        let s = try Store(path: path)
        _ = try s.applyRemote([try Record(line: #"{"id":"x","type":"note","modifiedAt":"2026-12-01T09:00:00.000Z","deviceId":"S","deleted":false}"#)],
                              now: h.now)
        _ = try s.applyLocalEdits([try Record(line: #"{"id":"y","type":"note"}"#, mode: .localEdit)], now: Timestamp(rfc3339: "2026-12-01T09:00:00.000Z")!)
        let d = InProcessHousehold.Device(path: path, isOwner: false, offset: .seconds(0), id: try s.deviceID)
        try h.rejoin(d)
        let rows = try InProcessHousehold.rows(path)
        #expect(rows["x"] == nil, "the purged record came back on the joining store")
        #expect(rows["y"] != nil)
        #expect(try InProcessHousehold.rows(h.owner.path)["x"] == nil)
        #expect(try InProcessHousehold.rows(h.owner.path)["y"] != nil)
        // The next session: the stores agree.
        try h.sync(d)
        #expect(try InProcessHousehold.digest(path) == InProcessHousehold.digest(h.owner.path))
    }

    @Test func ackedIsZeroInTheSessionWhereThePointsAreForgotten() throws {
        let h = try Self.purgedHousehold()
        let m = h.members[0]
        let copy = h.dir + "/copy.db"
        for suffix in ["", "-wal"] where FileManager.default.fileExists(atPath: m.path + suffix) {
            try FileManager.default.copyItem(atPath: m.path + suffix, toPath: copy + suffix)
        }
        try h.edit(h.owner, [#"{"id":"z","type":"note"}"#])
        try h.sync(m)
        try h.sync(m)
        #expect(try Store(path: m.path).acknowledgedByFamily > 0)
        // The member's store goes back to the copy: HELLO shows it, the owner forgets its points.
        try h.replacingStore(m) {
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: m.path + suffix) }
            for suffix in ["", "-wal"] where FileManager.default.fileExists(atPath: copy + suffix) {
                try FileManager.default.copyItem(atPath: copy + suffix, toPath: m.path + suffix)
            }
        }
        try h.sync(m)
        #expect(try Store(path: m.path).acknowledgedByFamily == 0)
        // A completed session after that gives it a point again, from which acked grows.
        try h.sync(m)
        try h.sync(m)
        #expect(try Store(path: m.path).acknowledgedByFamily > 0)
    }
}
