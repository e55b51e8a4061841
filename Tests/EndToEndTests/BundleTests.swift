import Foundation
import Testing
import FamilySync

/// Bundles (docs/protocol.md §12b) through the tools: an owner and two
/// members exchange files only, parts applied out of order, duplicated,
/// cut off and changed; bundles for another device, from a revoked one, or
/// older than one applied; what a bundle shows to someone without the key;
/// and the README's USB-stick block as written.
@Suite(.serialized) struct BundleTests {
    /// An owner and two members, each joined over loopback TCP (the serve is stopped after), then apart.
    struct Family {
        let dir = TempDir()
        let owner: String, kid: String, gran: String
        init() throws {
            owner = dir.file("owner.db"); kid = dir.file("kid.db"); gran = dir.file("tablet.db")
            let first = try Household.owner(owner)
            let second = try Household.offer(owner)
            let server = try ServeProcess(db: owner, dir: dir)
            defer { server.stop() }
            for (db, offer, name) in [(kid, first, "Kid's phone"), (gran, second, "Grandma's tablet")] {
                let j = try Household.join(db, server: server, offer: offer, extra: ["--name", name])
                guard j.status == 0 else { throw HarnessError("join: \(j.err)") }
            }
        }
        func bundle(_ db: String, to peer: String, _ out: String, _ extra: [String] = []) throws -> ToolResult {
            try Tools.run("peer-sync", ["bundle", "--db", db, "--to", try Household.device(peer), "-o", dir.file(out)] + extra)
        }
        func unbundle(_ db: String, _ files: [String], _ extra: [String] = []) throws -> ToolResult {
            try Tools.run("peer-sync", ["unbundle", "--db", db] + extra + files.map { dir.file($0) })
        }
    }

