/// Apple refunded or revoked the purchase: `revocationDate` is present.
public struct RevocationCheck: PayloadCheck {
    public var reason: ProofReason { .revoked }
    public init() {}

    public func failure(_ p: SignedPayload, now: Timestamp) -> String? {
        guard let r = p.revocationDate else { return nil }
        return "revocationDate is \(r.rfc3339)" + (p.revocationReason.map { $0.isNull ? "" : " (revocationReason \(ProofFailure.quote($0)))" } ?? "")
    }
}
