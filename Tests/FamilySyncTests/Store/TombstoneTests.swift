import Foundation
import Testing
@testable import FamilySync

/// The tombstone rule and garbage collection: young, old and unacknowledged
/// tombstones, revoked and never-synced devices, dry runs, offers and photos.
@Suite struct TombstoneTests {
    static let now = RT.t("2026-12-01T00:00:00Z")
    static let old = "2026-06-01T00:00:00.000Z", young = "2026-11-01T00:00:00.000Z"

    /// A store holding `old` tombstones t0… and live records l0…, received at
    /// `old`, and `young` tombstones y0… received at `young` (a tombstone's age
    /// is how long this store has held it, HeldSince.swift).
    static func seeded(old: Int, young: Int, live: Int) throws -> (Store, String) {
        let (store, dir) = try RT.store()
        var lines: [String] = []
        for i in 0..<old { lines.append(RT.line("t\(i)", Self.old, "D1", deleted: true)) }
        for i in 0..<live { lines.append(RT.line("l\(i)", Self.old, "D1")) }
        if !lines.isEmpty { _ = try RT.apply(store, lines.joined(separator: "\n"), now: Self.old) }
        let youngLines = (0..<young).map { RT.line("y\($0)", Self.young, "D1", deleted: true) }
        if !youngLines.isEmpty { _ = try RT.apply(store, youngLines.joined(separator: "\n"), now: Self.young) }
        return (store, dir)
    }

    static func addDevice(_ store: Store, _ id: String, sentSeq: Int64, synced: String?, revoked: Bool = false) throws {
        try store.db.run("""
            INSERT INTO devices (device_id, role, joined_at, sent_seq, last_synced_at, revoked_at) VALUES (?, 'member', 0, ?, ?, ?)
            """, [.text(id), .int(sentSeq), synced.map { .int(RT.t($0).milliseconds) } ?? .null,
                  revoked ? .int(1) : .null])
    }

    static func tombstones(_ store: Store) throws -> Int { try store.recordCounts().tombstones }

    @Test func ageAloneWhenNoDeviceIsKnown() throws {
        let (store, dir) = try Self.seeded(old: 5, young: 3, live: 4)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let r = try store.collectGarbage(now: Self.now)
        #expect(r.purged == 5)
        #expect(r.keptYoung == 3)
        #expect(r.keptUnacknowledged == 0)
        #expect(r.oldestKept == RT.t(Self.young))
        #expect(try Self.tombstones(store) == 3)
        #expect(try store.recordCounts().live == 4)
        // Idempotent.
        let again = try store.collectGarbage(now: Self.now)
        #expect(again.purged == 0 && again.keptYoung == 3)
    }

    @Test func olderThanMovesTheHorizon() throws {
        let (store, dir) = try Self.seeded(old: 2, young: 3, live: 1)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let r = try store.collectGarbage(now: Self.now, horizon: .days(10))
        #expect(r.purged == 5 && r.keptYoung == 0 && r.oldestKept == nil)
    }

    @Test func devicesThatHaveNotSyncedPastHoldTombstonesBack() throws {
        let (store, dir) = try Self.seeded(old: 6, young: 0, live: 0)  // t0…t5 have seq 1…6
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try Self.addDevice(store, "PEER-A", sentSeq: 4, synced: "2026-11-30T00:00:00Z")
        try Self.addDevice(store, "PEER-B", sentSeq: 6, synced: "2026-11-30T00:00:00Z")
        try Self.addDevice(store, "REVOKED", sentSeq: 0, synced: nil, revoked: true)
        // This device's own row (sent_seq 0) never holds anything back.
        try store.db.run("INSERT INTO devices (device_id, role, joined_at) VALUES (?, 'owner', 0)", [.text(try store.deviceID)])
        let dry = try store.collectGarbage(now: Self.now, dryRun: true)
        #expect(dry.purged == 4)
        #expect(dry.keptUnacknowledged == 2)
        #expect(try Self.tombstones(store) == 6)
        let r = try store.collectGarbage(now: Self.now)
        #expect(r.purged == 4)
        #expect(r.keptUnacknowledged == 2)
        #expect(r.heldBackBy.map(\.device.deviceID) == ["PEER-A"])
        #expect(r.heldBackBy.map(\.tombstones) == [2])
        #expect(r.oldestKept == RT.t(Self.old))
        #expect(try store.db.scalarInt("SELECT count(*) FROM records WHERE id IN ('t4', 't5')") == 2)
        // Once PEER-A acknowledges, they go.
        try store.db.run("UPDATE devices SET sent_seq = 6 WHERE device_id = 'PEER-A'")
        #expect(try store.collectGarbage(now: Self.now).purged == 2)
    }

