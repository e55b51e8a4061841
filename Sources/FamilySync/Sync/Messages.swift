/// The JSON control messages of protocol version 4, each parsed strictly:
/// a missing or mistyped field is a protocol error naming the frame and field.
/// Unknown fields are ignored, so a later minor revision may add some.
public enum SyncProtocol {
    /// The protocol version this build speaks (HELLO and JOIN `protocol`).
    /// Version 4 (docs/protocol.md §13): nothing linkable in clear, and who
    /// made a version. The PSK identity is sealed (no family or device ID,
    /// none alike), notices name nobody, discovery carries no offer tags,
    /// family tag or host name, and bundle headers are sealed; a version
    /// carries its author's tag (Records/Authorship.swift), and the owner
    /// takes a version naming another device than the member that hands it
    /// only with that device's tag. Version 3's family clock and purge records stay.
    public static let version = 4
}

/// Typed access to a control frame's fields.
struct FieldReader {
    let frame: String
    let value: JSONValue

    init(_ frame: Frame) throws(ProtocolError) {
        self.frame = frame.type.name
        self.value = try frame.json()
    }

    init(name: String, value: JSONValue) {
        self.frame = name
        self.value = value
    }

    private func fail(_ field: String, _ problem: String) -> ProtocolError { ProtocolError("\(frame) field '\(field)': \(problem)") }

