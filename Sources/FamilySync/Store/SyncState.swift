import CSQLite

/// What peer-sync keeps in the store beyond records and photos: the family
/// key's epoch, per-device keys, the roster with revocations, per-peer cursors
/// and where each peer was last reached. Secrets live in the `secrets` table
/// (the store file is 0600) and are never printed.
///
/// Keys (docs/protocol.md, "Keys and revocation"):
/// - `family_secret` (secrets) with `family_epoch` (meta): the family key all
///   current members share; member-to-member sessions derive their PSK from it.
///   The owner replaces it with a fresh one on every revocation.
/// - `device_key` (secrets): a member's own key, issued by the owner at pairing;
///   owner-to-member sessions derive their PSK from it. The owner keeps every
///   member's as `device_key:<DEVICE>`.
extension Store {
    /// The family key's epoch: 0 for the key the family was made with, one more per revocation.
    public var familyEpoch: Int64 {
        get throws { Int64(try meta("family_epoch") ?? "0") ?? 0 }
    }

    /// Replaces the family key (a revocation on the owner, or the owner's new key on a member).
    public func setFamilyKey(_ key: [UInt8], epoch: Int64) throws {
        try setSecret("family_secret", key)
        try setMeta("family_epoch", String(epoch))
    }

    /// This member's own device key.
    public func ownDeviceKey() throws -> [UInt8]? { try secret("device_key") }
    public func setOwnDeviceKey(_ key: [UInt8]) throws { try setSecret("device_key", key) }

    /// The owner's copy of a member's device key.
    public func memberDeviceKey(_ device: String) throws -> [UInt8]? { try secret("device_key:" + device) }

    // MARK: The roster

    public func device(_ id: String) throws -> DeviceInfo? {
        try devices().first { $0.deviceID == id }
    }

    /// Whether this store's own device has been revoked (it learned so from the owner).
    public var isSelfRevoked: Bool {
        get throws { try device(try deviceID)?.revokedAt != nil }
    }

    /// Devices that are not revoked, this one included.
    public func activeDeviceCount() throws -> Int {
        Int(try db.scalarInt("SELECT count(*) FROM devices WHERE revoked_at IS NULL") ?? 0)
    }

    /// Adds or updates a device as a roster says. `authoritative` (the owner's
    /// roster) may also lift a revocation; otherwise revocations only accumulate.
    public func mergeRosterEntry(device: String, role: FamilyInfo.Role, joinedAt: Timestamp, revokedAt: Timestamp?, authoritative: Bool) throws {
        try db.run("INSERT OR IGNORE INTO devices (device_id, role, joined_at) VALUES (?, ?, ?)",
                   [.text(device), .text(role.rawValue), .int(joinedAt.milliseconds)])
        if authoritative {
            try db.run("UPDATE devices SET role = ?, joined_at = ?, revoked_at = ? WHERE device_id = ?",
                       [.text(role.rawValue), .int(joinedAt.milliseconds), revokedAt.map { .int($0.milliseconds) } ?? .null, .text(device)])
        } else if let revokedAt {
            try db.run("UPDATE devices SET revoked_at = ? WHERE device_id = ? AND revoked_at IS NULL", [.int(revokedAt.milliseconds), .text(device)])
        }
    }

    /// Owner: admits a joining device and issues its device key. Call inside
    /// the transaction that also consumes the offer's nonce.
    public func admitDeviceInTransaction(_ device: String, now: Timestamp) throws -> [UInt8] {
        let key = try secureRandomBytes(Store.familySecretBytes)
        try db.run("INSERT INTO devices (device_id, role, joined_at) VALUES (?, 'member', ?)", [.text(device), .int(now.milliseconds)])
        try setSecret("device_key:" + device, key)
        return key
    }

    /// Owner: revokes a device and moves the family to a fresh key, so the
    /// revoked device cannot derive any PSK a current member accepts. Its
    /// device key is kept only so the owner can still tell it, authenticated,
    /// that it was revoked. Returns the new epoch.
    public func revokeDeviceInTransaction(_ device: String, now: Timestamp) throws -> Int64 {
        try db.run("UPDATE devices SET revoked_at = ? WHERE device_id = ? AND revoked_at IS NULL", [.int(now.milliseconds), .text(device)])
        let epoch = try familyEpoch + 1
        try setFamilyKey(try secureRandomBytes(Store.familySecretBytes), epoch: epoch)
        return epoch
    }

    /// Marks this device as revoked (the owner said so on an authenticated session).
    public func markSelfRevoked(at t: Timestamp) throws {
        try db.run("UPDATE devices SET revoked_at = ? WHERE device_id = ? AND revoked_at IS NULL", [.int(t.milliseconds), .text(try deviceID)])
    }

    // MARK: Cursors

    /// Records a completed session with `peer`: how far of its changes we hold,
    /// how far of ours it acknowledged, when, and (for the connecting side) where.
    public func recordCompletedSync(peer: String, recvSeq: Int64, sentSeq: Int64, at: Timestamp, address: String?) throws {
        try db.run("INSERT OR IGNORE INTO devices (device_id, role, joined_at) VALUES (?, 'member', ?)", [.text(peer), .int(at.milliseconds)])
        try db.run("UPDATE devices SET recv_seq = ?, sent_seq = ?, last_synced_at = ? WHERE device_id = ?",
                   [.int(recvSeq), .int(sentSeq), .int(at.milliseconds), .text(peer)])
        if let address {
            // An address belongs to one device: a device that moved frees it.
            try db.run("UPDATE devices SET last_addr = NULL WHERE last_addr = ? AND device_id <> ?", [.text(address), .text(peer)])
            try db.run("UPDATE devices SET last_addr = ? WHERE device_id = ?", [.text(address), .text(peer)])
        }
    }

