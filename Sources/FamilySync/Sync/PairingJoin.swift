import FoundationEssentials
import Glibc

/// The owner's side of a pairing join: read JOIN, then in one transaction
/// check the family has room, consume the offer's nonce and admit the device
/// with a fresh device key. A refusal writes nothing, so the nonce survives
/// a "family full" and can be used once a place is free.
enum PairingAdmission {
    enum Result {
        /// `readmitted`: the device was in the family before (revoked, now invited again).
        case admitted(member: String, welcome: WelcomeMessage, readmitted: Bool)
        case refused(RefusalMessage)
    }

    static func admit(store: Store, family: FamilyInfo, nonce: String, channel: FrameChannel, clock: SyncClock) throws -> Result {
        var frame: Frame?
        let deadline = Deadline(after: SyncLimits.noticeTimeout)
        while frame == nil {
            guard let f = try channel.receive(deadline: deadline) else { throw TLSError(.io, "the joining device closed the connection") }
            channel.stash = channel.takeStash()
            if f.type != .ping { frame = f }
        }
        guard let f = frame else { throw ProtocolError("expected JOIN, the joining device closed the connection") }
        guard f.type == .join else { throw ProtocolError("expected JOIN, got \(f.type.name)") }
        let join = try JoinMessage(f)
        let me = try store.deviceID
        guard join.device != me else {
            return .refused(RefusalMessage(reason: .selfConnect, message: "a device cannot join its own family"))
        }
        let now = clock.now()
        return try store.write {
            let existing = try store.device(join.device)
            if let d = existing, d.revokedAt == nil {
                return .refused(RefusalMessage(reason: .alreadyMember, message: "device \(join.device) is already in the family"))
            }
            let active = try store.activeDeviceCount(), limit = try store.maxDevices
            guard active < limit else {
                return .refused(RefusalMessage(reason: .familyFull,
                    message: "the family is full (\(active) of \(limit) devices); the owner can revoke one to free a place"))
            }
            switch try store.redeemOfferInTransaction(nonce: nonce, by: join.device, now: now) {
            case .accepted: break
            case .alreadyUsed: return .refused(RefusalMessage(reason: .offerUsed, message: "offer already used"))
            case .expired: return .refused(RefusalMessage(reason: .offerExpired, message: "offer expired"))
            case .closed: return .refused(RefusalMessage(reason: .offerClosed, message: "offer closed"))
            case .unknown: return .refused(RefusalMessage(reason: .unknownOffer, message: "unknown offer"))
            }
            if existing != nil {
                // A revoked device the owner invites again starts over with a new key.
                try store.forgetDeviceInTransaction(join.device)
                try store.forgetAcknowledgementPoints(member: join.device)
            }
            let key = try store.admitDeviceInTransaction(join.device, name: join.name, now: now)
            guard let fk = try store.familySecret() else { throw StoreError(.noFamilyKey, path: store.path) }
            var welcome = WelcomeMessage(family: family.id, owner: me, epoch: try store.familyEpoch, familyKey: fk, deviceKey: key)
            let proof = try store.ownerWelcomeProof(family: family.id, device: join.device, tag: try SessionKeys.offerTag(nonce: nonce, family: family.id))
            (welcome.rosterKey, welcome.rosterProof) = (proof.key, proof.signature)
            return .admitted(member: join.device, welcome: welcome, readmitted: existing != nil)
        }
    }
}

/// A pairing offer as `join` reads it: pair-scan's JSON (one object per
/// line; the first offer is used) or the offer text itself.
public enum OfferInput {
    /// The longest input read for an offer.
    public static let maxBytes = 64 << 10

    /// Reads an offer's bytes from `path` (- is standard input), at most
    /// `maxBytes`: a longer input is not an offer.
    public static func read(_ path: String) throws -> [UInt8] {
        let reader = try LineReader(path: path, maxLineBytes: maxBytes + 1)
        var bytes: [UInt8] = []
        while let line = try reader.next() {
            guard case let .text(b) = line, bytes.count + b.count < maxBytes else {
                throw PairingError(.offerTooLong, source: reader.name, limit: maxBytes)
            }
            if reader.lineNumber > 1 { bytes.append(0x0A) }
            bytes += b
        }
        return bytes
    }

    /// Why `bytes` cannot be an offer at all (binary: NUL or other control
    /// bytes, or not UTF-8), or nil. An offer is text.
    public static func binaryProblem(_ bytes: [UInt8]) -> String? {
        if bytes.contains(where: { $0 < 0x20 && $0 != 0x09 && $0 != 0x0A && $0 != 0x0D || $0 == 0x7F }) { return "binary data" }
        if String(validating: bytes, as: UTF8.self) == nil { return "not UTF-8 text" }
        return nil
    }

    /// Parses the first offer in `text`. Expiry is the caller's to judge.
    public static func parse(_ text: String, source: String) throws -> PairingOffer {
        guard text.utf8.count <= maxBytes else { throw PairingError(.offerTooLong, source: source, limit: maxBytes) }
        var lineNumber = 0
        for raw in text.split(separator: "\n", omittingEmptySubsequences: false) {
            lineNumber += 1
            let line = raw.trimmingWhiteSpace(newlines: true)
            if line.isEmpty { continue }
            var qr = line
            if line.hasPrefix("{") {
                let v: JSONValue
                do { v = try JSONParser.parse(line) } catch {
                    throw PairingError(.offerNotJSON, source: source, line: lineNumber, detail: "\(error)")
                }
                guard let q = v["qr"]?.stringValue ?? v["text"]?.stringValue ?? v["raw"]?.stringValue else {
                    throw PairingError(.offerMissingQR, source: source, line: lineNumber, field: "qr")
                }
                qr = q
            }
            do { return try PairingOffer(text: qr) } catch {
                throw PairingError(.offerInvalid, source: source, line: lineNumber, field: error.field, detail: error.problem)
            }
        }
        throw PairingError(.noOffer, source: source)
    }
}
