/// A proof, or what proofs are judged by, that cannot be used: a root file
/// that holds no certificate, a store with no policy, a kept proof gone bad.
/// (A proof that is read and found wanting is a `ProofFailure`, a verdict.)
public struct ProofError: Error, CustomStringConvertible, Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        /// The root file `path` is not a DER or PEM certificate (`detail`: why).
        case notACertificate
        /// The root file `path` is bigger than `limit` bytes.
        case certificateFileTooLarge
        /// The store `path` has no bundle_id setting.
        case noPolicy
        /// A proof of kind `detail` was offered to be kept; only transactions are.
        case notATransaction
        /// The store `path` keeps proof `proof` but cannot read it (`detail`).
        case keptProofUnreadable
    }

    public var kind: Kind
    public var path: String
    public var detail: String
    public var proof: String?
    public var limit: Int?

    public init(_ kind: Kind, path: String = "", detail: String = "", proof: String? = nil, limit: Int? = nil) {
        self.kind = kind
        self.path = path
        self.detail = detail
        self.proof = proof
        self.limit = limit
    }

    public var description: String {
        switch kind {
        case .notACertificate: return "\(path): not a DER or PEM certificate: \(detail)"
        case .certificateFileTooLarge: return "\(path): larger than \(limit ?? 0) bytes; not a certificate file"
        case .noPolicy: return "store \(path) has no bundle_id setting to judge proofs by"
        case .notATransaction: return "only a transaction proves a purchase; a \(detail) is not kept"
        case .keptProofUnreadable: return "store \(path): kept proof \(proof ?? "") cannot be read: \(detail)"
        }
    }
}
