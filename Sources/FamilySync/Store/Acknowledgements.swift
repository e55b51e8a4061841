import CSQLite

/// Who has heard of what, across a star-shaped family (docs/protocol.md §4.4):
/// members sync with the owner, rarely with each other, so only the owner can
/// tell when every current device has heard of a tombstone. It keeps, per
/// member, *acknowledgement points*: "after the session that ended with my
/// change number `own_seq`, I held every change of that member up to its
/// change number `peer_seq`". Once every current member has acknowledged the
/// owner's changes up to `own_seq`, everything that member had up to
/// `peer_seq` has reached every current device; the owner tells the member
/// so on each contact (FAMILY `acked`, in the member's own change numbers),
/// and tombstone-gc on the member reports it (only the owner purges; what it
/// purged reaches members as purge records, PurgeRecords.swift).
extension Store {
    /// Owner: notes what a completed session with `member` established.
    /// Points that can no longer matter are dropped. Call inside `write`.
    func recordAcknowledgementPoint(member: String, peerSeq: Int64, ownSeq: Int64) throws {
        try db.run("INSERT INTO ack_points (device, peer_seq, own_seq) VALUES (?, ?, ?) ON CONFLICT(device, peer_seq) DO UPDATE SET own_seq = max(own_seq, excluded.own_seq)",
                   [.text(member), .int(peerSeq), .int(ownSeq)])
        guard let floor = try acknowledgedByAllMembers() else { return }
        // Of the points every member has passed, only the newest is needed.
        try db.run("""
            DELETE FROM ack_points WHERE device = ?1 AND own_seq <= ?2
              AND peer_seq < (SELECT max(peer_seq) FROM ack_points WHERE device = ?1 AND own_seq <= ?2)
            """, [.text(member), .int(floor)])
    }

    /// Owner: forgets a member's points (its store went back in time, or it
    /// was admitted again): they count change numbers it no longer has.
    func forgetAcknowledgementPoints(member: String) throws {
        try db.run("DELETE FROM ack_points WHERE device = ?", [.text(member)])
    }

    /// Owner: the lowest of the owner's change numbers every current member
    /// has acknowledged; nil when there is no member.
    func acknowledgedByAllMembers() throws -> Int64? {
        try db.scalarInt("""
            SELECT min(sent_seq) FROM devices WHERE revoked_at IS NULL AND device_id != (SELECT value FROM meta WHERE key = 'device_id')
            HAVING count(*) > 0
            """)
    }

    /// Owner: what to tell `member`: up to which of its change numbers
    /// everything it had has reached every current device, and which devices
    /// have not yet heard everything the owner holds (with when each last synced).
    func familyAcknowledgement(for member: String) throws -> (acked: Int64, waitingFor: [(device: String, lastSynced: Timestamp?)]) {
        let all = try acknowledgedByAllMembers() ?? 0
        let acked = try db.scalarInt("SELECT max(peer_seq) FROM ack_points WHERE device = ? AND own_seq <= ?", [.text(member), .int(all)]) ?? 0
        // A device that has not heard everything the owner holds now holds back
        // what the member is waiting on (it can hold nothing the owner has not).
        let newest = try currentChangeSeq
        let me = try deviceID
        let waiting = try devices()
            .filter { $0.deviceID != me && $0.deviceID != member && $0.revokedAt == nil && $0.sentSeq < newest }
            .map { ($0.deviceID, $0.lastSyncedAt) }
        return (acked, waiting)
    }

    // MARK: A member's copy

    /// Member: what the owner said, on the last contact, every current device has heard of.
    func setFamilyAcknowledgement(acked: Int64, waitingFor: [(device: String, lastSynced: Timestamp?)]) throws {
        try setMeta("acked_by_all", String(acked))
        let list = JSONValue.array(waitingFor.map { .object([("device", .string($0.device)), ("lastSynced", .optional($0.lastSynced?.rfc3339))]) })
        try setMeta("acked_waiting_for", list.serialized)
    }

    /// Member: this store's change number up to which every current device has heard everything.
    public var acknowledgedByFamily: Int64 { get throws { Int64(try meta("acked_by_all") ?? "0") ?? 0 } }

    /// Member: the devices the owner last named as not yet having heard this one's changes.
    public func familyWaitingFor() throws -> [(device: String, lastSynced: Timestamp?)] {
        guard let text = try meta("acked_waiting_for"), let v = try? JSONParser.parse(text), case let .array(items) = v else { return [] }
        return items.compactMap { item in
            guard let d = item["device"]?.stringValue else { return nil }
            return (d, item["lastSynced"]?.stringValue.flatMap(Timestamp.init(rfc3339:)))
        }
    }

    /// How far of this store's changes `peer` acknowledged (its last DONE `upTo`).
    public func sentCursor(to peer: String) throws -> Int64 {
        try db.scalarInt("SELECT sent_seq FROM devices WHERE device_id = ?", [.text(peer)]) ?? 0
    }
}
