/// Per-peer cursors and where each peer was last reached: what lets the
/// next session with a peer send only what changed since the last one.
extension Store {
    /// Records a completed session with `peer`: how far of its changes we hold,
    /// how far of ours it acknowledged, when, and (for the connecting side) where.
    public func recordCompletedSync(peer: String, recvSeq: Int64, sentSeq: Int64, at: Timestamp, address: String?) throws {
        try db.run("INSERT OR IGNORE INTO devices (device_id, role, joined_at) VALUES (?, 'member', ?)", [.text(peer), .int(at.milliseconds)])
        try db.run("UPDATE devices SET recv_seq = ?, sent_seq = ?, last_synced_at = ? WHERE device_id = ?",
                   [.int(recvSeq), .int(sentSeq), .int(at.milliseconds), .text(peer)])
        try clearResumePointsInTransaction(peer: peer)
        if let address { try rememberAddressInTransaction(address, of: peer) }
    }

    /// Where `peer` was reached, for the next Sync Now. An address belongs to
    /// one device: a device that moved frees it. Call inside a transaction.
    public func rememberAddressInTransaction(_ address: String, of peer: String) throws {
        try db.run("UPDATE devices SET last_addr = NULL WHERE last_addr = ? AND device_id <> ?", [.text(address), .text(peer)])
        try db.run("UPDATE devices SET last_addr = ? WHERE device_id = ?", [.text(address), .text(peer)])
    }

    /// Every peer's cursors back to 0, so the next session with each sends and
    /// takes everything (a store admitted to its family again). Call inside a transaction.
    func resetAllCursorsInTransaction() throws {
        try db.run("UPDATE devices SET sent_seq = 0, recv_seq = 0")
        try clearResumePointsInTransaction(peer: nil)
        try resetBundleCursorsInTransaction()
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
}
