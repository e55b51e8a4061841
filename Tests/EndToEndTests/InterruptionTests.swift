import Foundation
import Testing
import FamilySync

/// SIGINT and SIGTERM, sent to real processes at seeded moments: every tool
/// exits 130 or 143 with one line saying what was kept, and the store holds
/// exactly that. The moments are states the test waits for (a line on
/// stderr, an event, input written), never a time.
@Suite(.serialized) struct InterruptionTests {
    static let seeds: [UInt64] = [1, 2, 3]

    static func signal(_ rng: inout SplitMix64) -> (Int32, Int32, String) {
        Bool.random(using: &rng) ? (SIGINT, 130, "SIGINT") : (SIGTERM, 143, "SIGTERM")
    }

    /// Invariant: an apply that a signal ends leaves the store as it was
    /// (one transaction), and says so. The input is a FIFO the test writes a
    /// seeded number of lines into; the signal comes while the tool waits for more.
    @Test(arguments: seeds)
    func mergeRecordsStoppedMidInputKeepsNothing(seed: UInt64) throws {
        var rng = SplitMix64(seed: seed)
        let (sig, status, name) = Self.signal(&rng)
        let dir = TempDir()
        let db = dir.file("s.db"), fifo = dir.file("in.ndjson")
        // A store with one record already, which must stay exactly as it is.
        let seedLine = "{\"id\":\"kept\",\"type\":\"note\",\"modifiedAt\":\"2026-01-01T00:00:00.000Z\",\"deviceId\":\"D\",\"deleted\":false,\"data\":{}}\n"
        #expect(try Tools.run("merge-records", ["--db", db], input: seedLine).status == 0)
        let before = try Household.fingerprint(db)
        #expect(mkfifo(fifo, 0o600) == 0)
        let run = try BackgroundRun("merge-records", ["--db", db, fifo], dir: dir, name: "merge")
        let w = open(fifo, O_WRONLY)  // blocks until the tool opens it
        #expect(w >= 0)
        defer { close(w) }
        let n = Int.random(in: 1...5000, using: &rng)
        var text = ""
        for i in 0..<n { text += "{\"id\":\"r\(i)\",\"type\":\"note\",\"modifiedAt\":\"2026-02-01T00:00:00.000Z\",\"deviceId\":\"D\",\"deleted\":false,\"data\":{\"i\":\(i)}}\n" }
        var bytes = Array(text.utf8)
        #expect(bytes.withUnsafeMutableBytes { FileIO.writeAll(w, UnsafeRawBufferPointer($0)) } == 0)
        kill(run.pid, sig)
        #expect(run.wait(timeout: 30) == status, "seed \(seed): \(run.err)")
        #expect(run.err == "merge-records: interrupted (\(name)); nothing of \(fifo) was applied; the store is as it was\n", "seed \(seed)")
        #expect(run.out.isEmpty)
        #expect(try Household.fingerprint(db) == before, "seed \(seed)")
    }

    /// The others, stopped while they wait on input: 130/143 and the one line.
    @Test(arguments: [
        ("jws-verify", ["--bundle-id", "com.example"], "nothing was changed"),
        ("merge-records", [], "the merged output written is incomplete"),
        ("pair-scan", [], "nothing was changed"),
    ])
    func toolsWaitingOnInputSayTheyWereStopped(tool: String, args: [String], kept: String) throws {
        for (sig, status, name) in [(SIGINT, Int32(130), "SIGINT"), (SIGTERM, Int32(143), "SIGTERM")] {
            let dir = TempDir()
            let fifo = dir.file("in")
            #expect(mkfifo(fifo, 0o600) == 0)
            let argv = tool == "merge-records" ? [fifo, dir.write("remote.ndjson", "")] : args + [fifo]
            let run = try BackgroundRun(tool, argv, dir: dir, name: "t")
            let w = open(fifo, O_WRONLY)  // the tool has opened its input: it is running its body
            #expect(w >= 0)
            kill(run.pid, sig)
            #expect(run.wait(timeout: 30) == status, "\(tool) \(name): \(run.err)")
            close(w)
            #expect(run.err.hasSuffix("\(tool): interrupted (\(name)); \(kept)\n"), "\(tool): \(run.err)")
        }
    }