    func string(_ k: String, maxBytes: Int = 256) throws(ProtocolError) -> String {
        guard let v = value[k] else { throw fail(k, "missing") }
        guard case let .string(s) = v else { throw fail(k, "not a string") }
        guard s.utf8.count <= maxBytes else { throw fail(k, "longer than \(maxBytes) bytes") }
        return s
    }
    func optionalString(_ k: String, maxBytes: Int = 256) throws(ProtocolError) -> String? {
        guard let v = value[k], !v.isNull else { return nil }
        return try string(k, maxBytes: maxBytes)
    }
    func uuid(_ k: String) throws(ProtocolError) -> String {
        let s = try string(k)
        guard PairingOffer.isUUID(s) else { throw fail(k, "not an upper-case UUID") }
        return s
    }
    func int(_ k: String, min lo: Int64 = 0, max hi: Int64 = Int64.max) throws(ProtocolError) -> Int64 {
        guard let v = value[k] else { throw fail(k, "missing") }
        // Digits only (§7: "without fraction or exponent"): 2.0 and 0e0 are not integers here.
        guard case let .number(text) = v, text != "-0", let n = Int64(text), n >= lo, n <= hi else {
            throw fail(k, "not a whole number from \(lo) to \(hi), written without fraction or exponent")
        }
        return n
    }
    /// The `protocol` field, which must be the version this device speaks;
    /// `who` names the sender in the error ("peer", "joining device").
    func protocolVersion(who: String) throws(ProtocolError) -> Int64 {
        let version = try int("protocol", min: 1, max: 1 << 20)
        guard version == Int64(SyncProtocol.version) else {
            let older = version < Int64(SyncProtocol.version) ? "the \(who)" : "this device"
            throw ProtocolError("the \(who) speaks family-sync protocol version \(version), this device version \(SyncProtocol.version); update family-sync on \(older)")
        }
        return version
    }
    func time(_ k: String) throws(ProtocolError) -> Timestamp {
        let s = try string(k, maxBytes: 64)
        guard let t = Timestamp(rfc3339: s) else { throw fail(k, "not an RFC 3339 time") }
        return t
    }
    func optionalTime(_ k: String) throws(ProtocolError) -> Timestamp? {
        guard let v = value[k], !v.isNull else { return nil }
        return try time(k)
    }
    /// A 32-byte key in hex, as bytes (a public key).
    func hexBytes(_ k: String) throws(ProtocolError) -> [UInt8] {
        let s = try string(k, maxBytes: 128)
        guard s.utf8.count == SessionKeys.keyBytes * 2, let b = Hex.decode(s) else { throw fail(k, "not a 32-byte key in hex") }
        return b
    }
    /// A 32-byte secret key in hex, decoded straight into its owner (no
    /// array of the key bytes is left behind).
    func hexKey(_ k: String) throws(ProtocolError) -> SecretBytes {
        var s = try string(k, maxBytes: 128)
        let key: SecretBytes? = s.withUTF8 { hex in
            var valid = false
            let key = SecretBytes(count: SessionKeys.keyBytes) { valid = Hex.decode(hex, into: $0) }
            return valid ? key : nil
        }
        guard let key else { throw fail(k, "not a 32-byte key in hex") }
        return key
    }
    func optionalHexKey(_ k: String) throws(ProtocolError) -> SecretBytes? {
        guard let v = value[k], !v.isNull else { return nil }
        return try hexKey(k)
    }
    func array(_ k: String, maxCount: Int) throws(ProtocolError) -> [JSONValue] {
        guard let v = value[k] else { throw fail(k, "missing") }
        guard case let .array(a) = v else { throw fail(k, "not an array") }
        guard a.count <= maxCount else { throw fail(k, "more than \(maxCount) entries") }
        return a
    }
    func object(_ k: String) throws(ProtocolError) -> FieldReader {
        guard let v = value[k] else { throw fail(k, "missing") }
        guard v.objectValue != nil else { throw fail(k, "not an object") }
        return FieldReader(name: "\(frame).\(k)", value: v)
    }
    func optionalBool(_ k: String) throws(ProtocolError) -> Bool? {
        guard let v = value[k], !v.isNull else { return nil }
        guard let b = v.boolValue else { throw fail(k, "not true or false") }
        return b
    }
    func optionalObject(_ k: String) throws(ProtocolError) -> FieldReader? {
        guard let v = value[k], !v.isNull else { return nil }
        return try object(k)
    }
    /// A random name (a resume chain, a bundle write: RandomName): 32 lower-case hex digits.
    func randomName(_ k: String) throws(ProtocolError) -> String {
        let s = try string(k, maxBytes: 64)
        guard RandomName.isValid(s) else { throw fail(k, "not 32 lower-case hex digits") }
        return s
    }
    func optionalRandomName(_ k: String) throws(ProtocolError) -> String? {
        guard let v = value[k], !v.isNull else { return nil }
        return try randomName(k)
    }
    /// A resume point: `{"chain": …, "after": int, "upTo": int}` with after ≤ upTo.
    func resumePoint() throws(ProtocolError) -> ResumePoint {
        let p = ResumePoint(chain: try randomName("chain"), after: try int("after"), upTo: try int("upTo"))
        guard p.after <= p.upTo else { throw fail("upTo", "below 'after' (\(p.after))") }
        return p
    }
    func role(_ k: String) throws(ProtocolError) -> FamilyInfo.Role {
        guard let r = FamilyInfo.Role(rawValue: try string(k)) else { throw fail(k, "not 'owner' or 'member'") }
        return r
    }
}

/// HELLO: the first frame of a sync session, from each side.
struct HelloMessage: Equatable {
    var version: Int64
    var device: String
    var family: String
    var role: FamilyInfo.Role
    var clock: Timestamp
    var epoch: Int64
    /// How far of the receiver's changes the sender already holds: send only later ones.
    var after: Int64
    /// How far of the sender's changes the sender believes the receiver holds
    /// (what the receiver's DONE `upTo` said last time). Together with
    /// `after` it shows whether both stores remember the same last session.
    var sent: Int64
    var software: String
    /// The sender's current change number, so the receiver can show how
    /// many records are coming (at most `changes - after`); optional, for
    /// progress only.
    var changes: Int64?
    /// The sender keeps RECORDS-MARK (§7.4b): the receiver sends them before its batches.
    var marks = true
    /// Where the sender's part of a cut-off session with the receiver had got to (§7.4b).
    var resume: ResumePoint?

