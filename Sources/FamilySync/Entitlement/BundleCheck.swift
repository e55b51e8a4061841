/// The proof is for this app: `bundleId` equals the configured bundle ID.
public struct BundleCheck: PayloadCheck {
    public var bundleID: String
    public var reason: ProofReason { .wrongBundle }

    public init(bundleID: String) { self.bundleID = bundleID }

    public func failure(_ p: SignedPayload, now: Timestamp) -> String? {
        guard let b = p.bundleID else {
            return "\(p.kind == .notification ? "notification data" : "payload") has no bundleId; expected \(ProofFailure.quote(bundleID))"
        }
        return b == bundleID ? nil : "bundleId is \(ProofFailure.quote(b)), expected \(ProofFailure.quote(bundleID))"
    }
}
