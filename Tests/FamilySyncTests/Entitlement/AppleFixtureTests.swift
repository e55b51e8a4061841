import Foundation
import Testing
@testable import FamilySync

/// Apple's own signed test data (App Store Server Library), anchored on
/// Apple's test root as `--root testCA.der` would.
@Suite struct AppleFixtureTests {
    static let policy = ProofPolicy(bundleID: "com.example", products: [], allowSandbox: true)
    /// Inside the test chain's validity (2023–2033).
    static let now = Timestamp(rfc3339: "2026-11-30T10:00:00Z")!

    static func verifier() throws -> ProofVerifier {
        try ProofVerifier(anchors: [X509Certificate(der: Vectors.bytes("apple-test/testCA.der"))])
    }

    static func verdict(_ file: String, _ kind: SignedPayloadKind = .transaction, policy: ProofPolicy = policy) throws -> ProofVerdict {
        try verifier().verify(Vectors.text("apple-test/\(file).jws"), as: kind, policy: policy, now: now)
    }

    @Test(arguments: [
        ("transactionInfo", SignedPayloadKind.transaction),
        ("renewalInfo", .renewalInfo),
        ("testNotification", .notification),
    ])
    func validOnesAreValid(file: String, kind: SignedPayloadKind) throws {
        let v = try AppleFixtureTests.verdict(file, kind)
        #expect(v.isValid, "\(v.failure.map(String.init(describing:)) ?? "")")
        #expect(v.proof?.kind == kind)
        #expect(v.proof?.entitledUntil == nil)
        #expect(v.proof?.signedDate != nil)
    }

    @Test func transactionIsSandboxOnly() throws {
        var p = AppleFixtureTests.policy
        p.allowSandbox = false
        let v = try AppleFixtureTests.verdict("transactionInfo", policy: p)
        #expect(v.reason == .wrongEnvironment)
        #expect(v.failure?.detail.contains("\"Sandbox\"") == true)
    }

    @Test func wrongBundle() throws {
        let n = try AppleFixtureTests.verdict("wrongBundleId", .notification)
        #expect(n.reason == .wrongBundle)
        #expect(n.failure?.detail == "bundleId is \"com.example.wrong\", expected \"com.example\"")
        // Read as a transaction it has no bundleId at all: still wrong-bundle, never valid.
        let t = try AppleFixtureTests.verdict("wrongBundleId")
        #expect(t.reason == .wrongBundle)
    }

    @Test(arguments: SignedPayloadKind.allCases)
    func missingX5C(kind: SignedPayloadKind) throws {
        let v = try AppleFixtureTests.verdict("missingX5CHeaderClaim", kind)
        #expect(v.reason == .untrustedChain)
        #expect(v.failure?.detail == "header has no x5c certificate chain")
    }

    @Test func xcodeSignedIsRejected() throws {
        var p = AppleFixtureTests.policy
        p.bundleID = "com.example.naturelab.backyardbirds.example"
        let v = try AppleFixtureTests.verdict("xcode-signed-transaction", policy: p)
        #expect(!v.isValid)
        #expect(v.reason == .untrustedChain)
        #expect(v.failure?.detail.contains("1 certificate") == true)
        // Its fractional-millisecond dates still decode.
        guard case let .invalid(_, _, payload?) = v else { Issue.record("payload not decoded"); return }
        #expect(payload["environment"] == .string("Xcode"))
    }

    /// The notification's x5c[2] is not the test root, yet it validates:
    /// the pinned root anchors the chain, the header's root is ignored.
    @Test func notificationAnchorsOnPinnedRootNotHeaderRoot() throws {
        let token = try Vectors.text("apple-test/testNotification.jws")
        let header = try JSONParser.parse(Base64URL.decode(String(token.split(separator: ".")[0])).get())
        let x5c2 = try Base64URL.decodeStandard(header["x5c"]!.arrayValue![2].stringValue!).get()
        #expect(x5c2 != (try Vectors.bytes("apple-test/testCA.der")))
        #expect(try AppleFixtureTests.verdict("testNotification", .notification).isValid)
    }

    /// With the bundled Apple root (the default), Apple's test tokens are not trusted.
    @Test func bundledRootDoesNotTrustTestChain() throws {
        let v = try ProofVerifier().verify(Vectors.text("apple-test/transactionInfo.jws"), policy: AppleFixtureTests.policy, now: AppleFixtureTests.now)
        #expect(v.reason == .untrustedChain)
    }
}
