/// A secret a device holds that a peer may have sealed a name under: a PSK
/// identity (docs/protocol.md §3.3) or a bundle header (§12b). Nothing in
/// clear says which secret it was; the receiver tries those it holds.
public struct HeldKey: Sendable {
    public enum Kind: Equatable, Sendable {
        /// `member`'s device key (owner ↔ member): the owner holds one per
        /// member, a member its own.
        case device(member: String)
        /// The family key of `epoch` (member ↔ member).
        case family(epoch: Int64)
        /// An offer's nonce (a pairing join); the secret is its text, as in the QR code.
        case offer(nonce: String)
    }
    public let kind: Kind
    let secret: SecretBytes

    public init(_ kind: Kind, secret: SecretBytes) {
        self.kind = kind
        self.secret = secret
    }

    /// What a name is sealed for: each use has keys of its own.
    enum Use {
        case identity, bundleHeader
        var salt: [UInt8] { self == .identity ? SessionKeys.identitySalt : SessionKeys.bundleHeaderSalt }
    }

    /// The AES-256-GCM key this secret seals names for `use` under, bound to
    /// the family and to what the secret is (whose device key, which epoch).
    func sealingKey(family: String, for use: Use) throws -> SecretBytes {
        let info: [String]
        switch kind {
        case let .device(member): info = ["device-key", family, member]
        case let .family(epoch): info = ["family-key", family, String(epoch)]
        case .offer: info = ["pair", family]
        }
        return try hkdfSHA256(secret: secret, salt: use.salt, info: SessionKeys.info(info), length: AES256GCM.keyBytes)
    }
}

/// The keys a receiver tries on a sealed name, derived once from what it
/// holds. Opening costs one AES-256-GCM tag check per key, so the work a
/// stranger can cause with one name is bounded by how many keys are held
/// (`Store.heldKeys`, at most `SyncLimits.maxTrialKeys`). Its key schedules
/// are made once, so it is used by one thread at a time (the server's
/// under its reader's lock).
struct TrialKeys {
    let held: [HeldKey]
    private let sealing: [AES256GCMKey]

    init(_ held: [HeldKey], family: String, use: HeldKey.Use) throws {
        self.held = held
        sealing = try held.map { try AES256GCMKey($0.sealingKey(family: family, for: use)) }
    }

    /// The key `box` (nonce ‖ ciphertext ‖ tag) was sealed under, with its plaintext; nil when none of these.
    func open(_ box: [UInt8], aad: [UInt8]) throws -> (key: HeldKey, plaintext: [UInt8])? {
        try AES256GCM.openWithAny(box, keys: sealing, aad: aad).map { (held[$0.index], $0.plaintext) }
    }
}

/// The PSK identity of protocol version 4 (docs/protocol.md §3.3): what the
/// client means, sealed under a key derived from the secret the PSK comes
/// from, with a nonce fresh for every ClientHello. In clear it is `FS4 `
/// and hex: no family, device or host ID, and no two ClientHellos alike. A
/// server tries each key it holds; the one that opens it tells which secret,
/// and the plaintext whom the client means.
public enum SessionIdentity: Equatable, Sendable {
    /// A sync session: `client` connects to `server`.
    case sync(client: String, server: String)
    /// A pairing join (the offer is the key that opens it).
    case pair

    static let prefix = Array("FS4 ".utf8)
    /// The kind byte, a client and a server device ID (16 bytes each; zero in a pairing identity).
    static let plaintextBytes = 33
    /// Bytes of the sealed box: nonce, plaintext, tag.
    static let sealedBytes = AES256GCM.nonceBytes + plaintextBytes + AES256GCM.tagBytes
    /// The identity as sent: the prefix, then the box in lowercase hex.
    public static let textBytes = prefix.count + 2 * sealedBytes

    var plaintext: [UInt8] {
        switch self {
        case let .sync(c, s): return [0x53] + DeviceIDBytes.encode(c) + DeviceIDBytes.encode(s)
        case .pair: return [0x50] + [UInt8](repeating: 0, count: 32)
        }
    }

    /// The bytes a ClientHello carries: this identity sealed under `key`.
    public func sealed(family: String, under key: HeldKey) throws -> [UInt8] {
        let k = try key.sealingKey(family: family, for: .identity)
        return SessionIdentity.prefix + Array(Hex.encode(try AES256GCM.sealWithFreshNonce(plaintext, key: k, aad: SessionIdentity.prefix)).utf8)
    }

    /// What a server makes of the identity in a ClientHello.
    enum Reading {
        /// Not an identity of any version (§5.1: `bad-identity`).
        case malformed
        /// `FS1 …`, the identity of protocol versions 1 to 3.
        case previousVersion
        /// Well formed, but no key tried opens it (or what it opens to is no identity).
        case unrecognised
        case opened(SessionIdentity, HeldKey)
    }