    /// Invariant: a join a signal ends during its first sync keeps the
    /// admission whole (family, keys, the owner's address, --root) and says
    /// the command that finishes it; that command then does.
    @Test(arguments: seeds)
    func interruptedJoinKeepsTheAdmissionAndSaysHowToFinish(seed: UInt64) throws {
        var rng = SplitMix64(seed: seed)
        let (sig, status, name) = Self.signal(&rng)
        let dir = TempDir()
        let owner = dir.file("owner.db"), kid = dir.file("kid.db")
        let offer = try Household.owner(owner)
        let count = Int.random(in: 1...40, using: &rng)
        try Household.addRecords(owner, prefix: "o", count: count, photos: [Household.photo(Int(seed))])
        // Photo requests that are never answered hold the first sync in its photo wave.
        let held = try ServeProcess(db: owner, dir: dir, name: "held", extra: ["--fault-inject-skip-photo-replies"])
        let events = dir.file("join.events")
        let offerFile = dir.write("offer.txt", offer + "\n")
        let root = OpenSSLPKI.shared.rootPEM
        let join = try BackgroundRun("peer-sync", ["join", "--db", kid, "--connect", held.address, "--wave-timeout", "10m", "--root", root,
                                                   "--events", events, offerFile], dir: dir, name: "join")
        #expect(Self.waitForEvent("wave", in: events, while: join.process))
        kill(join.pid, sig)
        #expect(join.wait(timeout: 30) == status, "seed \(seed): \(join.err)")
        let fam = try #require(try Store(path: kid, create: false).family())
        let lines = join.err.split(separator: "\n").filter { $0.contains("interrupted") }
        #expect(lines == ["peer-sync: interrupted (\(name)); this device joined family \(fam.id), and the admission is kept in \(kid) with the records the first sync applied; finish the first sync with 'peer-sync connect --db \(kid) \(held.address)'"], "\(join.err)")
        #expect(join.err.contains("created a new store at \(kid)"))
        let store = try Store(path: kid, create: false)
        #expect(try store.device(fam.ownerDevice)?.lastAddress == held.address)
        #expect(try store.setting("trust_roots") != nil, "--root is kept with the admission")
        #expect(try Household.recordCount(kid) == Int64(count), "the records that arrived are kept")
        #expect(try store.device(fam.ownerDevice)?.lastSyncedAt == nil, "no cursor moved")

        // The owner's serve, stopped with no session under way: the same rule.
        kill(held.pid, SIGTERM)
        #expect(held.waitForExit(timeout: 30) == 143)
        #expect(held.err.hasSuffix("peer-sync: interrupted (SIGTERM); stopped serving\n"), "\(held.err)")

        // The command it named finishes the first sync (here with a serve that answers, on another port).
        let server = try ServeProcess(db: owner, dir: dir)
        defer { server.stop() }
        let finish = try Tools.run("peer-sync", ["connect", "--db", kid, server.address], timeout: 60)
        #expect(finish.status == 0, "\(finish.err)")
        // What the cut-off first sync brought is not sent back to the owner it came from.
        #expect(finish.json?.int("records", "sent") == 0, "\(finish.out)")
        #expect(try Household.digest(kid) == (try Household.digest(owner)))
        #expect(try Household.photoCount(kid) == 1)
    }

    /// A connect a signal ends mid-session: the records applied stay, no
    /// cursor moves, and the one line says so.
    @Test(arguments: seeds)
    func interruptedConnectKeepsWhatItAppliedAndMovesNoCursor(seed: UInt64) throws {
        var rng = SplitMix64(seed: seed)
        let (sig, status, name) = Self.signal(&rng)
        let dir = TempDir()
        let owner = dir.file("owner.db"), kid = dir.file("kid.db")
        let offer = try Household.owner(owner)
        var plain: ServeProcess? = try ServeProcess(db: owner, dir: dir, name: "plain")
        #expect(try Household.join(kid, server: plain!, offer: offer).status == 0)
        plain?.stop()
        plain = nil
        let count = Int.random(in: 1...40, using: &rng)
        try Household.addRecords(owner, prefix: "n", count: count, photos: [Household.photo(100 + Int(seed))])
        let held = try ServeProcess(db: owner, dir: dir, name: "held", extra: ["--fault-inject-skip-photo-replies"])
        let ownerID = try Household.device(owner)
        let synced = try Store(path: kid).device(ownerID)?.lastSyncedAt
        let events = dir.file("connect.events")
        let connect = try BackgroundRun("peer-sync", ["connect", "--db", kid, "--wave-timeout", "10m", "--events", events, held.address], dir: dir, name: "connect")
        #expect(Self.waitForEvent("wave", in: events, while: connect.process))
        kill(connect.pid, sig)
        #expect(connect.wait(timeout: 30) == status, "seed \(seed): \(connect.err)")
        #expect(connect.err.hasSuffix("peer-sync: interrupted (\(name)); the session with \(ownerID) at \(held.address) ended; the records it applied are kept and no cursor moved, so the next session with that device goes on from there\n"), "\(connect.err)")
        #expect(connect.out.isEmpty)
        #expect(try Store(path: kid).db.scalarInt("SELECT count(*) FROM records WHERE id LIKE 'n-%'") == Int64(count))
        #expect(try Store(path: kid).device(ownerID)?.lastSyncedAt == synced, "no cursor moved")
        held.stop()
        // The next session sends back none of what the cut-off one brought.
        let server = try ServeProcess(db: owner, dir: dir)
        defer { server.stop() }
        let next = try Tools.run("peer-sync", ["connect", "--db", kid, server.address], timeout: 60)
        #expect(next.status == 0, "\(next.err)")
        #expect(next.json?.int("records", "sent") == 0, "\(next.out)")
        #expect(try Household.digest(kid) == (try Household.digest(owner)))
    }

