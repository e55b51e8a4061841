import Foundation
import Testing
@testable import FamilySync

@Suite struct Base64URLTests {
    @Test(arguments: 0..<40)
    func roundTripsEveryLength(n: Int) throws {
        let bytes = (0..<n).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 250) }
        let url = Base64URL.encode(bytes)
        #expect(!url.contains("=") && !url.contains("+") && !url.contains("/"))
        #expect(try Base64URL.decode(url).get() == bytes)
        // Agrees with Foundation's encoder, modulo alphabet and padding.
        let std = Data(bytes).base64EncodedString()
        #expect(Base64URL.encodeStandard(bytes) == std)
        #expect(try Base64URL.decodeStandard(std).get() == bytes)
        #expect(url == std.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: ""))
    }

    @Test(arguments: [
        ("QQ==", "'='"),          // padding in base64url
        ("Q", "length 1"),        // cannot be base64
        ("QR", "not canonical"),  // unused bits set
        ("QUJ", "not canonical"),
        ("QU+C", "'+'"),          // standard alphabet in base64url
        ("QU/C", "'/'"),
        ("QU C", "0x20"),
        ("QU\u{e9}", "0xc3"),
    ])
    func rejectsNonCanonicalURL(text: String, problem: String) {
        guard case let .failure(p) = Base64URL.decode(text) else { Issue.record("accepted \(text)"); return }
        #expect(p.description.contains(problem), "\(p)")
    }

    @Test(arguments: ["QQ", "QQ=", "QQ===", "QUI", "Q===", "QU-C", "QU_C", "QR=="])
    func rejectsBadStandard(text: String) {
        #expect((try? Base64URL.decodeStandard(text).get()) == nil)
    }

    @Test func emptyIsEmpty() throws {
        #expect(try Base64URL.decode("").get() == [])
        #expect(try Base64URL.decodeStandard("").get() == [])
    }
}
