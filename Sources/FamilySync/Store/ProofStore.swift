/// A kept proof as stored, before any re-verification.
public struct KeptProof: Sendable, Equatable {
    public var id: Int64
    /// The compact JWS, as it was verified when saved.
    public var jws: String
    /// Where it came from: `local` (saved on this device) or `peer:<device ID>`.
    public var source: String
    public var savedAt: Timestamp
    public var signedAt: Timestamp?
    public var expiresAt: Timestamp?
}

/// The store's entitlement proofs and the settings they are judged by.
///
/// Settings (set once, e.g. `jws-verify --db S --save --bundle-id ID
/// --product P`): `bundle_id`, `products` (a JSON array of product IDs; empty
/// accepts any) and `allow_sandbox` (`true`/`false`).
///
/// Every proof is verified before it is kept and re-verified whenever it is
/// read; the store never vouches for a proof by itself.
extension Store {
    /// Forgets every kept proof (a revoked device drops to free). Call inside a transaction.
    func forgetProofsInTransaction() throws {
        try db.run("DELETE FROM proofs")
    }

    /// Proofs kept, newest `signedDate` first; older ones are dropped. A
    /// subscription renews monthly at most, and the owner pushes a fresh proof
    /// on every contact, so a few suffice; the bound keeps the launch-time
    /// re-check (which verifies each) quick.
    public static let maxKeptProofs = 16

    /// The source of a proof saved on this device.
    public static let localProofSource = "local"

    // MARK: Settings

    /// The proof policy in the store's settings, or nil when `bundle_id` was
    /// never set. A setting that cannot be read is an error.
    public func proofPolicy() throws -> ProofPolicy? {
        guard let bundle = try setting("bundle_id") else { return nil }
        var products: [String] = []
        if let text = try setting("products") {
            guard let items = (try? JSONParser.parse(text))?.arrayValue,
                  case let strings = items.compactMap(\.stringValue), strings.count == items.count else {
                throw StoreError(.badSetting, path: path, detail: "\(ProofFailure.quote(text)), not a JSON array of product IDs", other: "products")
            }
            products = strings
        }
        let sandbox: Bool
        switch try setting("allow_sandbox") {
        case nil, "false"?: sandbox = false
        case "true"?: sandbox = true
        case let other?: throw StoreError(.badSetting, path: path, detail: "\(ProofFailure.quote(other)), not true or false", other: "allow_sandbox")
        }
        return ProofPolicy(bundleID: bundle, products: products, allowSandbox: sandbox)
    }

    /// Replaces the three settings together. Call inside `write` to combine
    /// with other changes.
    public func setProofPolicy(_ p: ProofPolicy) throws {
        try setSetting("bundle_id", p.bundleID)
        try setSetting("products", JSONValue.array(p.products.map { .string($0) }).serialized)
        try setSetting("allow_sandbox", p.allowSandbox ? "true" : "false")
    }

    private func requiredPolicy(_ given: ProofPolicy?) throws -> ProofPolicy {
        if let given { return given }
        guard let p = try proofPolicy() else {
            throw ProofError(.noPolicy, path: path)
        }
        return p
    }

    // MARK: Saving

    /// Keeps a verified transaction (a `VerifiedProof` exists only after
    /// verification). Keeping the same JWS again changes nothing. Call inside
    /// a `write` transaction.
    public func keepProofInTransaction(_ proof: VerifiedProof, source: String, now: Timestamp) throws {
        guard proof.grantsEntitlement else {
            throw ProofError(.notATransaction, detail: proof.kind.rawValue)
        }
        try db.run("""
            INSERT INTO proofs (jws, source, saved_at, signed_at, expires_at) VALUES (?, ?, ?, ?, ?)
            ON CONFLICT(jws) DO NOTHING
            """, [.text(proof.jws), .text(source), .int(now.milliseconds),
                  proof.signedDate.map { .int($0.milliseconds) } ?? .null,
                  proof.entitledUntil.map { .int($0.milliseconds) } ?? .null])
        try db.run("""
            DELETE FROM proofs WHERE id NOT IN
                (SELECT id FROM proofs ORDER BY signed_at DESC, id DESC LIMIT \(Store.maxKeptProofs))
            """)
    }

    /// Keeps a verified transaction in its own transaction.
    public func keepProof(_ proof: VerifiedProof, source: String, now: Timestamp) throws {
        try write { try keepProofInTransaction(proof, source: source, now: now) }
    }

    /// Verifies a received proof at `now` under `policy` (default: the
    /// store's settings) and keeps it when valid. Returns the verdict either
    /// way; an invalid proof leaves the store unchanged.
    @discardableResult
    public func saveProof(_ jws: String, source: String, verifier: ProofVerifier, now: Timestamp,
                          policy: ProofPolicy? = nil) throws -> ProofVerdict {
        let verdict = verifier.verify(jws, as: .transaction, policy: try requiredPolicy(policy), now: now)
        if let proof = verdict.proof { try keepProof(proof, source: source, now: now) }
        return verdict
    }

    // MARK: Reading

    /// The kept proofs, newest `signedDate` first, unverified.
    public func keptProofs() throws -> [KeptProof] {
        let s = try db.prepare("SELECT id, jws, source, saved_at, signed_at, expires_at FROM proofs ORDER BY signed_at DESC, id DESC")
        defer { s.reset() }
        var out: [KeptProof] = []
        while try s.step() {
            out.append(KeptProof(id: s.int64(0), jws: s.text(1), source: s.text(2), savedAt: Timestamp(milliseconds: s.int64(3)),
                                 signedAt: s.optionalInt64(4).map(Timestamp.init(milliseconds:)),
                                 expiresAt: s.optionalInt64(5).map(Timestamp.init(milliseconds:))))
        }
        return out
    }

    /// Re-verifies every kept proof at `now` under `policy` (default: the
    /// store's settings) and answers with the newest valid one, or with the
    /// newest proof's failure, or `no-proof`. A kept proof that no longer
    /// even decodes (`malformed`) means a damaged store: that is an error,
    /// never a silent "free".
    public func entitlement(verifier: ProofVerifier, now: Timestamp, policy: ProofPolicy? = nil) throws -> Entitlement {
        let kept = try keptProofs()
        guard !kept.isEmpty else {
            return Entitlement(entitled: false, until: nil, reason: Entitlement.noProof, detail: nil, source: nil, proof: nil)
        }
        let p = try requiredPolicy(policy)
        var best: (VerifiedProof, KeptProof)?
        var newestFailure: (ProofFailure, KeptProof)?
        for k in kept {
            let verdict = verifier.verify(k.jws, as: .transaction, policy: p, now: now)
            switch verdict {
            case let .valid(proof):
                if best == nil { best = (proof, k) }
            case let .invalid(f, _, _):
                if f.reason == .malformed {
                    throw ProofError(.keptProofUnreadable, path: path, detail: f.detail, proof: "\(k.id)")
                }
                if newestFailure == nil { newestFailure = (f, k) }
            }
        }
        if let (proof, k) = best {
            return Entitlement(entitled: true, until: proof.entitledUntil, reason: nil, detail: nil, source: k.source, proof: proof)
        }
        // Never nil: `kept` is not empty and no proof was valid, so one failed.
        let (f, k) = newestFailure!
        return Entitlement(entitled: false, until: nil, reason: f.reason.rawValue, detail: f.detail, source: k.source, proof: nil)
    }
}
