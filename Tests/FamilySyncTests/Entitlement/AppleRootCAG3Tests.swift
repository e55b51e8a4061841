import Foundation
import Testing
@testable import FamilySync

@Suite struct AppleRootCAG3Tests {
    @Test func embeddedBytesAreApplesRoot() throws {
        #expect(AppleRootCAG3.der == (try Vectors.bytes("AppleRootCA-G3.cer")))
        #expect(Hex.encode(SHA256.hash(AppleRootCAG3.der)) == AppleRootCAG3.sha256Fingerprint)
        #expect(AppleRootCAG3.sha256Fingerprint == "63343abfb89a6a03ebb57e9b3f5fa7be7c4f5c756f3017b3a8c488c3653e9179")
    }

    @Test func parsesAsTheCA() throws {
        let c = try #require(try TrustAnchors.appleRootCAG3().first)
        #expect(c.subject.contains("CN=Apple Root CA - G3"))
        #expect(c.isCA)
        #expect(c.notAfter == Timestamp(rfc3339: "2039-04-30T18:19:06Z"))
        #expect(try c.publicKey().curve == .p384)
    }
}
