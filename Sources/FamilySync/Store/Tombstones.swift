import CSQLite
import Dispatch
import FoundationEssentials
import Glibc

/// The tombstone rule (docs/design.md §4) and the store's garbage
/// collection: tombstones old enough and acknowledged by every known device,
/// expired pairing offers, and photo files no live record names.
///
/// A tombstone T (a `records` row with `deleted = 1`) is purged when both hold:
/// - its `modifiedAt` (the delete time) is earlier than now − horizon, and
/// - `T.seq` is at or below `acknowledgedSeq()`: every current device has
///   heard of it. On the owner (or a store in no family) that is every
///   device in `devices` other than this one, and not revoked, having
///   `sent_seq >= T.seq`; a device that never synced has `sent_seq = 0` and
///   holds every tombstone back. A member purges by what the owner says all
///   current devices acknowledged. A store that knows no other device purges
///   on age alone.
/// Each purge raises the store's purge floor (Acknowledgements.swift) to the
/// latest delete time purged, in the same transaction.
public struct GarbageReport: Sendable {
    public var purged = 0
    public var keptYoung = 0
    public var keptUnacknowledged = 0
    /// The devices holding tombstones back, with how many each holds.
    public var heldBackBy: [(device: DeviceInfo, tombstones: Int)] = []
    /// The delete time of the oldest tombstone left, if any.
    public var oldestKept: Timestamp?
    public var offersCleared = 0
    public var photosPurged = 0
    public var photoBytesFreed: Int64 = 0
    /// Write transactions used, and the longest one, in milliseconds.
    public var transactions = 0
    public var longestTransactionMilliseconds = 0.0
    public var dryRun = false

    public var json: JSONValue {
        .object([
            ("purged", .int(purged)), ("keptYoung", .int(keptYoung)), ("keptUnacknowledged", .int(keptUnacknowledged)),
            ("heldBackBy", .array(heldBackBy.map { d, n in
                .object([("deviceId", .string(d.deviceID)), ("role", .string(d.role.rawValue)), ("name", .optional(d.name)),
                         ("sentSeq", .int(d.sentSeq)), ("lastSyncedAt", .optional(d.lastSyncedAt?.rfc3339)), ("tombstones", .int(n))])
            })),
            ("oldestKept", .optional(oldestKept?.rfc3339)),
            ("offersCleared", .int(offersCleared)), ("photosPurged", .int(photosPurged)), ("photoBytesFreed", .int(photoBytesFreed)),
            ("dryRun", .bool(dryRun)),
        ])
    }
}

extension Store {
    /// Tombstones younger than this are kept whatever the devices say: long
    /// enough that a device away on holiday still hears about deletes.
    public static let tombstoneHorizon = TimeSpan.days(90)
    /// An unreferenced photo younger than this is kept: a photo is added
    /// before the edit that names it, and that edit may come later.
    public static let photoGracePeriod = TimeSpan.days(7)
    /// Each purge transaction aims to hold the write lock no longer than
    /// this, so a concurrent writer (peer-sync) never waits long.
    public static let gcTransactionTarget = 0.020
    /// Purge transactions between two checkpoints: 1 keeps the WAL small, so a
    /// writer's own automatic checkpoint finds little to copy.
    public static let gcCheckpointEvery = 1
    /// The first and the bounds of the adaptive purge window (table rows
    /// examined per transaction).
    public static let gcBatchStart = 2_000
    public static let gcBatchRange = 200...2_000_000
    /// The pause between purge transactions: long enough for a writer polling
    /// the lock every millisecond to take it.
    public static let gcPauseMicroseconds: UInt32 = 3_000
    /// Photos deleted per transaction: their bytes are large, so batches stay small.
    public static let gcPhotoBatch = 32

    /// The change number up to which every tombstone has reached every
    /// current device, or nil when age alone decides (no other device known).
    /// The owner, or a store outside any family, knows it first-hand: the
    /// lowest `sent_seq` among the other non-revoked devices. A member learns
    /// it from the owner (FAMILY `acked`, Acknowledgements.swift), since it
    /// never hears from the members it does not sync with; until then it
    /// purges nothing.
    public func acknowledgedSeq() throws -> Int64? {
        if try family()?.role == .member { return try acknowledgedByFamily }
        return try db.scalarInt("""
            SELECT min(sent_seq) FROM devices WHERE revoked_at IS NULL AND device_id != (SELECT value FROM meta WHERE key = 'device_id')
            HAVING count(*) > 0
            """)
    }

