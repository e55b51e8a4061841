/// Chains judged once, keyed by the exact DER bytes of the leaf and the
/// intermediate, so a batch of proofs from one leaf pays for path validation
/// (two P-384 verifications on Apple's chains) once and then one P-256
/// verification per proof. A success is remembered with the window in which
/// every certificate that could be on its path is valid, so a proof signed
/// outside that window is judged afresh; a failure is remembered only when
/// it cannot depend on the time. Not Sendable.
final class ChainCache {
    /// Distinct chains remembered. App Store leaves rotate a few times a year;
    /// a batch mixing more chains than this is just slower, never unbounded.
    static let capacity = 64

    /// A chain that met the whole chain policy.
    final class Trusted {
        let leafSubject: String
        /// ES256 verification with the leaf's key, or why the key cannot do it.
        let verifier: Result<ECDSAVerifier, ECPublicKey.KeyProblem>
        /// Second-precision bounds as OpenSSL applies them: valid from
        /// `validFrom` (inclusive) until `validUntil` (exclusive).
        let validFrom: Timestamp
        let validUntil: Timestamp

        init(leafSubject: String, verifier: Result<ECDSAVerifier, ECPublicKey.KeyProblem>, validFrom: Timestamp, validUntil: Timestamp) {
            self.leafSubject = leafSubject
            self.verifier = verifier
            self.validFrom = validFrom
            self.validUntil = validUntil
        }

        func covers(_ t: Timestamp) -> Bool {
            let seconds = Timestamp(milliseconds: t.milliseconds - ((t.milliseconds % 1000) + 1000) % 1000)
            return validFrom <= seconds && seconds < validUntil
        }
    }

    private enum Judgement {
        case trusted(Trusted)
        case untrusted(String)
    }

    private var entries = BoundedCache<ByteKey, Judgement>(capacity: ChainCache.capacity)
    /// Full chain-policy evaluations run (cache misses), for tests and benchmarks.
    private(set) var evaluations = 0
    var count: Int { entries.count }
    let policy: ChainPolicy
    let trustStore: X509TrustStore

    init(policy: ChainPolicy, trustStore: X509TrustStore) {
        self.policy = policy
        self.trustStore = trustStore
    }

    /// The cache key for a leaf and intermediate: both DER strings, the
    /// leaf's length first so no two pairs share a key.
    static func key(leaf: [UInt8], intermediate: [UInt8]) -> ByteKey {
        var b: [UInt8] = []
        b.reserveCapacity(leaf.count + intermediate.count + 8)
        var n = UInt64(leaf.count)
        for _ in 0..<8 { b.append(UInt8(truncatingIfNeeded: n)); n >>= 8 }
        b.append(contentsOf: leaf)
        b.append(contentsOf: intermediate)
        return ByteKey(b)
    }

    /// Judges the chain at `time`, from memory when it can.
    func judge(key: ByteKey, leaf: [UInt8], intermediate: [UInt8], at time: Timestamp) -> Result<Trusted, ProofFailure> {
        switch entries[key] {
        case let .untrusted(detail)?: return .failure(ProofFailure(.untrustedChain, detail))
        case let .trusted(t)? where t.covers(time): return .success(t)
        default: break
        }
        evaluations += 1
        let leafCert: X509Certificate, intermediateCert: X509Certificate
        do { leafCert = try X509Certificate(der: leaf) } catch {
            return remember(key, untrusted: "x5c[0] is not a certificate: \(error)")
        }
        do { intermediateCert = try X509Certificate(der: intermediate) } catch {
            return remember(key, untrusted: "x5c[1] is not a certificate: \(error)")
        }
        let chain = CandidateChain(leaf: leafCert, intermediate: intermediateCert, judgedAt: time)
        if let (detail, timely) = policy.evaluate(chain) {
            return timely ? .failure(ProofFailure(.untrustedChain, detail)) : remember(key, untrusted: detail)
        }
        var from = Timestamp.earliest, until = Timestamp.latest
        for c in [leafCert, intermediateCert] + trustStore.anchors(issuing: intermediateCert) {
            if let nb = c.notBefore { from = max(from, nb) }
            if let na = c.notAfter { until = min(until, na) }
        }
        let verifier: Result<ECDSAVerifier, ECPublicKey.KeyProblem>
        do {
            verifier = .success(try ECDSAVerifier(key: try leafCert.publicKey()))
        } catch let p as ECPublicKey.KeyProblem {
            verifier = .failure(p)
        } catch {
            verifier = .failure(ECPublicKey.KeyProblem("\(error)"))
        }
        let t = Trusted(leafSubject: leafCert.subject, verifier: verifier, validFrom: from, validUntil: until)
        entries.insert(.trusted(t), for: key)
        return .success(t)
    }

    private func remember(_ key: ByteKey, untrusted detail: String) -> Result<Trusted, ProofFailure> {
        entries.insert(.untrusted(detail), for: key)
        return .failure(ProofFailure(.untrustedChain, detail))
    }
}