    @Test func anOwnerAndTwoMembersConvergeByFilesAlone() throws {
        let f = try Family()
        // Photos of 1 MiB each, so a 4 MiB cap makes several parts.
        try Household.addRecords(f.owner, prefix: "o", count: 30, photos: (0..<12).map { Household.photo($0, size: 1 << 20) })
        try Household.addRecords(f.kid, prefix: "k", count: 9, photos: (20..<22).map { Household.photo($0) })
        try Household.addRecords(f.gran, prefix: "g", count: 4)

        let out = try f.bundle(f.owner, to: f.kid, "for-kid", ["--max-bytes", "4M"])
        #expect(out.status == 0, "\(out.err)")
        let parts = try #require(out.json?["parts"]?.arrayValue).compactMap(\.stringValue)
        #expect(parts.count >= 3, "\(out.out)")
        #expect(out.json?.int("records") == 30)
        #expect(out.json?.int("photos") == 12)
        #expect(out.json?.at("full")?.boolValue == false)
        // Each part is at most about the cap.
        for p in parts {
            let size = try #require(try FileManager.default.attributesOfItem(atPath: p)[.size] as? Int)
            #expect(size <= (4 << 20) + (1 << 20) + 4096, "\(p): \(size) bytes")
        }

        // The last part first: applied, but the cursor waits for the gap before it.
        let names = parts.map { String($0.dropFirst(f.dir.path.count + 1)) }
        let last = try f.unbundle(f.kid, [names.last!])
        #expect(last.status == 0, "\(last.err)")
        #expect(last.json?.int("cursor") == 0)
        // The rest in reverse; the cursor reaches the bundle's end with the last gap filled.
        let rest = try f.unbundle(f.kid, names.dropLast().reversed())
        #expect(rest.status == 0, "\(rest.err)")
        #expect(rest.lines.count == names.count - 1)
        #expect(rest.json?.int("cursor") == out.json?.int("upTo"))
        #expect(try Household.photoCount(f.kid) == 12 + 2)
        #expect(try Household.recordCount(f.kid) == 30 + 9)

        // A part again: refused, and nothing changes.
        let before = try Household.fingerprint(f.kid)
        let again = try f.unbundle(f.kid, [names[0]])
        #expect(again.status == 65)
        #expect(again.err.contains("was applied here already; nothing changed"), "\(again.err)")
        #expect(try Household.fingerprint(f.kid) == before)

        // The reply moves the owner on. It carries the kid's 9 and, once, the owner's 30 back
        // (their lines, not their photos: how a store restored from a copy gets its own edits back).
        let reply = try f.bundle(f.kid, to: f.owner, "for-owner")
        #expect(reply.status == 0, "\(reply.err)")
        #expect(reply.json?.int("records") == 39)
        #expect(reply.json?.int("photos") == 2)
        let home = try f.unbundle(f.owner, ["for-owner"])
        #expect(home.status == 0, "\(home.err)")
        #expect(home.json?.int("records", "applied") == 9)
        #expect(try Household.digest(f.owner) == Household.digest(f.kid))
        #expect(try Household.photoCount(f.owner) == 14)
        // The next bundle to the kid carries nothing of the owner's it holds: only the kid's 9, once, without their photos.
        let next = try f.bundle(f.owner, to: f.kid, "for-kid-2")
        #expect(next.status == 0, "\(next.err)")
        #expect(next.json?.int("records") == 9, "\(next.out)")
        #expect(next.json?.int("photos") == 0)
        #expect(try f.unbundle(f.kid, ["for-kid-2"]).json?.int("records", "applied") == 0)
        #expect(try f.bundle(f.kid, to: f.owner, "for-owner-2").json?.int("records") == 0)
        #expect(try f.unbundle(f.owner, ["for-owner-2"]).status == 0)
        let quiet = try f.bundle(f.owner, to: f.kid, "for-kid-3")
        #expect(quiet.json?.int("records") == 0, "\(quiet.out)")

        // Member to member, with the family key: grandma gets everything, and her reply reaches both.
        let toGran = try f.bundle(f.kid, to: f.gran, "kid-to-gran")
        #expect(toGran.status == 0, "\(toGran.err)")
        let atGran = try f.unbundle(f.gran, ["kid-to-gran"], ["--reply", f.dir.file("gran-to-kid")])
        #expect(atGran.status == 0, "\(atGran.err)")
        #expect(atGran.lines.count == 2)
        #expect(try f.unbundle(f.kid, ["gran-to-kid"]).status == 0)
        #expect(try Household.digest(f.gran) == Household.digest(f.kid))
        let granHome = try f.bundle(f.kid, to: f.owner, "kid-to-owner")
        #expect(granHome.status == 0)
        #expect(try f.unbundle(f.owner, ["kid-to-owner"]).status == 0)
        #expect(try Household.digest(f.owner) == Household.digest(f.gran))
        #expect(try Household.photoCount(f.gran) == 14)
    }

