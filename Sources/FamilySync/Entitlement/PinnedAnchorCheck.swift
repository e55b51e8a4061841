/// leaf → intermediate → a pinned root validates at `judgedAt` (signatures,
/// validity periods, CA constraints, via OpenSSL). Only the pinned roots
/// are anchors; the root a token carries in `x5c[2]` is never consulted.
public struct PinnedAnchorCheck: ChainCheck {
    public let trustStore: X509TrustStore
    public var dependsOnTime: Bool { true }

    public init(trustStore: X509TrustStore) { self.trustStore = trustStore }

    public func failure(_ chain: CandidateChain) -> String? {
        switch trustStore.validate(leaf: chain.leaf, intermediates: [chain.intermediate], at: chain.judgedAt) {
        case let .failure(f):
            let which = f.depth == 0 ? "x5c[0]" : f.depth == 1 ? "x5c[1]" : "the root"
            return "\(which)\(f.subject.map { " (\($0))" } ?? "") does not validate to a pinned root at \(chain.judgedAt.rfc3339): \(f.message)"
        case let .success(path):
            // Exactly leaf, the given intermediate, a pinned anchor.
            guard path.count == 3, path[1] === chain.intermediate,
                  trustStore.anchors.contains(where: { $0 === path[2] }) else {
                return "x5c[0] (\(chain.leaf.subject)) validates through \(path.count) certificates, not x5c[1] to a pinned root"
            }
            return nil
        }
    }
}
