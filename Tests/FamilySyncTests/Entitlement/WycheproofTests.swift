import Foundation
import Testing
@testable import FamilySync

/// Project Wycheproof's ECDSA P-256/SHA-256 vectors in P1363 (raw r‖s) form,
/// the form JWS uses, through the same ES256 path proofs take.
@Suite struct WycheproofTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var id: Int, comment: String, key: [UInt8], message: [UInt8], signature: [UInt8], valid: Bool
        var testDescription: String { "tcId \(id): \(comment)" }
    }

    static func cases() throws -> [Case] {
        let json = try JSONParser.parse(Vectors.bytes("wycheproof/ecdsa_secp256r1_sha256_p1363_test.json"))
        var out: [Case] = []
        for group in json["testGroups"]?.arrayValue ?? [] {
            let key = Hex.decode(group["publicKeyDer"]?.stringValue ?? "")!
            for t in group["tests"]?.arrayValue ?? [] {
                let result = t["result"]!.stringValue!
                #expect(result == "valid" || result == "invalid", "tcId \(t["tcId"]!): unexpected result \(result)")
                out.append(Case(id: Int(t["tcId"]!.int64Value!), comment: t["comment"]?.stringValue ?? "",
                                key: key, message: Hex.decode(t["msg"]!.stringValue!)!,
                                signature: Hex.decode(t["sig"]!.stringValue!)!, valid: result == "valid"))
            }
        }
        return out
    }

    @Test func allVerdictsRight() throws {
        let all = try WycheproofTests.cases()
        #expect(all.count == 262)
        #expect(all.filter(\.valid).count == 173)
        var wrong: [String] = []
        var verifiers: [[UInt8]: ECDSAVerifier] = [:]
        for c in all {
            let verifier: ECDSAVerifier
            if let v = verifiers[c.key] { verifier = v } else {
                verifier = try ECDSAVerifier(key: ECPublicKey(subjectPublicKeyInfo: c.key))
                verifiers[c.key] = verifier
            }
            let result = c.signature.withUnsafeBytes { s in c.message.withUnsafeBytes { m in verifier.verifyES256(rawSignature: s, message: m) } }
            if result.isValid != c.valid { wrong.append("\(c.testDescription): expected \(c.valid ? "valid" : "invalid"), got \(result)") }
        }
        #expect(wrong.isEmpty, "\(wrong.count) wrong: \(wrong.prefix(10).joined(separator: "; "))")
    }

    /// A fresh verifier per case gives the same verdicts as a reused one:
    /// reusing OpenSSL's context after a failure must not change anything.
    @Test func reusedContextMatchesFreshOne() throws {
        let all = try WycheproofTests.cases()
        let byKey = Dictionary(grouping: all, by: \.key)
        for (key, cases) in byKey.prefix(8) {
            let shared = try ECDSAVerifier(key: ECPublicKey(subjectPublicKeyInfo: key))
            for c in cases.reversed() {
                let fresh = try ECDSAVerifier(key: ECPublicKey(subjectPublicKeyInfo: key))
                let a = c.signature.withUnsafeBytes { s in c.message.withUnsafeBytes { shared.verifyES256(rawSignature: s, message: $0) } }
                let b = c.signature.withUnsafeBytes { s in c.message.withUnsafeBytes { fresh.verifyES256(rawSignature: s, message: $0) } }
                #expect(a == b, "\(c.testDescription)")
            }
        }
    }
}
