/// Why a proof is not valid: one code per check, in the order the checks run.
/// The first failing check decides the verdict, so the order is part of the
/// contract (`malformed` before `unsupported-algorithm` before …).
public enum ProofReason: String, Sendable, CaseIterable, Comparable {
    /// Not a compact JWS we can read: segments, base64url, JSON, field types, size.
    case malformed
    /// `alg` is not exactly ES256, or the header names critical extensions.
    case unsupportedAlgorithm = "unsupported-algorithm"
    /// `x5c` is not three certificates that validate to a pinned root with Apple's markers.
    case untrustedChain = "untrusted-chain"
    /// The signature is not 64 raw bytes in range that verify with the leaf key.
    case badSignature = "bad-signature"
    case wrongBundle = "wrong-bundle"
    case wrongProduct = "wrong-product"
    case wrongEnvironment = "wrong-environment"
    case revoked
    case expired

    /// The position of the check in the pipeline.
    // Every case is in allCases.
    public var stage: Int { ProofReason.allCases.firstIndex(of: self)! }

    public static func < (a: ProofReason, b: ProofReason) -> Bool { a.stage < b.stage }
}
