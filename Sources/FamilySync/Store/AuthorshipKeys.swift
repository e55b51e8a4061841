/// Authorship keys (docs/protocol.md §3.4, Records/Authorship.swift): derived,
/// never stored on their own, from secrets the store already keeps. A
/// member's from its device key, the owner's from its roster key. The owner
/// also keeps, for each device it admitted again, the keys of its earlier
/// admissions (`authorship_before:<DEVICE>`, 32 bytes each, in `secrets`):
/// for telling versions that device made before, never for a session.
extension Store {
    /// The key this device tags its own edits with; nil for a store in no
    /// family, or a member not yet given its device key (its edits go
    /// untagged). Inside `write` (an owner from before roster keys gets one).
    func ownAuthorshipKey() throws -> Authorship.Key? {
        guard let f = try family() else { return nil }
        switch f.role {
        case .owner:
            return try Authorship.ownerKey(rosterKey: try ownerRosterPrivateKey(), family: f.id, owner: f.ownerDevice)
        case .member:
            guard let d = try ownDeviceKey() else { return nil }
            return try Authorship.memberKey(deviceKey: d, family: f.id, device: try deviceID)
        }
    }

    /// Owner: every key a version attributed to `device` may carry a tag of:
    /// its own for its own device; a member's from the device key it holds
    /// (a revoked member's too: it is kept) and from its earlier admissions.
    /// Empty for a device this store never admitted. Inside `write`.
    func authorshipKeys(of device: String, family f: FamilyInfo) throws -> [Authorship.Key] {
        if device == f.ownerDevice { return [try Authorship.ownerKey(rosterKey: try ownerRosterPrivateKey(), family: f.id, owner: device)] }
        var keys: [Authorship.Key] = []
        if let d = try memberDeviceKey(device) { keys.append(try Authorship.memberKey(deviceKey: d, family: f.id, device: device)) }
        if let before = try secret(Store.authorshipBeforeKey(device)) {
            before.withUnsafeBytes { b in
                for i in stride(from: 0, to: b.count - SessionKeys.keyBytes + 1, by: SessionKeys.keyBytes) {
                    keys.append(Authorship.Key(SecretBytes(b[i..<(i + SessionKeys.keyBytes)])))
                }
            }
        }
        return keys
    }

    /// Owner, as it admits `device` again (a new device key): the authorship
    /// key of the admission it replaces joins those kept for that device.
    func keepAuthorshipKeyInTransaction(replacing device: String, family f: FamilyInfo) throws {
        guard let old = try memberDeviceKey(device) else { return }
        let key = try Authorship.memberKey(deviceKey: old, family: f.id, device: device)
        let before = try secret(Store.authorshipBeforeKey(device))
        let held = before?.count ?? 0
        let joined = SecretBytes(count: held + key.secret.count) { out in
            before?.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: out[0..<held]).copyMemory(from: $0) }
            key.secret.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: out[held...]).copyMemory(from: $0) }
        }
        try setSecret(Store.authorshipBeforeKey(device), joined)
    }

    static func authorshipBeforeKey(_ device: String) -> String { "authorship_before:" + device }
}

/// Which versions a store takes from a peer only with proof of who made them,
/// and the proof (docs/protocol.md §7.4 "Authorship"): the one place that
/// says so, for sessions and bundles alike. Keys are looked up once per
/// device named, when a version would change the store.
final class AuthorshipCheck {
    private let store: Store
    private let family: FamilyInfo
    /// The peer: on the owner, its own versions come on its key's word.
    private let sender: [UInt8]
    /// On a member, the one device whose versions it judges: itself.
    private let only: [UInt8]?
    private var keys: [[UInt8]: [Authorship.Key]] = [:]

    private init(store: Store, family: FamilyInfo, sender: [UInt8], only: [UInt8]?) {
        self.store = store
        self.family = family
        self.sender = sender
        self.only = only
    }

    /// The check on what `peer` sends this store, or nil where none is made.
    /// The owner judges every version a member hands it that names another
    /// device: the member originates versions under its own ID only. A
    /// member judges, from another member, the versions that name itself
    /// (so none can be laundered through it to the owner as its own); it
    /// holds no key to judge any other device's, and takes the owner's
    /// versions as the owner holds them.
    static func forIntake(store: Store, family: FamilyInfo, me: String, from peer: String) -> AuthorshipCheck? {
        switch family.role {
        case .owner: return AuthorshipCheck(store: store, family: family, sender: Array(peer.utf8), only: nil)
        case .member: return peer == family.ownerDevice ? nil : AuthorshipCheck(store: store, family: family, sender: Array(peer.utf8), only: Array(me.utf8))
        }
    }

    /// Whether a version naming `device` needs a proof.
    func judges(_ device: UnsafeBufferPointer<UInt8>) -> Bool {
        if let only { return device.elementsEqual(only) }
        return !device.elementsEqual(sender)
    }

    /// Whether the version `r` at `base`, naming `device`, carries a tag
    /// made with a key of that device's. Inside `write`.
    func proves(_ base: UnsafePointer<UInt8>, _ r: RecordScan, device: UnsafeBufferPointer<UInt8>) throws -> Bool {
        guard r.tagAt >= 0 else { return false }
        let name = Array(device)
        let held: [Authorship.Key]
        if let k = keys[name] {
            held = k
        } else {
            held = only != nil ? (try store.ownAuthorshipKey()).map { [$0] } ?? []
                               : try store.authorshipKeys(of: String(decoding: name, as: UTF8.self), family: family)
            keys[name] = held
        }
        return held.contains { Authorship.verifies(base, r, key: $0) }
    }
}
