import Foundation
import Testing
@testable import FamilySync

/// Keeping proofs in a store and the launch-time re-check.
@Suite final class ProofStoreTests {
    let pki = TestPKI.appleLike
    let dir = TempFolder("proof-store-test")
    let store: Store

    init() throws { store = try Store(path: dir.path + "/store.db") }

    func token(signed: String = "2026-06-01T12:00:00Z", expires: String? = "2026-12-30T10:00:00Z", extra: [(String, JSONValue)] = []) -> String {
        ProofVerifierTests.token(pki, payload: TokenBuilder.transaction(signedDate: TestPKI.t(signed), expires: expires.map(TestPKI.t), extra: extra))
    }

    @Test func noProofIsFreeWithReason() throws {
        let e = try store.entitlement(verifier: pki.verifier(), now: TestPKI.now)
        #expect(!e.entitled && e.reason == "no-proof" && e.source == nil && e.until == nil)
        #expect(e.json.serialized == #"{"entitled":false,"until":null,"reason":"no-proof","source":null}"#)
    }

    @Test func settingsRoundTrip() throws {
        #expect(try store.proofPolicy() == nil)
        try store.setProofPolicy(TokenBuilder.policy)
        #expect(try store.proofPolicy() == TokenBuilder.policy)
        #expect(try store.setting("products") == #"["family.monthly","family.yearly"]"#)
        #expect(try store.setting("allow_sandbox") == "false")
        try store.setProofPolicy(ProofPolicy(bundleID: "b", products: [], allowSandbox: true))
        #expect(try store.proofPolicy() == ProofPolicy(bundleID: "b", products: [], allowSandbox: true))
    }

    @Test(arguments: [("products", "family.monthly"), ("products", "[1]"), ("allow_sandbox", "yes")])
    func unreadableSettingsAreErrors(key: String, value: String) throws {
        try store.setProofPolicy(TokenBuilder.policy)
        try store.setSetting(key, value)
        let e = #expect(throws: StoreError.self) { try store.proofPolicy() }
        #expect(e?.kind == .badSetting && e?.other == key)
    }

    @Test func savedProofEntitlesUntilItExpires() throws {
        try store.setProofPolicy(TokenBuilder.policy)
        let v = try pki.verifier()
        let t = token()  // ECDSA signatures are randomized: one token, kept
        let verdict = try store.saveProof(t, source: "peer:OWNER", verifier: v, now: TestPKI.now)
        #expect(verdict.isValid)
        let e = try store.entitlement(verifier: v, now: TestPKI.now)
        #expect(e.entitled && e.until == TestPKI.expires && e.source == "peer:OWNER" && e.reason == nil)
        #expect(e.proof?.jws == t)
        #expect(e.json.serialized == #"{"entitled":true,"until":"2026-12-30T10:00:00.000Z","reason":null,"source":"peer:OWNER"}"#)
        // The math enforces the end: at expiry the device is free.
        let later = try store.entitlement(verifier: v, now: TestPKI.expires)
        #expect(!later.entitled && later.reason == "expired" && later.detail?.contains("2026-12-30T10:00:00.000Z") == true)
        // Without the test root pinned (the bundled Apple root), the proof is untrusted.
        #expect(try store.entitlement(verifier: ProofVerifier(), now: TestPKI.now).reason == "untrusted-chain")
    }

    @Test func invalidProofIsNotKept() throws {
        try store.setProofPolicy(TokenBuilder.policy)
        let v = try pki.verifier()
        let bad = try store.saveProof(token(extra: [("bundleId", .string("com.other"))]), source: "local", verifier: v, now: TestPKI.now)
        #expect(bad.reason == .wrongBundle)
        let expired = try store.saveProof(token(expires: "2026-07-01T00:00:00Z"), source: "local", verifier: v, now: TestPKI.now)
        #expect(expired.reason == .expired)
        #expect(try store.keptProofs().isEmpty)
        #expect(try store.entitlement(verifier: v, now: TestPKI.now).reason == "no-proof")
    }