    @Test func aPartCutOffOrChangedChangesNothing() throws {
        let f = try Family()
        // An empty photo too: it travels as one empty PHOTO-DATA frame.
        try Household.addRecords(f.owner, prefix: "o", count: 20, photos: [Household.photo(1, size: 200_000), []])
        #expect(try f.bundle(f.owner, to: f.kid, "b").status == 0)
        let bytes = try Data(contentsOf: URL(fileURLWithPath: f.dir.file("b")))
        let before = try Household.fingerprint(f.kid)
        for (name, data) in [("cut", bytes.prefix(bytes.count - 100)), ("lastchunk", bytes.prefix(bytes.count - 1)),
                             ("changed", { var d = bytes; d[d.count / 2] ^= 1; return d }()), ("joined", bytes + Data([0, 0, 0, 0])),
                             ("empty", Data()), ("text", Data("family-sync bundle 2\nnot really".utf8)),
                             ("format1", Data("family-sync bundle 1\n\0\u{2}{}".utf8))] {
            try data.write(to: URL(fileURLWithPath: f.dir.file(name)))
            let r = try f.unbundle(f.kid, [name])
            #expect(r.status == 65, "\(name): \(r.status) \(r.err)")
            #expect(r.err.hasPrefix("peer-sync: \(f.dir.file(name)): "), "\(name): \(r.err)")
            #expect(r.out.isEmpty)
            #expect(try Household.fingerprint(f.kid) == before, "\(name)")
        }
        // A bit changed in the sealed header: no key opens it, so it is no part for this device (77), and nothing changes.
        var header = bytes
        header[header.startIndex + 21 + 100] ^= 2
        try header.write(to: URL(fileURLWithPath: f.dir.file("header")))
        let h = try f.unbundle(f.kid, ["header"])
        #expect(h.status == 77 && h.err.contains("no key it holds opens the part"), "\(h.status) \(h.err)")
        #expect(try Household.fingerprint(f.kid) == before)
        // Format 1 (protocol version 3) says which versions.
        let old = try f.unbundle(f.kid, ["format1"])
        #expect(old.err.contains("protocol version 3") && old.err.contains("protocol version \(SyncProtocol.version)"), "\(old.err)")
        // The whole one still applies, the empty photo with it.
        let whole = try f.unbundle(f.kid, ["b"])
        #expect(whole.status == 0, "\(whole.err)")
        #expect(whole.json?.int("photos", "kept") == 2)
    }

    @Test func aBundleForAnotherDeviceFromARevokedOneOrOlderIsRefused() throws {
        let f = try Family()
        try Household.addRecords(f.owner, prefix: "o", count: 5)
        #expect(try f.bundle(f.owner, to: f.kid, "for-kid").status == 0)
        // Grandma cannot open the kid's bundle, and says why.
        let other = try f.unbundle(f.gran, ["for-kid"])
        #expect(other.status == 77)
        #expect(other.err.contains("not for this device"), "\(other.err)")

        // Two bundles without a reply between: the second carries what the first does, so the first is stale after it.
        try Household.addRecords(f.owner, prefix: "o2", count: 3)
        let second = try f.bundle(f.owner, to: f.kid, "for-kid-2")
        #expect(second.json?.int("records") == 8)
        #expect(try f.unbundle(f.kid, ["for-kid-2"]).status == 0)
        let stale = try f.unbundle(f.kid, ["for-kid"])
        #expect(stale.status == 65)
        #expect(stale.err.contains("older than bundle 2"), "\(stale.err)")
        #expect(try Household.recordCount(f.kid) == 8)

        // A revoked member's bundle is refused by the owner.
        #expect(try f.bundle(f.gran, to: f.owner, "from-gran").status == 0)
        #expect(try Tools.run("peer-sync", ["revoke", "--db", f.owner, try Household.device(f.gran)]).status == 0)
        let revoked = try f.unbundle(f.owner, ["from-gran"])
        #expect(revoked.status == 77)
        #expect(revoked.err.contains("revoked at"), "\(revoked.err)")
        // And nobody writes one for a revoked device.
        let toRevoked = try f.bundle(f.owner, to: f.gran, "to-gran")
        #expect(toRevoked.status == 64, "\(toRevoked.err)")
    }

