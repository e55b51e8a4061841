/// The entitlement part of a contact (docs/protocol.md §7.3): which proof
/// this device sends, what it does with the one it receives, and what a
/// revocation of itself does.
///
/// A device sends the newest proof that verifies now under its store's
/// policy. A received proof is verified here, with this device's trust
/// anchors and policy, and kept only when valid: whoever sent it, a proof
/// that fails makes nobody premium. The owner's policy (bundle ID, products,
/// sandbox) travels with it, so a new member can judge proofs from its first sync.
enum EntitlementExchange {
    /// What became of the proof a peer sent.
    enum Received: Equatable {
        case none
        /// Valid, and this store already held it.
        case known(until: Timestamp?)
        case kept(until: Timestamp?)
        case rejected(reason: String, detail: String)
        /// This store has no policy to judge proofs by (the owner never set one).
        case notJudged

        var json: JSONValue {
            switch self {
            case .none: return .object([("state", .string("none"))])
            case let .known(until): return .object([("state", .string("known")), ("until", .optional(until?.rfc3339))])
            case let .kept(until): return .object([("state", .string("kept")), ("until", .optional(until?.rfc3339))])
            case let .rejected(r, d): return .object([("state", .string("rejected")), ("reason", .string(r)), ("detail", .string(d))])
            case .notJudged: return .object([("state", .string("not-judged"))])
            }
        }
    }

    /// The longest proof accepted from a peer (a StoreKit JWS with its
    /// three-certificate chain is a few kilobytes; the verifier's own limit).
    static let maxProofBytes = 64 << 10

    /// The proof to send: the newest that verifies now, or nil. A kept proof
    /// that cannot even be read is reported and not sent; it does not stop the sync.
    static func outgoingProof(_ store: Store, verifier: ProofVerifier, now: Timestamp) -> (jws: String?, problem: String?) {
        do {
            guard try store.proofPolicy() != nil else { return (nil, nil) }
            let e = try store.entitlement(verifier: verifier, now: now)
            return (e.proof?.jws, nil)
        } catch {
            return (nil, "\(error)")
        }
    }

    /// The store's policy, to send along (the owner's is adopted by members).
    static func policy(_ store: Store) -> ProofPolicy? { try? store.proofPolicy() }

    /// Judges a received proof and keeps it when valid. Call inside the
    /// transaction that applies the FAMILY frame.
    static func receiveInTransaction(_ jws: String, from peer: String, store: Store, verifier: ProofVerifier, now: Timestamp) throws -> Received {
        guard let policy = try store.proofPolicy() else { return .notJudged }
        let held = try store.keptProofs().contains { $0.jws == jws }
        let verdict = verifier.verify(jws, as: .transaction, policy: policy, now: now)
        switch verdict {
        case let .valid(proof):
            if held { return .known(until: proof.entitledUntil) }
            try store.keepProofInTransaction(proof, source: "peer:" + peer, now: now)
            return .kept(until: proof.entitledUntil)
        case let .invalid(f, _, _):
            return .rejected(reason: f.reason.rawValue, detail: f.detail)
        }
    }

    /// The owner told this device, on an authenticated session, that it was
    /// revoked: it keeps its records but no longer the family's proofs, so
    /// jws-verify finds it free.
    static func dropToFree(_ store: Store, now: Timestamp) throws {
        try store.write {
            try store.markSelfRevoked(at: now)
            try store.forgetProofsInTransaction()
        }
    }
}

extension ProofPolicy {
    /// As FAMILY carries it.
    var syncJSON: JSONValue {
        .object([("bundleId", .string(bundleID)), ("products", .array(products.map { .string($0) })), ("allowSandbox", .bool(allowSandbox))])
    }
}

/// What `peer-sync status` says about entitlement.
public enum SyncStatus {
    /// This device's entitlement by the math (jws-verify's answer), with the
    /// proofs held; `no-policy` when the store has proofs but no settings to judge them by.
    public static func proofState(_ store: Store, verifier: ProofVerifier, now: Timestamp) throws -> JSONValue {
        let held = Int64(try store.keptProofs().count)
        var fields: [(String, JSONValue)] = [("held", .int(held))]
        if try store.proofPolicy() == nil {
            fields += [("entitled", .bool(false)), ("reason", .string(held == 0 ? Entitlement.noProof : "no-policy"))]
        } else {
            let e = try store.entitlement(verifier: verifier, now: now)
            if case let .object(pairs) = e.json { fields += pairs }
        }
        return .object(fields)
    }
}