    /// How far of `peer`'s changes this store holds (0: a first contact, a full sync).
    public func receivedCursor(from peer: String) throws -> Int64 {
        try db.scalarInt("SELECT recv_seq FROM devices WHERE device_id = ?", [.text(peer)]) ?? 0
    }

    /// Peers to try for "Sync Now": not this device, not revoked, reached
    /// before; the most recently synced first.
    public func knownPeers() throws -> [DeviceInfo] {
        let me = try deviceID
        return try devices()
            .filter { $0.deviceID != me && $0.revokedAt == nil && $0.lastAddress != nil }
            .sorted { ($0.lastSyncedAt?.milliseconds ?? 0) > ($1.lastSyncedAt?.milliseconds ?? 0) }
    }

    // MARK: Photos

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

    /// The photo's row and size, for reading it in chunks.
    func photoLocation(_ sha256: String) throws -> (rowid: Int64, size: Int)? {
        let s = try db.prepare("SELECT rowid, length(bytes) FROM photos WHERE sha256 = ?")
        try s.bind([.text(sha256)])
        defer { s.reset() }
        return try s.step() ? (s.int64(0), Int(s.int64(1))) : nil
    }

    /// Keeps a received photo, `size` bytes arriving as `chunks`, whose bytes
    /// the caller has already hashed to `sha256` as they arrived (so they are
    /// not hashed twice). The row is made with a zeroblob and filled chunk by
    /// chunk through incremental blob I/O, so neither SQLite nor the caller
    /// builds a buffer the size of the photo; all in one transaction.
    func keepVerifiedPhoto(_ chunks: [ArraySlice<UInt8>], size: Int, sha256: String, now: Timestamp) throws {
        precondition(chunks.reduce(0) { $0 + $1.count } == size, "photo chunks do not add up to its size")
        try write {
            try db.run("INSERT OR IGNORE INTO photos (sha256, size, added_at, bytes) VALUES (?, ?, ?, zeroblob(?))",
                       [.text(sha256), .int(Int64(size)), .int(now.milliseconds), .int(Int64(size))])
            guard db.changes == 1, size > 0 else { return }
            let rowid = db.lastInsertRowID
            var b: OpaquePointer?
            var rc = sqlite3_blob_open(db.handle, "main", "photos", "bytes", rowid, 1, &b)
            guard rc == SQLITE_OK, let blob = b else {
                if let b { sqlite3_blob_close(b) }
                throw SQLiteError(code: rc, context: "opening a received photo for writing", message: String(cString: sqlite3_errmsg(db.handle)))
            }
            defer { sqlite3_blob_close(blob) }
            var offset: Int32 = 0
            for chunk in chunks {
                rc = chunk.withUnsafeBytes { sqlite3_blob_write(blob, $0.baseAddress, Int32($0.count), offset) }
                try db.check(rc, "writing a received photo")
                offset += Int32(chunk.count)
            }
        }
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

    // MARK: Offers

    /// Every offer this store made, with its state at `now`, for matching a
    /// joining device's offer tag.
    func offerStates(now: Timestamp) throws -> [(nonce: String, state: OfferRedemption)] {
        let s = try db.prepare("SELECT nonce, expires_at, used_at, closed_at FROM offers")
        defer { s.reset() }
        var out: [(String, OfferRedemption)] = []
        while try s.step() {
            let state: OfferRedemption
            if !s.isNull(2) { state = .alreadyUsed } else if !s.isNull(3) { state = .closed } else if s.int64(1) <= now.milliseconds { state = .expired } else { state = .accepted }
            out.append((s.text(0), state))
        }
        return out
    }
}

/// Reads a photo's bytes a chunk at a time through SQLite's incremental blob
/// I/O, so sending a large photo never holds all of it in memory. The blob
/// is opened for each chunk and closed again, so no read stays open across
/// the session's other writes. Not Sendable.
final class PhotoBlobReader {
    private let store: Store
    let rowid: Int64
    let size: Int
    private(set) var offset = 0
    private var scratch: [UInt8] = []

    init(store: Store, rowid: Int64, size: Int) {
        self.store = store
        self.rowid = rowid
        self.size = size
    }

    var isFinished: Bool { offset >= size }

    /// Reads the next at most `max` bytes, appending them to `out`.
    func readChunk(max: Int, into out: inout [UInt8]) throws {
        let n = min(max, size - offset)
        guard n > 0 else { return }
        let db = store.db.handle
        var b: OpaquePointer?
        var rc = sqlite3_blob_open(db, "main", "photos", "bytes", rowid, 0, &b)
        guard rc == SQLITE_OK, let blob = b else {
            if let b { sqlite3_blob_close(b) }
            throw SQLiteError(code: rc, context: "opening a photo for reading", message: String(cString: sqlite3_errmsg(db)))
        }
        defer { sqlite3_blob_close(blob) }
        guard Int(sqlite3_blob_bytes(blob)) == size else {
            throw SQLiteError(code: SQLITE_ABORT, context: "reading a photo", message: "the photo changed while it was being sent")
        }
        // Read into a buffer of our own and append it in one copy: growing `out`
        // by zeros first went a byte at a time.
        if scratch.count < n { scratch = [UInt8](repeating: 0, count: n) }
        rc = scratch.withUnsafeMutableBytes { sqlite3_blob_read(blob, $0.baseAddress!, Int32(n), Int32(offset)) }
        guard rc == SQLITE_OK else {
            throw SQLiteError(code: rc, context: "reading a photo", message: String(cString: sqlite3_errmsg(db)))
        }
        out.append(contentsOf: scratch[0..<n])
        offset += n
    }
}
