import Foundation
import Testing
@testable import FamilySync

@Suite struct SessionKeysTests {
    static let family = "6A1C1D2E-0F3A-4B5C-8D6E-7F8091A2B3C4"
    static let a = "11111111-2222-4333-8444-555555555555"
    static let b = "AAAAAAAA-BBBB-4CCC-8DDD-EEEEEEEEEEEE"

    @Test func identitiesRoundTrip() {
        for id in [SessionIdentity.sync(family: Self.family, client: Self.a, server: Self.b, epoch: 7),
                   SessionIdentity.pair(family: Self.family, tag: String(repeating: "ab", count: 16))] {
            #expect(SessionIdentity(bytes: id.bytes) == id)
        }
        #expect(SessionIdentity.sync(family: Self.family, client: Self.a, server: Self.b, epoch: 0).text == "FS1 S \(Self.family) \(Self.a) \(Self.b) 0")
    }

    @Test(arguments: [
        "", "FS1", "FS2 S \(family) \(a) \(b) 0", "FS1 X \(family) \(a) \(b) 0", "FS1 S \(family) \(a) \(b)",
        "FS1 S \(family) \(a) \(b) -1", "FS1 S \(family) \(a) \(b) 01", "FS1 S \(family) \(a) \(b) 0 extra",
        "FS1 S \(family.lowercased()) \(a) \(b) 0", "FS1 S \(family)  \(a) \(b) 0", "FS1 P \(family) ABABABABABABABABABABABABABABABAB",
        "FS1 P \(family) abab", "FS1 S \(family) \(a) \(b) 99999999999999999999", "FS1 S \(family) \(a) \(b) 0\u{0}",
    ])
    func malformedIdentitiesAreRejected(text: String) {
        #expect(SessionIdentity(bytes: Array(text.utf8)) == nil)
    }

    /// The derivations, recomputed with the openssl command line as an independent HKDF.
    static func opensslHKDF(key: [UInt8], salt: String, info: [UInt8], length: Int) -> [UInt8]? {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["openssl", "kdf", "-keylen", String(length), "-kdfopt", "digest:SHA256", "-kdfopt", "hexkey:" + Hex.encode(key),
                       "-kdfopt", "salt:" + salt, "-kdfopt", "hexinfo:" + Hex.encode(info), "HKDF"]
        let pipe = Pipe()
        p.standardOutput = pipe
        p.standardError = FileHandle.nullDevice
        guard (try? p.run()) != nil else { return nil }
        let out = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        guard p.terminationStatus == 0 else { return nil }
        return Hex.decode(out.trimmingCharacters(in: .whitespacesAndNewlines).replacingOccurrences(of: ":", with: ""))
    }

    static func joined(_ fields: [String]) -> [UInt8] { Array(fields.joined(separator: "\u{0}").utf8) }

    @Test func derivationsMatchAnIndependentHKDF() throws {
        let fkBytes = [UInt8](0..<32), dkBytes = [UInt8](32..<64)
        let fk = SecretBytes(fkBytes), dk = SecretBytes(dkBytes)
        let nonce = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
        let cases: [([UInt8], [UInt8]?)] = [
            (try SessionKeys.familyPSK(familyKey: fk, family: Self.family, epoch: 3, client: Self.a, server: Self.b).copiedBytes,
             Self.opensslHKDF(key: fkBytes, salt: "family-sync/1 sync", info: Self.joined(["family-key", Self.family, "3", Self.a, Self.b]), length: 32)),
            (try SessionKeys.devicePSK(deviceKey: dk, family: Self.family, client: Self.a, server: Self.b).copiedBytes,
             Self.opensslHKDF(key: dkBytes, salt: "family-sync/1 sync", info: Self.joined(["device-key", Self.family, Self.a, Self.b]), length: 32)),
            (try SessionKeys.pairingPSK(nonce: nonce, family: Self.family).copiedBytes,
             Self.opensslHKDF(key: Array(nonce.utf8), salt: "family-sync/1 pair", info: Self.joined(["pair", Self.family]), length: 32)),
            (Hex.decode(try SessionKeys.offerTag(nonce: nonce, family: Self.family))!,
             Self.opensslHKDF(key: Array(nonce.utf8), salt: "family-sync/1 pair-tag", info: Self.joined(["tag", Self.family]), length: 16)),
        ]
        for (ours, theirs) in cases {
            let t = try #require(theirs, "openssl kdf is installed by 'make test'")
            #expect(ours == t)
        }
    }

    @Test func keysAreBoundToBothDevicesTheirRolesAndTheEpoch() throws {
        let fk = try SecretBytes.random(count: 32)
        let base = try SessionKeys.familyPSK(familyKey: fk, family: Self.family, epoch: 0, client: Self.a, server: Self.b)
        let others = [
            try SessionKeys.familyPSK(familyKey: fk, family: Self.family, epoch: 0, client: Self.b, server: Self.a),
            try SessionKeys.familyPSK(familyKey: fk, family: Self.family, epoch: 1, client: Self.a, server: Self.b),
            try SessionKeys.familyPSK(familyKey: fk, family: Self.family, epoch: 0, client: Self.a, server: "BBBBBBBB-BBBB-4CCC-8DDD-EEEEEEEEEEEE"),
            try SessionKeys.devicePSK(deviceKey: fk, family: Self.family, client: Self.a, server: Self.b),
        ]
        for o in others { #expect(o != base) }
        #expect(try SessionKeys.familyPSK(familyKey: fk, family: Self.family, epoch: 0, client: Self.a, server: Self.b) == base)
    }

    @Test func offerTagDoesNotRevealTheNonce() throws {
        let nonce = Base32.encode(try secureRandomBytes(20))
        let tag = try SessionKeys.offerTag(nonce: nonce, family: Self.family)
        #expect(tag.count == 32)
        #expect(!tag.uppercased().contains(nonce.prefix(8)))
    }

    /// The example derivations printed in docs/protocol.md §3.2, so the text
    /// and the code cannot drift apart.
    @Test func documentedExamplesHold() throws {
        let family = "11111111-2222-4333-8444-555555555555"
        let a = "AAAAAAAA-AAAA-4AAA-8AAA-AAAAAAAAAAAA", b = "BBBBBBBB-BBBB-4BBB-8BBB-BBBBBBBBBBBB"
        let key = SecretBytes((0..<32).map { UInt8($0) })
        let nonce = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
        #expect(Hex.encode(try SessionKeys.devicePSK(deviceKey: key, family: family, client: a, server: b).copiedBytes)
                == "203805a12f62ab99df532e20d2aca3e7aab26f8e149d932df55f9fb34ac9ed85")
        #expect(Hex.encode(try SessionKeys.familyPSK(familyKey: key, family: family, epoch: 3, client: a, server: b).copiedBytes)
                == "ef321c1f63a40247e5e7d8523d4216693145d02d09f8d41048557e320640a904")
        #expect(Hex.encode(try SessionKeys.pairingPSK(nonce: nonce, family: family).copiedBytes)
                == "b8ce8e7219510628b7a0b2621deb7d7bbb631ba6b78da4fc10332ac5c628ecc6")
        #expect(try SessionKeys.offerTag(nonce: nonce, family: family) == "dece08cd4c9977fc21cde8cf67a834de")
    }
}
