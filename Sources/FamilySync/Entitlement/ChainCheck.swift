/// The two certificates a token presents, parsed, and the time they are
/// judged at (the payload's `signedDate`).
public struct CandidateChain {
    public let leaf: X509Certificate
    public let intermediate: X509Certificate
    public let judgedAt: Timestamp

    public init(leaf: X509Certificate, intermediate: X509Certificate, judgedAt: Timestamp) {
        self.leaf = leaf
        self.intermediate = intermediate
        self.judgedAt = judgedAt
    }

    /// Which certificate of `x5c`, for details: `x5c[1] (CN=…, O=…)`.
    public enum Position: Int, Sendable {
        case leaf = 0, intermediate = 1
    }

    public func certificate(_ p: Position) -> X509Certificate { p == .leaf ? leaf : intermediate }

    public func describe(_ p: Position) -> String { "x5c[\(p.rawValue)] (\(certificate(p).subject))" }
}

/// One small rule a chain must meet. A failure says which certificate and why.
public protocol ChainCheck {
    /// Whether the outcome can change with `judgedAt`. Time-independent
    /// failures may be remembered for a chain; time-dependent ones may not.
    var dependsOnTime: Bool { get }
    /// nil when the chain meets the rule, else the detail of the failure.
    func failure(_ chain: CandidateChain) -> String?
}
