import Foundation
import Testing
@testable import FamilySync

@Suite struct SessionKeysTests {
    static let family = "6A1C1D2E-0F3A-4B5C-8D6E-7F8091A2B3C4"
    static let a = "11111111-2222-4333-8444-555555555555"
    static let b = "AAAAAAAA-BBBB-4CCC-8DDD-EEEEEEEEEEEE"

    /// Every kind of identity, sealed under its key, opens to itself with
    /// that key among others, and to nothing without it.
    @Test func sealedIdentitiesOpenOnlyUnderTheirKey() throws {
        let d = HeldKey(.device(member: Self.a), secret: try SecretBytes.random(count: 32))
        let f = HeldKey(.family(epoch: 7), secret: try SecretBytes.random(count: 32))
        let o = HeldKey(.offer(nonce: "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"), secret: SecretBytes("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567".utf8))
        let others = try (0..<5).map { _ in HeldKey(.device(member: Self.b), secret: try SecretBytes.random(count: 32)) }
        for (id, key) in [(SessionIdentity.sync(client: Self.a, server: Self.b), d), (.sync(client: Self.b, server: Self.a), f), (.pair, o)] {
            let bytes = try id.sealed(family: Self.family, under: key)
            #expect(bytes.count == SessionIdentity.textBytes && bytes.count <= 200)
            guard case let .opened(read, held) = try SessionIdentity.read(bytes, keys: try TrialKeys(others + [key], family: Self.family, use: .identity)) else {
                Issue.record("\(id) did not open under its key")
                continue
            }
            #expect(read == id && held.kind == key.kind)
            guard case .unrecognised = try SessionIdentity.read(bytes, keys: try TrialKeys(others, family: Self.family, use: .identity)) else {
                Issue.record("\(id) opened without its key")
                continue
            }
            // Another family's keys are other keys, though the secret is the same.
            guard case .unrecognised = try SessionIdentity.read(bytes, keys: try TrialKeys([key], family: Self.b, use: .identity)) else {
                Issue.record("\(id) opened for another family")
                continue
            }
        }
    }

    /// §3.3: no ID in clear, and two ClientHellos of the same client to the
    /// same server share nothing but the prefix (not even 4 bytes in a row).
    @Test func twoIdentitiesOfOneSessionShareNothing() throws {
        let key = HeldKey(.family(epoch: 0), secret: try SecretBytes.random(count: 32))
        let one = try SessionIdentity.sync(client: Self.a, server: Self.b).sealed(family: Self.family, under: key)
        let two = try SessionIdentity.sync(client: Self.a, server: Self.b).sealed(family: Self.family, under: key)
        let text = String(decoding: one, as: UTF8.self).uppercased()
        for id in [Self.family, Self.a, Self.b] {
            #expect(!text.contains(id) && !text.contains(id.replacingOccurrences(of: "-", with: "")))
        }
        let x = Hex.decode(String(decoding: one.dropFirst(4), as: UTF8.self))!, y = Hex.decode(String(decoding: two.dropFirst(4), as: UTF8.self))!
        let windows = Set((0...(x.count - 4)).map { Array(x[$0..<($0 + 4)]) })
        #expect((0...(y.count - 4)).allSatisfy { !windows.contains(Array(y[$0..<($0 + 4)])) })
    }

    @Test(arguments: [
        "", "FS4", "FS4 ", "FS2 S x", "FS4  " + String(repeating: "ab", count: 61), "FS4 " + String(repeating: "ab", count: 60),
        "FS4 " + String(repeating: "AB", count: 61), "FS4 " + String(repeating: "ab", count: 61) + " ", "FS4 " + String(repeating: "ag", count: 61),
        "fs4 " + String(repeating: "ab", count: 61), "FS4 " + String(repeating: "ab", count: 62),
    ])
    func malformedIdentitiesAreRejected(text: String) throws {
        guard case .malformed = try SessionIdentity.read(Array(text.utf8), keys: try TrialKeys([], family: Self.family, use: .identity)) else {
            Issue.record("'\(text)' was not malformed")
            return
        }
    }

    /// A version-3 identity is told apart, so its client can be told to update.
    @Test func aPreviousVersionIdentityIsToldApart() throws {
        for text in ["FS1 S \(Self.family) \(Self.a) \(Self.b) 0", "FS1 P \(Self.family) \(String(repeating: "ab", count: 16))"] {
            guard case .previousVersion = try SessionIdentity.read(Array(text.utf8), keys: try TrialKeys([], family: Self.family, use: .identity)) else {
                Issue.record("'\(text)' was not told as version 3")
                continue
            }
        }
    }

    /// What a key opens must be what that key may say: a sync identity under
    /// an offer's key, or a pairing one under a device key, opens to nothing.
    @Test func anIdentityOfTheWrongKindOpensToNothing() throws {
        let o = HeldKey(.offer(nonce: "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"), secret: SecretBytes("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567".utf8))
        let d = HeldKey(.device(member: Self.a), secret: try SecretBytes.random(count: 32))
        for (plaintext, key) in [(SessionIdentity.sync(client: Self.a, server: Self.b).plaintext, o), (SessionIdentity.pair.plaintext, d),
                                 ([0x50] + [UInt8](repeating: 1, count: 32), o)] {
            let k = try key.sealingKey(family: Self.family, for: .identity)
            let bytes = SessionIdentity.prefix + Array(Hex.encode(try AES256GCM.sealWithFreshNonce(plaintext, key: k, aad: SessionIdentity.prefix)).utf8)
            guard case .unrecognised = try SessionIdentity.read(bytes, keys: try TrialKeys([key], family: Self.family, use: .identity)) else {
                Issue.record("a \(plaintext[0]) identity opened under \(key.kind)")
                continue
            }
        }
    }

