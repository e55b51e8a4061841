/// A JWS protected header that passed the header checks: `alg` is ES256, no
/// `crit`, and `x5c` holds exactly three certificates (DER, not yet parsed).
public struct JWSHeader: Sendable {
    /// The only algorithm App Store proofs use. Anything else (`none`,
    /// `HS256`, `ES384`, `RS256`, …) is refused before any key is touched.
    public static let algorithm = "ES256"
    /// Leaf, intermediate, root: App Store chains are exactly three long.
    public static let chainLength = 3

    /// `x5c[0]` (leaf) DER.
    public var leaf: [UInt8]
    /// `x5c[1]` (intermediate) DER. `x5c[2]` is never used: the root that
    /// counts is the pinned one, not the one the token brings.
    public var intermediate: [UInt8]

    /// Decodes and checks a header segment. Failures carry the stage they
    /// belong to: `malformed` (encoding, JSON, field types),
    /// `unsupported-algorithm` (`alg`, `crit`), `untrusted-chain` (`x5c` count).
    public static func evaluate(_ segment: UnsafeRawBufferPointer) -> Result<JWSHeader, ProofFailure> {
        let bytes: [UInt8]
        switch Base64URL.decode(segment) {
        case let .failure(p): return .failure(ProofFailure(.malformed, "header is not base64url: \(p)"))
        case let .success(b): bytes = b
        }
        let json: JSONValue
        do { json = try JSONParser.parse(bytes) } catch {
            return .failure(ProofFailure(.malformed, "header is not JSON: \(error)"))
        }
        guard case .object = json else { return .failure(ProofFailure(.malformed, "header is \(ProofFailure.quote(json)), not a JSON object")) }

        // Malformed stage: x5c, when present, is an array of strings, its first two standard base64.
        var certificates: [[UInt8]] = []
        var x5cCount: Int?
        if let x5c = json["x5c"] {
            guard case let .array(items) = x5c else {
                return .failure(ProofFailure(.malformed, "header x5c is \(ProofFailure.quote(x5c)), not an array"))
            }
            x5cCount = items.count
            for (i, item) in items.enumerated() {
                guard case let .string(s) = item else {
                    return .failure(ProofFailure(.malformed, "header x5c[\(i)] is \(ProofFailure.quote(item)), not a string"))
                }
                guard i < 2 else { continue }
                switch Base64URL.decodeStandard(s) {
                case let .failure(p): return .failure(ProofFailure(.malformed, "header x5c[\(i)] is not base64: \(p)"))
                case let .success(der): certificates.append(der)
                }
            }
        }

        // Algorithm stage.
        guard let alg = json["alg"] else {
            return .failure(ProofFailure(.unsupportedAlgorithm, "header has no alg; only \(algorithm) is accepted"))
        }
        guard alg == .string(algorithm) else {
            return .failure(ProofFailure(.unsupportedAlgorithm, "alg is \(ProofFailure.quote(alg)); only \(algorithm) is accepted"))
        }
        if let crit = json["crit"] {
            return .failure(ProofFailure(.unsupportedAlgorithm, "header names critical extensions (crit: \(ProofFailure.quote(crit))); none are understood, so the token is refused"))
        }

        // Chain stage (count only; the certificates are judged by the chain policy).
        guard let count = x5cCount else {
            return .failure(ProofFailure(.untrustedChain, "header has no x5c certificate chain"))
        }
        guard count == chainLength else {
            return .failure(ProofFailure(.untrustedChain, "x5c holds \(count) certificate\(count == 1 ? "" : "s"); App Store chains hold exactly \(chainLength)"))
        }
        return .success(JWSHeader(leaf: certificates[0], intermediate: certificates[1]))
    }
}
