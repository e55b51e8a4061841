import CSQLite

/// Records as a session streams them: batches out of the change log, and
/// the write-ahead-log setting a session raises while batches stream in.
extension Store {
    /// One batch of records changed after `after` and at most `upTo`, oldest
    /// change first, as NDJSON: at most `maxCount` records, cut after the
    /// total of `maxBytes` (a batch always has at least one record). An edit
    /// of this device's that has not left the store yet and is later than
    /// `bound` goes out pulled back to it, never below 1 ms after the version
    /// it replaced (LWW.pullBack); every other version goes out as held: once
    /// a version may be on another device, rewriting it here would make two.
    /// `skipping`: a peer whose own bytes are not sent back to it (rows it
    /// sent this store that nothing changed since: `came_from`, schema 6).
    func exportRecordBatch(after: Int64, upTo: Int64, maxCount: Int, maxBytes: Int, bound: OwnVersionBound? = nil,
                           skipping peer: String? = nil) throws -> OutgoingBatch {
        // With no peer, `came_from IS NULL` holds only where `came_seq` is NULL too: nothing is skipped.
        let s = try db.prepare("""
            SELECT line, seq, modified_at, rid, device_id, prev_at FROM records
            WHERE seq > ? AND seq <= ? AND NOT (came_seq IS seq AND came_from IS ?) ORDER BY seq LIMIT ?
            """)
        try s.bind([.int(after), .int(upTo), peer.map { .text($0) } ?? .null, .int(Int64(maxCount))])
        defer { s.reset() }
        var b = OutgoingBatch(lastSeq: after)
        while try s.step() {
            guard try appendLine(s, to: &b, maxBytes: maxBytes, bound: bound) else { break }
            b.lastSeq = s.int64(1)
        }
        return b
    }

    /// The current versions of the rows `rids` (records of the session's set
    /// that the peer's own records replaced before they were sent), as one
    /// batch of at most `maxBytes`. Returns the batch and how many rids it used.
    /// `skipping` as for `exportRecordBatch`: a row that now holds the very
    /// bytes that peer sent is not sent back to it.
    func exportRecordRows(_ rids: ArraySlice<Int64>, maxBytes: Int, bound: OwnVersionBound? = nil,
                          skipping peer: String? = nil) throws -> (OutgoingBatch, used: Int) {
        let s = try db.prepare("""
            SELECT line, seq, modified_at, rid, device_id, prev_at FROM records
            WHERE rid = ? AND NOT (came_seq IS seq AND came_from IS ?)
            """)
        var b = OutgoingBatch(lastSeq: 0)
        var used = 0
        for rid in rids {
            try s.bind([.int(rid), peer.map { .text($0) } ?? .null])
            defer { s.reset() }
            if try s.step() {
                guard try appendLine(s, to: &b, maxBytes: maxBytes, bound: bound) else { break }
            }
            used += 1
        }
        return (b, used)
    }

    /// Appends the row's line (clamped if need be) unless the batch would pass `maxBytes`.
    private func appendLine(_ s: Statement, to b: inout OutgoingBatch, maxBytes: Int, bound: OwnVersionBound?) throws -> Bool {
        let time = s.int64(2)
        var sendTime = time
        let unreleased = !s.isNull(5)
        if let bound, unreleased, time > bound.limit {
            let prev = s.int64(5)
            sendTime = LWW.pullBack(time, bound: bound.limit, floor: prev == RecordApplier.replacedNothing ? nil : prev)
        }
        if sendTime == time {
            let fits = s.withBytes(0) { line -> Bool in
                guard b.count == 0 || b.payload.count + line.count + 1 <= maxBytes else { return false }
                b.payload.append(contentsOf: line)
                return true
            }
            guard fits else { return false }
            if unreleased { b.released.append((rid: s.int64(3), seq: s.int64(1))) }
        } else {
            let line = try s.withBytes(0) { try Store.clampedLine($0, to: sendTime) }
            guard b.count == 0 || b.payload.count + line.count + 1 <= maxBytes else { return false }
            b.payload.append(contentsOf: line)
            b.clamped.append(ClampedRecord(rid: s.int64(3), seq: s.int64(1), time: sendTime, line: line))
        }
        b.payload.append(0x0A)
        b.count += 1
        return true
    }

    /// A stored line with its `modifiedAt` value replaced, in place, by `time`
    /// in canonical form; every other byte stays (docs/protocol.md §7.4).
    static func clampedLine(_ line: UnsafeRawBufferPointer, to time: Int64) throws -> [UInt8] {
        let bytes = line.bindMemory(to: UInt8.self)
        guard let base = bytes.baseAddress else { throw StoreError(.inconsistent, detail: "an empty record line in the store") }
        let scan: RecordScan
        do { scan = try RecordScanner.scan(base, start: 0, end: bytes.count, mode: .exchanged) } catch {
            throw StoreError(.damagedRecord, detail: "\(error)")
        }
        var out: [UInt8] = []
        RecordLine.rewrite(base, scan, time: time, device: nil, ensureDeleted: false, into: &out)
        return out
    }

