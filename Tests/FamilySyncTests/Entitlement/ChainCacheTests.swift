import Foundation
import Testing
@testable import FamilySync

/// The in-process cache of judged chains: one full judgement per distinct
/// leaf + intermediate, never a wrong answer for a different time.
@Suite struct ChainCacheTests {
    let pki = TestPKI.appleLike

    @Test func oneChainJudgementForABatchFromOneLeaf() throws {
        let v = try pki.verifier()
        for i in 0..<50 {
            let t = ProofVerifierTests.token(pki, payload: ProofVerifierTests.tx([("transactionId", .string("\(i)"))]))
            #expect(v.verify(t, policy: TokenBuilder.policy, now: TestPKI.now).isValid)
        }
        #expect(v.chainEvaluations == 1)
        // A different leaf (other bytes) is judged on its own.
        let key = TestKey(.p256)
        let leaf2 = TestPKI.makeLeaf(key: key, intermediate: pki.intermediate, intermediateKey: pki.intermediateKey, commonName: "Second Leaf")
        #expect(v.verify(ProofVerifierTests.token(pki, leaf: leaf2, signer: key), policy: TokenBuilder.policy, now: TestPKI.now).isValid)
        #expect(v.chainEvaluations == 2)
        // The cached key is never used for another leaf's token: the first leaf's signature fails under the second leaf.
        let forged = ProofVerifierTests.token(pki, leaf: leaf2, signer: pki.leafKey)
        #expect(v.verify(forged, policy: TokenBuilder.policy, now: TestPKI.now).reason == .badSignature)
    }

    /// A cached chain is judged afresh for a signedDate outside the window
    /// where its certificates are valid, in both orders.
    @Test func signedDateOutsideTheWindowIsJudgedAgain() throws {
        let leaf = TestPKI.makeLeaf(key: pki.leafKey, intermediate: pki.intermediate, intermediateKey: pki.intermediateKey,
                                    notBefore: TestPKI.t("2025-01-01T00:00:00Z"), notAfter: TestPKI.t("2026-03-01T00:00:00Z"))
        let inside = ProofVerifierTests.token(pki, payload: TokenBuilder.transaction(signedDate: TestPKI.t("2026-02-28T23:59:59.999Z")), leaf: leaf)
        // OpenSSL counts a certificate as expired from its notAfter second on.
        let after = ProofVerifierTests.token(pki, payload: TokenBuilder.transaction(signedDate: TestPKI.t("2026-03-01T00:00:00Z")), leaf: leaf)
        let before = ProofVerifierTests.token(pki, payload: TokenBuilder.transaction(signedDate: TestPKI.t("2024-12-31T23:59:59Z")), leaf: leaf)
        let v = try pki.verifier()
        #expect(v.verify(inside, policy: TokenBuilder.policy, now: TestPKI.now).isValid)
        #expect(v.verify(after, policy: TokenBuilder.policy, now: TestPKI.now).reason == .untrustedChain)
        #expect(v.verify(before, policy: TokenBuilder.policy, now: TestPKI.now).reason == .untrustedChain)
        #expect(v.verify(inside, policy: TokenBuilder.policy, now: TestPKI.now).isValid)
        let w = try pki.verifier()
        #expect(w.verify(after, policy: TokenBuilder.policy, now: TestPKI.now).reason == .untrustedChain)
        #expect(w.verify(inside, policy: TokenBuilder.policy, now: TestPKI.now).isValid)
        #expect(w.verify(after, policy: TokenBuilder.policy, now: TestPKI.now).reason == .untrustedChain)
    }

    /// The root's validity bounds the window too.
    @Test func windowIncludesThePinnedRoot() throws {
        let rootKey = TestKey(.p384), iKey = TestKey(.p384), leafKey = TestKey(.p256)
        let root = TestCert.issue(.init(commonName: "Short Root", isCA: true, notBefore: TestPKI.t("2020-01-01T00:00:00Z"), notAfter: TestPKI.t("2026-04-01T00:00:00Z")),
                                  key: rootKey, issuer: nil, issuerKey: rootKey)
        let i = TestCert.issue(.init(commonName: "I", isCA: true, markerOIDs: [TestPKI.intermediateOID], serial: 2), key: iKey, issuer: root, issuerKey: rootKey)
        let leaf = TestPKI.makeLeaf(key: leafKey, intermediate: i, intermediateKey: iKey)
        let v = try ProofVerifier(anchors: [X509Certificate(der: root.der)])
        func tok(_ d: String) -> String {
            TokenBuilder(header: TokenBuilder.header(chain: [leaf, i, root]), payload: TokenBuilder.transaction(signedDate: TestPKI.t(d))).signed(with: leafKey)
        }
        #expect(v.verify(tok("2026-03-01T00:00:00Z"), policy: TokenBuilder.policy, now: TestPKI.now).isValid)
        #expect(v.verify(tok("2026-05-01T00:00:00Z"), policy: TokenBuilder.policy, now: TestPKI.now).reason == .untrustedChain)
    }

    @Test func timeIndependentFailuresAreRemembered() throws {
        let v = try pki.verifier()
        let noOID = ProofVerifierTests.token(pki, leaf: TestPKI.makeLeaf(key: pki.leafKey, intermediate: pki.intermediate, intermediateKey: pki.intermediateKey, oids: []))
        for _ in 0..<5 { #expect(v.verify(noOID, policy: TokenBuilder.policy, now: TestPKI.now).reason == .untrustedChain) }
        #expect(v.chainEvaluations == 1)
        let w = try pki.verifier()
        let early = ProofVerifierTests.token(pki, payload: TokenBuilder.transaction(signedDate: TestPKI.t("2024-06-01T00:00:00Z")))
        for _ in 0..<3 { #expect(w.verify(early, policy: TokenBuilder.policy, now: TestPKI.now).reason == .untrustedChain) }
        #expect(w.chainEvaluations == 3)
    }

    @Test func memoryIsBounded() throws {
        let v = try TestPKI.allP256.verifier()
        let p = TestPKI.allP256
        for n in 0..<(ChainCache.capacity + 6) {
            let key = TestKey(.p256)
            let leaf = TestPKI.makeLeaf(key: key, intermediate: p.intermediate, intermediateKey: p.intermediateKey, commonName: "Leaf \(n)")
            #expect(v.verify(ProofVerifierTests.token(p, leaf: leaf, signer: key), policy: TokenBuilder.policy, now: TestPKI.now).isValid)
        }
        #expect(v.rememberedChains == ChainCache.capacity)
    }
}