    /// A notice's hint names the device only to a holder of the family key,
    /// and only for the identity it answers (a hint cut from one notice fits no other).
    @Test func aHintOpensOnlyWithTheFamilyKeyForItsIdentity() throws {
        let fk = try SecretBytes.random(count: 32)
        let key = try IdentityHint.key(familyKey: fk, family: Self.family, epoch: 2)
        let identity = Array("FS4 identity".utf8)
        let hint = try IdentityHint.seal(device: Self.b, key: key, identity: identity)
        #expect(hint.utf8.count == RefusalMessage.hintHexDigits)
        #expect(try IdentityHint.open(hint, key: key, identity: identity) == Self.b)
        #expect(try IdentityHint.open(hint, key: key, identity: Array("FS4 another".utf8)) == nil)
        #expect(try IdentityHint.open(hint, key: try IdentityHint.key(familyKey: fk, family: Self.family, epoch: 3), identity: identity) == nil)
        #expect(try IdentityHint.seal(device: Self.b, key: key, identity: identity) != hint)
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
            (try HeldKey(.device(member: Self.a), secret: dk).sealingKey(family: Self.family, for: .identity).copiedBytes,
             Self.opensslHKDF(key: dkBytes, salt: "family-sync/4 identity", info: Self.joined(["device-key", Self.family, Self.a]), length: 32)),
            (try HeldKey(.family(epoch: 3), secret: fk).sealingKey(family: Self.family, for: .identity).copiedBytes,
             Self.opensslHKDF(key: fkBytes, salt: "family-sync/4 identity", info: Self.joined(["family-key", Self.family, "3"]), length: 32)),
            (try HeldKey(.offer(nonce: nonce), secret: SecretBytes(nonce.utf8)).sealingKey(family: Self.family, for: .identity).copiedBytes,
             Self.opensslHKDF(key: Array(nonce.utf8), salt: "family-sync/4 identity", info: Self.joined(["pair", Self.family]), length: 32)),
            (try IdentityHint.key(familyKey: fk, family: Self.family, epoch: 3).copiedBytes,
             Self.opensslHKDF(key: fkBytes, salt: "family-sync/4 identity", info: Self.joined(["hint", Self.family, "3"]), length: 32)),
            (try HeldKey(.family(epoch: 3), secret: fk).sealingKey(family: Self.family, for: .bundleHeader).copiedBytes,
             Self.opensslHKDF(key: fkBytes, salt: "family-sync/4 bundle-header", info: Self.joined(["family-key", Self.family, "3"]), length: 32)),
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
        // §3.3: the identity keys, and an identity and a hint sealed with the nonce 00 01 … 0b.
        let device = HeldKey(.device(member: a), secret: key)
        #expect(Hex.encode(try device.sealingKey(family: family, for: .identity).copiedBytes) == "8534a2adf209a87e202404042501de7b91b7303a46aa04d004a8810bba1445b3")
        #expect(Hex.encode(try HeldKey(.family(epoch: 3), secret: key).sealingKey(family: family, for: .identity).copiedBytes)
                == "0cef0092a32ed1fe75dfc882a76a44d422e1c15bbb907c740d765eae78508fc2")
        #expect(Hex.encode(try HeldKey(.offer(nonce: nonce), secret: SecretBytes(nonce.utf8)).sealingKey(family: family, for: .identity).copiedBytes)
                == "cea6b6cef495a63d9fc6e9ea521628c51beaac5aeff04ac5d76f87f0e8be0dbb")
        let hintKey = try IdentityHint.key(familyKey: key, family: family, epoch: 3)
        #expect(Hex.encode(hintKey.copiedBytes) == "60d4a09ff8152de1d93e7d954841bf2ffd1912fac961b55abcd5c8ba3e939efe")
        #expect(Hex.encode(try device.sealingKey(family: family, for: .bundleHeader).copiedBytes) == "5a4364bf60e5ea404228ee6a04c5ec76f9dfc10119a7198b7c7c2ba5ec698c1f")
        let nonce12 = (0..<12).map { UInt8($0) }
        let identity = "FS4 000102030405060708090a0bea3193300a09ade3a2077dad45d623b2f2d8ad3618733407b116711169060ab49bd372178626f3c3d315060a24c00ed425"
        let sealed = try SessionIdentity.sync(client: a, server: b).plaintext.withUnsafeBytes {
            try AES256GCM.seal($0, key: try device.sealingKey(family: family, for: .identity), nonce: nonce12, aad: SessionIdentity.prefix)
        }
        #expect("FS4 " + Hex.encode(nonce12 + sealed) == identity)
        guard case let .opened(id, _) = try SessionIdentity.read(Array(identity.utf8), keys: try TrialKeys([device], family: family, use: .identity)) else {
            Issue.record("the documented identity does not open")
            return
        }
        #expect(id == .sync(client: a, server: b))
        let hint = "000102030405060708090a0b90934bc5d3619f372f9b5b8fb01cc827e342b7e0b1c628725ee1e3c32f1d1858"
        #expect(try IdentityHint.open(hint, key: hintKey, identity: Array(identity.utf8)) == b)
    }
}
