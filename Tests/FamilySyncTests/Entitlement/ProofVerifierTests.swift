import Foundation
import Testing
@testable import FamilySync

/// Every reason code and every attack, on a PKI minted here, in both key
/// flavours (P-384 CA keys as Apple uses, and P-256 throughout).
@Suite struct ProofVerifierTests {
    typealias Make = @Sendable (TestPKI) -> String

    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var reason: ProofReason?
        /// A piece of text the detail must contain (the offending value).
        var detail: String
        var policy = TokenBuilder.policy
        var now = TestPKI.now
        var make: Make
        var testDescription: String { name }
    }

    static let attacker = TestPKI(.appleLike)

    /// A validly signed token of this PKI with the given payload/header.
    static func token(_ pki: TestPKI, header: JSONValue? = nil, payload: JSONValue = TokenBuilder.transaction(),
                      leaf: TestCert? = nil, signer: TestKey? = nil) -> String {
        let h = header ?? TokenBuilder.header(chain: [leaf ?? pki.leaf, pki.intermediate, pki.root])
        return TokenBuilder(header: h, payload: payload).signed(with: signer ?? pki.leafKey)
    }

    /// A validly signed token whose payload is these exact bytes.
    static func signedRaw(_ pki: TestPKI, payload: [UInt8]) -> String {
        let input = Base64URL.encode(Array(TokenBuilder.header(chain: pki.chain).serialized.utf8)) + "." + Base64URL.encode(payload)
        return input + "." + Base64URL.encode(pki.leafKey.signRaw(Array(input.utf8)))
    }
    static func signedRaw(_ pki: TestPKI, payload: String) -> String { signedRaw(pki, payload: Array(payload.utf8)) }

    static func tx(_ extra: [(String, JSONValue)], expires: Timestamp? = TestPKI.expires) -> JSONValue {
        TokenBuilder.transaction(expires: expires, extra: extra)
    }

    static func segments(_ t: String) -> [String] { t.split(separator: ".", omittingEmptySubsequences: false).map(String.init) }

    static let valid: [Case] = [
        Case(name: "valid transaction", reason: nil, detail: "") { token($0) },
        Case(name: "valid, no expiresDate (does not expire)", reason: nil, detail: "") { token($0, payload: tx([], expires: nil)) },
        Case(name: "Sandbox with sandbox allowed", reason: nil, detail: "",
             policy: ProofPolicy(bundleID: "com.example.family", products: ["family.monthly"], allowSandbox: true)) {
            token($0, payload: tx([("environment", .string("Sandbox"))]))
        },
        Case(name: "any product when none are configured", reason: nil, detail: "",
             policy: ProofPolicy(bundleID: "com.example.family")) { token($0, payload: tx([("productId", .string("something.else"))])) },
        Case(name: "leaf expired after signedDate is still valid", reason: nil, detail: "") { pki in
            let leaf = TestPKI.makeLeaf(key: pki.leafKey, intermediate: pki.intermediate, intermediateKey: pki.intermediateKey,
                                        notBefore: TestPKI.t("2025-01-01T00:00:00Z"), notAfter: TestPKI.t("2026-03-01T00:00:00Z"))
            return token(pki, payload: TokenBuilder.transaction(signedDate: TestPKI.t("2026-02-01T00:00:00Z")), leaf: leaf)
        },
        Case(name: "surrounding whitespace and CR ignored", reason: nil, detail: "") { " \t" + token($0) + " \r" },
    ]

    static let malformed: [Case] = [
        Case(name: "empty", reason: .malformed, detail: "empty line") { _ in "" },
        Case(name: "two segments", reason: .malformed, detail: "2 dot-separated segments") { pki in
            segments(token(pki)).prefix(2).joined(separator: ".")
        },
        Case(name: "four segments", reason: .malformed, detail: "more than 3") { token($0) + ".AAAA" },
        Case(name: "JSON serialization", reason: .malformed, detail: "compact serialization") { pki in
            let s = segments(token(pki))
            return #"{"protected":"\#(s[0])","payload":"\#(s[1])","signature":"\#(s[2])"}"#
        },
        Case(name: "multi-megabyte header", reason: .malformed, detail: "a proof is at most 65536") { pki in
            let h = TokenBuilder.header(chain: pki.chain, extra: [("pad", .string(String(repeating: "A", count: 3 << 20)))])
            return token(pki, header: h)
        },
        Case(name: "header not base64url", reason: .malformed, detail: "header is not base64url: byte '+'") { pki in
            "eyJ+" + token(pki).dropFirst(4)
        },
        Case(name: "padded base64url", reason: .malformed, detail: "payload is not base64url: byte '='") { pki in
            var s = segments(token(pki))
            while s[1].utf8.count % 4 != 0 { s[1] += "=" }
            if !s[1].hasSuffix("=") { s[1] += "====" }
            return s.joined(separator: ".")
        },
        Case(name: "header not JSON", reason: .malformed, detail: "header is not JSON") { pki in
            Base64URL.encode(Array("{alg:ES256}".utf8)) + "." + segments(token(pki)).dropFirst().joined(separator: ".")
        },
        Case(name: "header a JSON array", reason: .malformed, detail: "not a JSON object") { pki in
            Base64URL.encode(Array("[\"ES256\"]".utf8)) + "." + segments(token(pki)).dropFirst().joined(separator: ".")
        },
        Case(name: "duplicate alg in header", reason: .malformed, detail: "duplicate key \"alg\"") { pki in
            let h = #"{"alg":"none","alg":"ES256","x5c":[]}"#
            return Base64URL.encode(Array(h.utf8)) + "." + segments(token(pki)).dropFirst().joined(separator: ".")
        },
        Case(name: "non-JSON payload with a valid signature", reason: .malformed, detail: "payload is not JSON") { signedRaw($0, payload: "not json at all") },
        Case(name: "payload invalid UTF-8", reason: .malformed, detail: "invalid UTF-8") { signedRaw($0, payload: [0x7B, 0x22, 0xC3, 0x28, 0x22, 0x3A, 0x31, 0x7D]) },
        Case(name: "payload nested too deep", reason: .malformed, detail: "nesting deeper") { pki in
            signedRaw(pki, payload: "{\"a\":" + String(repeating: "[", count: 70) + String(repeating: "]", count: 70) + "}")
        },
        Case(name: "expiresDate is a string", reason: .malformed, detail: "expiresDate is \"2026-12-30\"") { token($0, payload: tx([("expiresDate", .string("2026-12-30"))])) },
        Case(name: "bundleId is a number", reason: .malformed, detail: "bundleId is 42") { token($0, payload: tx([("bundleId", .int(42))])) },
        Case(name: "signedDate out of range", reason: .malformed, detail: "signedDate is 1e300") { token($0, payload: tx([("signedDate", .number("1e300"))])) },
        Case(name: "signature not base64url", reason: .malformed, detail: "signature is not base64url") { token($0) + "!" },
        Case(name: "x5c not an array", reason: .malformed, detail: "x5c is \"MII") { pki in
            token(pki, header: .object([("alg", .string("ES256")), ("x5c", .string(pki.leaf.base64))]))
        },
        Case(name: "x5c entry not base64", reason: .malformed, detail: "x5c[1] is not base64") { pki in
            token(pki, header: .object([("alg", .string("ES256")), ("x5c", .array([.string(pki.leaf.base64), .string("%%%"), .string(pki.root.base64)]))]))
        },
        Case(name: "binary garbage", reason: .malformed, detail: "") { _ in
            String(decoding: (0..<4000).map { UInt8(truncatingIfNeeded: $0 &* 7919 &+ 13) }, as: UTF8.self)
        },
        Case(name: "malformed payload beats alg none", reason: .malformed, detail: "payload is not JSON") { pki in
            Base64URL.encode(Array(#"{"alg":"none"}"#.utf8)) + "." + Base64URL.encode(Array("garbage".utf8)) + "."
        },
    ]

    static let algorithm: [Case] = [
        Case(name: "alg none", reason: .unsupportedAlgorithm, detail: "alg is \"none\"") { pki in
            TokenBuilder(header: TokenBuilder.header(chain: pki.chain, alg: "none"), payload: TokenBuilder.transaction()).signingInput + "."
        },
        Case(name: "HS256 keyed with the leaf's public key", reason: .unsupportedAlgorithm, detail: "alg is \"HS256\"") { pki in
            let input = TokenBuilder(header: TokenBuilder.header(chain: pki.chain, alg: "HS256"), payload: TokenBuilder.transaction()).signingInput
            return input + "." + Base64URL.encode(hmacSHA256(key: pki.leafKey.spki, message: Array(input.utf8)))
        },
        Case(name: "ES384", reason: .unsupportedAlgorithm, detail: "alg is \"ES384\"") { pki in
            TokenBuilder(header: TokenBuilder.header(chain: pki.chain, alg: "ES384"), payload: TokenBuilder.transaction()).signed(with: pki.leafKey)
        },
        Case(name: "RS256", reason: .unsupportedAlgorithm, detail: "alg is \"RS256\"") { pki in
            TokenBuilder(header: TokenBuilder.header(chain: pki.chain, alg: "RS256"), payload: TokenBuilder.transaction()).signed(with: pki.leafKey)
        },
        Case(name: "lower-case es256", reason: .unsupportedAlgorithm, detail: "alg is \"es256\"") { pki in
            TokenBuilder(header: TokenBuilder.header(chain: pki.chain, alg: "es256"), payload: TokenBuilder.transaction()).signed(with: pki.leafKey)
        },
        Case(name: "no alg", reason: .unsupportedAlgorithm, detail: "no alg") { pki in
            token(pki, header: .object([("x5c", .array(pki.chain.map { .string($0.base64) }))]))
        },
        Case(name: "crit header", reason: .unsupportedAlgorithm, detail: "crit: [\"b64\"]") { pki in
            token(pki, header: TokenBuilder.header(chain: pki.chain, extra: [("b64", .bool(false)), ("crit", .array([.string("b64")]))]))
        },
        Case(name: "alg none beats a bad chain", reason: .unsupportedAlgorithm, detail: "alg is \"none\"") { pki in
            TokenBuilder(header: TokenBuilder.header(chain: [pki.leaf], alg: "none"), payload: TokenBuilder.transaction()).signingInput + "."
        },
    ]

    static let chain: [Case] = [
        Case(name: "no x5c", reason: .untrustedChain, detail: "no x5c") { token($0, header: .object([("alg", .string("ES256"))])) },
        Case(name: "x5c of two", reason: .untrustedChain, detail: "x5c holds 2 certificates") { pki in
            token(pki, header: TokenBuilder.header(chain: [pki.leaf, pki.intermediate]))
        },
        Case(name: "x5c of four", reason: .untrustedChain, detail: "x5c holds 4 certificates") { pki in
            token(pki, header: TokenBuilder.header(chain: pki.chain + [pki.root]))
        },
        Case(name: "an attacker's own root", reason: .untrustedChain, detail: "does not validate to a pinned root") { _ in
            token(attacker)
        },
        Case(name: "an attacker's leaf with the genuine intermediate and root", reason: .untrustedChain, detail: "x5c[0]") { pki in
            let key = TestKey(.p256)
            let forged = TestCert.issue(.init(commonName: "Test Leaf", isCA: false, markerOIDs: [TestPKI.leafOID],
                                              notBefore: TestPKI.leafNotBefore, notAfter: TestPKI.leafNotAfter, serial: 3),
                                        key: key, issuer: pki.intermediate, issuerKey: key)
            return token(pki, leaf: forged, signer: key)
        },
        Case(name: "the attacker's intermediate under the genuine root", reason: .untrustedChain, detail: "x5c[1]") { pki in
            let key = TestKey(.p384)
            let fake = TestCert.issue(.init(commonName: "Test Intermediate", isCA: true, markerOIDs: [TestPKI.intermediateOID], serial: 2),
                                      key: key, issuer: pki.root, issuerKey: key)
            let leaf = TestPKI.makeLeaf(key: pki.leafKey, intermediate: fake, intermediateKey: key)
            return token(pki, header: TokenBuilder.header(chain: [leaf, fake, pki.root]))
        },
        Case(name: "intermediate without its marker OID", reason: .untrustedChain, detail: "lacks the intermediate marker extension 1.2.840.113635.100.6.2.1") { pki in
            let i = TestCert.issue(.init(commonName: "Plain Intermediate", isCA: true, serial: 2), key: pki.intermediateKey, issuer: pki.root, issuerKey: pki.rootKey)
            let leaf = TestPKI.makeLeaf(key: pki.leafKey, intermediate: i, intermediateKey: pki.intermediateKey)
            return token(pki, header: TokenBuilder.header(chain: [leaf, i, pki.root]))
        },
        Case(name: "leaf without its marker OID", reason: .untrustedChain, detail: "lacks the leaf marker extension 1.2.840.113635.100.6.11.1") { pki in
            token(pki, leaf: TestPKI.makeLeaf(key: pki.leafKey, intermediate: pki.intermediate, intermediateKey: pki.intermediateKey, oids: []))
        },
        Case(name: "markers swapped", reason: .untrustedChain, detail: "lacks the intermediate marker") { pki in
            let i = TestCert.issue(.init(commonName: "Swapped", isCA: true, markerOIDs: [TestPKI.leafOID], serial: 2), key: pki.intermediateKey, issuer: pki.root, issuerKey: pki.rootKey)
            let leaf = TestPKI.makeLeaf(key: pki.leafKey, intermediate: i, intermediateKey: pki.intermediateKey, oids: [TestPKI.intermediateOID])
            return token(pki, header: TokenBuilder.header(chain: [leaf, i, pki.root]))
        },
        Case(name: "intermediate not a CA", reason: .untrustedChain, detail: "is not a CA") { pki in
            let i = TestCert.issue(.init(commonName: "Not A CA", isCA: false, markerOIDs: [TestPKI.intermediateOID], serial: 2),
                                   key: pki.intermediateKey, issuer: pki.root, issuerKey: pki.rootKey)
            let leaf = TestPKI.makeLeaf(key: pki.leafKey, intermediate: i, intermediateKey: pki.intermediateKey)
            return token(pki, header: TokenBuilder.header(chain: [leaf, i, pki.root]))
        },
        Case(name: "intermediate without basicConstraints", reason: .untrustedChain, detail: "is not a CA") { pki in
            let i = TestCert.issue(.init(commonName: "No Constraints", isCA: nil, markerOIDs: [TestPKI.intermediateOID], serial: 2),
                                   key: pki.intermediateKey, issuer: pki.root, issuerKey: pki.rootKey)
            let leaf = TestPKI.makeLeaf(key: pki.leafKey, intermediate: i, intermediateKey: pki.intermediateKey)
            return token(pki, header: TokenBuilder.header(chain: [leaf, i, pki.root]))
        },
        Case(name: "leaf is a CA", reason: .untrustedChain, detail: "is a CA") { pki in
            token(pki, leaf: TestPKI.makeLeaf(key: pki.leafKey, intermediate: pki.intermediate, intermediateKey: pki.intermediateKey, isCA: true))
        },
        Case(name: "leaf expired before signedDate", reason: .untrustedChain, detail: "certificate has expired") { pki in
            let leaf = TestPKI.makeLeaf(key: pki.leafKey, intermediate: pki.intermediate, intermediateKey: pki.intermediateKey,
                                        notBefore: TestPKI.t("2025-01-01T00:00:00Z"), notAfter: TestPKI.t("2026-03-01T00:00:00Z"))
            return token(pki, payload: TokenBuilder.transaction(signedDate: TestPKI.t("2026-03-02T00:00:00Z")), leaf: leaf)
        },
        Case(name: "signed before the leaf was valid", reason: .untrustedChain, detail: "not yet valid") { pki in
            token(pki, payload: TokenBuilder.transaction(signedDate: TestPKI.t("2024-06-01T00:00:00Z")))
        },
        Case(name: "leaf and intermediate swapped", reason: .untrustedChain, detail: "x5c[1]") { pki in
            token(pki, header: TokenBuilder.header(chain: [pki.intermediate, pki.leaf, pki.root]))
        },
        Case(name: "x5c[0] is not a certificate", reason: .untrustedChain, detail: "x5c[0] is not a certificate") { pki in
            token(pki, header: .object([("alg", .string("ES256")), ("x5c", .array([.string("AAAA"), .string(pki.intermediate.base64), .string(pki.root.base64)]))]))
        },
        Case(name: "x5c[0] with trailing bytes", reason: .untrustedChain, detail: "bytes after the DER certificate") { pki in
            let padded = Data(pki.leaf.der + [0, 0, 0]).base64EncodedString()
            return token(pki, header: .object([("alg", .string("ES256")), ("x5c", .array([.string(padded), .string(pki.intermediate.base64), .string(pki.root.base64)]))]))
        },
        Case(name: "chain failure beats wrong bundle", reason: .untrustedChain, detail: "") { _ in
            token(attacker, payload: tx([("bundleId", .string("com.evil"))]))
        },
    ]

    static let signature: [Case] = [
        Case(name: "tampered payload", reason: .badSignature, detail: "does not verify with the key of x5c[0]") { pki in
            var s = segments(token(pki))
            s[1] = Base64URL.encode(Array(tx([("productId", .string("family.yearly"))]).serialized.utf8))
            return s.joined(separator: ".")
        },
        Case(name: "tampered header", reason: .badSignature, detail: "does not verify") { pki in
            var s = segments(token(pki))
            s[0] = Base64URL.encode(Array(TokenBuilder.header(chain: pki.chain, extra: [("kid", .string("x"))]).serialized.utf8))
            return s.joined(separator: ".")
        },
        Case(name: "DER signature", reason: .badSignature, detail: "of DER; JWS carries the raw 64-byte r‖s") { pki in
            let b = TokenBuilder(pki: pki)
            return b.withSignature(pki.leafKey.signDER(Array(b.signingInput.utf8)))
        },
        Case(name: "zero signature", reason: .badSignature, detail: "r is zero") { TokenBuilder(pki: $0).withSignature([UInt8](repeating: 0, count: 64)) },
        Case(name: "empty signature", reason: .badSignature, detail: "signature is 0 bytes") { TokenBuilder(pki: $0).withSignature([]) },
        Case(name: "short signature", reason: .badSignature, detail: "signature is 32 bytes") { pki in
            let b = TokenBuilder(pki: pki)
            return b.withSignature(Array(pki.leafKey.signRaw(Array(b.signingInput.utf8)).prefix(32)))
        },
        Case(name: "s equal to the order", reason: .badSignature, detail: "s is not below the curve order") { pki in
            let b = TokenBuilder(pki: pki)
            return b.withSignature(Array(pki.leafKey.signRaw(Array(b.signingInput.utf8)).prefix(32)) + ECCurve.p256.order)
        },
        Case(name: "signed with the intermediate's key", reason: .badSignature, detail: "") { pki in
            TokenBuilder(pki: pki).signed(with: pki.intermediateKey)
        },
        Case(name: "signed with the root's key", reason: .badSignature, detail: "") { pki in
            TokenBuilder(pki: pki).signed(with: pki.rootKey)
        },
        Case(name: "signature of another token", reason: .badSignature, detail: "does not verify") { pki in
            let other = segments(token(pki, payload: tx([("transactionId", .string("1"))])))
            var s = segments(token(pki))
            s[2] = other[2]
            return s.joined(separator: ".")
        },
        Case(name: "bad signature beats wrong bundle", reason: .badSignature, detail: "") { pki in
            var s = segments(token(pki))
            s[1] = Base64URL.encode(Array(tx([("bundleId", .string("com.evil"))]).serialized.utf8))
            return s.joined(separator: ".")
        },
    ]

    static let payload: [Case] = [
        Case(name: "wrong bundle", reason: .wrongBundle, detail: "bundleId is \"com.other\", expected \"com.example.family\"") {
            token($0, payload: tx([("bundleId", .string("com.other"))]))
        },
        Case(name: "no bundleId", reason: .wrongBundle, detail: "no bundleId") { token($0, payload: tx([("bundleId", .string("<absent>"))])) },
        Case(name: "wrong product", reason: .wrongProduct, detail: "productId is \"family.weekly\", allowed: \"family.monthly\", \"family.yearly\"") {
            token($0, payload: tx([("productId", .string("family.weekly"))]))
        },
        Case(name: "no productId", reason: .wrongProduct, detail: "no productId") { token($0, payload: tx([("productId", .string("<absent>"))])) },
        Case(name: "Sandbox not allowed", reason: .wrongEnvironment, detail: "environment is \"Sandbox\"") {
            token($0, payload: tx([("environment", .string("Sandbox"))]))
        },
        Case(name: "Xcode even with sandbox allowed", reason: .wrongEnvironment, detail: "environment is \"Xcode\"",
             policy: ProofPolicy(bundleID: "com.example.family", allowSandbox: true)) { token($0, payload: tx([("environment", .string("Xcode"))])) },
        Case(name: "LocalTesting even with sandbox allowed", reason: .wrongEnvironment, detail: "environment is \"LocalTesting\"",
             policy: ProofPolicy(bundleID: "com.example.family", allowSandbox: true)) { token($0, payload: tx([("environment", .string("LocalTesting"))])) },
        Case(name: "no environment", reason: .wrongEnvironment, detail: "no environment") { token($0, payload: tx([("environment", .string("<absent>"))])) },
        Case(name: "revoked", reason: .revoked, detail: "revocationDate is 2026-07-01T00:00:00.000Z (revocationReason 1)") {
            token($0, payload: tx([("revocationDate", .int(TestPKI.t("2026-07-01T00:00:00Z").milliseconds)), ("revocationReason", .int(1))]))
        },
        Case(name: "revoked beats expired", reason: .revoked, detail: "revocationDate") {
            token($0, payload: tx([("revocationDate", .int(TestPKI.signedDate.milliseconds))], expires: TestPKI.t("2026-07-01T00:00:00Z")))
        },
        Case(name: "expired", reason: .expired, detail: "expiresDate 2026-07-01T00:00:00.000Z is not after now (2026-11-30T10:00:00.000Z)") {
            token($0, payload: tx([], expires: TestPKI.t("2026-07-01T00:00:00Z")))
        },
        Case(name: "expires exactly now", reason: .expired, detail: "is not after now") { token($0, payload: tx([], expires: TestPKI.now)) },
        Case(name: "wrong bundle beats expired", reason: .wrongBundle, detail: "com.other") {
            token($0, payload: tx([("bundleId", .string("com.other"))], expires: TestPKI.t("2026-07-01T00:00:00Z")))
        },
    ]

    static let all = valid + malformed + algorithm + chain + signature + payload

    static let arguments: [(TestPKI.Flavor, Case)] = TestPKI.Flavor.allCases.flatMap { f in all.map { (f, $0) } }

    @Test(arguments: arguments)
    func verdict(flavor: TestPKI.Flavor, c: Case) throws {
        let pki = TestPKI.shared(flavor)
        let v = try pki.verifier().verify(c.make(pki), policy: c.policy, now: c.now)
        #expect(v.reason == c.reason, "\(v.failure?.description ?? "valid")")
        if let f = v.failure {
            #expect(c.detail.isEmpty || f.detail.contains(c.detail), "detail: \(f.detail)")
            #expect(f.detail.count < 600, "detail too long: \(f.detail.count)")
        }
    }

    /// Every reason code is produced by some case above.
    @Test func everyReasonIsCovered() {
        let produced = Set(ProofVerifierTests.all.compactMap(\.reason))
        #expect(produced == Set(ProofReason.allCases))
    }

    @Test(arguments: TestPKI.Flavor.allCases)
    func validVerdictYieldsEntitlement(flavor: TestPKI.Flavor) throws {
        let pki = TestPKI.shared(flavor)
        let token = ProofVerifierTests.token(pki)
        let v = try pki.verifier().verify(token, policy: TokenBuilder.policy, now: TestPKI.now)
        let proof = try #require(v.proof)
        #expect(proof.jws == token)
        #expect(proof.entitledUntil == TestPKI.expires)
        #expect(proof.signedDate == TestPKI.signedDate)
        #expect(proof.payload.productID == "family.monthly")
        #expect(v.json.serialized.hasPrefix(#"{"valid":true,"transaction":{"transactionId":"2000000123456789""#))
        #expect(v.json["entitledUntil"] == .string("2026-12-30T10:00:00.000Z"))
        let lifetime = try pki.verifier().verify(ProofVerifierTests.token(pki, payload: ProofVerifierTests.tx([], expires: nil)), policy: TokenBuilder.policy, now: TestPKI.now)
        #expect(lifetime.isValid && lifetime.json["entitledUntil"] == .null)
    }

    @Test func invalidVerdictJSON() throws {
        let pki = TestPKI.appleLike
        let v = try pki.verifier().verify(ProofVerifierTests.token(pki, payload: ProofVerifierTests.tx([("bundleId", .string("com.other"))])),
                                          policy: TokenBuilder.policy, now: TestPKI.now)
        let keys = v.json.objectValue?.map(\.0)
        #expect(keys == ["valid", "reason", "detail", "transaction", "entitledUntil"])
        #expect(v.json["transaction"]?["bundleId"] == .string("com.other"))
        let m = try pki.verifier().verify("a.b", policy: TokenBuilder.policy, now: TestPKI.now)
        #expect(m.json.objectValue?.map(\.0) == ["valid", "reason", "detail", "entitledUntil"])
    }

    /// Renewal info and notifications pass the same header, chain and signature checks.
    @Test func otherKindsShareTheChainAndSignatureChecks() throws {
        let pki = TestPKI.appleLike
        let renewal: JSONValue = .object([("originalTransactionId", .string("1")), ("autoRenewProductId", .string("family.monthly")),
                                          ("autoRenewStatus", .int(1)), ("environment", .string("Production")),
                                          ("signedDate", .int(TestPKI.signedDate.milliseconds))])
        let notification: JSONValue = .object([("notificationType", .string("DID_RENEW")),
                                               ("data", .object([("bundleId", .string("com.example.family")), ("environment", .string("Production"))])),
                                               ("signedDate", .int(TestPKI.signedDate.milliseconds))])
        for (kind, payload) in [(SignedPayloadKind.renewalInfo, renewal), (.notification, notification)] {
            let good = ProofVerifierTests.token(pki, payload: payload)
            let v = try pki.verifier().verify(good, as: kind, policy: TokenBuilder.policy, now: TestPKI.now)
            #expect(v.isValid, "\(kind): \(v.failure?.description ?? "")")
            #expect(v.proof?.grantsEntitlement == false)
            #expect(v.json[kind.payloadKey] != nil)
            #expect(v.json["entitledUntil"] == .null)
            var s = ProofVerifierTests.segments(good)
            s[2] = ProofVerifierTests.segments(ProofVerifierTests.token(pki))[2]
            #expect(try pki.verifier().verify(s.joined(separator: "."), as: kind, policy: TokenBuilder.policy, now: TestPKI.now).reason == .badSignature)
            #expect(try pki.verifier().verify(ProofVerifierTests.token(ProofVerifierTests.attacker, payload: payload), as: kind,
                                              policy: TokenBuilder.policy, now: TestPKI.now).reason == .untrustedChain)
        }
        // A notification for another app is wrong-bundle; a renewal info never carries a bundle.
        let other = ProofVerifierTests.token(pki, payload: .object([("notificationType", .string("TEST")),
                                                                     ("data", .object([("bundleId", .string("com.other")), ("environment", .string("Production"))]))]))
        #expect(try pki.verifier().verify(other, as: .notification, policy: TokenBuilder.policy, now: TestPKI.now).reason == .wrongBundle)
        let sandbox = ProofVerifierTests.token(pki, payload: .object([("environment", .string("Sandbox"))]))
        #expect(try pki.verifier().verify(sandbox, as: .renewalInfo, policy: TokenBuilder.policy, now: TestPKI.now).reason == .wrongEnvironment)
    }

    /// A leaf whose key is P-384 validates as a chain but cannot make an ES256 signature.
    @Test func p384LeafKeyIsBadSignature() throws {
        let pki = TestPKI.appleLike
        let key = TestKey(.p384)
        let leaf = TestPKI.makeLeaf(key: key, intermediate: pki.intermediate, intermediateKey: pki.intermediateKey)
        let v = try pki.verifier().verify(ProofVerifierTests.token(pki, leaf: leaf, signer: key), policy: TokenBuilder.policy, now: TestPKI.now)
        #expect(v.reason == .badSignature)
        #expect(v.failure?.detail.contains("96 bytes") == true || v.failure?.detail.contains("P-384") == true)
    }
}