    var json: JSONValue {
        var o: [(String, JSONValue)] = [("protocol", .int(version)), ("device", .string(device)), ("family", .string(family)), ("role", .string(role.rawValue)),
                 ("clock", .string(clock.rfc3339)), ("epoch", .int(epoch)), ("after", .int(after)), ("sent", .int(sent)),
                 ("software", .string(software))]
        if let changes { o.append(("changes", .int(changes))) }
        if marks { o.append(("marks", .bool(true))) }
        if let resume {
            o.append(("resume", .object([("chain", .string(resume.chain)), ("after", .int(resume.after)), ("upTo", .int(resume.upTo))])))
        }
        return .object(o)
    }

    init(version: Int64 = Int64(SyncProtocol.version), device: String, family: String, role: FamilyInfo.Role, clock: Timestamp,
         epoch: Int64, after: Int64, sent: Int64 = 0, software: String = FamilySyncInfo.version, changes: Int64? = nil) {
        self.sent = sent
        self.changes = changes
        self.version = version
        self.device = device
        self.family = family
        self.role = role
        self.clock = clock
        self.epoch = epoch
        self.after = after
        self.software = software
    }

    init(_ f: Frame) throws(ProtocolError) {
        let r = try FieldReader(f)
        version = try r.protocolVersion(who: "peer")
        device = try r.uuid("device")
        family = try r.uuid("family")
        role = try r.role("role")
        clock = try r.time("clock")
        epoch = try r.int("epoch", max: SyncLimits.maxEpoch)
        after = try r.int("after")
        sent = try r.int("sent")
        software = try r.optionalString("software", maxBytes: 64) ?? ""
        changes = r.value["changes"]?.int64Value.flatMap { $0 >= 0 ? $0 : nil }
        marks = try r.optionalBool("marks") ?? false
        resume = try r.optionalObject("resume")?.resumePoint()
    }
}

/// RECORDS-MARK (§7.4b): the RECORDS batch that follows completes the
/// sender's changes in (`after`, `upTo`] for the chain `chain`.
struct RecordsMarkMessage: Equatable {
    var point: ResumePoint

    var json: JSONValue {
        .object([("chain", .string(point.chain)), ("after", .int(point.after)), ("upTo", .int(point.upTo))])
    }

    init(_ point: ResumePoint) { self.point = point }

    init(_ f: Frame) throws(ProtocolError) {
        point = try FieldReader(f).resumePoint()
    }
}

/// One device as a roster lists it.
struct RosterEntry: Equatable {
    var device: String
    var role: FamilyInfo.Role
    var joinedAt: Timestamp
    var revokedAt: Timestamp?
    /// The owner's name for the device (docs/protocol.md §4.2): only in the
    /// owner's signed roster statement, and only when the device has one.
    var name: String? = nil

    var json: JSONValue {
        var pairs: [(String, JSONValue)] = [("device", .string(device)), ("role", .string(role.rawValue)), ("joinedAt", .string(joinedAt.rfc3339)),
                                            ("revokedAt", revokedAt.map { .string($0.rfc3339) } ?? .null)]
        if let name { pairs.append(("name", .string(name))) }
        return .object(pairs)
    }
}

/// FAMILY: what each side knows of the family, sent right after HELLO on
/// every contact: the roster with its revocations, the newest entitlement
/// proof, and (owner to member, when the member's key is older) the current family key.
struct FamilyMessage {
    /// The most roster entries a FAMILY frame may carry (revoked devices stay listed).
    static let maxRosterEntries = 256

    var owner: String
    var epoch: Int64
    var maxDevices: Int64
    var devices: [RosterEntry]
    var proof: String?
    /// The sender's proof policy (bundle ID, products, sandbox); members adopt the owner's.
    var policy: ProofPolicy?
    var familyKey: SecretBytes?
    /// The newest signed roster the sender holds (the owner's decision; OwnerAuthority.swift).
    var roster: SignedRoster?
    /// Owner only: the public key its roster statements verify under.
    var rosterKey: [UInt8]?
    /// Owner only: the receiver's change number up to which everything it
    /// had has reached every current device (Acknowledgements.swift).
    var acked: Int64?
    /// Owner only: the current devices that have not yet heard the receiver's latest changes.
    var waitingFor: [(device: String, lastSynced: Timestamp?)] = []

    /// The most product IDs a policy may list.
    static let maxPolicyProducts = 64