    @Test func aDeviceThatNeverSyncedHoldsEverythingBack() throws {
        let (store, dir) = try Self.seeded(old: 3, young: 1, live: 0)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try Self.addDevice(store, "NEW", sentSeq: 0, synced: nil)
        let r = try store.collectGarbage(now: Self.now)
        #expect(r.purged == 0)
        #expect(r.keptUnacknowledged == 3)
        #expect(r.keptYoung == 1)
        #expect(r.heldBackBy.first?.device.deviceID == "NEW")
        #expect(r.json.serialized.contains(#""heldBackBy":[{"deviceId":"NEW","role":"member","name":null,"sentSeq":0,"lastSyncedAt":null,"tombstones":3}]"#))
    }

    @Test func dryRunChangesNothingAndAgreesWithTheRealRun() throws {
        let (store, dir) = try Self.seeded(old: 40, young: 7, live: 5)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        _ = try store.makeOffer(ttl: .minutes(10), address: nil, now: Self.now.subtracting(.days(1)))
        let photo = try store.addPhoto([1, 2, 3], now: Self.now.subtracting(.days(30)))
        let digest = try store.recordStateDigest()
        let dry = try store.collectGarbage(now: Self.now, dryRun: true)
        #expect(try store.recordStateDigest() == digest)
        #expect(try store.hasPhoto(photo))
        #expect(try store.db.scalarInt("SELECT count(*) FROM offers") == 1)
        let real = try store.collectGarbage(now: Self.now)
        #expect(dry.purged == real.purged && dry.keptYoung == real.keptYoung && dry.oldestKept == real.oldestKept)
        #expect(dry.offersCleared == 1 && real.offersCleared == 1)
        #expect(dry.photosPurged == 1 && real.photosPurged == 1 && real.photoBytesFreed == 3)
        #expect(dry.json.serialized.contains(#""dryRun":true"#))
    }

    @Test func manyTombstonesGoInSeveralShortTransactions() throws {
        let (store, dir) = try Self.seeded(old: 5_000, young: 0, live: 10)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let r = try store.collectGarbage(now: Self.now)
        #expect(r.purged == 5_000)
        #expect(r.transactions >= 3)  // batches start at gcBatchStart rows
        #expect(try store.integrityCheck() == "ok")
        #expect(try store.recordCounts() == (10, 0))
    }

    /// The horizon counts from when this store got a tombstone, not from the
    /// time its author's clock stamped on it: a delete dated a year ago that
    /// arrived yesterday is young here.
    @Test func aTombstoneAgesFromWhenThisStoreGotIt() throws {
        let (store, dir) = try RT.store()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        _ = try RT.apply(store, RT.line("late", "2025-11-01T00:00:00.000Z", "SLOW", deleted: true), now: "2026-11-30T00:00:00Z")
        let r = try store.collectGarbage(now: Self.now)
        #expect(r.purged == 0 && r.keptYoung == 1)
        // 90 days after it arrived, it goes, and a record of its purge stays.
        let later = try store.collectGarbage(now: RT.t("2027-03-01T00:00:00Z"))
        #expect(later.purged == 1)
        #expect(try store.purgeRecordCount() == 1)
    }

    /// A clock set back never makes a tombstone look older than it is: marks
    /// never go back in time, and a purge needs a mark from before the horizon.
    @Test func aClockSetBackCannotAgeATombstone() throws {
        let (store, dir) = try RT.store()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        _ = try RT.apply(store, RT.line("a", "2026-11-01T00:00:00.000Z", "D1"), now: "2026-11-30T00:00:00Z")
        // The clock jumps back a year; a delete arrives; the clock comes back.
        let late = try RT.apply(store, RT.line("b", "2025-11-30T00:00:00.000Z", "D1", deleted: true), now: "2025-11-30T02:00:00Z")
        #expect(late.applied == 1)
        #expect(try store.collectGarbage(now: Self.now).purged == 0)
        #expect(try store.collectGarbage(now: RT.t("2027-02-27T00:00:00Z")).purged == 0)
        #expect(try store.collectGarbage(now: RT.t("2027-03-02T00:00:00Z")).purged == 1)
    }

