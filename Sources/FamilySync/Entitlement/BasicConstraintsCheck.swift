/// The intermediate must be a CA (basicConstraints cA: TRUE) and the leaf
/// must not be: a CA certificate signing proofs directly is not how Apple
/// issues them. Certificates with undecodable extensions fail too.
public struct BasicConstraintsCheck: ChainCheck {
    public var position: CandidateChain.Position
    public var mustBeCA: Bool
    public var dependsOnTime: Bool { false }

    public init(_ position: CandidateChain.Position, mustBeCA: Bool) {
        self.position = position
        self.mustBeCA = mustBeCA
    }

    public func failure(_ chain: CandidateChain) -> String? {
        let c = chain.certificate(position)
        if c.hasInvalidExtensions { return "\(chain.describe(position)) has extensions that cannot be decoded" }
        if c.isCA == mustBeCA { return nil }
        return mustBeCA ? "\(chain.describe(position)) is not a CA (basicConstraints cA is not TRUE)"
                        : "\(chain.describe(position)) is a CA (basicConstraints cA: TRUE); a signing leaf must not be"
    }
}
