/// Records in the store: applying incoming versions by the LWW rule, local
/// edits, and export from a change cursor. merge-records and peer-sync both
/// go through here, so the store has one merge code path.
public struct ApplySummary: Sendable, Equatable {
    public var received = 0
    /// Incoming versions that replaced (or created) the held one.
    public var applied = 0
    /// Incoming versions that lost to the held one.
    public var keptLocal = 0
    /// Incoming versions identical to the held one.
    public var unchanged = 0
    /// Incoming versions whose future `modifiedAt` was clamped.
    public var clamped = 0
    /// Live versions that replaced a tombstone.
    public var resurrected = 0
    /// Tombstones that replaced a live version.
    public var deleted = 0
    public init() {}

    public var json: JSONValue {
        .object([("received", .int(received)), ("applied", .int(applied)), ("keptLocal", .int(keptLocal)),
                 ("unchanged", .int(unchanged)), ("clamped", .int(clamped)), ("resurrected", .int(resurrected)),
                 ("deleted", .int(deleted))])
    }
}

extension Store {
    /// Applies remote versions by the LWW rule (clamp included) inside one
    /// transaction: all or nothing. `explain` hears, per id, which rule decided.
    public func applyRemote(_ records: [Record], now: Timestamp,
                            explain: ((_ id: String, _ rule: LWW.Rule, _ tookRemote: Bool) -> Void)? = nil) throws -> ApplySummary {
        try write { try applyRemoteInTransaction(records, now: now, explain: explain) }
    }

    /// The same, for a caller that already holds the write transaction.
    public func applyRemoteInTransaction(_ records: [Record], now: Timestamp,
                                         explain: ((String, LWW.Rule, Bool) -> Void)? = nil) throws -> ApplySummary {
        var summary = ApplySummary()
        let select = try db.prepare("SELECT modified_at, device_id, deleted FROM records WHERE id = ?")
        var seq = try nextChangeSeq(count: 0) - 1
        for var r in records {
            summary.received += 1
            let clampedTime = LWW.clamp(r.modifiedAt, now: now)
            if clampedTime != r.modifiedAt {
                r = r.restamped(clampedTime)
                summary.clamped += 1
            }
            try select.bind([.text(r.id)])
            let decision: LWW.Decision
            var localDeleted = false
            if try select.step() {
                let lt = Timestamp(milliseconds: select.int64(0))
                let ld = select.text(1)
                localDeleted = select.int64(2) != 0
                decision = LWW.decide(localTime: lt, localDeleted: localDeleted, localDevice: ld.utf8,
                                      remoteTime: r.modifiedAt, remoteDeleted: r.deleted, remoteDevice: r.deviceID.utf8)
                select.reset()
            } else {
                select.reset()
                decision = LWW.Decision(takeRemote: true, rule: .new)
                localDeleted = r.deleted  // nothing held: neither resurrected nor deleted
            }
            explain?(r.id, decision.rule, decision.takeRemote)
            guard decision.takeRemote else {
                if decision.rule == .sameVersion { summary.unchanged += 1 } else { summary.keptLocal += 1 }
                continue
            }
            seq += 1
            try put(r, seq: seq)
            summary.applied += 1
            if decision.rule != .new {
                if localDeleted && !r.deleted { summary.resurrected += 1 }
                if !localDeleted && r.deleted { summary.deleted += 1 }
            }
        }
        try setMeta("change_seq", String(seq))
        return summary
    }

    /// Writes one record row and its photo references, with change number `seq`.
    func put(_ r: Record, seq: Int64) throws {
        try db.run("""
            INSERT INTO records (id, type, modified_at, device_id, deleted, line, seq) VALUES (?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT(id) DO UPDATE SET type = excluded.type, modified_at = excluded.modified_at,
              device_id = excluded.device_id, deleted = excluded.deleted, line = excluded.line, seq = excluded.seq
            """, [.text(r.id), .text(r.type), .int(r.modifiedAt.milliseconds), .text(r.deviceID),
                  .int(r.deleted ? 1 : 0), .text(r.line), .int(seq)])
        try db.run("DELETE FROM record_photos WHERE record_id = ?", [.text(r.id)])
        if !r.deleted {
            for h in Set(r.photos) {
                try db.run("INSERT OR IGNORE INTO record_photos (sha256, record_id) VALUES (?, ?)", [.text(h), .text(r.id)])
            }
        }
    }

    /// Applies edits made on this device: each gets `modifiedAt` = now and
    /// `deviceId` = this device, then goes through the same LWW rule (a local
    /// edit at now beats anything older).
    public func applyLocalEdits(_ records: [Record], now: Timestamp) throws -> ApplySummary {
        let me = try deviceID
        return try applyRemote(records.map { $0.restamped(now, deviceID: me) }, now: now)
    }

    /// Records changed after change number `afterSeq`, oldest change first, at
    /// most `limit`. Returns their lines and the last change number included.
    public func exportRecords(afterSeq: Int64, limit: Int) throws -> (lines: [String], lastSeq: Int64) {
        let s = try db.prepare("SELECT line, seq FROM records WHERE seq > ? ORDER BY seq LIMIT ?")
        try s.bind([.int(afterSeq), .int(Int64(limit))])
        defer { s.reset() }
        var lines: [String] = []
        var last = afterSeq
        while try s.step() {
            lines.append(s.text(0))
            last = s.int64(1)
        }
        return (lines, last)
    }

    /// Calls `body` with every record line in `id` byte order, tombstones included.
    public func forEachRecordLine(_ body: (UnsafeRawBufferPointer) throws -> Void) throws {
        let s = try db.prepare("SELECT line FROM records ORDER BY id")
        defer { s.reset() }
        while try s.step() { try s.withBytes(0, body) }
    }

    /// A digest of the whole record state: equal on two devices exactly when
    /// they hold the same versions of the same ids.
    public func recordStateDigest() throws -> String {
        var h = SHA256()
        let s = try db.prepare("SELECT id, line FROM records ORDER BY id")
        defer { s.reset() }
        while try s.step() {
            try s.withBytes(0) { h.update($0) }
            h.update([0])
            try s.withBytes(1) { h.update($0) }
            h.update([0x0A])
        }
        return Hex.encode(h.finalize())
    }

    public var currentChangeSeq: Int64 { get throws { Int64(try meta("change_seq") ?? "0") ?? 0 } }
}
