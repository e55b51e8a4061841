import Foundation
import Testing
@testable import FamilySync

@Suite struct ECDSASignatureTests {
    static func scalar(_ hex: String, _ n: Int = 32) -> [UInt8] {
        let b = Hex.decode(hex)!
        return [UInt8](repeating: 0, count: n - b.count) + b
    }

    @Test func rawToDERMinimalIntegers() throws {
        // r with a high bit gets a 0x00; s with leading zeros loses them.
        let r = [UInt8](repeating: 0x80, count: 32)
        let s = ECDSASignatureTests.scalar("0102")
        let der = try ECDSASignature.der(fromRaw: r + s, curve: .p256).get()
        #expect(der == [0x30, 0x27, 0x02, 0x21, 0x00] + r + [0x02, 0x02, 0x01, 0x02])
        #expect(ECDSASignature.raw(fromDER: der, curve: .p256) == r + s)
    }

    @Test func p384BothHighBits() throws {
        let r = [UInt8](repeating: 0xF0, count: 48), s = [UInt8](repeating: 0x80, count: 48)
        let der = try ECDSASignature.der(fromRaw: r + s, curve: .p384).get()
        #expect(Array(der.prefix(5)) == [0x30, 0x66, 0x02, 0x31, 0x00])
        #expect(der.count == 2 + 0x66)
        #expect(ECDSASignature.raw(fromDER: der, curve: .p384) == r + s)
    }

    @Test(arguments: ECCurve.allCases)
    func rangeChecks(curve: ECCurve) {
        let n = curve.order, k = curve.scalarBytes
        let one = [UInt8](repeating: 0, count: k - 1) + [1]
        var nMinus1 = n
        nMinus1[k - 1] -= 1
        var nPlus1 = n
        nPlus1[k - 1] += 1
        let ff = [UInt8](repeating: 0xFF, count: k)
        let zero = [UInt8](repeating: 0, count: k)
        func problem(_ raw: [UInt8]) -> RawSignatureProblem? {
            if case let .failure(p) = ECDSASignature.der(fromRaw: raw, curve: curve) { return p }
            return nil
        }
        #expect(problem(one + nMinus1) == nil)
        #expect(problem(nMinus1 + one) == nil)
        #expect(problem(zero + one) == .zero(component: "r"))
        #expect(problem(one + zero) == .zero(component: "s"))
        #expect(problem(n + one) == .notBelowOrder(component: "r"))
        #expect(problem(one + n) == .notBelowOrder(component: "s"))
        #expect(problem(one + nPlus1) == .notBelowOrder(component: "s"))
        #expect(problem(ff + one) == .notBelowOrder(component: "r"))
        #expect(problem(one) == .wrongLength(k, expected: 2 * k, looksLikeDER: false))
        #expect(problem(one + one + [0]) == .wrongLength(2 * k + 1, expected: 2 * k, looksLikeDER: false))
    }

    @Test func derInputIsRecognisedAndRefused() throws {
        let key = TestKey(.p256)
        let der = key.signDER(Array("message".utf8))
        guard case let .failure(p) = ECDSASignature.der(fromRaw: der, curve: .p256) else { Issue.record("DER accepted as raw"); return }
        #expect(p == .wrongLength(der.count, expected: 64, looksLikeDER: true))
        #expect(p.description.contains("DER"))
    }

    @Test(arguments: [
        [0x30, 0x06, 0x02, 0x01, 0x01, 0x02, 0x01, 0x01, 0x00] as [UInt8],  // trailing byte
        [0x30, 0x06, 0x02, 0x01, 0x81, 0x02, 0x01, 0x01],                   // negative r
        [0x30, 0x07, 0x02, 0x02, 0x00, 0x01, 0x02, 0x01, 0x01],             // non-minimal r
        [0x30, 0x81, 0x06, 0x02, 0x01, 0x01, 0x02, 0x01, 0x01],             // non-minimal length
        [0x31, 0x06, 0x02, 0x01, 0x01, 0x02, 0x01, 0x01],                   // not a SEQUENCE
    ])
    func strictDERParsing(der: [UInt8]) {
        #expect(ECDSASignature.raw(fromDER: der, curve: .p256) == nil)
    }

    @Test func signAndVerifyThroughES256() throws {
        let key = TestKey(.p256)
        let verifier = try ECDSAVerifier(key: ECPublicKey(subjectPublicKeyInfo: key.spki))
        let msg = Array("header.payload".utf8)
        let raw = key.signRaw(msg)
        func check(_ sig: [UInt8], _ m: [UInt8]) -> ES256Result {
            sig.withUnsafeBytes { s in m.withUnsafeBytes { verifier.verifyES256(rawSignature: s, message: $0) } }
        }
        #expect(check(raw, msg) == .valid)
        #expect(check(raw, msg + [0]) == .invalid)
        var flipped = raw
        flipped[63] ^= 1
        #expect(check(flipped, msg) == .invalid)
        let p384 = try ECDSAVerifier(key: ECPublicKey(subjectPublicKeyInfo: TestKey(.p384).spki))
        #expect(raw.withUnsafeBytes { s in msg.withUnsafeBytes { p384.verifyES256(rawSignature: s, message: $0) } } == .wrongCurve(.p384))
    }

    @Test func keyParsingIsStrict() {
        let spki = TestKey(.p256).spki
        #expect(throws: ECPublicKey.KeyProblem.self) { try ECPublicKey(subjectPublicKeyInfo: spki + [0]) }
        #expect(throws: ECPublicKey.KeyProblem.self) { try ECPublicKey(subjectPublicKeyInfo: Array(spki.dropLast())) }
        #expect(throws: ECPublicKey.KeyProblem.self) { try ECPublicKey(subjectPublicKeyInfo: []) }
    }
}
