import Foundation
import Testing
import FamilySync

/// State changes only when asked, and never without a word: a check with
/// --bundle-id leaves the store's settings alone, --save says what it
/// changed, a store that is made is named on stderr, and an offer that no
/// device could redeem (a full family) is refused with how to make room.
@Suite struct NoSilentChangeTests {
    let pki = OpenSSLPKI.shared
    var now: Timestamp { pki.madeAt.adding(.days(1)) }

    /// Invariant: jws-verify without --save never changes the store.
    @Test func aCheckWithAnotherBundleIDChangesNothing() throws {
        let d = TempDir()
        let db = d.file("o.db")
        let t = try pki.token(payload: pki.transaction().json)
        let save = try Tools.run("jws-verify", ["--db", db, "--save", "--root", pki.rootPEM, "--bundle-id", "com.example.family", "--now", now.rfc3339], input: t)
        #expect(save.status == 0, "\(save.err)")
        #expect(save.err.contains("created a new store at \(db)"), "\(save.err)")
        #expect(save.err.contains("bundle_id: unset → com.example.family"), "\(save.err)")
        let before = try Household.fingerprint(db)

        // The typo: a check against another bundle. It judges by what was given, for this run only.
        let typo = try Tools.run("jws-verify", ["--db", db, "--bundle-id", "com.example.other", "--now", now.rfc3339])
        #expect(typo.status == 1)
        #expect(typo.err.contains("the store's are unchanged"), "\(typo.err)")
        #expect(try Household.fingerprint(db) == before)
        // The next launch still reads the store's own settings: premium.
        let launch = try Tools.run("jws-verify", ["--db", db, "--now", now.rfc3339])
        #expect(launch.status == 0, "\(launch.out) \(launch.err)")
        #expect(launch.err.isEmpty, "\(launch.err)")
        // Saving again with the same settings says nothing about them.
        let same = try Tools.run("jws-verify", ["--db", db, "--save", "--bundle-id", "com.example.family", "--now", now.rfc3339], input: t)
        #expect(same.status == 0 && same.err.isEmpty, "\(same.err)")
    }

    /// --save with other settings names each one that changed, old → new.
    @Test func saveSaysWhatChanged() throws {
        let d = TempDir()
        let db = d.file("o.db")
        let t = try pki.token(payload: pki.transaction().json)
        #expect(try Tools.run("jws-verify", ["--db", db, "--save", "--root", pki.rootPEM, "--bundle-id", "com.example.family", "--now", now.rfc3339], input: t).status == 0)
        let other = try pki.token(payload: pki.transaction(bundle: "com.example.other").json)
        let r = try Tools.run("jws-verify", ["--db", db, "--save", "--bundle-id", "com.example.other", "--product", "family.monthly", "--allow-sandbox",
                                             "--now", now.rfc3339], input: other)
        #expect(r.status == 0, "\(r.err)")
        let lines = r.err.split(separator: "\n").map(String.init)
        #expect(lines == ["jws-verify: bundle_id: com.example.family → com.example.other",
                          "jws-verify: products: any product → family.monthly",
                          "jws-verify: allow_sandbox: false → true"], "\(r.err)")
        let policy = try Store(path: db, create: false).proofPolicy()
        #expect(policy == ProofPolicy(bundleID: "com.example.other", products: ["family.monthly"], allowSandbox: true))
    }

    /// Every command that makes a store says so, once; on an existing store, nothing.
    @Test(arguments: [
        ("merge-records", ["--stamp"], "{\"id\":\"a\",\"type\":\"note\",\"data\":{}}\n"),
        ("merge-records", [], ""),
        ("pair-qr", ["--addr", "127.0.0.1:7433", "--format", "text"], ""),
    ])
    func aNewStoreIsNamed(tool: String, args: [String], input: String) throws {
        let d = TempDir()
        let db = d.file("typo.db")
        let first = try Tools.run(tool, ["--db", db] + args, input: input)
        #expect(first.status == 0, "\(first.err)")
        let said = first.err.split(separator: "\n").filter { $0.contains("created a new store") }
        #expect(said == ["\(tool): created a new store at \(db)"], "\(first.err)")
        let again = try Tools.run(tool, ["--db", db] + args, input: input)
        #expect(again.status == 0 && !again.err.contains("created a new store"), "\(again.err)")
    }

    /// A join names the store it made only once the admission is in it; a refused one made none.
    @Test func aJoinNamesItsNewStore() throws {
        let dir = TempDir()
        let owner = dir.file("owner.db"), kid = dir.file("kid.db")
        let offer = try Household.owner(owner)
        let server = try ServeProcess(db: owner, dir: dir)
        defer { server.stop() }
        let j = try Household.join(kid, server: server, offer: offer)
        #expect(j.status == 0, "\(j.err)")
        #expect(j.err.contains("peer-sync: created a new store at \(kid)"), "\(j.err)")
        let again = try Household.join(kid, server: server, offer: offer)
        #expect(!again.err.contains("created a new store"), "\(again.err)")
    }

    /// discover only reads: a mistyped store is 66 and leaves nothing behind.
    @Test func discoverCreatesNoStore() throws {
        let d = TempDir()
        let db = d.file("typo.db")
        let r = try Tools.run("peer-sync", ["discover", "--db", db, "--timeout", "10ms"])
        #expect(r.status == 66 && r.err.contains("no store at \(db)"), "\(r.status) \(r.err)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: d.path).isEmpty)
    }

    /// The man pages say which commands make a store; only those.
    @Test func manPagesSayWhichCommandsCreateAStore() throws {
        let r = try Tools.run("peer-sync", ["--generate-manpage"])
        #expect(r.status == 0)
        let creating = r.out.components(separatedBy: "A missing one is created").count - 1
        #expect(creating == 1, "only join creates a store")
        #expect(!r.out.contains("Created on first use"))
    }

    /// Invariant: pair-qr draws no offer that no device could redeem. A full
    /// family is refused (77) with how to make room; revoking one makes room.
    @Test func aFullFamilyGetsNoOffer() throws {
        let dir = TempDir()
        let owner = dir.file("owner.db"), kid = dir.file("kid.db")
        let offer = try Household.owner(owner, maxDevices: 2)
        let server = try ServeProcess(db: owner, dir: dir)
        defer { server.stop() }
        #expect(try Household.join(kid, server: server, offer: offer).status == 0)
        let before = try Store(path: owner).openOffers(now: Timestamp.current()).count

        let full = try Tools.run("pair-qr", ["--db", owner, "--addr", "127.0.0.1:7433", "--format", "text"])
        #expect(full.status == 77, "\(full.err)")
        #expect(full.err.contains("the family is full (2 of 2 devices)"), "\(full.err)")
        #expect(full.err.contains("peer-sync revoke --db \(owner) DEVICE"), "\(full.err)")
        #expect(full.out.isEmpty)
        #expect(try Store(path: owner).openOffers(now: Timestamp.current()).count == before)

        let kidID = try Household.device(kid)
        #expect(try Tools.run("peer-sync", ["revoke", "--db", owner, kidID]).status == 0)
        let room = try Tools.run("pair-qr", ["--db", owner, "--addr", "127.0.0.1:7433", "--format", "text"])
        #expect(room.status == 0, "\(room.err)")
    }
}
