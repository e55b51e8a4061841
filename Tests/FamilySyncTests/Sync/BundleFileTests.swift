import Foundation
import Testing
@testable import FamilySync

/// The pieces of a bundle (docs/protocol.md §12b) on their own: AES-256-GCM
/// against published vectors, a part sealed and opened, a part that fails
/// closed, and the ledger's gap-free cursor.
@Suite struct BundleFileTests {
    /// Test cases 13 and 14 of McGrew and Viega, "The Galois/Counter Mode of
    /// Operation (GCM)" (the submission to NIST, 2005): a zero 256-bit key and
    /// a zero 96-bit nonce, with an empty plaintext and with 16 zero bytes.
    @Test func aesGCMMatchesThePublishedVectors() throws {
        let key = SecretBytes([UInt8](repeating: 0, count: 32))
        let nonce = [UInt8](repeating: 0, count: 12)
        let empty = try [UInt8]().withUnsafeBytes { try AES256GCM.seal($0, key: key, nonce: nonce, aad: []) }
        #expect(Hex.encode(empty) == "530f8afbc74536b9a963b4f1c4cb738b")
        let zeros = try [UInt8](repeating: 0, count: 16).withUnsafeBytes { try AES256GCM.seal($0, key: key, nonce: nonce, aad: []) }
        #expect(Hex.encode(zeros) == "cea7403d4d606b6e074ec5d3baf39d18" + "d0d1c8a799996bf0265b98b5d48ab919")
        let opened = try zeros.withUnsafeBytes { try AES256GCM.open($0, key: key, nonce: nonce, aad: []) }
        #expect(opened == [UInt8](repeating: 0, count: 16))
        // One bit anywhere, or other additional data, and it does not open.
        for i in 0..<zeros.count {
            var bad = zeros
            bad[i] ^= 1
            #expect(try bad.withUnsafeBytes { try AES256GCM.open($0, key: key, nonce: nonce, aad: []) } == nil)
        }
        #expect(try zeros.withUnsafeBytes { try AES256GCM.open($0, key: key, nonce: nonce, aad: [1]) } == nil)
    }

    static func header(id: String = String(repeating: "ab", count: 16)) -> BundleHeader {
        BundleHeader(family: "11111111-2222-4333-8444-555555555555", from: "AAAAAAAA-AAAA-4AAA-8AAA-AAAAAAAAAAAA",
                     to: "BBBBBBBB-BBBB-4BBB-8BBB-BBBBBBBBBBBB", key: .device, epoch: 0, id: id, write: 1, part: 1)
    }

    static let family = "11111111-2222-4333-8444-555555555555"
    static func keys(_ held: [HeldKey]) throws -> TrialKeys { try TrialKeys(held, family: Self.family, use: .bundleHeader) }

    @Test func aPartOpensChunkByChunkAndOnlyWithItsKey() throws {
        let dir = TempFolder()
        let path = dir.path + "/part"
        // The header names the member's (B's) device key: A is the owner.
        let held = HeldKey(.device(member: "BBBBBBBB-BBBB-4BBB-8BBB-BBBBBBBBBBBB"), secret: SecretBytes((0..<32).map { UInt8($0) }))
        #expect(Self.header().heldKind(owner: "AAAAAAAA-AAAA-4AAA-8AAA-AAAAAAAAAAAA") == held.kind)
        let sealer = try BundleSealer(path: path, header: Self.header(), held: held)
        // Three chunks' worth, so chunk numbering and the last flag matter.
        let big = [UInt8](repeating: 7, count: Frame.maxPayloadBytes)
        try sealer.append(.records, big)
        try sealer.append(.photoData, Array(big.prefix(BundleLimits.chunkBytes / 2)))
        try sealer.finish()
        var st = stat()
        #expect(stat(path, &st) == 0 && st.st_mode & 0o777 == 0o600)

        // Another secret opens nothing (not even the header), and says the part is not for this device.
        let other = HeldKey(.device(member: "BBBBBBBB-BBBB-4BBB-8BBB-BBBBBBBBBBBB"), secret: SecretBytes([UInt8](repeating: 1, count: 32)))
        #expect { _ = try BundleOpener(path: path, keys: try Self.keys([other])) } throws: { ($0 as? BundleError)?.kind == .notForUs }
        let opener = try BundleOpener(path: path, keys: try Self.keys([other, held]))
        #expect(opener.header == Self.header() && opener.held.kind == held.kind)
        var plain: [UInt8] = []
        var chunks = 0
        while let c = try opener.nextChunk() { plain += c; chunks += 1 }
        #expect(chunks == 3)
        #expect(plain.count == 2 * Frame.headerBytes + big.count + BundleLimits.chunkBytes / 2)

        // The last chunk dropped: refused, never a shorter part.
        let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        let cut = dir.path + "/cut"
        try bytes.prefix(bytes.count - 20).write(to: URL(fileURLWithPath: cut))
        let o = try BundleOpener(path: cut, keys: try Self.keys([held]))
        #expect(throws: BundleError.self) { while try o.nextChunk() != nil {} }
    }

