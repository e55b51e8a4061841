import FoundationEssentials
import Glibc

/// The owner's authority over the family (docs/protocol.md §4): only the
/// owner decides who is in the family and who is revoked. It states the
/// roster in a *roster statement* signed with its roster key (Ed25519, made
/// with the family and kept in the owner's store); members learn the public
/// key from the owner itself, on sessions keyed by their own device key, and
/// apply a statement only when it verifies under that key and is newer than
/// the one they hold. A member relays the newest statement it holds
/// verbatim, so a revocation still spreads member to member, but a member can
/// no longer change anyone's roster: a lie does not verify, and an old
/// statement replayed is not newer. The owner never applies a roster from
/// anyone.
struct RosterStatement: Equatable {
    /// Signatures cover this prefix and the statement text, so a roster
    /// signature can never be taken for a signature over anything else.
    static let signingContext = Array("family-sync/2 roster\u{0}".utf8)
    /// The longest statement text accepted (256 entries of ~150 bytes fit).
    static let maxTextBytes = 64 << 10

    var family: String
    /// Grows by one each time the owner's roster changes.
    var version: Int64
    var maxDevices: Int64
    var devices: [RosterEntry]

    /// The exact text that is signed and sent.
    var text: String {
        JSONValue.object([("family", .string(family)), ("version", .int(version)), ("maxDevices", .int(maxDevices)),
                          ("devices", .array(devices.map(\.json)))]).serialized
    }

    init(family: String, version: Int64, maxDevices: Int64, devices: [RosterEntry]) {
        self.family = family
        self.version = version
        self.maxDevices = maxDevices
        self.devices = devices
    }

    init(text: String) throws(ProtocolError) {
        guard text.utf8.count <= RosterStatement.maxTextBytes else { throw ProtocolError("FAMILY field 'roster.statement': longer than \(RosterStatement.maxTextBytes) bytes") }
        let v: JSONValue
        do { v = try JSONParser.parse(text) } catch { throw ProtocolError("FAMILY field 'roster.statement': not JSON") }
        guard v.objectValue != nil else { throw ProtocolError("FAMILY field 'roster.statement': not an object") }
        let r = FieldReader(name: "roster statement", value: v)
        family = try r.uuid("family")
        version = try r.int("version", min: 1)
        maxDevices = try r.int("maxDevices", min: 1, max: 1000)
        var list: [RosterEntry] = []
        for (i, e) in try r.array("devices", maxCount: FamilyMessage.maxRosterEntries).enumerated() {
            guard e.objectValue != nil else { throw ProtocolError("roster statement field 'devices[\(i)]': not an object") }
            list.append(try RosterEntry(FieldReader(name: "roster statement.devices[\(i)]", value: e)))
        }
        devices = list
    }

    /// Everything but the version: what decides whether the roster changed.
    func sameRoster(as other: RosterStatement) -> Bool {
        family == other.family && maxDevices == other.maxDevices && devices == other.devices
    }
}

/// A roster statement with the owner's signature, as FAMILY carries it.
struct SignedRoster: Equatable {
    var text: String
    var signature: [UInt8]

    var json: JSONValue { .object([("statement", .string(text)), ("signature", .string(Hex.encode(signature)))]) }

    init(text: String, signature: [UInt8]) {
        self.text = text
        self.signature = signature
    }

    init(_ r: FieldReader) throws(ProtocolError) {
        text = try r.string("statement", maxBytes: RosterStatement.maxTextBytes)
        let hex = try r.string("signature", maxBytes: 2 * Ed25519.signatureBytes)
        guard hex.utf8.count == 2 * Ed25519.signatureBytes, let sig = Hex.decode(hex) else {
            throw ProtocolError("\(r.frame) field 'signature': not a 64-byte signature in hex")
        }
        signature = sig
    }

    static func sign(_ s: RosterStatement, privateKey: SecretBytes) throws -> SignedRoster {
        let text = s.text
        return SignedRoster(text: text, signature: try Ed25519.sign(RosterStatement.signingContext + Array(text.utf8), privateKey: privateKey))
    }

    /// The statement, if the signature is the owner's (`publicKey`); nil otherwise.
    func verified(publicKey: [UInt8]) throws(ProtocolError) -> RosterStatement? {
        guard Ed25519.verify(signature, message: RosterStatement.signingContext + Array(text.utf8), publicKey: publicKey) else { return nil }
        return try RosterStatement(text: text)
    }
}

/// WELCOME's proof that its sender holds the family's roster key (§9): a
/// signature over this join's own facts (the family, the owner, the joining
/// device and the offer's tag), so the maker of a forged offer, who does not
/// hold the key, cannot make one, and none made for another join fits.
enum WelcomeProof {
    static let context = Array("family-sync/3 welcome".utf8) + [0]

