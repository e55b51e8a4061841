/// A certificate must carry a marker extension. Apple marks its App Store
/// receipt-signing intermediate (1.2.840.113635.100.6.2.1) and leaf
/// (1.2.840.113635.100.6.11.1); a certificate from any other Apple chain
/// lacks them and cannot sign proofs.
public struct MarkerExtensionCheck: ChainCheck {
    public var position: CandidateChain.Position
    public var oid: String
    public var dependsOnTime: Bool { false }

    public init(_ position: CandidateChain.Position, oid: String) {
        self.position = position
        self.oid = oid
    }

    public func failure(_ chain: CandidateChain) -> String? {
        chain.certificate(position).hasExtension(oid: oid) ? nil
            : "\(chain.describe(position)) lacks the \(position == .leaf ? "leaf" : "intermediate") marker extension \(oid)"
    }
}