    @Test func newestValidProofWins() throws {
        try store.setProofPolicy(TokenBuilder.policy)
        let v = try pki.verifier()
        let older = token(signed: "2026-05-01T00:00:00Z", expires: "2027-01-01T00:00:00Z")
        let newer = token(signed: "2026-06-01T00:00:00Z", expires: "2026-12-01T00:00:00Z")
        #expect(try store.saveProof(newer, source: "local", verifier: v, now: TestPKI.now).isValid)
        #expect(try store.saveProof(older, source: "peer:A", verifier: v, now: TestPKI.now).isValid)
        #expect(try store.entitlement(verifier: v, now: TestPKI.now).proof?.jws == newer)
        // Once the newer one has expired, the older one (still valid) carries the entitlement.
        let e = try store.entitlement(verifier: v, now: TestPKI.t("2026-12-15T00:00:00Z"))
        #expect(e.entitled && e.proof?.jws == older && e.source == "peer:A")
        // When none is valid, the newest proof's reason is the answer.
        let none = try store.entitlement(verifier: v, now: TestPKI.t("2027-02-01T00:00:00Z"))
        #expect(!none.entitled && none.reason == "expired" && none.detail?.contains("2026-12-01") == true && none.source == "local")
    }

    @Test func sameProofTwiceIsKeptOnce() throws {
        try store.setProofPolicy(TokenBuilder.policy)
        let v = try pki.verifier()
        let t = token()
        try store.saveProof(t, source: "local", verifier: v, now: TestPKI.now)
        try store.saveProof(t, source: "peer:B", verifier: v, now: TestPKI.now)
        let kept = try store.keptProofs()
        #expect(kept.count == 1 && kept[0].source == "local")
        #expect(kept[0].signedAt == TestPKI.signedDate && kept[0].expiresAt == TestPKI.expires)
    }

    @Test func onlyTheNewestFewAreKept() throws {
        try store.setProofPolicy(TokenBuilder.policy)
        let v = try pki.verifier()
        let base = TestPKI.t("2026-01-01T00:00:00Z")
        for i in 0..<(Store.maxKeptProofs + 4) {
            let signed = base.adding(.days(Int64(i))).rfc3339
            #expect(try store.saveProof(token(signed: signed), source: "local", verifier: v, now: TestPKI.now).isValid)
        }
        let kept = try store.keptProofs()
        #expect(kept.count == Store.maxKeptProofs)
        #expect(kept.first?.signedAt == base.adding(.days(Int64(Store.maxKeptProofs + 3))))
        #expect(kept.last?.signedAt == base.adding(.days(4)))
    }

    @Test func proofsWithoutSettingsAreAnError() throws {
        let v = try pki.verifier()
        let none = #expect(throws: ProofError.self) { try store.saveProof(token(), source: "local", verifier: v, now: TestPKI.now) }
        #expect(none?.kind == .noPolicy)
        try store.saveProof(token(), source: "local", verifier: v, now: TestPKI.now, policy: TokenBuilder.policy)
        try store.setSetting("bundle_id", nil)
        let e = #expect(throws: ProofError.self) { try store.entitlement(verifier: v, now: TestPKI.now) }
        #expect(e?.kind == .noPolicy && e?.path == store.path)
        #expect(try store.entitlement(verifier: v, now: TestPKI.now, policy: TokenBuilder.policy).entitled)
    }

    @Test func unreadableKeptProofIsAnErrorNotFree() throws {
        try store.setProofPolicy(TokenBuilder.policy)
        let v = try pki.verifier()
        try store.saveProof(token(), source: "local", verifier: v, now: TestPKI.now)
        try store.db.run("INSERT INTO proofs (jws, source, saved_at, signed_at) VALUES ('not a token', 'local', 0, 1)")
        let e = #expect(throws: ProofError.self) { try store.entitlement(verifier: v, now: TestPKI.now) }
        #expect(e?.kind == .keptProofUnreadable)
        #expect(e?.description.contains("cannot be read") == true)
    }

    @Test func onlyTransactionsAreKept() throws {
        let renewal = ProofVerifierTests.token(pki, payload: .object([("environment", .string("Production")), ("signedDate", .int(TestPKI.signedDate.milliseconds))]))
        let proof = try #require(try pki.verifier().verify(renewal, as: .renewalInfo, policy: TokenBuilder.policy, now: TestPKI.now).proof)
        let e = #expect(throws: ProofError.self) { try store.keepProof(proof, source: "local", now: TestPKI.now) }
        #expect(e?.kind == .notATransaction)
        #expect(try store.keptProofs().isEmpty)
    }
}
