/// Is this device premium, by the math alone: the newest kept proof that
/// verifies now under the store's settings, or why there is none.
public struct Entitlement: Sendable {
    public var entitled: Bool
    /// When the entitlement ends (`expiresDate`); nil when entitled for good,
    /// and when not entitled.
    public var until: Timestamp?
    /// nil when entitled; else `no-proof` or the newest proof's reason code.
    public var reason: String?
    /// What exactly failed, for a proof that did not verify.
    public var detail: String?
    /// The source of the proof the answer rests on.
    public var source: String?
    /// The proof that entitles, to pass on to peers.
    public var proof: VerifiedProof?

    /// The reason when the store holds no proof at all.
    public static let noProof = "no-proof"

    /// `{"entitled", "until", "reason", "source"}` (and `detail` when a
    /// proof failed): the line `jws-verify --db STORE` prints.
    public var json: JSONValue {
        var o: [(String, JSONValue)] = [
            ("entitled", .bool(entitled)),
            ("until", .optional(until?.rfc3339)),
            ("reason", .optional(reason)),
            ("source", .optional(source)),
        ]
        if let detail { o.append(("detail", .string(detail))) }
        return .object(o)
    }
}
