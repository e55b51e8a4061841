/// The family this store belongs to: its ID, this device's role, and the
/// shared family secret the sync PSKs are derived from.
public struct FamilyInfo: Sendable, Equatable {
    public enum Role: String, Sendable { case owner, member }
    public var id: String
    public var role: Role
    public var ownerDevice: String
}

/// A device of the family as this store knows it.
public struct DeviceInfo: Sendable, Equatable {
    public var deviceID: String
    public var role: FamilyInfo.Role
    public var name: String?
    public var joinedAt: Timestamp
    public var revokedAt: Timestamp?
    public var lastAddress: String?
    public var lastSyncedAt: Timestamp?
    public var sentSeq: Int64
    public var recvSeq: Int64
}

extension Store {
    /// The length of the family secret, in bytes.
    public static let familySecretBytes = 32
    /// Devices in a family unless the store's `max_devices` setting says otherwise:
    /// the owner and three members, as one subscription covers.
    public static let defaultMaxDevices = 4

    public func family() throws -> FamilyInfo? {
        guard let id = try meta("family_id"), let role = try meta("role").flatMap(FamilyInfo.Role.init(rawValue:)),
              let owner = try meta("owner_device") else { return nil }
        return FamilyInfo(id: id, role: role, ownerDevice: owner)
    }

    /// Makes a new family with this device as its owner, and the owner's
    /// roster key with it: any copy of the store that holds the family holds
    /// the key too, so a store restored from one still signs as the members
    /// expect (docs/protocol.md §4.6). Call inside `write`.
    public func createFamily(now: Timestamp) throws -> FamilyInfo {
        if let f = try family() { return f }
        let me = try deviceID
        let f = FamilyInfo(id: try randomUUID(), role: .owner, ownerDevice: me)
        try setMeta("family_id", f.id)
        try setMeta("role", f.role.rawValue)
        try setMeta("owner_device", me)
        try setSecret("family_secret", try SecretBytes.random(count: Store.familySecretBytes))
        try db.run("INSERT OR IGNORE INTO devices (device_id, role, joined_at) VALUES (?, 'owner', ?)", [.text(me), .int(now.milliseconds)])
        _ = try ownerRosterPublicKey()
        return f
    }

    /// Records that this store has joined `family` as a member. Call inside `write`.
    public func joinFamily(id: String, ownerDevice: String, secret: SecretBytes, now: Timestamp) throws {
        if let f = try family(), f.id != id {
            throw StoreError(.alreadyInFamily, path: path, family: f.id)
        }
        let me = try deviceID
        try setMeta("family_id", id)
        try setMeta("role", FamilyInfo.Role.member.rawValue)
        try setMeta("owner_device", ownerDevice)
        try setSecret("family_secret", secret)
        try db.run("INSERT OR IGNORE INTO devices (device_id, role, joined_at) VALUES (?, 'member', ?)", [.text(me), .int(now.milliseconds)])
        try db.run("INSERT OR IGNORE INTO devices (device_id, role, joined_at) VALUES (?, 'owner', ?)", [.text(ownerDevice), .int(now.milliseconds)])
    }

    /// The family secret; never print it.
    public func familySecret() throws -> SecretBytes? { try secret("family_secret") }

    public var maxDevices: Int {
        get throws { Int(try setting("max_devices") ?? "") ?? Store.defaultMaxDevices }
    }

    public func devices() throws -> [DeviceInfo] {
        let s = try db.prepare("""
            SELECT device_id, role, name, joined_at, revoked_at, last_addr, last_synced_at, sent_seq, recv_seq
            FROM devices ORDER BY joined_at, device_id
            """)
        defer { s.reset() }
        var out: [DeviceInfo] = []
        while try s.step() {
            out.append(DeviceInfo(
                deviceID: s.text(0), role: FamilyInfo.Role(rawValue: s.text(1)) ?? .member, name: s.optionalText(2),
                joinedAt: Timestamp(milliseconds: s.int64(3)), revokedAt: s.optionalInt64(4).map(Timestamp.init(milliseconds:)),
                lastAddress: s.optionalText(5), lastSyncedAt: s.optionalInt64(6).map(Timestamp.init(milliseconds:)),
                sentSeq: s.int64(7), recvSeq: s.int64(8)))
        }
        return out
    }
}
