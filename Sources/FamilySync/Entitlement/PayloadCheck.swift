/// One rule a verified payload must meet, with the reason code it fails with.
public protocol PayloadCheck {
    var reason: ProofReason { get }
    /// nil when the payload meets the rule, else the detail of the failure.
    func failure(_ payload: SignedPayload, now: Timestamp) -> String?
}
