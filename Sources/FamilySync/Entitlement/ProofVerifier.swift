import FoundationEssentials
import Glibc

/// Proof of having passed the verifier; nothing else can make one.
struct VerificationSeal {
    fileprivate init() {}
}

/// Verifies App Store signed objects offline, every check in contract order:
/// `malformed`, `unsupported-algorithm`, `untrusted-chain`, `bad-signature`,
/// then the payload policy (`wrong-bundle`, `wrong-product`,
/// `wrong-environment`, `revoked`, `expired`). The first failure decides.
///
/// Keeps decoded headers and judged chains in bounded in-process caches, so a
/// batch from one leaf costs one P-256 verification per proof. Not Sendable:
/// use one verifier per thread.
public final class ProofVerifier {
    public let trustStore: X509TrustStore
    public let chainPolicy: ChainPolicy
    private let chains: ChainCache

    /// Distinct headers remembered (each about 3 KB: it carries the chain).
    static let headerCacheCapacity = 64

    /// A decoded header and the chain-cache key of its certificates.
    private final class HeaderEntry {
        let result: Result<JWSHeader, ProofFailure>
        let chainKey: ByteKey?
        init(_ result: Result<JWSHeader, ProofFailure>) {
            self.result = result
            if case let .success(h) = result { chainKey = ChainCache.key(leaf: h.leaf, intermediate: h.intermediate) } else { chainKey = nil }
        }
    }
    private var headers = BoundedCache<ByteKey, HeaderEntry>(capacity: ProofVerifier.headerCacheCapacity)
    private var lastHeader: (key: ByteKey, entry: HeaderEntry)?

    /// How many times a chain was judged in full rather than from memory.
    public var chainEvaluations: Int { chains.evaluations }
    /// Chains remembered now (at most `ChainCache.capacity`).
    var rememberedChains: Int { chains.count }

    /// A verifier pinned on `anchors` (default: the bundled Apple Root CA - G3).
    public init(anchors: [X509Certificate]? = nil) throws {
        let roots = try anchors ?? TrustAnchors.appleRootCAG3()
        trustStore = try X509TrustStore(anchors: roots)
        chainPolicy = .appStore(trustStore: trustStore)
        chains = ChainCache(policy: chainPolicy, trustStore: trustStore)
    }

    public func verify(_ token: String, as kind: SignedPayloadKind = .transaction, policy: ProofPolicy, now: Timestamp) -> ProofVerdict {
        var t = token
        return t.withUTF8 { verify(token: UnsafeRawBufferPointer($0), as: kind, policy: policy, now: now) }
    }

    /// Verifies one token. Surrounding spaces, tabs, CR and LF are ignored.
    public func verify(token raw: UnsafeRawBufferPointer, as kind: SignedPayloadKind = .transaction,
                       policy: ProofPolicy, now: Timestamp) -> ProofVerdict {
        let token = ProofVerifier.trimmed(raw)
        func fail(_ f: ProofFailure, _ payload: JSONValue? = nil) -> ProofVerdict { .invalid(f, kind: kind, payload: payload) }

        // 1. malformed: segments, header and payload decoding, signature encoding.
        let jws: CompactJWS
        switch CompactJWS.split(token) {
        case let .failure(f): return fail(f)
        case let .success(s): jws = s
        }
        let headerBytes = UnsafeRawBufferPointer(rebasing: token[jws.header])
        let entry: HeaderEntry
        if let last = lastHeader, ProofVerifier.same(last.key.bytes, headerBytes) {
            entry = last.entry  // a batch from one leaf repeats the same header
        } else {
            let headerKey = ByteKey(headerBytes)
            if let e = headers[headerKey] {
                entry = e
            } else {
                entry = HeaderEntry(JWSHeader.evaluate(headerBytes))
                headers.insert(entry, for: headerKey)
            }
            lastHeader = (headerKey, entry)
        }
        if case let .failure(f) = entry.result, f.reason == .malformed { return fail(f) }
        let payload: SignedPayload
        switch SignedPayload.decode(UnsafeRawBufferPointer(rebasing: token[jws.payload]), kind: kind) {
        case let .failure(u): return fail(u.failure, u.json)
        case let .success(p): payload = p
        }
        let signature: [UInt8]
        switch Base64URL.decode(UnsafeRawBufferPointer(rebasing: token[jws.signature])) {
        case let .failure(p): return fail(ProofFailure(.malformed, "signature is not base64url: \(p)"), payload.json)
        case let .success(s): signature = s
        }

        // 2. unsupported-algorithm, and the x5c count of untrusted-chain.
        let header: JWSHeader
        switch entry.result {
        case let .failure(f): return fail(f, payload.json)
        case let .success(h): header = h
        }

        // 3. untrusted-chain, judged at signedDate (Apple's leaves expire while proofs stay good).
        let judgedAt = payload.signedDate ?? now
        let chain: ChainCache.Trusted
        // A header that parsed (step 2) always carries its chain key.
        switch chains.judge(key: entry.chainKey!, leaf: header.leaf, intermediate: header.intermediate, at: judgedAt) {
        case let .failure(f): return fail(f, payload.json)
        case let .success(c): chain = c
        }

        // 4. bad-signature: 64 raw bytes in range, verified with the leaf key over header.payload.
        let verifier: ECDSAVerifier
        switch chain.verifier {
        case let .failure(p): return fail(ProofFailure(.badSignature, "x5c[0] (\(chain.leafSubject)) has \(p); ES256 needs a P-256 key"), payload.json)
        case let .success(v): verifier = v
        }
        let result = signature.withUnsafeBytes {
            verifier.verifyES256(rawSignature: $0, message: UnsafeRawBufferPointer(rebasing: token[jws.signingInput]))
        }
        switch result {
        case .valid: break
        case let .rejected(p): return fail(ProofFailure(.badSignature, "\(p)"), payload.json)
        case let .wrongCurve(c): return fail(ProofFailure(.badSignature, "x5c[0] (\(chain.leafSubject)) has a \(c) key; ES256 needs P-256"), payload.json)
        case .invalid: return fail(ProofFailure(.badSignature, "the signature does not verify with the key of x5c[0] (\(chain.leafSubject))"), payload.json)
        }

        // 5. the payload policy.
        for check in policy.checks(for: kind) {
            if let d = check.failure(payload, now: now) { return fail(ProofFailure(check.reason, d), payload.json) }
        }
        let text = String(decoding: token, as: UTF8.self)
        return .valid(VerifiedProof(seal: VerificationSeal(), jws: text, payload: payload, verifiedAt: now))
    }

    static func same(_ a: [UInt8], _ b: UnsafeRawBufferPointer) -> Bool {
        guard a.count == b.count else { return false }
        guard !a.isEmpty else { return true }
        // Never nil: both buffers are non-empty and of equal length.
        return a.withUnsafeBytes { memcmp($0.baseAddress!, b.baseAddress!, a.count) == 0 }
    }

    static func trimmed(_ b: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer {
        func space(_ c: UInt8) -> Bool { c == 0x20 || c == 0x09 || c == 0x0D || c == 0x0A }
        var lo = 0, hi = b.count
        while lo < hi, space(b[lo]) { lo += 1 }
        while hi > lo, space(b[hi - 1]) { hi -= 1 }
        return UnsafeRawBufferPointer(rebasing: b[lo..<hi])
    }
}