    /// Invariant: an interrupted session's progress survives it. The owner
    /// sends one batch (1,000 records) of a seeded number, then holds; the
    /// member's connect is stopped by a signal once its store holds that
    /// batch. The next session goes on from there: the member receives
    /// exactly the records it lacks, sends none back, and both say resumed.
    @Test(arguments: seeds)
    func anInterruptedSessionGoesOnFromWhereItStopped(seed: UInt64) throws {
        var rng = SplitMix64(seed: seed)
        let (sig, status, name) = Self.signal(&rng)
        let dir = TempDir()
        let owner = dir.file("owner.db"), kid = dir.file("kid.db")
        let offer = try Household.owner(owner)
        var plain: ServeProcess? = try ServeProcess(db: owner, dir: dir, name: "plain")
        #expect(try Household.join(kid, server: plain!, offer: offer).status == 0)
        plain?.stop()
        plain = nil
        // With none of its own (seed 1), the member's summary says resumed only because the owner's records went on.
        let count = Int.random(in: 1_001...3_500, using: &rng), own = seed == 1 ? 0 : Int.random(in: 1...50, using: &rng)
        try Household.addRecords(owner, prefix: "n", count: count)
        try Household.addRecords(kid, prefix: "k", count: own)
        let held = try ServeProcess(db: owner, dir: dir, name: "held", extra: ["--fault-inject-hold-records"])
        let ownerID = try Household.device(owner)
        let connect = try BackgroundRun("peer-sync", ["connect", "--db", kid, held.address], dir: dir, name: "connect")
        func holds(_ db: String, _ prefix: String) -> Int64 {
            (try? Store(path: db).db.scalarInt("SELECT count(*) FROM records WHERE id LIKE '\(prefix)-%'")) ?? 0
        }
        // The moment: the member holds the owner's first batch, and the owner all of the member's records.
        let deadline = Date().addingTimeInterval(60)
        while (holds(kid, "n") < 1_000 || holds(owner, "k") < Int64(own)) && Date() < deadline && connect.process.isRunning { usleep(20_000) }
        #expect(holds(kid, "n") == 1_000, "seed \(seed): the held session delivered one batch")
        kill(connect.pid, sig)
        #expect(connect.wait(timeout: 30) == status, "seed \(seed): \(connect.err)")
        #expect(connect.err.hasSuffix("peer-sync: interrupted (\(name)); the session with \(ownerID) at \(held.address) ended; the records it applied are kept and no cursor moved, so the next session with that device goes on from there\n"), "\(connect.err)")
        held.stop()
        let server = try ServeProcess(db: owner, dir: dir)
        defer { server.stop() }
        let next = try Tools.run("peer-sync", ["connect", "--db", kid, server.address], timeout: 60)
        #expect(next.status == 0, "\(next.err)")
        #expect(next.json?.int("records", "received") == Int64(count - 1_000), "seed \(seed): \(next.out)")
        #expect(next.json?.int("records", "sent") == 0, "seed \(seed): \(next.out)")
        #expect(next.out.contains("\"resumed\":true"), "seed \(seed): \(next.out)")
        #expect(try #require(server.summary(after: 0)).at("records", "resumed")?.boolValue == true, "seed \(seed): the owner's summary")
        #expect(try Household.digest(kid) == (try Household.digest(owner)))
    }

    /// serve stopped while a session runs names it.
    @Test func serveStoppedMidSessionNamesTheSession() throws {
        let dir = TempDir()
        let owner = dir.file("owner.db"), kid = dir.file("kid.db")
        let offer = try Household.owner(owner)
        let server = try ServeProcess(db: owner, dir: dir)
        #expect(try Household.join(kid, server: server, offer: offer).status == 0)
        // Photos the kid holds and the owner wants; the kid's connect answers none of them.
        try Household.addRecords(kid, prefix: "k", count: 3, photos: [Household.photo(77)])
        let connect = try BackgroundRun("peer-sync", ["connect", "--db", kid, "--fault-inject-skip-photo-replies", server.address], dir: dir, name: "connect")
        #expect(server.waitForEvent("wave", timeout: 30) != nil)
        kill(server.pid, SIGINT)
        #expect(server.waitForExit(timeout: 30) == 130)
        let kidID = try Household.device(kid)
        #expect(server.err.contains("peer-sync: interrupted (SIGINT); stopped serving; the session with \(kidID)"), "\(server.err)")
        #expect(server.err.split(separator: "\n").filter { $0.contains("interrupted") }.count == 1, "one line: \(server.err)")
        _ = connect.wait(timeout: 30)
    }

    /// Waits (bounded) until the events file has an event named `name`, while `process` runs.
    static func waitForEvent(_ name: String, in path: String, while process: Process, timeout: TimeInterval = 60) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline && process.isRunning {
            let text = String(decoding: FileManager.default.contents(atPath: path) ?? Data(), as: UTF8.self)
            if text.contains("\"event\":\"\(name)\"") { return true }
            usleep(20_000)
        }
        return false
    }
}
