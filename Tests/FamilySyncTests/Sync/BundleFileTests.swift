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
        let write = Store.BundleWrite(token: try RandomName.make(), number: 1, clock: 0, base: 0)
        // (20, 30] and (10, 20] arrive before (0, 10]; the cursor waits, then jumps to 30.
        for (i, r) in [(20, 30), (10, 20), (40, 50), (0, 10)].enumerated() {
            try store.write {
                try store.recordBundlePartInTransaction("id\(i)", peer: peer, after: Int64(r.0), upTo: Int64(r.1), write: write, state: &state, now: Timestamp(milliseconds: 0))
            }
            #expect(state.recv == (i < 3 ? 0 : 30), "after range \(r)")
        }
        #expect(try store.bundlePeer(peer).recv == 30)
        #expect(try store.bundlePartApplied("id1"))
        #expect(try !store.bundlePartApplied("id9"))
        // (30, 40] fills the last gap.
        try store.write { try store.recordBundlePartInTransaction("id5", peer: peer, after: 30, upTo: 40, write: write, state: &state, now: Timestamp(milliseconds: 0)) }
        #expect(state.recv == 50)
    }

    /// Only the newest write's ranges count, from its base up (docs/protocol.md §12b): what
    /// other writes brought above it may be changes of a history its writer no longer holds.
    @Test func aNewerWriteCountsFromItsBaseAndAnOlderOneCountsNothing() throws {
        let dir = TempFolder()
        let store = try Store(path: dir.path + "/s.db")
        let peer = "AAAAAAAA-AAAA-4AAA-8AAA-AAAAAAAAAAAA"
        var state = try store.bundlePeer(peer)
        func apply(_ id: String, _ after: Int64, _ upTo: Int64, _ w: Store.BundleWrite) throws {
            try store.write { try store.recordBundlePartInTransaction(id, peer: peer, after: after, upTo: upTo, write: w, state: &state, now: Timestamp(milliseconds: 0)) }
        }
        let first = Store.BundleWrite(token: try RandomName.make(), number: 1, clock: 100, base: 0)
        try apply("a", 0, 10, first)
        try apply("b", 20, 30, first)
        #expect(state.recv == 10)
        // A writer put back from a copy at its change 5 writes again, numbered as before but later:
        // its (12, 30] does not meet what the first write brought, and the first write's (20, 30] is gone.
        let again = Store.BundleWrite(token: try RandomName.make(), number: 1, clock: 200, base: 5)
        try apply("c", 12, 30, again)
        #expect(state.recv == 5 && state.newest == again)
        // A late part of the first write counts nothing now; the second write's (5, 12] closes its gap.
        try apply("d", 10, 20, first)
        #expect(state.recv == 5 && state.newest == again)
        try apply("e", 5, 12, again)
        #expect(state.recv == 30)
        #expect(try store.bundlePeer(peer).newest == again)
    }

    /// The head's write names (revision 6): checked before anything is kept, each error naming its field.
    @Test func aHeadsWriteNamesAreChecked() throws {
        let token = String(repeating: "0f", count: 16)
        func head(_ extra: String) throws -> BundleHead {
            let text = #"{"protocol":\#(SyncProtocol.version),"device":"AAAAAAAA-AAAA-4AAA-8AAA-AAAAAAAAAAAA","role":"member","clock":"2026-03-01T00:00:00.000Z","epoch":1,"ack":0,"applied":0,"changes":7,"wants":[]"# + extra + "}"
            return try BundleHead(Frame(.hello, Array(text.utf8)))
        }
        #expect(try head("").token == nil)
        let named = try head(#","token":"\#(token)","base":7,"ackToken":"\#(token)""#)
        #expect(named.token == token && named.base == 7 && named.ackToken == token)
        #expect(try head(#","ackToken":null"#).ackToken == nil)
        for (extra, field) in [(#","token":"\#(token.uppercased())","base":0"#, "token"), (#","token":"\#(token)""#, "base"),
                               (#","token":"\#(token)","base":8"#, "base"), (#","token":"\#(token)","base":-1"#, "base"),
                               (#","ackToken":"abc""#, "ackToken")] {
            #expect { _ = try head(extra) } throws: { ($0 as? ProtocolError)?.message.contains("field '\(field)'") == true }
        }
    }

    /// Schema 11 (after 10, which moves photo bytes): a store of schema 9 keeps its bundle state, knows no write
    /// names yet, and remembers as owner copies the copies it owed.
    @Test func aSchema9StoreMigratesItsBundleLedger() throws {
        let dir = TempFolder()
        let p = dir.path + "/old.db"
        let peer = "AAAAAAAA-AAAA-4AAA-8AAA-AAAAAAAAAAAA"
        let copy = #"{"id":"r","type":"note","modifiedAt":"2026-03-01T00:00:00.000Z","deviceId":"\#(peer)","deleted":false}"#
        do {
            let db = try Database(path: p)
            try db.execute("PRAGMA journal_mode = WAL")
            for i in 0..<9 { try db.execute(Schema.migrations[i]) }
            try db.run("INSERT INTO meta (key, value) VALUES ('device_id', ?), ('created_at', ?), ('change_seq', '0')",
                       [.text("BBBBBBBB-BBBB-4BBB-8BBB-BBBBBBBBBBBB"), .text("2026-03-01T00:00:00.000Z")])
            try db.run("INSERT INTO bundle_peers (peer, recv, sent, written, applied) VALUES (?, 7, 5, 3, 2)", [.text(peer)])
            try db.run("INSERT INTO bundle_returns (peer, rid, line, seq, theirs) VALUES (?, 1, ?, 4, 1772409600123)", [.text(peer), .text(copy)])
            try db.execute("PRAGMA application_id = \(Schema.applicationID); PRAGMA user_version = 9")
            try db.close()
        }
        let s = try Store(path: p)
        #expect(try s.db.scalarInt("PRAGMA user_version") == Int64(Schema.currentVersion))
        let state = try s.bundlePeer(peer)
        #expect(state.recv == 7 && state.sent == 5 && state.written == 3 && state.applied == 2 && state.newest == nil)
        #expect(try s.db.scalarText("SELECT line FROM copies_made WHERE rid = 1 AND theirs = 1772409600123") == copy)
        try s.write { try s.rememberBundleWriteInTransaction(peer: peer, token: String(repeating: "a", count: 32), number: 4) }
        #expect(try s.bundleWriteNumber(peer: peer, token: String(repeating: "a", count: 32)) == 4)
    }

    /// A writer remembers its newest writes to a reader, and forgets those before the one an acknowledgement names.
    @Test func aWriterRemembersItsNewestWrites() throws {
        let dir = TempFolder()
        let s = try Store(path: dir.path + "/s.db")
        let peer = "AAAAAAAA-AAAA-4AAA-8AAA-AAAAAAAAAAAA"
        let tokens = try (1...70).map { _ in try RandomName.make() }
        try s.write { for (i, t) in tokens.enumerated() { try s.rememberBundleWriteInTransaction(peer: peer, token: t, number: Int64(i + 1)) } }
        let known = try tokens.map { try s.bundleWriteNumber(peer: peer, token: $0) }
        #expect(known == (1...70).map { $0 > 70 - Store.rememberedBundleWrites ? Int64($0) : nil })
        try s.write { try s.forgetBundleWritesInTransaction(peer: peer, before: 68) }
        #expect(try tokens.compactMap { try s.bundleWriteNumber(peer: peer, token: $0) } == [68, 69, 70])
        #expect(try s.bundleWriteNumber(peer: "CCCCCCCC-CCCC-4CCC-8CCC-CCCCCCCCCCCC", token: tokens[69]) == nil)
    }
}
