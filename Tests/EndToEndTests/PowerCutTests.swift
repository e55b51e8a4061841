import Foundation
import Testing
import FamilySync

/// What a tool reported done survives a power cut. Each store lives on the
/// power-cut file system (`PowerCutDisk`: writes in memory until fsync, the
/// rest dropped at the cut), under the household's real tools: a command
/// exits 0, the power goes, the disk comes back with what was synced, and
/// what the command reported is there. Then cuts at the k-th fsync and k-th
/// write of a store and its log during a sync session with photo waves, on
/// either side: both stores stay sound and the next sync brings both to the
/// union. Skipped, with the reason, where FUSE is missing.
@Suite(.serialized, .disabled(if: PowerCutDisk.unavailableReason != nil, Comment(rawValue: PowerCutDisk.unavailableReason ?? "")))
struct PowerCutTests {
    /// An owner's store on `disk`, made by pair-qr, with one open offer (its text).
    static func owner(_ disk: PowerCutDisk, dir: TempDir) throws -> String {
        let r = try Tools.run("pair-qr", ["--db", disk.store, "--format", "text", "-o", dir.file("pair.txt")])
        guard r.status == 0, let qr = r.json?["qr"]?.stringValue else { throw HarnessError("pair-qr: \(r.err)") }
        return qr
    }

    static func stamp(_ store: String, prefix: String, count: Int) throws -> ToolResult {
        let lines = (0..<count).map { "{\"id\":\"\(prefix)-\($0)\",\"type\":\"receipt\",\"data\":{\"n\":\($0)}}" }
        return try Tools.run("merge-records", ["--db", store, "--stamp"], input: lines.joined(separator: "\n") + "\n")
    }

    /// The store's record ids, after `PRAGMA integrity_check` said ok.
    static func soundIDs(_ store: String) throws -> Set<String> {
        let s = try Store(path: store, create: false)
        #expect(try s.integrityCheck() == "ok", "\(store)")
        let st = try s.db.prepare("SELECT id FROM records")
        defer { st.reset() }
        var out: Set<String> = []
        while try st.step() { out.insert(st.text(0)) }
        return out
    }

    static func ids(_ prefix: String, _ count: Int) -> Set<String> { Set((0..<count).map { "\(prefix)-\($0)" }) }

    // MARK: What a command reported done is there after the cut