    var json: JSONValue {
        var pairs: [(String, JSONValue)] = [("owner", .string(owner)), ("epoch", .int(epoch)), ("maxDevices", .int(maxDevices)),
                                            ("devices", .array(devices.map(\.json))), ("proof", .optional(proof)),
                                            ("policy", policy?.syncJSON ?? .null)]
        if let k = familyKey { pairs.append(("familyKey", .string(k.withUnsafeBytes { Hex.encode($0) }))) }
        pairs.append(("roster", roster?.json ?? .null))
        if let k = rosterKey { pairs.append(("rosterKey", .string(Hex.encode(k)))) }
        if let a = acked {
            pairs.append(("acked", .int(a)))
            pairs.append(("waitingFor", .array(waitingFor.map { .object([("device", .string($0.device)), ("lastSynced", .optional($0.lastSynced?.rfc3339))]) })))
        }
        return .object(pairs)
    }

    init(owner: String, epoch: Int64, maxDevices: Int64, devices: [RosterEntry], proof: String?, policy: ProofPolicy? = nil, familyKey: SecretBytes?) {
        self.owner = owner
        self.epoch = epoch
        self.maxDevices = maxDevices
        self.devices = devices
        self.proof = proof
        self.policy = policy
        self.familyKey = familyKey
    }

    init(_ f: Frame) throws(ProtocolError) {
        let r = try FieldReader(f)
        owner = try r.uuid("owner")
        epoch = try r.int("epoch", max: SyncLimits.maxEpoch)
        maxDevices = try r.int("maxDevices", min: 1, max: 1000)
        var list: [RosterEntry] = []
        for (i, v) in try r.array("devices", maxCount: FamilyMessage.maxRosterEntries).enumerated() {
            guard v.objectValue != nil else { throw ProtocolError("FAMILY field 'devices[\(i)]': not an object") }
            let e = FieldReader(name: "FAMILY.devices[\(i)]", value: v)
            list.append(try RosterEntry(e))
        }
        devices = list
        proof = try r.optionalString("proof", maxBytes: EntitlementExchange.maxProofBytes)
        if let v = r.value["policy"], !v.isNull {
            guard v.objectValue != nil else { throw ProtocolError("FAMILY field 'policy': not an object") }
            let p = FieldReader(name: "FAMILY.policy", value: v)
            let bundle = try p.string("bundleId", maxBytes: 255)
            guard !bundle.isEmpty else { throw ProtocolError("FAMILY field 'policy.bundleId': empty") }
            var products: [String] = []
            for (i, item) in try p.array("products", maxCount: FamilyMessage.maxPolicyProducts).enumerated() {
                guard let s = item.stringValue, !s.isEmpty, s.utf8.count <= 255 else {
                    throw ProtocolError("FAMILY field 'policy.products[\(i)]': not a product ID")
                }
                products.append(s)
            }
            guard let sandbox = p.value["allowSandbox"]?.boolValue else { throw ProtocolError("FAMILY field 'policy.allowSandbox': not true or false") }
            policy = ProofPolicy(bundleID: bundle, products: products, allowSandbox: sandbox)
        } else {
            policy = nil
        }
        familyKey = try r.optionalHexKey("familyKey")
        if let v = r.value["roster"], !v.isNull {
            guard v.objectValue != nil else { throw ProtocolError("FAMILY field 'roster': not an object") }
            roster = try SignedRoster(FieldReader(name: "FAMILY.roster", value: v))
        }
        if let v = r.value["rosterKey"], !v.isNull { rosterKey = try r.hexBytes("rosterKey") }
        if let v = r.value["acked"], !v.isNull {
            acked = try r.int("acked")
            for (i, item) in try r.array("waitingFor", maxCount: FamilyMessage.maxRosterEntries).enumerated() {
                guard item.objectValue != nil else { throw ProtocolError("FAMILY field 'waitingFor[\(i)]': not an object") }
                let w = FieldReader(name: "FAMILY.waitingFor[\(i)]", value: item)
                waitingFor.append((try w.uuid("device"), try w.optionalTime("lastSynced")))
            }
        }
        // Revision 2's `purgeFloor` (a time) is no longer sent, and ignored if it comes (§4.5).
    }
}

