/// Records as a session streams them: batches out of the change log, and
/// the write-ahead-log setting a session raises while batches stream in.
extension Store {
    /// One batch of records changed after `after` and at most `upTo`, oldest
    /// change first, as NDJSON: at most `maxCount` records, cut after the
    /// total of `maxBytes` (a batch always has at least one record).
    /// Returns the payload, how many records it holds and the last change number.
    func exportRecordBatch(after: Int64, upTo: Int64, maxCount: Int, maxBytes: Int) throws -> (payload: [UInt8], count: Int, lastSeq: Int64) {
        let s = try db.prepare("SELECT line, seq FROM records WHERE seq > ? AND seq <= ? ORDER BY seq LIMIT ?")
        try s.bind([.int(after), .int(upTo), .int(Int64(maxCount))])
        defer { s.reset() }
        var payload: [UInt8] = []
        var count = 0
        var last = after
        while try s.step() {
            let fits = s.withBytes(0) { line -> Bool in
                guard count == 0 || payload.count + line.count + 1 <= maxBytes else { return false }
                payload.append(contentsOf: line)
                return true
            }
            guard fits else { break }
            payload.append(0x0A)
            count += 1
            last = s.int64(1)
        }
        return (payload, count, last)
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