    /// A purge keeps a record of what it purged: an old copy of the record, from
    /// any source, is not taken back, while a version made after the delete is.
    @Test func aPurgedRecordStaysPurgedButAnEditAfterTheDeleteIsTaken() throws {
        let (store, dir) = try Self.seeded(old: 1, young: 0, live: 0)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        #expect(try store.collectGarbage(now: Self.now).purged == 1)
        let stale = try RT.apply(store, RT.line("t0", "2026-05-01T00:00:00.000Z", "D2"), now: "2026-12-01T00:00:00Z")
        #expect(stale.purged == 1 && stale.applied == 0)
        let sameDelete = try RT.apply(store, RT.line("t0", Self.old, "D1", deleted: true), now: "2026-12-01T00:00:00Z")
        #expect(sameDelete.purged == 1)
        let newer = try RT.apply(store, RT.line("t0", "2026-06-02T00:00:00.000Z", "D2"), now: "2026-12-01T00:00:00Z")
        #expect(newer.applied == 1)
        // Another id made meanwhile, however old its time, was never purged.
        let other = try RT.apply(store, RT.line("made-while-away", "2026-01-01T00:00:00.000Z", "D3"), now: "2026-12-01T00:00:00Z")
        #expect(other.applied == 1)
    }

    /// A member never purges a tombstone by itself: only the owner's purge records make it forget.
    @Test func aMemberPurgesNothingByItself() throws {
        let (store, dir) = try Self.seeded(old: 3, young: 0, live: 0)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try store.db.run("INSERT INTO meta (key, value) VALUES ('acked_by_all', '1000')")
        try store.write { try store.joinFamily(id: "11111111-2222-4333-8444-555555555555", ownerDevice: "99999999-2222-4333-8444-555555555555", secret: try SecretBytes.random(count: 32), now: Self.now) }
        #expect(try store.collectGarbage(now: Self.now).purged == 0)
        #expect(try Self.tombstones(store) == 3)
        let batch = PurgeEntry.encode([PurgeEntry(idHash: PurgeEntry.hash("t1"), deletedAt: RT.t(Self.old).milliseconds)])
        #expect(try batch.withUnsafeBytes { b in try store.write { try store.applyPurgeBatch(b) } } == 1)
        #expect(try Self.tombstones(store) == 2)
        // The same batch again changes nothing.
        #expect(try batch.withUnsafeBytes { b in try store.write { try store.applyPurgeBatch(b) } } == 0)
    }

    @Test func photosAndOffers() throws {
        let (store, dir) = try RT.store()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let referenced = try store.addPhoto(Array("kept".utf8), now: Self.now.subtracting(.days(60)))
        let orphanOld = try store.addPhoto(Array("old orphan".utf8), now: Self.now.subtracting(.days(8)))
        let orphanYoung = try store.addPhoto(Array("young orphan".utf8), now: Self.now.subtracting(.days(6)))
        _ = try RT.apply(store, RT.line("r", Self.young, "D", extra: #","photos":["\#(referenced)"]"#))
        let open = try store.makeOffer(ttl: .minutes(10), address: nil, now: Self.now)
        _ = try store.makeOffer(ttl: .minutes(10), address: nil, now: Self.now.subtracting(.minutes(11)))
        let r = try store.collectGarbage(now: Self.now)
        #expect(r.photosPurged == 1 && r.photoBytesFreed == Int64("old orphan".utf8.count))
        #expect(try store.hasPhoto(referenced) && store.hasPhoto(orphanYoung) && !store.hasPhoto(orphanOld))
        #expect(r.offersCleared == 1)
        #expect(try store.openOffers(now: Self.now).map(\.nonce) == [open.nonce])
        // A shorter grace takes the young orphan too; the referenced one stays.
        let r2 = try store.collectGarbage(now: Self.now, photoGrace: .days(1))
        #expect(r2.photosPurged == 1)
        #expect(try store.hasPhoto(referenced))
    }
}
