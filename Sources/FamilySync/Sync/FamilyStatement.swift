/// FAMILY (docs/protocol.md §7.3) as this device states it and as it takes
/// a peer's: the same for a session and for a bundle (§12b). The owner
/// takes nothing from a member's roster; a member takes the roster only as
/// the owner signed it, and the family key, policy and acknowledgements only
/// from the owner.
enum FamilyStatement {
    /// What this device tells `peer`, whose family key is at `peerEpoch`:
    /// roster, revocations, the newest proof, and the family key for a member
    /// that is behind. `warn` hears why no proof goes, when none does.
    static func make(store: Store, family: FamilyInfo, peer: String, peerEpoch: Int64, verifier: ProofVerifier, now: Timestamp,
                     warn: (String) -> Void) throws -> (message: FamilyMessage, proofSent: Bool) {
        let roster = try store.devices().map { RosterEntry(device: $0.deviceID, role: $0.role, joinedAt: $0.joinedAt, revokedAt: $0.revokedAt) }
        var signed: SignedRoster? = nil, rosterKey: [UInt8]? = nil
        var ack: (acked: Int64, waitingFor: [(device: String, lastSynced: Timestamp?)])? = nil
        if family.role == .owner {
            try store.write {
                signed = try store.ownerSignedRoster(family: family)
                rosterKey = try store.ownerRosterPublicKey()
            }
            ack = try store.familyAcknowledgement(for: peer)
        } else {
            signed = try store.heldRoster()
        }
        var key: SecretBytes? = nil
        if family.role == .owner, peerEpoch < (try store.familyEpoch) { key = try store.familySecret() }
        let maxDevices = Int64(family.role == .owner ? try store.maxDevices : Int(try store.meta("family_max_devices") ?? "") ?? Store.defaultMaxDevices)
        let outgoing = EntitlementExchange.outgoingProof(store, verifier: verifier, now: now)
        if let problem = outgoing.problem { warn("no proof sent: \(problem)") }
        var message = FamilyMessage(owner: family.ownerDevice, epoch: try store.familyEpoch, maxDevices: maxDevices,
                                    devices: Array(roster.prefix(FamilyMessage.maxRosterEntries)),
                                    proof: outgoing.jws, policy: EntitlementExchange.policy(store), familyKey: key)
        message.roster = signed
        message.rosterKey = rosterKey
        message.acked = ack?.acked
        message.waitingFor = ack?.waitingFor ?? []
        return (message, outgoing.jws != nil)
    }

    /// What taking a peer's FAMILY did, for `settle` once it is committed.
    struct Received {
        var rosterOutcome: Store.RosterOutcome?
        var adopted: (version: Int64, revoked: [String], unknown: [String])?
        var newKeyEpoch: Int64?
        var proof = EntitlementExchange.Received.none
        /// The owner's word on what every device acknowledged (a member keeps it when its caller says).
        var acknowledgement: (acked: Int64, waitingFor: [(device: String, lastSynced: Timestamp?)])?
    }

    /// Takes `m` from `device` (whose family key is at `peerEpoch`) inside the caller's write transaction.
    static func receiveInTransaction(_ m: FamilyMessage, from device: String, peerEpoch: Int64, store: Store, family: FamilyInfo,
                                     verifier: ProofVerifier, now: Timestamp) throws -> Received {
        guard m.owner == family.ownerDevice else { throw ProtocolError("FAMILY names owner \(m.owner), not \(family.ownerDevice)") }
        let fromOwner = device == family.ownerDevice
        var r = Received()
        if family.role == .member {
            if fromOwner, let k = m.rosterKey {
                guard k.count == Ed25519.keyBytes else { throw ProtocolError("FAMILY field 'rosterKey': not a 32-byte key") }
                try store.setOwnerRosterKey(k)
            }
            if let roster = m.roster { r.rosterOutcome = try store.applyOwnerRoster(roster, family: family) }
        }
        if fromOwner {
            if let p = m.policy, p != (try store.proofPolicy()) { try store.setProofPolicy(p) }
            if let k = m.familyKey, m.epoch > (try store.familyEpoch) {
                try store.setFamilyKey(k, epoch: m.epoch)
                r.newKeyEpoch = m.epoch
            }
            if let a = m.acked { r.acknowledgement = (a, m.waitingFor) }
        }
        if family.role == .owner, let roster = m.roster {
            // Its own statement, newer than the one it holds: this store went back in time.
            r.adopted = try store.adoptOwnRoster(roster, family: family, peerEpoch: peerEpoch)
        }
        if let p = m.proof {
            r.proof = try EntitlementExchange.receiveInTransaction(p, from: device, store: store, verifier: verifier, now: now)
        }
        return r
    }

    /// After the commit: the events, the old family key scrubbed, and, when
    /// the owner's signed roster revokes this device, the drop to free
    /// (thrown as `SyncError(.revokedByRoster)`).
    static func settle(_ r: Received, store: Store, me: String, peerName: String, emit: (String, [(String, JSONValue)]) -> Void) throws {
        switch r.rosterOutcome {
        case let .applied(version, selfRevokedAt)?:
            emit("roster", [("version", .int(version))])
            if let t = selfRevokedAt {
                // The owner's own signed word: this device is out of the family.
                try EntitlementExchange.dropToFree(store, now: t)
                emit("revoked", [("device", .string(me)), ("revokedAt", .string(t.rfc3339))])
                throw SyncError(.revokedByRoster, detail: t.rfc3339)
            }
        case let .rejected(why)?:
            emit("warning", [("message", .string("roster from \(peerName) ignored: \(why)"))])
        case .old?, nil:
            break
        }
        if let adopted = r.adopted {
            emit("roster", [("version", .int(adopted.version)), ("adopted", .bool(true)), ("revoked", .array(adopted.revoked.map { .string($0) }))])
            for d in adopted.unknown {
                emit("warning", [("message", .string("device \(d) joined after this store's copy was taken; its device key is not in this store, so it must pair again with a new offer"))])
            }
        }
        if let epoch = r.newKeyEpoch {
            // The old family key's pages leave the log and the file now, not at some later checkpoint.
            _ = try? store.scrubReplacedSecrets()
            emit("family-key", [("epoch", .int(epoch))])
        }
        switch r.proof {
        case .none: break
        case let .known(until): emit("proof", [("state", .string("known")), ("until", .optional(until?.rfc3339))])
        case let .kept(until): emit("proof", [("state", .string("kept")), ("until", .optional(until?.rfc3339))])
        case let .rejected(reason, detail):
            emit("proof", [("state", .string("rejected")), ("reason", .string(reason)), ("detail", .string(detail))])
        case .notJudged: emit("proof", [("state", .string("not-judged"))])
        }
    }
}