    /// Runs garbage collection (see `GarbageReport` for the rule). Deletes go
    /// in short transactions whose size adapts to `gcTransactionTarget`, so a
    /// crash midway loses nothing that should stay and writers barely wait.
    /// `dryRun` counts what would go and changes nothing. `log` hears a line
    /// per step (for `--verbose`).
    public func collectGarbage(now: Timestamp, horizon: TimeSpan = Store.tombstoneHorizon,
                               photoGrace: TimeSpan = Store.photoGracePeriod, dryRun: Bool = false,
                               log: ((String) -> Void)? = nil) throws -> GarbageReport {
        var report = GarbageReport()
        report.dryRun = dryRun
        var transactions = 0
        var longest = 0.0
        /// One write transaction, timed: how long the write lock was held.
        func timedWrite<T>(_ body: () throws -> T) throws -> (T, Double) {
            let t0 = DispatchTime.now().uptimeNanoseconds
            let v = try write(body)
            let seconds = Double(DispatchTime.now().uptimeNanoseconds - t0) / 1e9
            transactions += 1
            longest = max(longest, seconds * 1000)
            return (v, seconds)
        }
        let cutoff = now.subtracting(horizon).milliseconds
        let photoCutoff = now.subtracting(photoGrace).milliseconds
        let none = Int64.max

        // 1. Tombstones.
        if dryRun {
            let ack = try acknowledgedSeq() ?? none
            report.purged = Int(try db.scalarInt(
                "SELECT count(*) FROM records WHERE deleted = 1 AND modified_at < ? AND seq <= ?", [.int(cutoff), .int(ack)]) ?? 0)
        } else {
            try db.execute("PRAGMA cache_size = -\(Store.bulkCacheKiB)")
            // Checkpoint between transactions, not inside their commits, so the
            // copying never lengthens a lock hold (a passive checkpoint blocks no writer).
            try db.execute("PRAGMA wal_autocheckpoint = 0")
            defer { try? db.execute("PRAGMA wal_autocheckpoint = 1000; PRAGMA wal_checkpoint(PASSIVE)") }
            // Walk the table in rowid windows: table and change-index pages are then
            // visited in order, once, instead of at random per tombstone.
            var span = Int64(Store.gcBatchStart)
            var lo: Int64 = 0
            let maxRid = try db.scalarInt("SELECT max(rid) FROM records") ?? 0
            let purge = try db.prepare("""
                DELETE FROM records WHERE rid > ?1 AND rid <= ?2 AND +deleted = 1 AND +modified_at < ?3 AND +seq <= ?4
                RETURNING modified_at, id, line
                """)
            while lo < maxRid {
                let hi = min(lo + span, maxRid)
                let (n, seconds): (Int, Double) = try timedWrite {
                    // Re-read inside the lock: a device may have joined or acknowledged meanwhile.
                    let ack = try acknowledgedSeq() ?? none
                    try purge.bind([.int(lo), .int(hi), .int(cutoff), .int(ack)])
                    defer { purge.reset() }
                    var n = 0
                    var latest = Int64.min
                    try adjustRecordDigest { digest, scratch in
                        while try purge.step() {
                            n += 1
                            latest = max(latest, purge.int64(0))
                            purge.withBytes(1) { id in purge.withBytes(2) { digest.subtract(.init(id: id, line: $0, scratch: scratch)) } }
                        }
                    }
                    if n > 0 { try raisePurgeFloor(to: Timestamp(milliseconds: latest)) }
                    return n
                }
                report.purged += n
                log?("purged \(n) tombstones among rows \(lo + 1)-\(hi) in \(String(cFormat: "%.1f", seconds * 1000)) ms")
                lo = hi
                // Aim the next transaction at the target lock time, then let waiting writers in.
                let scale = max(0.25, min(1.5, Store.gcTransactionTarget / max(seconds, 1e-4)))
                span = max(Int64(Store.gcBatchRange.lowerBound), min(Int64(Store.gcBatchRange.upperBound), Int64(Double(span) * scale)))
                if lo < maxRid {
                    usleep(Store.gcPauseMicroseconds)
                    if transactions % Store.gcCheckpointEvery == 0 { try db.execute("PRAGMA wal_checkpoint(PASSIVE)") }
                }
            }
        }

        // 2. What is kept, and why.
        let ack = try acknowledgedSeq() ?? none
        report.keptYoung = Int(try db.scalarInt("SELECT count(*) FROM records WHERE deleted = 1 AND modified_at >= ?", [.int(cutoff)]) ?? 0)
        let oldTotal = Int(try db.scalarInt("SELECT count(*) FROM records WHERE deleted = 1 AND modified_at < ?", [.int(cutoff)]) ?? 0)
        report.keptUnacknowledged = dryRun ? oldTotal - report.purged : oldTotal
        if report.keptUnacknowledged > 0 && ack != none {
            let me = try deviceID
            func held(after seq: Int64) throws -> Int {
                Int(try db.scalarInt("SELECT count(*) FROM records WHERE deleted = 1 AND modified_at < ? AND seq > ?", [.int(cutoff), .int(seq)]) ?? 0)
            }
            if let fam = try family(), fam.role == .member {
                // The devices the owner named as behind it hold back what every
                // device has not heard of; the owner holds back what it has not
                // received yet, and, when nobody is behind, what it has not yet
                // confirmed (it will, on the next contact).
                let n = try held(after: ack)
                var behind: [(DeviceInfo, Int)] = []
                for w in try familyWaitingFor() where n > 0 && w.device != fam.ownerDevice {
                    guard var d = try device(w.device), d.revokedAt == nil else { continue }
                    d.lastSyncedAt = w.lastSynced
                    behind.append((d, n))
                }
                if let owner = try device(fam.ownerDevice), owner.revokedAt == nil {
                    let unsent = try held(after: owner.sentSeq)
                    if unsent > 0 || (behind.isEmpty && n > 0) { report.heldBackBy.append((owner, behind.isEmpty ? n : unsent)) }
                }
                report.heldBackBy += behind
            } else {
                for d in try devices() where d.deviceID != me && d.revokedAt == nil {
                    let n = try held(after: d.sentSeq)
                    if n > 0 { report.heldBackBy.append((d, n)) }
                }
            }
        }
        if dryRun {
            // The oldest tombstone that would remain.
            report.oldestKept = try db.scalarInt("""
                SELECT min(modified_at) FROM records WHERE deleted = 1 AND NOT (modified_at < ? AND seq <= ?) HAVING count(*) > 0
                """, [.int(cutoff), .int(ack)]).map(Timestamp.init(milliseconds:))
        } else {
            report.oldestKept = try db.scalarInt("SELECT min(modified_at) FROM records WHERE deleted = 1 HAVING count(*) > 0")
                .map(Timestamp.init(milliseconds:))
        }

        // 3. Expired pairing offers (used, closed or not: past their expiry none can be redeemed).
        if dryRun {
            report.offersCleared = Int(try db.scalarInt("SELECT count(*) FROM offers WHERE expires_at <= ?", [.int(now.milliseconds)]) ?? 0)
        } else {
            report.offersCleared = try timedWrite {
                try db.run("DELETE FROM offers WHERE expires_at <= ?", [.int(now.milliseconds)])
                return db.changes
            }.0
            if report.offersCleared > 0 { log?("cleared \(report.offersCleared) expired pairing offers") }
        }

        // 4. Photos no live record names, added before the grace period.
        let unreferenced = """
            FROM photos p WHERE p.added_at < ?1 AND NOT EXISTS (SELECT 1 FROM record_photos r WHERE r.sha256 = p.sha256)
            """
        if dryRun {
            let s = try db.prepare("SELECT count(*), coalesce(sum(p.size), 0) \(unreferenced)")
            try s.bind([.int(photoCutoff)])
            defer { s.reset() }
            if try s.step() { report.photosPurged = Int(s.int64(0)); report.photoBytesFreed = s.int64(1) }
        } else {
            let pick = try db.prepare("SELECT p.sha256, p.size \(unreferenced) LIMIT ?2")
            let del = try db.prepare("DELETE FROM photos WHERE sha256 = ?")
            while true {
                let ((n, bytes), _): ((Int, Int64), Double) = try timedWrite {
                    try pick.bind([.int(photoCutoff), .int(Int64(Store.gcPhotoBatch))])
                    var picked: [(String, Int64)] = []
                    while try pick.step() { picked.append((pick.text(0), pick.int64(1))) }
                    pick.reset()
                    for (h, _) in picked {
                        try del.bind([.text(h)])
                        while try del.step() {}
                        del.reset()
                    }
                    return (picked.count, picked.reduce(0) { $0 + $1.1 })
                }
                report.photosPurged += n
                report.photoBytesFreed += bytes
                if n > 0 { log?("purged \(n) unreferenced photos (\(bytes) bytes)") }
                if n < Store.gcPhotoBatch { break }
            }
        }
        report.transactions = transactions
        report.longestTransactionMilliseconds = longest
        log?("longest write transaction: \(String(cFormat: "%.1f", report.longestTransactionMilliseconds)) ms over \(report.transactions) transactions")
        return report
    }
}