/// Why a peer would not sync: the `reason` code a script can act on.
/// Before authentication a server says only `bad-identity` (no identity of
/// this protocol) or `unknown-key` (none it can open, or one it will not
/// serve): a stranger learns no more than that (§5.1, §5.2).
public enum RefusalReason: String, Sendable, CaseIterable {
    case badIdentity = "bad-identity"
    case unknownKey = "unknown-key"
    case revoked = "revoked"
    case unknownOffer = "unknown-offer"
    case offerUsed = "offer-used"
    case offerExpired = "offer-expired"
    case offerClosed = "offer-closed"
    case familyFull = "family-full"
    case alreadyMember = "already-member"
    case selfConnect = "self"
}

/// REFUSED: the server will not sync, and why. `hint` (on a notice) is the
/// server's device ID sealed for the family's devices (`IdentityHint`).
struct RefusalMessage {
    var reason: RefusalReason
    var message: String
    var hint: String?
    /// On `revoked` from the owner: when the owner revoked the device.
    var revokedAt: Timestamp?

    /// A hint's length in hex: nonce, a device ID, tag.
    static let hintHexDigits = 2 * (AES256GCM.nonceBytes + 16 + AES256GCM.tagBytes)

    var json: JSONValue {
        var pairs: [(String, JSONValue)] = [("reason", .string(reason.rawValue)), ("message", .string(message))]
        if let hint { pairs.append(("hint", .string(hint))) }
        if let t = revokedAt { pairs.append(("revokedAt", .string(t.rfc3339))) }
        return .object(pairs)
    }

    init(reason: RefusalReason, message: String, hint: String? = nil, revokedAt: Timestamp? = nil) {
        self.reason = reason
        self.message = message
        self.hint = hint
        self.revokedAt = revokedAt
    }

    init(_ f: Frame) throws(ProtocolError) {
        let r = try FieldReader(f)
        let code = try r.string("reason", maxBytes: 64)
        guard let reason = RefusalReason(rawValue: code) else { throw ProtocolError("REFUSED field 'reason': unknown code '\(code)'") }
        self.reason = reason
        message = DisplayText.escaped(try r.optionalString("message", maxBytes: 1024) ?? "")
        hint = try r.optionalString("hint", maxBytes: RefusalMessage.hintHexDigits)
        if let h = hint, !Hex.isLowercase(h.utf8, digits: RefusalMessage.hintHexDigits) {
            throw ProtocolError("REFUSED field 'hint': not \(RefusalMessage.hintHexDigits) lower-case hex digits")
        }
        revokedAt = try r.optionalTime("revokedAt")
    }
}

/// JOIN: a new device's first frame on a pairing session.
struct JoinMessage {
    var version: Int64
    var device: String
    var clock: Timestamp
    /// The name the joining device gives itself (optional; made safe with
    /// DeviceName.neutralised, longer than DeviceName.maxBytes is an error).
    var name: String?

    var json: JSONValue {
        var pairs: [(String, JSONValue)] = [("protocol", .int(version)), ("device", .string(device)), ("clock", .string(clock.rfc3339)),
                                            ("software", .string(FamilySyncInfo.version))]
        if let name { pairs.append(("name", .string(name))) }
        return .object(pairs)
    }

    init(device: String, clock: Timestamp, name: String? = nil, version: Int64 = Int64(SyncProtocol.version)) {
        self.version = version
        self.device = device
        self.clock = clock
        self.name = name
    }

    init(_ f: Frame) throws(ProtocolError) {
        let r = try FieldReader(f)
        version = try r.protocolVersion(who: "joining device")
        device = try r.uuid("device")
        clock = try r.time("clock")
        name = try r.optionalString("name", maxBytes: DeviceName.maxBytes).flatMap(DeviceName.neutralised)
    }
}