    static func message(family: String, owner: String, device: String, tag: String) -> [UInt8] {
        context + Array([family, owner, device, tag].joined(separator: "\u{0}").utf8)
    }

    static func verify(_ w: WelcomeMessage, device: String, tag: String, key: [UInt8]) -> Bool {
        guard w.rosterKey == key, let sig = w.rosterProof else { return false }
        return Ed25519.verify(sig, message: message(family: w.family, owner: w.owner, device: device, tag: tag), publicKey: key)
    }
}

extension RosterEntry {
    init(_ e: FieldReader) throws(ProtocolError) {
        self.init(device: try e.uuid("device"), role: try e.role("role"), joinedAt: try e.time("joinedAt"), revokedAt: try e.optionalTime("revokedAt"),
                  name: try e.optionalString("name", maxBytes: DeviceName.maxBytes).flatMap(DeviceName.neutralised))
    }
}

extension Store {
    // MARK: The owner's side

    /// Owner: the roster key's public half. The key pair is made with the
    /// family (`createFamily`); a family made before roster keys existed gets
    /// it here, on first use. Call inside `write`.
    func ownerRosterPublicKey() throws -> [UInt8] {
        try Ed25519.publicKey(privateKey: try ownerRosterPrivateKey())
    }

    /// Owner: signs `message` with the roster key (purge batches, PurgeRecords.swift). Call inside `write`.
    func signAsOwner(_ message: [UInt8]) throws -> [UInt8] {
        try Ed25519.sign(message, privateKey: try ownerRosterPrivateKey())
    }

    /// Owner: the roster key's public half and WELCOME's proof for `device` joining on the offer of `tag`. Call inside `write`.
    func ownerWelcomeProof(family: String, device: String, tag: String) throws -> (key: [UInt8], signature: [UInt8]) {
        let me = try deviceID
        return (try ownerRosterPublicKey(),
                try Ed25519.sign(WelcomeProof.message(family: family, owner: me, device: device, tag: tag), privateKey: try ownerRosterPrivateKey()))
    }

    /// Owner: the roster key's private half (made on first use). Never leaves the store.
    func ownerRosterPrivateKey() throws -> SecretBytes {
        if let k = try secret("roster_signing_key") { return k }
        let k = try Ed25519.generatePrivateKey()
        try setSecret("roster_signing_key", k)
        return k
    }

    /// Owner: the roster as it stands, signed; a new version when it changed
    /// since the last statement made. Call inside `write`.
    func ownerSignedRoster(family: FamilyInfo) throws -> SignedRoster {
        let entries = try devices().map { RosterEntry(device: $0.deviceID, role: $0.role, joinedAt: $0.joinedAt, revokedAt: $0.revokedAt, name: $0.name) }
        var s = RosterStatement(family: family.id, version: 1, maxDevices: Int64(try maxDevices), devices: Array(entries.prefix(FamilyMessage.maxRosterEntries)))
        if let last = try heldRoster(), let held = try? RosterStatement(text: last.text) {
            if held.sameRoster(as: s) { return last }
            s.version = held.version + 1
        }
        let signed = try SignedRoster.sign(s, privateKey: try ownerRosterPrivateKey())
        try holdRoster(signed, version: s.version)
        return signed
    }

    /// Owner: a statement signed with this owner's own roster key, relayed
    /// by a member, that is newer than the one this store holds: the store
    /// went back in time (restored from a copy taken before the roster last
    /// changed), and the statement is what the owner decided since
    /// (docs/protocol.md §4.6). The owner takes its word back: it holds the
    /// statement, so the next one it makes counts on from there; every
    /// device the statement lists as revoked is revoked here too, at the
    /// statement's time; a revocation this store holds stays (fail closed).
    /// A device the statement lists that this store does not know joined
    /// after the copy was taken: its device key is not here, so it is left
    /// out (and must pair again). When a device was revoked here, the family
    /// moves to a fresh key above `peerEpoch`. Returns nil when the statement
    /// is not the owner's, not this family's, or not newer. Call inside `write`.
    func adoptOwnRoster(_ signed: SignedRoster, family: FamilyInfo, peerEpoch: Int64) throws -> (version: Int64, revoked: [String], unknown: [String])? {
        guard let statement = try? signed.verified(publicKey: try ownerRosterPublicKey()), statement.family == family.id,
              statement.version > (try heldRosterVersion) else { return nil }
        let me = try deviceID
        var revoked: [String] = [], unknown: [String] = []
        for e in statement.devices where e.device != me {
            guard let d = try device(e.device) else {
                if e.revokedAt == nil { unknown.append(e.device) }
                continue
            }
            if d.revokedAt == nil, let t = e.revokedAt {
                try mergeRosterEntry(device: d.deviceID, role: d.role, joinedAt: d.joinedAt, revokedAt: t, authoritative: false)
                revoked.append(e.device)
            }
        }
        try holdRoster(signed, version: statement.version)
        if !revoked.isEmpty { try rotateFamilyKey(above: peerEpoch) }
        return (statement.version, revoked, unknown)
    }