/// The fast line writer says exactly what the JSON value says.
@Suite struct VerdictLineTests {
    @Test(arguments: [
        TokenBuilder.transaction(),
        TokenBuilder.transaction(expires: nil),
        TokenBuilder.transaction(extra: [("note", .string("line\u{2028}separator"))]),
        TokenBuilder.transaction(extra: [("bundleId", .string("com.other"))]),
    ])
    func lineMatchesJSON(payload: JSONValue) throws {
        let pki = TestPKI.allP256
        let v = try pki.verifier().verify(ProofVerifierTests.token(pki, payload: payload), policy: TokenBuilder.policy, now: TestPKI.now)
        var line: [UInt8] = []
        v.appendLine(to: &line)
        #expect(line.last == 0x0A)
        #expect(line.dropLast().allSatisfy { $0 != 0x0A && $0 != 0x0D })
        #expect(try JSONParser.parse(line.dropLast()) == v.json)
        #expect(try JSONParser.parse(line.dropLast()).serialized == v.json.serialized)
    }

    /// A payload signed with whitespace and line breaks is re-serialized onto one line.
    @Test func multiLinePayloadIsReserialized() throws {
        let pki = TestPKI.allP256
        let text = "{\n  \"bundleId\": \"com.example.family\",\n\t\"productId\": \"family.monthly\", \"environment\": \"Production\",\r\n \"signedDate\": \(TestPKI.signedDate.milliseconds)\n}"
        let v = try pki.verifier().verify(ProofVerifierTests.signedRaw(pki, payload: text), policy: TokenBuilder.policy, now: TestPKI.now)
        #expect(v.isValid)
        var line: [UInt8] = []
        v.appendLine(to: &line)
        #expect(String(decoding: line, as: UTF8.self) == v.json.serialized + "\n")
    }
}
