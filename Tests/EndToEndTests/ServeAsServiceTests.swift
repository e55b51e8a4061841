import Foundation
import Testing
import FamilySync

/// `peer-sync serve` as a systemd user service: the units `make install`
/// puts in place, the log lines journald keeps, and SIGTERM mid-session.
@Suite struct ServeAsServiceTests {
    /// The checkout holding the Makefile, found above the built tools.
    static let repoRoot: String? = {
        var url = URL(fileURLWithPath: Tools.binDir)
        while url.path != "/" {
            if FileManager.default.fileExists(atPath: url.appendingPathComponent("Makefile").path),
               FileManager.default.fileExists(atPath: url.appendingPathComponent("systemd").path) { return url.path }
            url.deleteLastPathComponent()
        }
        return nil
    }()

    @Test(.disabled(if: repoRoot == nil, "the checkout's Makefile is not above the built tools"))
    func makeInstallPutsAUserUnitForServeAndATimerForTombstoneGC() throws {
        let dir = TempDir()
        let r = try Tools.run("/usr/bin/make", ["-s", "-C", Self.repoRoot!, "install-units", "DESTDIR=\(dir.path)", "PREFIX=/usr"])
        #expect(r.status == 0, "\(r.err)")
        let units = dir.path + "/usr/lib/systemd/user/"
        let serve = try String(contentsOfFile: units + "peer-sync.service", encoding: .utf8)
        #expect(serve.contains("\nExecStart=/usr/bin/peer-sync serve\n"))
        // serve stopped by the unit's SIGTERM exits 143: a clean stop, not a failure to restart from.
        #expect(serve.contains("\nSuccessExitStatus=143\n"))
        let gc = try String(contentsOfFile: units + "tombstone-gc.service", encoding: .utf8)
        #expect(gc.contains("\nExecStart=/usr/bin/tombstone-gc\n"))
        let timer = try String(contentsOfFile: units + "tombstone-gc.timer", encoding: .utf8)
        #expect(timer.contains("\nOnCalendar=daily\n"))
        let socket = try String(contentsOfFile: units + "peer-sync-stdio.socket", encoding: .utf8)
        #expect(socket.contains("\nAccept=yes\n"))
        let perConnection = try String(contentsOfFile: units + "peer-sync-stdio@.service", encoding: .utf8)
        #expect(perConnection.contains("\nExecStart=/usr/bin/peer-sync serve --stdio\n"))
        #expect(perConnection.contains("\nStandardInput=socket\n"))
        for u in [serve, gc, timer, socket, perConnection] { #expect(!u.contains("@BINDIR@")) }
        // systemd's own checker, pointed at the tools just built, where it is installed.
        let analyze = "/usr/bin/systemd-analyze"
        guard FileManager.default.isExecutableFile(atPath: analyze) else { return }
        var paths: [String] = []
        for (name, text) in [("peer-sync.service", serve), ("tombstone-gc.service", gc), ("tombstone-gc.timer", timer),
                             ("peer-sync-stdio.socket", socket), ("peer-sync-stdio@.service", perConnection)] {
            paths.append(dir.write(name, text.replacingOccurrences(of: "/usr/bin/", with: Tools.binDir + "/")))
        }
        let v = try Tools.run(analyze, ["verify", "--man=no"] + paths)
        #expect(v.status == 0, "\(v.out)\(v.err)")
    }

    @Test func anOfferWithoutAddrCarriesWhereServeListens() throws {
        let dir = TempDir()
        let owner = dir.file("owner.db")
        _ = try Household.owner(owner)
        let server = try ServeProcess(db: owner, dir: dir)
        let r = try Tools.run("pair-qr", ["--db", owner, "--format", "text", "-o", dir.file("pair.txt")])
        #expect(r.status == 0, "\(r.err)")
        #expect(r.json?["addr"]?.stringValue == server.address)
        #expect(r.json?["qr"]?.stringValue?.hasSuffix("/" + server.address) == true)
        #expect(server.stop() == 143)
        // serve stopped: the address it listened on is still the best guess.
        #expect(try Tools.run("pair-qr", ["--db", owner, "--format", "text", "-o", dir.file("pair.txt")]).json?["addr"]?.stringValue == server.address)
    }

    @Test func sigtermMidSessionEndsItWithoutMovingCursorsAndExits143() throws {
        let dir = TempDir()
        let owner = dir.file("owner.db"), kid = dir.file("kid.db")
        let offer = try Household.owner(owner)
        let first = try ServeProcess(db: owner, dir: dir, name: "first")
        #expect(try Household.join(kid, server: first, offer: offer).status == 0)
        #expect(first.stop() == 143)
        try Household.addRecords(owner, prefix: "p", count: 3, photos: (0..<3).map { Household.photo($0) })
        let before = (try Store(path: kid).device(try Household.device(owner)))!
        let ownerBefore = (try Store(path: owner).device(try Household.device(kid)))!

        // A server that never answers photo requests holds the session in its photo phase.
        let server = try ServeProcess(db: owner, dir: dir, name: "held", extra: ["--fault-inject-skip-photo-replies"])
        let client = try BackgroundRun("peer-sync", ["connect", "--db", kid, "--wave-timeout", "60s", server.address], dir: dir, name: "client")
        #expect(server.waitForEvent("phase", count: 2, timeout: 30) != nil)
        kill(server.pid, SIGTERM)
        #expect(server.waitForExit(timeout: 20) == 143)
        #expect(client.wait(timeout: 60) == 69)

        // Neither side moved a cursor or its last-synced time.
        let after = (try Store(path: kid).device(try Household.device(owner)))!
        #expect(after.recvSeq == before.recvSeq && after.sentSeq == before.sentSeq && after.lastSyncedAt == before.lastSyncedAt)
        let ownerAfter = (try Store(path: owner).device(try Household.device(kid)))!
        #expect(ownerAfter.recvSeq == ownerBefore.recvSeq && ownerAfter.sentSeq == ownerBefore.sentSeq && ownerAfter.lastSyncedAt == ownerBefore.lastSyncedAt)
        // Standard error is a file here, not a terminal: the lines a journal keeps.
        #expect(server.err.hasPrefix("peer-sync: listening on \(server.address)\n"), "\(server.err)")

        // The next sync completes what was cut off.
        let again = try ServeProcess(db: owner, dir: dir, name: "again")
        let c = try Tools.run("peer-sync", ["connect", "--db", kid, again.address], timeout: 60)
        #expect(c.status == 0, "\(c.err)")
        #expect(try Household.photoCount(kid) == 3)
        #expect(again.stop() == 143)
        #expect(again.err.contains("peer-sync: session with \(try Household.device(kid)) at 127.0.0.1:"), "\(again.err)")
    }
}