    /// §12b: in clear a part is the magic line and bytes no one without the
    /// key can read: no family or device ID, and the headers of two parts of
    /// the same writer, reader and bundle share nothing.
    @Test func aPartNamesNobodyInClear() throws {
        let dir = TempFolder()
        let held = HeldKey(.device(member: "BBBBBBBB-BBBB-4BBB-8BBB-BBBBBBBBBBBB"), secret: try SecretBytes.random(count: 32))
        var files: [[UInt8]] = []
        for n in 1...2 {
            // As the writer makes them: each part has an id of its own.
            let sealer = try BundleSealer(path: dir.path + "/p\(n)", header: Self.header(id: Hex.encode(try secureRandomBytes(16))), held: held)
            try sealer.append(.records, Array("{}\n".utf8))
            try sealer.finish()
            files.append(Array(try Data(contentsOf: URL(fileURLWithPath: dir.path + "/p\(n)"))))
        }
        for f in files {
            let text = String(decoding: f, as: UTF8.self).uppercased()
            for id in [Self.family, "AAAAAAAA-AAAA-4AAA-8AAA-AAAAAAAAAAAA", "BBBBBBBB-BBBB-4BBB-8BBB-BBBBBBBBBBBB"] {
                #expect(!text.contains(id) && !text.contains(id.replacingOccurrences(of: "-", with: "")))
                #expect(!Hex.encode(f).contains(id.replacingOccurrences(of: "-", with: "").lowercased()))
            }
            #expect(f.starts(with: BundleHeader.magic))
        }
        // Their sealed headers: past them, each chunk's length is in clear (a part's size is no secret).
        let m = BundleHeader.magic.count, end = m + BundleHeader.sealedBytes
        let x = Array(files[0][m..<end]), y = Array(files[1][m..<end])
        let windows = Set((0...(x.count - 4)).map { Array(x[$0..<($0 + 4)]) })
        #expect((0...(y.count - 4)).allSatisfy { !windows.contains(Array(y[$0..<($0 + 4)])) })
    }

    @Test func aHeaderThatIsNotOneIsRefused() throws {
        let dir = TempFolder()
        let held = HeldKey(.family(epoch: 0), secret: try SecretBytes.random(count: 32))
        let key = try held.sealingKey(family: Self.family, for: .bundleHeader)
        func sealed(_ json: String) throws -> [UInt8] {
            let padded = Array(json.utf8) + [UInt8](repeating: 0x20, count: BundleLimits.headerBytes - json.utf8.count)
            return BundleHeader.magic + (try AES256GCM.sealWithFreshNonce(padded, key: key, aad: BundleHeader.magic))
        }
        for (name, bytes) in [("empty", []), ("magic", Array("family-sync bundle 3\n\0\u{2}{}".utf8)), ("cut", Array("family-sync bundle 2\n\0\u{5}nope!".utf8)),
                              ("json", try sealed("nope!")), ("fields", try sealed("{}"))] {
            let p = dir.path + "/" + name
            try Data(bytes).write(to: URL(fileURLWithPath: p))
            #expect(throws: BundleError.self, "\(name)") { _ = try BundleOpener(path: p, keys: try Self.keys([held])) }
        }
        // A part of format 1 (protocol version 3) says so, naming both versions.
        let old = dir.path + "/old"
        try Data("family-sync bundle 1\n\0\u{2}{}".utf8).write(to: URL(fileURLWithPath: old))
        #expect { _ = try BundleOpener(path: old, keys: try Self.keys([held])) } throws: {
            "\($0)".contains("protocol version 3") && "\($0)".contains("protocol version \(SyncProtocol.version)")
        }
    }

    @Test func theCursorMovesOnlyWhereAppliedRangesMeet() throws {
        let dir = TempFolder()
        let store = try Store(path: dir.path + "/s.db")
        let peer = "AAAAAAAA-AAAA-4AAA-8AAA-AAAAAAAAAAAA"
        var state = try store.bundlePeer(peer)
        // (20, 30] and (10, 20] arrive before (0, 10]; the cursor waits, then jumps to 30.
        for (i, r) in [(20, 30), (10, 20), (40, 50), (0, 10)].enumerated() {
            try store.write { try store.recordBundlePartInTransaction("id\(i)", peer: peer, after: Int64(r.0), upTo: Int64(r.1), state: &state, now: Timestamp(milliseconds: 0)) }
            #expect(state.recv == (i < 3 ? 0 : 30), "after range \(r)")
        }
        #expect(try store.bundlePeer(peer).recv == 30)
        #expect(try store.bundlePartApplied("id1"))
        #expect(try !store.bundlePartApplied("id9"))
        // (30, 40] fills the last gap.
        try store.write { try store.recordBundlePartInTransaction("id5", peer: peer, after: 30, upTo: 40, state: &state, now: Timestamp(milliseconds: 0)) }
        #expect(state.recv == 50)
    }
}
