/// The App Store chain rules, as an ordered list of small checks; the first
/// failing one decides. Cheap structural checks run before the path
/// validation that costs two P-384 verifications on Apple's real chains.
public struct ChainPolicy {
    /// Apple's marker on the "Apple Worldwide Developer Relations" intermediate
    /// that issues App Store signing certificates.
    public static let appleIntermediateMarkerOID = "1.2.840.113635.100.6.2.1"
    /// Apple's marker on App Store receipt-signing leaf certificates.
    public static let appleLeafMarkerOID = "1.2.840.113635.100.6.11.1"

    public var checks: [any ChainCheck]

    public init(checks: [any ChainCheck]) { self.checks = checks }

    /// The rules for App Store proofs, anchored on `trustStore`.
    public static func appStore(trustStore: X509TrustStore) -> ChainPolicy {
        ChainPolicy(checks: [
            MarkerExtensionCheck(.intermediate, oid: appleIntermediateMarkerOID),
            BasicConstraintsCheck(.intermediate, mustBeCA: true),
            MarkerExtensionCheck(.leaf, oid: appleLeafMarkerOID),
            BasicConstraintsCheck(.leaf, mustBeCA: false),
            PinnedAnchorCheck(trustStore: trustStore),
        ])
    }

    /// The first failing check's detail, and whether it depends on the time.
    public func evaluate(_ chain: CandidateChain) -> (detail: String, dependsOnTime: Bool)? {
        for c in checks {
            if let d = c.failure(chain) { return (d, c.dependsOnTime) }
        }
        return nil
    }
}