    // MARK: Both sides

    /// The newest signed roster this store holds (made, or received from the owner or relayed).
    func heldRoster() throws -> SignedRoster? {
        guard let text = try meta("roster_statement"), let hex = try meta("roster_signature"), let sig = Hex.decode(hex) else { return nil }
        return SignedRoster(text: text, signature: sig)
    }

    var heldRosterVersion: Int64 { get throws { Int64(try meta("roster_version") ?? "0") ?? 0 } }

    private func holdRoster(_ r: SignedRoster, version: Int64) throws {
        try setMeta("roster_statement", r.text)
        try setMeta("roster_signature", Hex.encode(r.signature))
        try setMeta("roster_version", String(version))
    }

    // MARK: A member's side

    /// The owner's roster key, as the owner gave it on an owner session.
    var ownerRosterKey: [UInt8]? { get throws { try meta("roster_key").flatMap(Hex.decode) } }

    /// Member: keeps the owner's roster key. Call only with a key from the
    /// owner itself (a session keyed by this member's device key, or the
    /// pairing session), inside `write`. A key other than the one held means
    /// the owner's store holds a roster key made after the one this member
    /// knew (the store was restored from a copy of a family older than roster
    /// keys, §4.6): the statement held was signed with a key the owner no
    /// longer has, so it is dropped, and the owner's statements under the new
    /// key count from their own versions. Revocations it applied stay (a
    /// statement lifts one only by a later admission, `applyOwnerRoster`).
    func setOwnerRosterKey(_ key: [UInt8]) throws {
        if let held = try ownerRosterKey, held != key {
            for k in ["roster_statement", "roster_signature", "roster_version"] { try setMeta(k, nil) }
        }
        try setMeta("roster_key", Hex.encode(key))
    }

    /// What applying a roster statement did.
    enum RosterOutcome: Equatable {
        /// Not the owner's signature, another family's, or no key to judge it by: ignored.
        case rejected(String)
        /// Not newer than the statement held.
        case old
        /// Applied; `selfRevokedAt` is set when it revokes this device.
        case applied(version: Int64, selfRevokedAt: Timestamp?)
    }

    /// Member: applies a signed roster (from the owner or relayed by a member)
    /// when it is the owner's and newer than the one held: its entries replace
    /// this store's roster, and devices it does not list are dropped. A
    /// revocation this store holds is lifted only for a device the statement
    /// admitted again after it (a `joinedAt` later than the revocation): an
    /// owner whose store went back in time may state a device current that
    /// it had revoked, and a revoked device stays out (fail closed). Call
    /// inside `write`.
    func applyOwnerRoster(_ signed: SignedRoster, family: FamilyInfo) throws -> RosterOutcome {
        guard let key = try ownerRosterKey else { return .rejected("no roster key from the owner yet") }
        let statement: RosterStatement
        do {
            guard let s = try signed.verified(publicKey: key) else { return .rejected("the roster's signature is not the owner's") }
            statement = s
        } catch { return .rejected(error.message) }
        guard statement.family == family.id else { return .rejected("the roster is another family's") }
        guard statement.version > (try heldRosterVersion) else { return .old }
        let me = try deviceID
        let wasRevoked = try isSelfRevoked
        let listed = Set(statement.devices.map(\.device))
        for d in try devices() where !listed.contains(d.deviceID) && d.deviceID != me {
            try forgetDeviceInTransaction(d.deviceID)
        }
        for e in statement.devices {
            var revokedAt = e.revokedAt
            if revokedAt == nil, let held = try device(e.device)?.revokedAt, e.joinedAt <= held { revokedAt = held }
            try mergeRosterEntry(device: e.device, role: e.role, joinedAt: e.joinedAt, revokedAt: revokedAt, name: e.name, authoritative: true)
        }
        try setMeta("family_max_devices", String(statement.maxDevices))
        try holdRoster(signed, version: statement.version)
        let revokedAt = statement.devices.first { $0.device == me }?.revokedAt
        return .applied(version: statement.version, selfRevokedAt: wasRevoked ? nil : revokedAt)
    }

    /// Member: a revoked store about to be admitted again (a new offer
    /// redeemed). It starts over as a member: no revocation, no cursors (its
    /// first session sends and takes everything, merged by last-writer-wins,
    /// with the owner's purge records applied), no acknowledgements. Call inside
    /// `write`, with the transaction that stores the new keys.
    func prepareRejoin() throws {
        try clearSelfRevocationInTransaction()
        try resetAllCursorsInTransaction()
        try setMeta("acked_by_all", nil)
        try setMeta("acked_waiting_for", nil)
    }
}