    static func read(_ bytes: [UInt8], keys: TrialKeys) throws -> Reading {
        if bytes.starts(with: Array("FS1 ".utf8)) { return .previousVersion }
        guard bytes.starts(with: prefix), Hex.isLowercase(bytes[prefix.count...], digits: 2 * sealedBytes),
              let box = Hex.decode(String(decoding: bytes[prefix.count...], as: UTF8.self)) else { return .malformed }
        guard let (key, p) = try keys.open(box, aad: prefix), p.count == plaintextBytes else { return .unrecognised }
        switch (p[0], key.kind) {
        case (0x53, .device), (0x53, .family):
            return .opened(.sync(client: DeviceIDBytes.decode(p[1..<17]), server: DeviceIDBytes.decode(p[17..<33])), key)
        case (0x50, .offer) where p[1...].allSatisfy({ $0 == 0 }):
            return .opened(.pair, key)
        default:
            return .unrecognised
        }
    }

    /// The identity that redeems `offer` (a pairing join), sealed under its nonce.
    public static func pairing(_ offer: PairingOffer) throws -> [UInt8] {
        try SessionIdentity.pair.sealed(family: offer.family, under: HeldKey(.offer(nonce: offer.nonce), secret: SecretBytes(offer.nonce.utf8)))
    }

    /// The identity a protocol version 3 client sends, in clear; only the
    /// fault that makes this build speak the previous version sends it.
    public static func previousVersionText(family: String, client: String, server: String, epoch: Int64) -> [UInt8] {
        Array("FS1 S \(family) \(client) \(server) \(epoch)".utf8)
    }
    static func previousVersionText(_ offer: PairingOffer) throws -> [UInt8] {
        Array("FS1 P \(offer.family) \(try SessionKeys.offerTag(nonce: offer.nonce, family: offer.family))".utf8)
    }
}

extension Store {
    /// The identity, sealed (§3.3), and the PSK this store offers a session
    /// with `server`: the owner, a member's device key; a member, its own
    /// device key with the owner, the family key with another member.
    /// `previousVersion`: version 3's identity in clear (a fault for tests).
    public func sessionCredentials(server: String, previousVersion: Bool = false) throws -> (identity: [UInt8], psk: SecretBytes) {
        guard let fam = try family() else { throw StoreError(.noFamily, path: path) }
        let me = try deviceID, epoch = try familyEpoch
        let held: HeldKey
        let psk: SecretBytes
        if fam.role == .owner {
            guard let dev = try device(server), dev.revokedAt == nil, let k = try memberDeviceKey(server) else {
                throw SyncError(.notAMember, peer: server)
            }
            held = HeldKey(.device(member: server), secret: k)
            psk = try SessionKeys.devicePSK(deviceKey: k, family: fam.id, client: me, server: server)
        } else if server == fam.ownerDevice {
            guard let k = try ownDeviceKey() else { throw StoreError(.noDeviceKey, path: path) }
            held = HeldKey(.device(member: me), secret: k)
            psk = try SessionKeys.devicePSK(deviceKey: k, family: fam.id, client: me, server: server)
        } else {
            guard let fk = try familySecret() else { throw StoreError(.noFamilyKey, path: path) }
            held = HeldKey(.family(epoch: epoch), secret: fk)
            psk = try SessionKeys.familyPSK(familyKey: fk, family: fam.id, epoch: epoch, client: me, server: server)
        }
        if previousVersion { return (SessionIdentity.previousVersionText(family: fam.id, client: me, server: server, epoch: epoch), psk) }
        return (try SessionIdentity.sync(client: me, server: server).sealed(family: fam.id, under: held), psk)
    }
}

/// The hint a notice carries (§5.2, REFUSED `hint`): the answering device's
/// ID, sealed under its family key and bound to the identity it answers.
/// A device of the family at the same epoch reads who answered (a client
/// that guessed another device follows it once; one that reached itself
/// says so); anyone else, a replayer included, sees random bytes.
enum IdentityHint {
    static func key(familyKey: SecretBytes, family: String, epoch: Int64) throws -> SecretBytes {
        try hkdfSHA256(secret: familyKey, salt: SessionKeys.identitySalt, info: SessionKeys.info(["hint", family, String(epoch)]), length: AES256GCM.keyBytes)
    }

    static func seal(device: String, key: SecretBytes, identity: [UInt8]) throws -> String {
        Hex.encode(try AES256GCM.sealWithFreshNonce(DeviceIDBytes.encode(device), key: key, aad: identity))
    }

    /// The device a hint names, or nil when it is not one this key sealed for `identity`.
    static func open(_ hint: String, key: SecretBytes, identity: [UInt8]) throws -> String? {
        guard let box = Hex.decode(hint), let (_, p) = try AES256GCM.openWithAny(box, keys: [try AES256GCMKey(key)], aad: identity), p.count == 16 else { return nil }
        return DeviceIDBytes.decode(p[...])
    }
}

/// Device and family IDs as the 16 bytes of their UUID inside sealed names
/// (they are upper-case UUID texts everywhere else), and back.
enum DeviceIDBytes {
    static func encode(_ id: String) -> [UInt8] {
        let hex = id.filter { $0 != "-" }
        precondition(hex.utf8.count == 32, "a device ID is a UUID")
        // Never nil: the IDs sealed are UUIDs this store holds.
        return Hex.decode(hex)!
    }

    static func decode(_ bytes: ArraySlice<UInt8>) -> String {
        let h = Array(Hex.encode(bytes).uppercased())
        return String(h[0..<8]) + "-" + String(h[8..<12]) + "-" + String(h[12..<16]) + "-" + String(h[16..<20]) + "-" + String(h[20..<32])
    }
}