    /// Marks this device's edits in a batch as gone out (`prev_at` NULL):
    /// from now on another device may hold them, so no session pulls them
    /// back again. A row changed since keeps its newer state. Call inside
    /// the write transaction that commits before the batch is sent.
    func releaseInTransaction(_ rows: [(rid: Int64, seq: Int64)]) throws {
        guard !rows.isEmpty else { return }
        let u = try db.prepare("UPDATE records SET prev_at = NULL WHERE rid = ? AND seq = ?")
        for r in rows {
            try u.bind([.int(r.rid), .int(r.seq)])
            _ = try u.step()
            u.reset()
        }
    }

    /// Stores the clamped versions this side sent, so it holds what the peer
    /// now holds (docs/protocol.md §7.4): each row that still has the change
    /// number it was sent with gets the clamped line and a new change number,
    /// and counts as gone out. Returns how many change numbers that used.
    /// Inside a write transaction.
    func adoptClampedInTransaction(_ rows: [ClampedRecord]) throws -> Int64 {
        guard !rows.isEmpty else { return 0 }
        let held = try db.prepare("SELECT id, line FROM records WHERE rid = ? AND seq = ?")
        let u = try db.prepare("UPDATE records SET modified_at = ?, line = ?, seq = ?, prev_at = NULL WHERE rid = ? AND seq = ?")
        let first = try currentChangeSeq
        var seq = first
        try adjustRecordDigest { digest, scratch in
            for r in rows {
                try held.bind([.int(r.rid), .int(r.seq)])
                defer { held.reset() }
                // Else the row changed meanwhile: its newer version stands.
                guard try held.step() else { continue }
                let id = held.blob(0)
                held.withBytes(1) { line in id.withUnsafeBytes { digest.subtract(.init(id: $0, line: line, scratch: scratch)) } }
                held.reset()
                try u.bind(.int(r.time), at: 1)
                try r.line.withUnsafeBytes { try u.bindText($0, at: 2) }
                try u.bind(.int(seq + 1), at: 3)
                try u.bind(.int(r.rid), at: 4)
                try u.bind(.int(r.seq), at: 5)
                _ = try u.step()
                u.reset()
                id.withUnsafeBytes { id in r.line.withUnsafeBytes { digest.add(.init(id: id, line: $0, scratch: scratch)) } }
                seq += 1
            }
        }
        try setMeta("change_seq", String(seq))
        let used = seq - first
        return used
    }

    /// Lets the session's connection grow the write-ahead log to about
    /// `bytes` before checkpointing (fewer checkpoints, each with its fsyncs,
    /// while a library streams in). Returns the previous setting in pages, to
    /// put back with `restoreAutoCheckpoint`.
    func raiseAutoCheckpoint(bytes: Int64) throws -> Int64 {
        let before = try db.scalarInt("PRAGMA wal_autocheckpoint") ?? 1000
        let pageSize = max(512, try db.scalarInt("PRAGMA page_size") ?? 4096)
        _ = try db.scalarInt("PRAGMA wal_autocheckpoint = \(max(before, bytes / pageSize))")
        return before
    }

    func restoreAutoCheckpoint(pages: Int64) throws {
        _ = try db.scalarInt("PRAGMA wal_autocheckpoint = \(pages)")
    }
}

/// The bound a session puts on the edits this device sends for the first
/// time (docs/protocol.md §7.4): the family's clock as the session reads it,
/// plus the clamp window, in milliseconds.
struct OwnVersionBound {
    var limit: Int64
}

/// One RECORDS batch as it goes out (docs/protocol.md §7.2, §7.4): its NDJSON
/// payload, how many records it holds, the last change number it covers, and
/// the records whose `modifiedAt` was pulled back to the session's bound on the
/// way out (the sender keeps the same version: `adoptClamped`).
struct OutgoingBatch {
    var payload: [UInt8] = []
    var count = 0
    var lastSeq: Int64
    var clamped: [ClampedRecord] = []
    /// Edits of this device's going out for the first time, as held (releaseInTransaction).
    var released: [(rid: Int64, seq: Int64)] = []
}

/// A record the sender clamped: its row, the change number it had, and the
/// line sent (the held line with only the `modifiedAt` value rewritten).
struct ClampedRecord {
    var rid: Int64
    var seq: Int64
    var time: Int64
    var line: [UInt8]
}
