import CSQLite
import Dispatch
import FoundationEssentials
import Glibc

/// The tombstone rule (docs/design.md §4) and the store's garbage
/// collection: tombstones old enough and acknowledged by every known device,
/// expired pairing offers, and photo files no live record names.
///
/// A tombstone T (a `records` row with `deleted = 1`) is purged when both hold:
/// - this store has held it for the horizon by its own clock (HeldSince.swift:
///   `T.seq` is at or below the change number it had reached by now − horizon),
///   whatever time T's author stamped on it, and
/// - `T.seq` is at or below `acknowledgedSeq()`: every current device has
///   heard of it: every device in `devices` other than this one, and not
///   revoked, has `sent_seq >= T.seq`; a device that never synced has
///   `sent_seq = 0` and holds every tombstone back. A store that knows no
///   other device purges on age alone.
/// Only the owner decides (or a store in no family): each purge keeps a
/// record of what it purged (PurgeRecords.swift), under a change number of its
/// own, in the same transaction, and the owner sends it to every member,
/// which drops what it names. A member's collection purges no tombstone
/// itself; it reports what holds the family's purges back.
/// Tombstones a store held before it kept the times it held them
/// (`evidence_since_seq`, set by the migration) are judged by their delete
/// time, as they were.
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

    /// Sets the store and its photo file right with each other: bytes no row
    /// of the store names (a crash between the two writes, or a photo file
    /// kept when the store was put back from a copy), added before `cutoff`,
    /// go; a row whose bytes are not in the file goes too, so the photo is
    /// wanted again instead of taken for held.
    func reconcilePhotoFile(cutoff: Int64, log: ((String) -> Void)?) throws {
        var after = "", orphans: [String] = []
        while true {
            let page = try photoFile.page(after: after, limit: 512)
            for p in page where p.addedAt < cutoff {
                if try !hasPhoto(p.sha256) { orphans.append(p.sha256) }
            }
            guard let last = page.last else { break }
            after = last.sha256
        }
        try photoFile.remove(orphans)
        if !orphans.isEmpty { log?("removed the bytes of \(orphans.count) photos the store does not hold from its photo file") }
        try photoFile.reclaimUnnamed()
        var missing: [String] = []
        let s = try db.prepare("SELECT sha256 FROM photos")
        while try s.step() { let h = s.text(0); if try !photoFile.has(h) { missing.append(h) } }
        s.reset()
        if !missing.isEmpty {
            try write { for h in missing { try db.run("DELETE FROM photos WHERE sha256 = ?", [.text(h)]) } }
            log?("\(missing.count) photos the store took for held are not in its photo file; they are wanted again")
        }
    }

    /// Whether this store decides purges: the owner, or a store in no family.
    func decidesPurges() throws -> Bool { try family()?.role != .member }

    /// The tombstones old enough to purge, as SQL over `records` with
    /// parameters ?3 (the delete-time cutoff, for tombstones held before the
    /// store kept times), ?5 (the change number held since the horizon) and
    /// ?6 (the change number up to which delete times decide).
    static let oldEnoughSQL = "(+seq <= ?5 OR (+seq <= ?6 AND +modified_at < ?3))"

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
        let decides = try decidesPurges()
        if !dryRun { try write { try markHeldSince(now: now) } }
        let heldSince = try heldSinceSeq(atOrBefore: now.subtracting(horizon))
        let legacySeq = Int64(try meta("evidence_since_seq") ?? "0") ?? 0
        let old = Store.oldEnoughSQL
        /// Binds ?3, ?5, ?6 (and ?4, the acknowledged change number) of a statement using `old`.
        func bindAge(_ s: Statement, ack: Int64) throws {
            try s.bind(.int(cutoff), at: 3)
            try s.bind(.int(ack), at: 4)
            try s.bind(.int(heldSince), at: 5)
            try s.bind(.int(legacySeq), at: 6)
        }
        func count(_ whereSQL: String, ack: Int64) throws -> Int {
            let s = try db.prepare("SELECT count(*) FROM records WHERE deleted = 1 AND \(whereSQL)")
            try bindAge(s, ack: ack)
            defer { s.reset() }
            return try s.step() ? Int(s.int64(0)) : 0
        }

        // 1. Tombstones.
        if !decides {
            // A member forgets only what the owner's purge records name.
        } else if dryRun {
            report.purged = try count("\(old) AND +seq <= ?4", ack: try acknowledgedSeq() ?? none)
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
                DELETE FROM records WHERE rid > ?1 AND rid <= ?2 AND +deleted = 1 AND \(old) AND +seq <= ?4
                RETURNING modified_at, id, line
                """)
            while lo < maxRid {
                let hi = min(lo + span, maxRid)
                let (n, seconds): (Int, Double) = try timedWrite {
                    // Re-read inside the lock: a device may have joined or acknowledged meanwhile.
                    let ack = try acknowledgedSeq() ?? none
                    try purge.bind(.int(lo), at: 1)
                    try purge.bind(.int(hi), at: 2)
                    try bindAge(purge, ack: ack)
                    defer { purge.reset() }
                    var entries: [PurgeEntry] = []
                    try adjustRecordDigest { digest, scratch in
                        while try purge.step() {
                            purge.withBytes(1) { id in
                                entries.append(PurgeEntry(idHash: PurgeEntry.hash(id), deletedAt: purge.int64(0)))
                                purge.withBytes(2) { digest.subtract(.init(id: id, line: $0, scratch: scratch)) }
                            }
                        }
                    }
                    purge.reset()
                    // What was purged stays purged: a record of it, under a change number of its own.
                    var from = entries.startIndex
                    while from < entries.endIndex {
                        let to = min(from + Store.maxPurgeBatchEntries, entries.endIndex)
                        let seq = try currentChangeSeq + 1
                        try addPurgeBatch(Array(entries[from..<to]), seq: seq)
                        try setMeta("change_seq", String(seq))
                        from = to
                    }
                    return entries.count
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

        // 2. What is kept, and why. A member's "old enough" is the owner's
        // call; it counts by its own holding time, as the owner will.
        let ack = try acknowledgedSeq() ?? none
        report.keptYoung = try count("NOT \(old)", ack: ack)
        let oldTotal = try count(old, ack: ack)
        report.keptUnacknowledged = dryRun ? oldTotal - report.purged : oldTotal
        if report.keptUnacknowledged > 0 && ack != none {
            let me = try deviceID
            func held(after seq: Int64) throws -> Int { try count("\(old) AND +seq > ?4", ack: seq) }
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
            let s = try db.prepare("SELECT min(modified_at) FROM records WHERE deleted = 1 AND NOT (\(old) AND +seq <= ?4) HAVING count(*) > 0")
            try bindAge(s, ack: decides ? ack : -1)
            defer { s.reset() }
            report.oldestKept = try s.step() ? Timestamp(milliseconds: s.int64(0)) : nil
        } else {
            report.oldestKept = try db.scalarInt("SELECT min(modified_at) FROM records WHERE deleted = 1 HAVING count(*) > 0")
                .map(Timestamp.init(milliseconds:))
        }

        // 3. Expired pairing offers (used, closed or not: past their expiry none can be redeemed),
        // and the copies of versions this store made that none can need any more (CopiesMade.swift).
        if dryRun {
            report.offersCleared = Int(try db.scalarInt("SELECT count(*) FROM offers WHERE expires_at <= ?", [.int(now.milliseconds)]) ?? 0)
        } else {
            report.offersCleared = try timedWrite {
                try db.run("DELETE FROM offers WHERE expires_at <= ?", [.int(now.milliseconds)])
                let cleared = db.changes
                try forgetOutgrownCopiesInTransaction()
                return cleared
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
                let ((bytes, hashes), _): ((Int64, [String]), Double) = try timedWrite {
                    try pick.bind([.int(photoCutoff), .int(Int64(Store.gcPhotoBatch))])
                    var picked: [(String, Int64)] = []
                    while try pick.step() { picked.append((pick.text(0), pick.int64(1))) }
                    pick.reset()
                    for (h, _) in picked {
                        try del.bind([.text(h)])
                        while try del.step() {}
                        del.reset()
                    }
                    return (picked.reduce(0) { $0 + $1.1 }, picked.map(\.0))
                }
                // The store no longer holds them; then their bytes go (never the other way round).
                try photoFile.remove(hashes)
                let n = hashes.count
                report.photosPurged += n
                report.photoBytesFreed += bytes
                if n > 0 { log?("purged \(n) unreferenced photos (\(bytes) bytes)") }
                if n < Store.gcPhotoBatch { break }
            }
        }
        if !dryRun { try reconcilePhotoFile(cutoff: photoCutoff, log: log) }
        report.transactions = transactions
        report.longestTransactionMilliseconds = longest
        log?("longest write transaction: \(String(cFormat: "%.1f", report.longestTransactionMilliseconds)) ms over \(report.transactions) transactions")
        return report
    }
}
