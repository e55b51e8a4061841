import Foundation
import Testing
@testable import FamilySync

/// Megabytes, garbage, broken encodings: always a verdict, never a crash.
@Suite struct HostileInputTests {
    static func verdict(_ bytes: [UInt8]) throws -> ProofVerdict {
        let v = try TestPKI.appleLike.verifier()
        return bytes.withUnsafeBytes { v.verify(token: $0, policy: TokenBuilder.policy, now: TestPKI.now) }
    }

    /// Bytes made inside the test, so the test list never holds (or prints) megabytes.
    struct Input: Sendable, CustomTestStringConvertible {
        var name: String
        var detail: String
        var make: @Sendable () -> [UInt8]
        var testDescription: String { name }
    }

    static let inputs: [Input] = [
        Input(name: "ten megabytes of random bytes", detail: "a proof is at most") { try! secureRandomBytes(10_000_000) },
        Input(name: "ten megabytes of dots", detail: "a proof is at most") { [UInt8](repeating: 0x2E, count: 10_000_000) },
        Input(name: "only dots", detail: "header is not JSON") { Array("..".utf8) },
        Input(name: "NUL bytes", detail: "1 dot-separated") { [UInt8](repeating: 0, count: 100) },
        Input(name: "three huge segments", detail: "a proof is at most") {
            Array((String(repeating: "A", count: 30_000) + "." + String(repeating: "B", count: 30_000) + "." + String(repeating: "C", count: 30_000)).utf8)
        },
        Input(name: "latin-1 bytes", detail: "not base64url") { [0x65, 0x79, 0xE9, 0x2E, 0x2E] },
        Input(name: "a lone surrogate escape", detail: "unpaired surrogate") { Array((Base64URL.encode(Array(#"{"alg":"\ud800"}"#.utf8)) + "..").utf8) },
        Input(name: "empty object header", detail: "no alg") { Array("e30.e30.".utf8) },
        Input(name: "just at the limit", detail: "1 dot-separated") { [UInt8](repeating: 0x41, count: CompactJWS.maxBytes) },
        Input(name: "one over the limit", detail: "a proof is at most") { [UInt8](repeating: 0x41, count: CompactJWS.maxBytes + 1) },
    ]

    @Test(arguments: inputs)
    func hostile(input: Input) throws {
        let v = try HostileInputTests.verdict(input.make())
        #expect(!v.isValid)
        #expect(v.failure?.detail.contains(input.detail) == true, "\(input.name): \(v.failure?.description ?? "")")
        #expect((v.failure?.detail.count ?? 0) < 400)
    }

    @Test func thousandsOfX5CEntries() throws {
        let pki = TestPKI.appleLike
        let header: JSONValue = .object([("alg", .string("ES256")), ("x5c", .array(Array(repeating: .string("AAAA"), count: 5000)))])
        let v = try pki.verifier().verify(ProofVerifierTests.token(pki, header: header), policy: TokenBuilder.policy, now: TestPKI.now)
        #expect(v.reason == .untrustedChain)
        #expect(v.failure?.detail == "x5c holds 5000 certificates; App Store chains hold exactly 3")
    }

    /// Offending values are quoted, escaped and cut short in details.
    @Test func longHostileValuesAreCutInDetails() throws {
        let pki = TestPKI.appleLike
        let evil = String(repeating: "\u{202E}\n\"x", count: 5000)
        let v = try pki.verifier().verify(ProofVerifierTests.token(pki, payload: ProofVerifierTests.tx([("bundleId", .string(evil))])),
                                          policy: TokenBuilder.policy, now: TestPKI.now)
        let f = try #require(v.failure)
        #expect(f.reason == .wrongBundle)
        #expect(f.detail.count < 500)
        #expect(!f.detail.contains("\n"))
        #expect(f.detail.contains("…"))
        #expect(!v.json.serialized.contains("\n"))
    }
}