    @Test func aBundleShowsNothingOfTheFamilyInClear() throws {
        let f = try Family()
        try Household.addRecords(f.owner, prefix: "secret-receipt", count: 5)
        #expect(try f.bundle(f.owner, to: f.kid, "b").status == 0)
        let bytes = try Data(contentsOf: URL(fileURLWithPath: f.dir.file("b")))
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(!text.contains("secret-receipt"))
        #expect(!text.contains("receipt"))
        let attrs = try FileManager.default.attributesOfItem(atPath: f.dir.file("b"))
        #expect((attrs[.posixPermissions] as? Int) == 0o600)
        let owner = try Store(path: f.owner)
        let key = try #require(try owner.familySecret()).copiedBytes
        #expect(bytes.range(of: Data(key)) == nil)
        #expect(!text.contains(Hex.encode(key)))
        // §12b: no family or device ID either, in any form, and two bundles of one writer for one
        // reader share nothing past the magic line (their headers least of all).
        #expect(try f.bundle(f.owner, to: f.kid, "b2").status == 0)
        let again = try Data(contentsOf: URL(fileURLWithPath: f.dir.file("b2")))
        for id in [try #require(try owner.family()).id, try Household.device(f.owner), try Household.device(f.kid), try Household.device(f.gran)] {
            for file in [bytes, again] { #expect(!InClear.holds(file, id), "\(id)") }
        }
        let m = "family-sync bundle 2\n".utf8.count
        #expect(InClear.sharedRun(Array(bytes[m..<(m + 540)]), Array(again[m..<(m + 540)])) == nil)
    }

    /// A member's store put back from its backup (`merge-records --backup`) after a file of its
    /// records reached the owner, then as many new records as that file carried: their change
    /// numbers are the lost ones', which the owner acknowledges. The member's next file carries
    /// everything, so the new records reach the owner by files alone (docs/protocol.md §12b "Writes").
    @Test func aMemberPutBackFromItsBackupSendsItsNewRecordsByFilesAlone() throws {
        let f = try Family()
        func carry(_ from: String, _ to: String, _ name: String) throws -> (out: ToolResult, in: ToolResult) {
            let out = try f.bundle(from, to: to, name)
            #expect(out.status == 0, "\(out.err)")
            let applied = try f.unbundle(to, [name])
            #expect(applied.status == 0, "\(applied.err)")
            return (out, applied)
        }
        try Household.addRecords(f.kid, prefix: "before", count: 2)
        _ = try carry(f.kid, f.owner, "k1")
        _ = try carry(f.owner, f.kid, "o1")
        let copy = f.dir.file("kid-backup.db")
        let bk = try Tools.run("merge-records", ["--db", f.kid, "--backup", copy])
        #expect(bk.status == 0, "\(bk.err)")
        try Household.addRecords(f.kid, prefix: "lost", count: 3)
        _ = try carry(f.kid, f.owner, "k2")
        try Household.restore(f.kid, from: copy)
        try Household.addRecords(f.kid, prefix: "new", count: 3)
        let back = try carry(f.owner, f.kid, "o2")
        #expect(back.in.err.contains("acknowledges a bundle this store has no record of writing"), "the kid says why it sends everything: \(back.in.err)")
        let again = try carry(f.kid, f.owner, "k3")
        #expect(again.out.json?.at("full")?.boolValue == true, "\(again.out.out)")
        for i in 0..<3 { #expect(try Star.has(f.owner, "new-\(i)"), "new-\(i) reached the owner by files") }
        _ = try carry(f.owner, f.kid, "o3")
        #expect(try Household.digest(f.owner) == Household.digest(f.kid))
    }

    /// The README's USB-stick block, as written, in a folder with the three stores.
    @Test func theReadmesUSBStickBlockRunsAsWritten() throws {
        let block = try AwayFromHomeTests.readmeBlock("away-usb")
        let f = try Family()
        try FileManager.default.createDirectory(atPath: f.dir.file("usb"), withIntermediateDirectories: true)
        try Household.addRecords(f.owner, prefix: "home", count: 6)
        try Household.addRecords(f.gran, prefix: "away", count: 3)
        let script = "set -e\nexport PATH=\(Tools.binDir):$PATH\ncd \(f.dir.path)\n" + block.joined(separator: "\n") + "\n"
        let r = try Tools.run("/bin/sh", ["-c", script])
        #expect(r.status == 0, "\(r.err)")
        #expect(try Household.digest(f.owner) == Household.digest(f.gran))
        #expect(try Household.recordCount(f.owner) == 9)
    }
}