    @Test func stampsAndPhotosBesideARunningServeSurviveACut() throws {
        let dir = TempDir()
        let disk = try PowerCutDisk(dir: dir, name: "owner")
        _ = try Self.owner(disk, dir: dir)
        let serve = try ServeProcess(db: disk.store, dir: dir)
        let s = try Self.stamp(disk.store, prefix: "r", count: 52)
        #expect(s.status == 0, "\(s.err)")
        var hashes: [String] = []
        for i in 0..<2 {
            let photo = dir.file("photo\(i).jpg")
            _ = FileManager.default.createFile(atPath: photo, contents: Data(Household.photo(7000 + i)))
            let a = try Tools.run("merge-records", ["--db", disk.store, "--add-photo", photo])
            #expect(a.status == 0, "\(a.err)")
            hashes.append(a.json?["sha256"]?.stringValue ?? "")
        }
        kill(serve.pid, SIGKILL)
        _ = serve.waitForExit()
        disk.cut()
        try disk.mount()
        #expect(try Self.soundIDs(disk.store) == Self.ids("r", 52))
        let store = try Store(path: disk.store, create: false)
        for (i, h) in hashes.enumerated() { #expect(try store.photo(h) == Household.photo(7000 + i), "photo \(h) lost") }
    }

    @Test func stampsWhileConnectHoldsTheStoreSurviveACut() throws {
        let dir = TempDir()
        let disk = try PowerCutDisk(dir: dir, name: "kid")
        let owner = dir.file("owner.db")
        let offer = try Household.owner(owner)
        let join = try ServeProcess(db: owner, dir: dir, name: "serve-join")
        #expect(try Household.join(disk.store, server: join, offer: offer).status == 0)
        join.stop()
        // An owner that never answers for its photos: connect waits in the wave, holding the store.
        try Household.addRecords(owner, prefix: "o", count: 3, photos: (0..<3).map { Household.photo(8000 + $0) })
        let serve = try ServeProcess(db: owner, dir: dir, name: "serve-silent", extra: ["--fault-inject-skip-photo-replies"])
        defer { serve.stop() }
        let events = dir.file("connect.events")
        let connect = try BackgroundRun("peer-sync", ["connect", "--db", disk.store, "--wave-timeout", "60s", "--events", events, serve.address],
                                        dir: dir, name: "connect")
        try HouseholdNetworkTests.waitFor("connect to wait for photos") {
            (try? String(contentsOfFile: events, encoding: .utf8))?.contains("\"phase\":\"photos\"") == true
        }
        let s = try Self.stamp(disk.store, prefix: "k", count: 30)
        #expect(s.status == 0, "\(s.err)")
        #expect(connect.process.isRunning, "connect held the store throughout")
        kill(connect.pid, SIGKILL)
        disk.cut()
        try disk.mount()
        #expect(try Self.soundIDs(disk.store).isSuperset(of: Self.ids("k", 30)), "the stamps made while connect held the store")
    }

    @Test func anOfferPairQRPrintedBesideServeSurvivesACut() throws {
        let dir = TempDir()
        let disk = try PowerCutDisk(dir: dir, name: "owner")
        _ = try Self.owner(disk, dir: dir)
        let first = try ServeProcess(db: disk.store, dir: dir, name: "serve1")
        let r = try Tools.run("pair-qr", ["--db", disk.store, "--format", "text", "-o", dir.file("pair2.txt")])
        #expect(r.status == 0, "\(r.err)")
        let offer = try #require(r.json?["qr"]?.stringValue)
        kill(first.pid, SIGKILL)
        _ = first.waitForExit()
        disk.cut()
        try disk.mount()
        let serve = try ServeProcess(db: disk.store, dir: dir, name: "serve2")
        defer { serve.stop() }
        let j = try Household.join(dir.file("kid.db"), server: serve, offer: offer)
        #expect(j.status == 0, "the offer printed before the cut: \(j.err)")
    }

    @Test func anAdmissionSurvivesACutOnTheOwner() throws {
        let dir = TempDir()
        let disk = try PowerCutDisk(dir: dir, name: "owner")
        let offer = try Self.owner(disk, dir: dir)
        let first = try ServeProcess(db: disk.store, dir: dir, name: "serve1")
        let kid = dir.file("kid.db")
        let j = try Household.join(kid, server: first, offer: offer)
        #expect(j.status == 0, "\(j.err)")
        #expect(try Self.stamp(kid, prefix: "k", count: 5).status == 0)
        kill(first.pid, SIGKILL)
        _ = first.waitForExit()
        disk.cut()
        try disk.mount()
        let serve = try ServeProcess(db: disk.store, dir: dir, name: "serve2")
        defer { serve.stop() }
        let c = try Tools.run("peer-sync", ["connect", "--db", kid, serve.address], timeout: 60)
        #expect(c.status == 0, "the member admitted before the cut: \(c.err)")
        serve.stop()
        #expect(try Self.soundIDs(disk.store) == Self.ids("k", 5))
    }

    @Test func aSessionConnectReportedSyncedSurvivesACutOnBothSides() throws {
        let dir = TempDir()
        let ownerDisk = try PowerCutDisk(dir: dir, name: "owner"), kidDisk = try PowerCutDisk(dir: dir, name: "kid")
        let offer = try Self.owner(ownerDisk, dir: dir)
        let serve = try ServeProcess(db: ownerDisk.store, dir: dir, name: "serve1")
        let j = try Household.join(kidDisk.store, server: serve, offer: offer)
        #expect(j.status == 0, "\(j.err)")
        #expect(try Self.stamp(ownerDisk.store, prefix: "o", count: 30).status == 0)
        #expect(try Self.stamp(kidDisk.store, prefix: "k", count: 30).status == 0)
        let c = try Tools.run("peer-sync", ["connect", "--db", kidDisk.store, serve.address], timeout: 60)
        #expect(c.status == 0, "\(c.err)")
        // serve's summary comes after its closing handshake; the client's exit 0 is the promise tested.
        kill(serve.pid, SIGKILL)
        _ = serve.waitForExit()
        ownerDisk.cut()
        kidDisk.cut()
        try ownerDisk.mount()
        try kidDisk.mount()
        let union = Self.ids("o", 30).union(Self.ids("k", 30))
        #expect(try Self.soundIDs(ownerDisk.store) == union, "the owner lost what it acknowledged with DONE")
        #expect(try Self.soundIDs(kidDisk.store) == union, "the member lost what connect reported synced")
        // The member's cursors moved only past what the owner holds: nothing is owed either way.
        let again = try ServeProcess(db: ownerDisk.store, dir: dir, name: "serve2")
        defer { again.stop() }
        let c2 = try Tools.run("peer-sync", ["connect", "--db", kidDisk.store, again.address], timeout: 60)
        #expect(c2.status == 0, "\(c2.err)")
        #expect(c2.json?.int("records", "received") == 0)
        #expect(c2.json?.int("records", "sent") == 0)
    }

    @Test func aPurgeARenameARevocationAndABackupBesideServeSurviveACut() throws {
        let dir = TempDir()
        let disk = try PowerCutDisk(dir: dir, name: "owner")
        _ = try Self.owner(disk, dir: dir)
        let first = try ServeProcess(db: disk.store, dir: dir, name: "serve1")
        // A tombstone old enough to purge, purged while the family has no other device.
        let del = try Tools.run("merge-records", ["--db", disk.store, "--stamp", "--now", "2020-01-01T00:00:00Z"],
                                input: "{\"id\":\"gone\",\"type\":\"receipt\",\"deleted\":true}\n")
        #expect(del.status == 0, "\(del.err)")
        let gc = try Tools.run("tombstone-gc", ["--db", disk.store, "--now", "2030-01-01T00:00:00Z"])
        #expect(gc.status == 0, "\(gc.err)")
        #expect(gc.json?.int("purged") == 1, "\(gc.out)")
        // The purge at a later --now cleared the expired offer: one new offer per member.
        let kids = [dir.file("kid1.db"), dir.file("kid2.db")]
        for (i, kid) in kids.enumerated() {
            let o = try Tools.run("pair-qr", ["--db", disk.store, "--format", "text", "-o", dir.file("pair\(i).txt")])
            let j = try Household.join(kid, server: first, offer: try #require(o.json?["qr"]?.stringValue))
            #expect(j.status == 0, "\(j.err)")
        }
        let (a, b) = (try Household.device(kids[0]), try Household.device(kids[1]))
        let rename = try Tools.run("peer-sync", ["rename", "--db", disk.store, a, "Anna's tablet"])
        #expect(rename.status == 0, "\(rename.err)")
        let revoke = try Tools.run("peer-sync", ["revoke", "--db", disk.store, b])
        #expect(revoke.status == 0, "\(revoke.err)")
        #expect(try Self.stamp(disk.store, prefix: "r", count: 3).status == 0)
        let backup = try Tools.run("merge-records", ["--db", disk.store, "--backup", disk.mountpoint + "/backup.db"])
        #expect(backup.status == 0, "\(backup.err)")
        kill(first.pid, SIGKILL)
        _ = first.waitForExit()
        disk.cut()
        try disk.mount()
        let s = try Store(path: disk.store, create: false)
        #expect(try s.device(a)?.name == "Anna's tablet", "the rename")
        #expect(try s.device(b)?.revokedAt != nil, "the revocation")
        #expect(try Self.soundIDs(disk.store) == Self.ids("r", 3), "the stamps and the purge")
        #expect(try Self.soundIDs(disk.mountpoint + "/backup.db") == Self.ids("r", 3), "the backup")
    }

    /// A bundle written onto the disk, and a bundle applied to a store on it:
    /// each exit 0, then the power goes; the bundle is there whole (it
    /// applies), and the applied records and photos are in the store.
    @Test func aBundleWrittenAndABundleAppliedSurviveACut() throws {
        let dir = TempDir()
        let disk = try PowerCutDisk(dir: dir, name: "kid")
        let owner = dir.file("owner.db")
        let offer = try Household.owner(owner)
        let join = try ServeProcess(db: owner, dir: dir, name: "serve-join")
        #expect(try Household.join(disk.store, server: join, offer: offer).status == 0)
        join.stop()
        try Household.addRecords(owner, prefix: "o", count: 25, photos: (0..<3).map { Household.photo(8100 + $0) })
        let b = try Tools.run("peer-sync", ["bundle", "--db", owner, "--to", try Household.device(disk.store), "-o", dir.file("for-kid")])
        #expect(b.status == 0, "\(b.err)")
        let u = try Tools.run("peer-sync", ["unbundle", "--db", disk.store, dir.file("for-kid")])
        #expect(u.status == 0, "\(u.err)")
        // The kid's reply, written onto its own disk.
        let reply = (disk.store as NSString).deletingLastPathComponent + "/for-owner"
        try Household.addRecords(disk.store, prefix: "k", count: 4)
        let r = try Tools.run("peer-sync", ["bundle", "--db", disk.store, "--to", try Store(path: owner).deviceID, "-o", reply])
        #expect(r.status == 0, "\(r.err)")
        disk.cut()
        try disk.mount()
        #expect(try Self.soundIDs(disk.store).isSuperset(of: Self.ids("o", 25).union(Self.ids("k", 4))))
        #expect(try Household.photoCount(disk.store) == 3)
        let home = try Tools.run("peer-sync", ["unbundle", "--db", owner, reply])
        #expect(home.status == 0, "\(home.err)")
        #expect(home.json?.int("records", "applied") == 4)
    }

    @Test func aFailedSyncIsAnErrorNeverExitZero() throws {
        let dir = TempDir()
        let disk = try PowerCutDisk(dir: dir, name: "owner")
        _ = try Self.owner(disk, dir: dir)
        disk.unmount()
        try disk.mount(failingFsync: true)
        let s = try Self.stamp(disk.store, prefix: "r", count: 3)
        #expect(s.status == 74, "a stamp whose fsync failed: \(s.status) \(s.err)")
        #expect(s.err.contains("merge-records: "), "\(s.err)")
        let q = try Tools.run("pair-qr", ["--db", disk.store, "--format", "text", "-o", dir.file("pair2.txt")])
        #expect(q.status == 74, "an offer whose fsync failed: \(q.status) \(q.err)")
    }

    // MARK: Cuts at the k-th fsync or write, on either side, heal on the next sync

    enum Side: String, CaseIterable, Sendable { case owner, member }
    enum Event: String, Sendable { case fsync, write }

    static let ownerRecords = 24, ownerPhotos = 24, memberRecords = 12

    /// The owner serving, a member joined, then new records on both and 24
    /// photos on the owner (two waves): the session that follows is cut.
    static func household(_ dir: TempDir) throws -> (owner: PowerCutDisk, member: PowerCutDisk) {
        let owner = try PowerCutDisk(dir: dir, name: "owner"), member = try PowerCutDisk(dir: dir, name: "member")
        let offer = try Self.owner(owner, dir: dir)
        let serve = try ServeProcess(db: owner.store, dir: dir, name: "serve-join")
        let j = try Household.join(member.store, server: serve, offer: offer)
        serve.stop()
        guard j.status == 0 else { throw HarnessError("join: \(j.err)") }
        try Household.addRecords(owner.store, prefix: "o", count: ownerRecords, photos: (0..<ownerPhotos).map { Household.photo(9000 + $0) })
        guard try Self.stamp(member.store, prefix: "m", count: memberRecords).status == 0 else { throw HarnessError("stamp failed") }
        return (owner, member)
    }

    /// The store's fsyncs and writes on `side` during that session, uncut.
    static func sessionCounts(_ side: Side) throws -> (fsyncs: Int, writes: Int) {
        let dir = TempDir()
        let (owner, member) = try household(dir)
        let disk = side == .owner ? owner : member
        disk.unmount()
        try disk.mount(countingFromArm: true)
        let serve = try ServeProcess(db: owner.store, dir: dir, name: "serve-count")
        disk.arm()
        let c = try Tools.run("peer-sync", ["connect", "--db", member.store, serve.address], timeout: 60)
        // As in the cut run: serve ends with the power, so its shutdown's checkpoint is not counted.
        kill(serve.pid, SIGKILL)
        _ = serve.waitForExit()
        guard c.status == 0 else { throw HarnessError("the uncut session: \(c.err)") }
        disk.unmount()
        guard let n = disk.counts else { throw HarnessError("the file system left no counts") }
        return n
    }

    /// Where in the session the power goes: at the first event, and at 25%,
    /// 50% and 75% of the events the same session has uncut.
    static let fractions = [0.0, 0.25, 0.5, 0.75]

    @Test(arguments: [Side.owner, .member], [Event.fsync, .write])
    func aCutMidSessionLeavesSoundStoresThatConvergeOnTheNextSync(side: Side, event: Event) throws {
        let counts = try Self.sessionCounts(side)
        let total = event == .fsync ? counts.fsyncs : counts.writes
        #expect(total >= 4, "the \(side.rawValue)'s store saw only \(total) \(event.rawValue)s in a session")
        let ks = Array(Set(Self.fractions.map { max(1, Int(Double(total) * $0)) })).sorted()
        for k in ks { try cutAndHeal(side: side, event: event, k: k, of: total) }
    }

    func cutAndHeal(side: Side, event: Event, k: Int, of total: Int) throws {
        let dir = TempDir()
        let (owner, member) = try Self.household(dir)
        let cutDisk = side == .owner ? owner : member
        cutDisk.unmount()
        try cutDisk.mount(cutAtFsync: event == .fsync ? k : nil, cutAtWrite: event == .write ? k : nil, countingFromArm: true)

        let serve = try ServeProcess(db: owner.store, dir: dir, name: "serve-cut")
        cutDisk.arm()
        _ = try Tools.run("peer-sync", ["connect", "--db", member.store, serve.address], timeout: 60)
        #expect(cutDisk.wasCut, "the power did not go at \(event.rawValue) \(k) (of \(total) uncut) of the \(side.rawValue)'s store")
        kill(serve.pid, SIGKILL)
        _ = serve.waitForExit()
        cutDisk.cut()
        try cutDisk.mount()

        let again = try ServeProcess(db: owner.store, dir: dir, name: "serve-again")
        defer { again.stop() }
        let c = try Tools.run("peer-sync", ["connect", "--db", member.store, again.address], timeout: 60)
        #expect(c.status == 0, "the sync after a cut at \(event.rawValue) \(k) on the \(side.rawValue): \(c.err)")
        again.stop()
        let union = Self.ids("o", Self.ownerRecords).union(Self.ids("m", Self.memberRecords))
        #expect(try Self.soundIDs(owner.store) == union, "owner after a cut at \(event.rawValue) \(k) on the \(side.rawValue)")
        #expect(try Self.soundIDs(member.store) == union, "member after a cut at \(event.rawValue) \(k) on the \(side.rawValue)")
        for store in [owner.store, member.store] {
            let s = try Store(path: store, create: false)
            #expect(try s.wantedPhotoCount() == 0, "\(store) still wants photos after a cut at \(event.rawValue) \(k) on the \(side.rawValue)")
            #expect(try s.db.scalarInt("SELECT count(*) FROM photos") == Int64(Self.ownerPhotos))
        }
    }
}
