/// The proof is for this app: `bundleId` equals the configured bundle ID.
public struct BundleCheck: PayloadCheck {
    public var bundleID: String
    public var reason: ProofReason { .wrongBundle }

    public init(bundleID: String) { self.bundleID = bundleID }

    public func failure(_ p: SignedPayload, now: Timestamp) -> String? {
        guard let b = p.bundleID else {
            return "\(p.kind == .notification ? "notification data" : "payload") has no bundleId; expected \(ProofFailure.quote(bundleID))"
                + (p.kind == .transaction ? BundleCheck.otherKind(p.json).map { " (it looks like \($0); give --type \($0))" } ?? "" : "")
        }
        return b == bundleID ? nil : "bundleId is \(ProofFailure.quote(b)), expected \(ProofFailure.quote(bundleID))"
    }

    /// The other signed type a payload read as a transaction looks like, by
    /// fields only that type has: renewal info names an auto-renew product,
    /// a notification has a notificationType.
    static func otherKind(_ json: JSONValue) -> String? {
        if json["notificationType"] != nil { return SignedPayloadKind.notification.rawValue }
        if json["autoRenewProductId"] != nil || json["autoRenewStatus"] != nil { return SignedPayloadKind.renewalInfo.rawValue }
        return nil
    }
}
