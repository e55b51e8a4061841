import CSQLite

/// The family key's epoch, per-device keys and the roster with revocations.
/// Secrets live in the `secrets` table (the store file is 0600) and are
/// never printed.
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
    public func setFamilyKey(_ key: SecretBytes, epoch: Int64) throws {
        try setSecret("family_secret", key)
        try setMeta("family_epoch", String(epoch))
    }

    /// This member's own device key.
    public func ownDeviceKey() throws -> SecretBytes? { try secret("device_key") }
    public func setOwnDeviceKey(_ key: SecretBytes) throws { try setSecret("device_key", key) }

    /// The owner's copy of a member's device key.
    public func memberDeviceKey(_ device: String) throws -> SecretBytes? { try secret("device_key:" + device) }

    /// The secrets a peer may have sealed a name under, as this store holds
    /// them (docs/protocol.md §3.3, §12b): the family key; the member's own
    /// device key, or on the owner each member's (current ones first, then
    /// the most recently revoked, at most `SyncLimits.maxTrialDeviceKeys`);
    /// with `offers`, the owner's newest `SyncLimits.maxRecognisedOffers`.
    /// So the keys tried on one name never pass `SyncLimits.maxTrialKeys`.
    func heldKeys(offers: Bool) throws -> [HeldKey] {
        guard let fam = try family() else { return [] }
        var out: [HeldKey] = []
        if let f = try familySecret() { out.append(HeldKey(.family(epoch: try familyEpoch), secret: f)) }
        if fam.role == .member {
            if let d = try ownDeviceKey() { out.append(HeldKey(.device(member: try deviceID), secret: d)) }
            return out
        }
        let keys = try db.prepare("""
            SELECT d.device_id, s.value FROM devices d JOIN secrets s ON s.name = 'device_key:' || d.device_id
            WHERE d.role = 'member' ORDER BY d.revoked_at IS NOT NULL, d.revoked_at DESC, d.joined_at, d.device_id LIMIT ?
            """)
        try keys.bind([.int(Int64(SyncLimits.maxTrialDeviceKeys))])
        while try keys.step() { out.append(HeldKey(.device(member: keys.text(0)), secret: keys.withBytes(1) { SecretBytes($0) })) }
        keys.reset()
        guard offers else { return out }
        let made = try db.prepare("SELECT nonce FROM offers ORDER BY created_at DESC, nonce LIMIT ?")
        try made.bind([.int(Int64(SyncLimits.maxRecognisedOffers))])
        defer { made.reset() }
        while try made.step() {
            let nonce = made.text(0)
            out.append(HeldKey(.offer(nonce: nonce), secret: SecretBytes(nonce.utf8)))
        }
        return out
    }

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
    /// roster) may also lift a revocation and sets the device's name;
    /// otherwise revocations only accumulate and names are left alone.
    public func mergeRosterEntry(device: String, role: FamilyInfo.Role, joinedAt: Timestamp, revokedAt: Timestamp?,
                                 name: String? = nil, authoritative: Bool) throws {
        try db.run("INSERT OR IGNORE INTO devices (device_id, role, joined_at) VALUES (?, ?, ?)",
                   [.text(device), .text(role.rawValue), .int(joinedAt.milliseconds)])
        if authoritative {
            try db.run("UPDATE devices SET role = ?, joined_at = ?, revoked_at = ? WHERE device_id = ?",
                       [.text(role.rawValue), .int(joinedAt.milliseconds), revokedAt.map { .int($0.milliseconds) } ?? .null, .text(device)])
            // The owner's name for the device; a roster without one (an owner
            // that names no devices) leaves this device's own name as it gave it.
            let me = try deviceID
            if name != nil || device != me { try setDeviceName(device, name) }
        } else if let revokedAt {
            try db.run("UPDATE devices SET revoked_at = ? WHERE device_id = ? AND revoked_at IS NULL", [.int(revokedAt.milliseconds), .text(device)])
        }
    }

    /// Forgets a device: on the owner, a revoked device invited again (it
    /// starts over with a new key); on a member, one the owner's roster no
    /// longer lists. Call inside a transaction.
    func forgetDeviceInTransaction(_ device: String) throws {
        try db.run("DELETE FROM devices WHERE device_id = ?", [.text(device)])
    }

    /// Owner: admits a joining device and issues its device key. Call inside
    /// the transaction that also consumes the offer's nonce.
    public func admitDeviceInTransaction(_ device: String, name: String? = nil, now: Timestamp) throws -> SecretBytes {
        // A device admitted again: the versions it tagged before stay the owner's to tell.
        if let f = try family() { try keepAuthorshipKeyInTransaction(replacing: device, family: f) }
        let key = try SecretBytes.random(count: Store.familySecretBytes)
        try db.run("INSERT INTO devices (device_id, role, joined_at) VALUES (?, 'member', ?)", [.text(device), .int(now.milliseconds)])
        try setDeviceName(device, name)
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
        try setFamilyKey(try SecretBytes.random(count: Store.familySecretBytes), epoch: epoch)
        return epoch
    }

    /// Owner: moves the family to a fresh key at an epoch above both its own
    /// and `epoch` (a member's, when the owner's store went back in time).
    /// Returns the new epoch. Call inside `write`.
    @discardableResult
    func rotateFamilyKey(above epoch: Int64) throws -> Int64 {
        let next = max(try familyEpoch, epoch) + 1
        try setFamilyKey(try SecretBytes.random(count: Store.familySecretBytes), epoch: next)
        return next
    }

    /// A revoked member admitted again: its own revocation is gone. Call inside
    /// the transaction that stores its new keys.
    func clearSelfRevocationInTransaction() throws {
        try db.run("UPDATE devices SET revoked_at = NULL WHERE device_id = ?", [.text(try deviceID)])
    }

    /// Marks this device as revoked (the owner said so on an authenticated session).
    public func markSelfRevoked(at t: Timestamp) throws {
        try db.run("UPDATE devices SET revoked_at = ? WHERE device_id = ? AND revoked_at IS NULL", [.int(t.milliseconds), .text(try deviceID)])
    }
}
