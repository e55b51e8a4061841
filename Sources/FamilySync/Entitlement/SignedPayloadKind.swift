/// The App Store signed objects `jws-verify` reads. All three pass the same
/// header, chain and signature checks; they differ in what their payload is
/// checked for and in what a valid one yields.
public enum SignedPayloadKind: String, Sendable, CaseIterable {
    /// `JWSTransaction` (StoreKit 2 `jwsRepresentation`, the server API's
    /// `signedTransactionInfo`). Checked for bundle, product, environment,
    /// revocation and expiry. The only kind that proves an entitlement: a
    /// valid one yields `entitledUntil` (its `expiresDate`, or null for a
    /// purchase that does not expire).
    case transaction
    /// `JWSRenewalInfo` (`signedRenewalInfo`). It carries no bundle ID;
    /// checked for environment only. It grants nothing: `entitledUntil` is
    /// always null.
    case renewalInfo = "renewal-info"
    /// An App Store Server Notification V2 `signedPayload`. Checked for the
    /// bundle and environment in its `data` (or `summary`, or
    /// `externalPurchaseToken`). It grants nothing by itself; the transaction
    /// and renewal info inside stay signed JWS strings to verify on their own.
    case notification

    /// The verdict's key for the decoded payload.
    public var payloadKey: String {
        switch self {
        case .transaction: return "transaction"
        case .renewalInfo: return "renewalInfo"
        case .notification: return "notification"
        }
    }
}
