/// A signed App Store object that passed every check. Only `ProofVerifier`
/// can make one (its initializer needs a seal only the verifier can mint),
/// so code holding a `VerifiedProof` never holds an unchecked token.
public struct VerifiedProof: Sendable {
    /// The compact JWS, exactly as verified.
    public let jws: String
    public let payload: SignedPayload
    /// The time the checks were run for (`expiresDate` was compared with it).
    public let verifiedAt: Timestamp

    init(seal: VerificationSeal, jws: String, payload: SignedPayload, verifiedAt: Timestamp) {
        self.jws = jws
        self.payload = payload
        self.verifiedAt = verifiedAt
    }

    public var kind: SignedPayloadKind { payload.kind }

    /// Only a transaction proves a purchase.
    public var grantsEntitlement: Bool { kind == .transaction }

    /// Until when the purchase entitles (`expiresDate`); nil for a transaction
    /// that does not expire, and for kinds that grant nothing.
    public var entitledUntil: Timestamp? { grantsEntitlement ? payload.expiresDate : nil }

    public var signedDate: Timestamp? { payload.signedDate }
}
