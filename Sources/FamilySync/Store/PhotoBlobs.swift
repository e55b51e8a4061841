import CSQLite

/// Photos as a session moves them: which ones this store still wants, their
/// bytes staged as they come, and read in chunks from the pack.
extension Store {
    /// Up to `limit` wanted photos whose hash sorts after `after`: the next wave.
    public func wantedPhotos(after: String, limit: Int) throws -> [String] {
        let s = try db.prepare("""
            SELECT DISTINCT rp.sha256 FROM record_photos rp
            WHERE rp.sha256 > ? AND NOT EXISTS (SELECT 1 FROM photos p WHERE p.sha256 = rp.sha256)
            ORDER BY rp.sha256 LIMIT ?
            """)
        try s.bind([.text(after), .int(Int64(limit))])
        defer { s.reset() }
        var out: [String] = []
        while try s.step() { out.append(s.text(0)) }
        return out
    }

    /// How many photos live records name that this store does not hold.
    public func wantedPhotoCount() throws -> Int {
        Int(try db.scalarInt("""
            SELECT count(DISTINCT rp.sha256) FROM record_photos rp
            WHERE NOT EXISTS (SELECT 1 FROM photos p WHERE p.sha256 = rp.sha256)
            """) ?? 0)
    }

    /// The photos live records name that this store does not hold, in hash
    /// order (at most `limit`), each with the ids of the records naming it
    /// (at most `idsPerPhoto`), for `peer-sync status` and merge-records' warning.
    public func wantedPhotoList(limit: Int = 1000, idsPerPhoto: Int = 20) throws -> [(sha256: String, records: [String])] {
        let s = try db.prepare("""
            SELECT rp.sha256, r.id FROM record_photos rp JOIN records r ON r.rid = rp.record
            WHERE rp.sha256 IN (SELECT DISTINCT sha256 FROM record_photos w
                                WHERE NOT EXISTS (SELECT 1 FROM photos p WHERE p.sha256 = w.sha256) ORDER BY sha256 LIMIT ?)
            ORDER BY rp.sha256, r.id
            """)
        try s.bind([.int(Int64(limit))])
        defer { s.reset() }
        var out: [(sha256: String, records: [String])] = []
        while try s.step() {
            let h = s.text(0)
            if out.last?.sha256 != h { out.append((h, [])) }
            if out[out.count - 1].records.count < idsPerPhoto { out[out.count - 1].records.append(s.text(1)) }
        }
        return out
    }

    /// Where the photo's bytes are in the pack and how many; nil when the
    /// store does not hold it, or its bytes are not there (then it is
    /// unavailable to a peer, and tombstone-gc sets the store right).
    func photoLocation(_ sha256: String) throws -> (offset: Int64, size: Int)? {
        guard try hasPhoto(sha256) else { return nil }
        return try photoFile.readableLocation(sha256)
    }

    /// Keeps a received photo, `size` bytes arriving as `chunks`, whose bytes
    /// the caller has already hashed to `sha256` as they arrived (so they are
    /// not hashed twice). In a session the bytes go to its writer (or, with
    /// none, are staged here); they count as held once on disk: what the
    /// writer has written is recorded at each turn of the session
    /// (`flushStagedPhotosIfDue`), and everything at its durable points.
    func keepVerifiedPhoto(_ chunks: [ArraySlice<UInt8>], size: Int, sha256: String, now: Timestamp) throws {
        if let w = photoWriter {
            if try !hasPhoto(sha256) { try w.submit(chunks, size: size, sha256: sha256, addedAt: now.milliseconds) }
        } else {
            try keepVerifiedPhotoInTransaction(chunks, size: size, sha256: sha256, now: now)
        }
        try flushStagedPhotosIfDue()
    }

    /// The same, for a bundle's part: staged until the part's transaction
    /// flushes them before it commits.
    func keepVerifiedPhotoInTransaction(_ chunks: [ArraySlice<UInt8>], size: Int, sha256: String, now: Timestamp) throws {
        guard try !hasPhoto(sha256) else { return }
        try photoFile.stage(chunks, size: size, sha256: sha256, addedAt: now.milliseconds)
    }
}

/// Reads a photo's bytes a chunk at a time from the pack, so sending a
/// large photo never holds all of it in memory. Not Sendable.
final class PhotoBlobReader {
    private let store: Store
    let offset: Int64
    let size: Int
    private(set) var done = 0
    private var scratch: [UInt8] = []

    init(store: Store, offset: Int64, size: Int) {
        self.store = store
        self.offset = offset
        self.size = size
    }

    var isFinished: Bool { done >= size }

    /// Reads the next at most `max` bytes, appending them to `out`.
    func readChunk(max: Int, into out: inout [UInt8]) throws {
        let n = min(max, size - done)
        guard n > 0 else { return }
        if scratch.count < n { scratch = [UInt8](repeating: 0, count: n) }
        try scratch.withUnsafeMutableBytes { try store.photoFile.pack.read(into: $0, count: n, at: offset + Int64(done)) }
        out.append(contentsOf: scratch[0..<n])
        done += n
    }
}
