/// A subscription transaction is good until its `expiresDate` (exclusive);
/// one without `expiresDate` (a non-consumable) does not expire.
public struct ExpiryCheck: PayloadCheck {
    public var reason: ProofReason { .expired }
    public init() {}

    public func failure(_ p: SignedPayload, now: Timestamp) -> String? {
        guard let e = p.expiresDate, e <= now else { return nil }
        return "expiresDate \(e.rfc3339) is not after now (\(now.rfc3339))"
    }
}