/// WELCOME: the owner admits the joining device: the family, the current
/// family key and the new member's own device key.
struct WelcomeMessage {
    var family: String
    var owner: String
    var epoch: Int64
    var familyKey: SecretBytes
    var deviceKey: SecretBytes
    /// The owner's roster key and its signature over this join (WelcomeProof):
    /// a store that already holds the family's roster key joins again only
    /// when they match it (revision 3).
    var rosterKey: [UInt8]?
    var rosterProof: [UInt8]?

    var json: JSONValue {
        var pairs: [(String, JSONValue)] = [("family", .string(family)), ("owner", .string(owner)), ("epoch", .int(epoch)),
                 ("familyKey", .string(familyKey.withUnsafeBytes { Hex.encode($0) })), ("deviceKey", .string(deviceKey.withUnsafeBytes { Hex.encode($0) }))]
        if let k = rosterKey, let p = rosterProof {
            pairs += [("rosterKey", .string(Hex.encode(k))), ("rosterProof", .string(Hex.encode(p)))]
        }
        return .object(pairs)
    }

    init(family: String, owner: String, epoch: Int64, familyKey: SecretBytes, deviceKey: SecretBytes) {
        self.family = family
        self.owner = owner
        self.epoch = epoch
        self.familyKey = familyKey
        self.deviceKey = deviceKey
    }

    init(_ f: Frame) throws(ProtocolError) {
        let r = try FieldReader(f)
        family = try r.uuid("family")
        owner = try r.uuid("owner")
        epoch = try r.int("epoch", max: SyncLimits.maxEpoch)
        familyKey = try r.hexKey("familyKey")
        deviceKey = try r.hexKey("deviceKey")
        if let v = r.value["rosterKey"], !v.isNull { rosterKey = try r.hexBytes("rosterKey") }
        if let v = r.value["rosterProof"], !v.isNull {
            let hex = try r.string("rosterProof", maxBytes: 2 * Ed25519.signatureBytes)
            guard hex.utf8.count == 2 * Ed25519.signatureBytes, let sig = Hex.decode(hex) else {
                throw ProtocolError("WELCOME field 'rosterProof': not a 64-byte signature in hex")
            }
            rosterProof = sig
        }
    }
}

/// DONE: the sender's own requests are finished. Carries its counts, a digest
/// of its record state and `upTo`, the cursor the receiver may store for it.
struct DoneMessage {
    var recordsSent: Int64
    var recordsReceived: Int64
    var recordsApplied: Int64
    var photosSent: Int64
    var photosReceived: Int64
    var photosUnavailable: Int64
    var digest: String
    var upTo: Int64

    var json: JSONValue {
        .object([("records", .object([("sent", .int(recordsSent)), ("received", .int(recordsReceived)), ("applied", .int(recordsApplied))])),
                 ("photos", .object([("sent", .int(photosSent)), ("received", .int(photosReceived)), ("unavailable", .int(photosUnavailable))])),
                 ("digest", .string(digest)), ("upTo", .int(upTo))])
    }

    init(recordsSent: Int64, recordsReceived: Int64, recordsApplied: Int64, photosSent: Int64, photosReceived: Int64,
         photosUnavailable: Int64, digest: String, upTo: Int64) {
        self.recordsSent = recordsSent
        self.recordsReceived = recordsReceived
        self.recordsApplied = recordsApplied
        self.photosSent = photosSent
        self.photosReceived = photosReceived
        self.photosUnavailable = photosUnavailable
        self.digest = digest
        self.upTo = upTo
    }

    init(_ f: Frame) throws(ProtocolError) {
        let r = try FieldReader(f)
        let rec = try r.object("records"), ph = try r.object("photos")
        recordsSent = try rec.int("sent")
        recordsReceived = try rec.int("received")
        recordsApplied = try rec.int("applied")
        photosSent = try ph.int("sent")
        photosReceived = try ph.int("received")
        photosUnavailable = try ph.int("unavailable")
        digest = try r.string("digest", maxBytes: 64)
        guard digest.utf8.count == 64, Hex.decode(digest) != nil else { throw ProtocolError("DONE field 'digest': not a SHA-256 in hex") }
        upTo = try r.int("upTo")
    }
}
