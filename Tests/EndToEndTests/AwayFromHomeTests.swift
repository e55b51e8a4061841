import Foundation
import Testing
import FamilySync

/// Sync away from home: `connect --via COMMAND` and `serve --stdio`, over a
/// plain pipe pair, socat, and a real ssh to an sshd in a network namespace;
/// a transport that dies half way; commands that fail, end or write
/// garbage; and the one-session rule across TCP and stdio sessions.
@Suite(.serialized) struct AwayFromHomeTests {
    /// An owner with records and photos, and a member joined over loopback TCP
    /// (the serve is stopped after): the household a trip starts from.
    struct Pair {
        let dir = TempDir()
        let owner: String
        let kid: String
        /// `ownerPath`: where the owner's store is (its per-user default, for ssh), else owner.db in the folder.
        init(records: Int = 40, photos: Int = 5, photoSize: Int = 4096, ownerPath: ((TempDir) -> String)? = nil) throws {
            owner = ownerPath?(dir) ?? dir.file("owner.db")
            kid = dir.file("kid.db")
            let offer = try Household.owner(owner)
            try Household.addRecords(owner, prefix: "o", count: records, photos: (0..<photos).map { Household.photo($0, size: photoSize) })
            let server = try ServeProcess(db: owner, dir: dir)
            defer { server.stop() }
            let j = try Household.join(kid, server: server, offer: offer)
            guard j.status == 0 else { throw HarnessError("join: \(j.err)") }
        }

        /// The owner's side as the member's --via runs it.
        var stdioServe: String { "\(Tools.path("peer-sync")) serve --stdio --quiet --db \(owner)" }
    }

    @Test func viaAPlainPipePairSyncsBothWays() throws {
        let p = try Pair()
        try Household.addRecords(p.owner, prefix: "o2", count: 7, photos: [Household.photo(50)])
        try Household.addRecords(p.kid, prefix: "k", count: 5, photos: (100..<103).map { Household.photo($0) })
        let r = try Tools.run("peer-sync", ["connect", "--db", p.kid, "--via", p.stdioServe], timeout: 60)
        #expect(r.status == 0, "\(r.err)")
        let s = try #require(r.json)
        #expect(s.int("records", "sent") == 5)
        #expect(s.int("records", "received") == 7)
        #expect(s.int("photos", "sent") == 3)
        #expect(s.int("photos", "received") == 1)
        #expect(s.at("digest", "equal")?.boolValue == true)
        #expect(try Household.digest(p.kid) == Household.digest(p.owner))
        #expect(try Household.photoCount(p.owner) == Household.photoCount(p.kid))
        // The quiet serve said nothing; stdout carried only the member's summary.
        #expect(r.err.isEmpty, "\(r.err)")
        #expect(r.lines.count == 1)
        // A command is not an address: the owner's last address stays the TCP one the join found.
        let kid = try Store(path: p.kid)
        let fam = try #require(try kid.family())
        #expect(try kid.device(fam.ownerDevice)?.lastAddress?.hasPrefix("127.0.0.1:") == true)
        // Again: nothing to move, and the cursors held.
        let again = try Tools.run("peer-sync", ["connect", "--db", p.kid, "--via", p.stdioServe], timeout: 60)
        #expect(again.status == 0, "\(again.err)")
        #expect(again.json?.int("records", "sent") == 0)
        #expect(again.json?.int("records", "received") == 0)
    }

    @Test func theOwnerReachesAMemberViaACommandToo() throws {
        let p = try Pair()
        try Household.addRecords(p.kid, prefix: "k", count: 3)
        let r = try Tools.run("peer-sync", ["connect", "--db", p.owner, "--via", "\(Tools.path("peer-sync")) serve --stdio --quiet --db \(p.kid)"], timeout: 60)
        #expect(r.status == 0, "\(r.err)")
        #expect(r.json?.int("records", "received") == 3)
        #expect(try Household.digest(p.kid) == Household.digest(p.owner))
    }

    /// socat carries the bytes over TCP: `socat TCP-LISTEN … EXEC:'peer-sync serve --stdio'` on the owner's side,
    /// `--via 'socat - TCP:…'` on the member's, as a WireGuard or Tailscale link would.
    @Test func viaSocatOverTCP() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/socat") else {
            Issue.record("socat is not installed (packages/apt-test.txt lists it)")
            return
        }
        let p = try Pair()
        try Household.addRecords(p.kid, prefix: "k", count: 4, photos: [Household.photo(7)])
        let port = try PeerSyncTests.closedPort()
        let listener = try DaemonProcess(["/usr/bin/socat", "TCP-LISTEN:\(port),bind=127.0.0.1,reuseaddr,fork",
                                          "EXEC:\(p.stdioServe)"], dir: p.dir, name: "socat")
        defer { _ = listener.stop() }
        #expect(Self.waitForListener(port: port), "socat did not listen")
        let r = try Tools.run("peer-sync", ["connect", "--db", p.kid, "--via", "/usr/bin/socat - TCP:127.0.0.1:\(port)"], timeout: 60)
        #expect(r.status == 0, "\(r.err)")
        #expect(r.json?.int("records", "sent") == 4)
        #expect(r.json?.int("photos", "sent") == 1)
        #expect(try Household.digest(p.kid) == Household.digest(p.owner))
    }

    /// Polls until something accepts on 127.0.0.1:port (bounded).
    static func waitForListener(port: UInt16) -> Bool {
        for _ in 0..<500 {
            if (try? TCPSocket.connect(to: HostPort(host: "127.0.0.1", port: port), timeout: .seconds(1))) != nil { return true }
            usleep(10_000)
        }
        return false
    }

    /// A real ssh: the member on a trip reaches the owner's host ("home")
    /// through OpenSSH, and `serve --stdio` there serves the owner's
    /// per-user store. ssh carries only the family's TLS stream.
    @Test func viaARealSSHToTheOwnersHost() throws {
        if let why = SSHLab.unavailableReason {
            print("AwayFromHomeTests: skipped: \(why)")
            return
        }
        let p = try Pair(ownerPath: { dir in
            try? FileManager.default.createDirectory(atPath: dir.file("owner-data/family-sync"), withIntermediateDirectories: true)
            return dir.file("owner-data/family-sync/store.db")
        })
        let lab = try SSHLab(dir: p.dir, env: ["XDG_DATA_HOME": p.dir.file("owner-data"), "PATH": "\(Tools.binDir):/usr/bin:/bin"])
        try Household.addRecords(p.kid, prefix: "trip", count: 6, photos: (400..<402).map { Household.photo($0) })
        try Household.addRecords(p.owner, prefix: "home", count: 4)
        let r = try lab.run("peer-sync connect --db kid.db --via 'ssh -T home peer-sync serve --stdio --quiet'", cwd: p.dir.path, timeout: 60)
        #expect(r.status == 0, "\(r.err)")
        let s = try #require(r.out.split(separator: "\n").last.flatMap { try? JSONParser.parse(String($0)) })
        #expect(s.int("records", "sent") == 6)
        #expect(s.int("records", "received") == 4)
        #expect(s.int("photos", "sent") == 2)
        #expect(s.at("digest", "equal")?.boolValue == true)
        #expect(try Household.digest(p.kid) == Household.digest(p.owner))
        // ssh fails to log in (no such host alias): ssh's own words on stderr, then ours naming the command, 69.
        let bad = try lab.run("peer-sync connect --db kid.db --via 'ssh -T nowhere.invalid peer-sync serve --stdio'", cwd: p.dir.path, timeout: 60)
        #expect(bad.status == 69, "\(bad.err)")
        #expect(bad.err.contains("peer-sync: the --via command 'ssh -T nowhere.invalid peer-sync serve --stdio' exited with status 255 before the session ended"), "\(bad.err)")
    }

    /// The README's "Away from home" block between `<!-- NAME:begin` and `<!-- NAME:end -->`, unindented.
    static func readmeBlock(_ name: String) throws -> [String] {
        let readme = try String(contentsOfFile: ReadmeTests.root + "/README.md", encoding: .utf8)
        let begin = try #require(readme.range(of: "<!-- \(name):begin"))
        let end = try #require(readme.range(of: "<!-- \(name):end -->"))
        let lines = readme[begin.upperBound..<end.lowerBound].split(separator: "\n").dropFirst()
        #expect(lines.allSatisfy { $0.hasPrefix("    ") }, "the block is one indented code block")
        return lines.map { String($0.dropFirst(4)) }
    }

    /// The README's ssh and socket-unit blocks, run as written inside one
    /// namespace where `home` is an sshd (SSHLab) and, on port 7434, the
    /// socket unit's ExecStart behind systemd-socket-activate (which stands
    /// in for the block's `systemctl` line).
    @Test func theReadmesAwayFromHomeBlocksRunAsWritten() throws {
        let sshBlock = try Self.readmeBlock("away-ssh"), socketBlock = try Self.readmeBlock("away-socket")
        #expect(sshBlock.joined().contains("--via 'ssh -T home peer-sync serve --stdio"))
        #expect(socketBlock.first?.hasPrefix("systemctl --user enable --now peer-sync-stdio.socket") == true)
        let activate = "/usr/bin/systemd-socket-activate"
        if let why = SSHLab.unavailableReason ?? (FileManager.default.isExecutableFile(atPath: activate) ? nil : "needs \(activate)") {
            print("AwayFromHomeTests: skipped: \(why)")
            return
        }
        let root = try #require(ServeAsServiceTests.repoRoot)
        let unit = try String(contentsOfFile: root + "/systemd/peer-sync-stdio@.service", encoding: .utf8)
        let socketUnit = try String(contentsOfFile: root + "/systemd/peer-sync-stdio.socket", encoding: .utf8)
        #expect(socketUnit.contains("\nListenStream=7434\n"))
        let exec = try #require(unit.split(separator: "\n").first { $0.hasPrefix("ExecStart=") })
            .dropFirst("ExecStart=".count).replacingOccurrences(of: "@BINDIR@", with: Tools.binDir)
        let p = try Pair(ownerPath: { dir in
            try? FileManager.default.createDirectory(atPath: dir.file("owner-data/family-sync"), withIntermediateDirectories: true)
            return dir.file("owner-data/family-sync/store.db")
        })
        let ownerData = p.dir.file("owner-data")
        let lab = try SSHLab(dir: p.dir, env: ["XDG_DATA_HOME": ownerData, "PATH": "\(Tools.binDir):/usr/bin:/bin"])
        try Household.addRecords(p.kid, prefix: "trip", count: 2)
        let viaSSH = try lab.run(sshBlock.joined(separator: "\n"), cwd: p.dir.path, timeout: 60)
        #expect(viaSSH.status == 0, "\(viaSSH.err)")
        #expect(viaSSH.out.contains(#""equal":true"#), "\(viaSSH.out)")
        #expect(try Household.digest(p.kid) == Household.digest(p.owner))

        let socket = try lab.start([activate, "-l", "127.0.0.1:7434", "--inetd", "-a", "-E", "XDG_DATA_HOME=\(ownerData)"]
                                   + exec.split(separator: " ").map(String.init), name: "socket-unit")
        defer { _ = socket.stop() }
        try Household.addRecords(p.kid, prefix: "again", count: 3)
        // Each line but the systemctl one, as written; the first tries wait for the socket to be there.
        let lines = socketBlock.dropFirst().joined(separator: "\n")
        let viaSocket = try lab.run("for i in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/7434) 2>/dev/null && break; sleep 0.05; done\n" + lines,
                                    cwd: p.dir.path, timeout: 60)
        #expect(viaSocket.status == 0, "\(viaSocket.err)")
        #expect(viaSocket.out.contains(#""address":"home:7434""#), "\(viaSocket.out)")
        #expect(try Household.digest(p.kid) == Household.digest(p.owner))
    }

    /// The socket unit's way: systemd-socket-activate stands in for systemd
    /// (`--inetd -a` is `Accept=yes` with the connection on standard input
    /// and output), running the per-connection unit's own ExecStart line on
    /// the owner's per-user store. A member connects to it as to any serve,
    /// by TCP; a second member's connection while a session runs gets BUSY.
    @Test func aSocketActivatedServeAnswersAsAnyServe() throws {
        let activate = "/usr/bin/systemd-socket-activate"
        guard FileManager.default.isExecutableFile(atPath: activate), let root = ServeAsServiceTests.repoRoot else {
            print("AwayFromHomeTests: skipped: needs \(activate) (systemd) and the checkout's systemd/ folder")
            return
        }
        let unit = try String(contentsOfFile: root + "/systemd/peer-sync-stdio@.service", encoding: .utf8)
        let exec = try #require(unit.split(separator: "\n").first { $0.hasPrefix("ExecStart=") })
            .dropFirst("ExecStart=".count).replacingOccurrences(of: "@BINDIR@", with: Tools.binDir)
        let p = try Pair(ownerPath: { dir in
            try? FileManager.default.createDirectory(atPath: dir.file("owner-data/family-sync"), withIntermediateDirectories: true)
            return dir.file("owner-data/family-sync/store.db")
        })
        let port = try PeerSyncTests.closedPort()
        let daemon = try DaemonProcess([activate, "-l", "127.0.0.1:\(port)", "--inetd", "-a",
                                        "-E", "XDG_DATA_HOME=\(p.dir.file("owner-data"))"] + exec.split(separator: " ").map(String.init),
                                       dir: p.dir, name: "activate")
        defer { _ = daemon.stop() }
        var listening = false
        for _ in 0..<500 where !listening {
            listening = (try? String(contentsOfFile: "/proc/net/tcp", encoding: .utf8))?.contains(String(format: ":%04X 00000000:0000 0A", port)) == true
            if !listening { usleep(10_000) }
        }
        #expect(listening, "systemd-socket-activate did not listen: \(daemon.err)")
        try Household.addRecords(p.kid, prefix: "k", count: 3)
        let r = try Tools.run("peer-sync", ["connect", "--db", p.kid, "127.0.0.1:\(port)"], timeout: 60)
        #expect(r.status == 0, "\(r.err)")
        #expect(r.json?.int("records", "sent") == 3)
        #expect(try Household.digest(p.kid) == Household.digest(p.owner))
        // While a session holds the store, the next connection's instance answers BUSY.
        let lock = try SessionLock.forStore(at: p.owner)
        #expect(lock.tryAcquire())
        defer { lock.release() }
        let busy = try Tools.run("peer-sync", ["connect", "--db", p.kid, "--wait", "0", "127.0.0.1:\(port)"], timeout: 60)
        #expect(busy.status == 75, "\(busy.err)")
    }

    /// What a --via command that is no way to a peer gets: a clear error naming it, never a hang.
    @Test func aCommandThatCannotStartEndsOrWritesGarbageIsNamed() throws {
        let p = try Pair(records: 3, photos: 0)
        let before = try Household.fingerprint(p.kid)
        let missing = try Tools.run("peer-sync", ["connect", "--db", p.kid, "--via", "no-such-transport-xyz home"], timeout: 30)
        #expect(missing.status == 69)
        #expect(missing.err == "peer-sync: cannot run the --via command 'no-such-transport-xyz home': no-such-transport-xyz: No such file or directory\n")
        let ends = try Tools.run("peer-sync", ["connect", "--db", p.kid, "--via", "sh -c 'exit 255'"], timeout: 30)
        #expect(ends.status == 69)
        #expect(ends.err == "peer-sync: the --via command 'sh -c 'exit 255'' exited with status 255 before the session ended\n")
        // A shell greeting where the peer should be; the command keeps running, and is not waited for.
        let garbage = try Tools.run("peer-sync", ["connect", "--db", p.kid, "--via", "sh -c 'echo Welcome to the home server; exec sleep 60'"], timeout: 30)
        #expect(garbage.status == 65)
        #expect(garbage.err.hasPrefix("peer-sync: the --via command 'sh -c 'echo Welcome to the home server; exec sleep 60'' does not lead to a family-sync peer: "), "\(garbage.err)")
        // Usage: an empty command, an unterminated quote, and both an address and a command.
        for (args, words) in [(["--via", " "], "--via: the command is empty"),
                              (["--via", "ssh 'home"], "--via: 'ssh 'home': an unterminated ' quote"),
                              (["--via", "cat", "127.0.0.1:7433"], "give HOST:PORT or --via COMMAND, not both")] {
            let u = try Tools.run("peer-sync", ["connect", "--db", p.kid] + args, timeout: 30)
            #expect(u.status == 64, "\(args)")
            #expect(u.err.hasPrefix("peer-sync: \(words)"), "\(u.err)")
        }
        #expect(try Household.fingerprint(p.kid) == before, "a failed transport changed the store")
    }

    @Test func serveStdioRefusesATerminalAndListenOptions() throws {
        let p = try Pair(records: 1, photos: 0)
        let o = try Tools.run("peer-sync", ["serve", "--stdio", "--once", "--db", p.owner], timeout: 30)
        #expect(o.status == 64)
        #expect(o.err.contains("--stdio serves the one connection on standard input and output: --once does not apply"), "\(o.err)")
        // Not a TLS client on standard input: a failed handshake, status 65, nothing on standard output but what TLS wrote.
        let junk = try Tools.run("peer-sync", ["serve", "--stdio", "--db", p.owner], stdin: Data("GET / HTTP/1.0\r\n\r\n".utf8), timeout: 30)
        #expect(junk.status == 65, "\(junk.err)")
        #expect(junk.err.contains("refused standard input and output: handshake"), "\(junk.err)")
    }

    /// The transport dies half way, each way: both stores stay whole, the
    /// member's error names the command, and the next sync completes.
    @Test func aTransportKilledMidSessionLeavesBothStoresWhole() throws {
        let p = try Pair(records: 10, photos: 0)
        // Enough for several waves each way, so the cut falls inside the session.
        try Household.addRecords(p.owner, prefix: "big-o", count: 60, photos: (200..<260).map { Household.photo($0, size: 64 << 10) })
        try Household.addRecords(p.kid, prefix: "big-k", count: 60, photos: (300..<360).map { Household.photo($0, size: 64 << 10) })
        // Owner to member: the owner's output stops after 600 kB (dd passes on each read at once, as head -c does not).
        let cutDown = try Tools.run("peer-sync", ["connect", "--db", p.kid, "--via", "sh -c '\(p.stdioServe) | \(Self.cut)'"], timeout: 60)
        #expect(cutDown.status == 69, "\(cutDown.err)")
        #expect(cutDown.err.contains("the --via command 'sh -c "), "\(cutDown.err)")
        #expect(cutDown.err.contains("before the session ended"), "\(cutDown.err)")
        for db in [p.owner, p.kid] {
            #expect(try Store(path: db).db.scalarText("PRAGMA integrity_check") == "ok")
        }
        // Member to owner: the member's input to the owner stops after 600 kB.
        let cutUp = try Tools.run("peer-sync", ["connect", "--db", p.kid, "--via", "sh -c '\(Self.cut) | \(p.stdioServe)'"], timeout: 60)
        #expect(cutUp.status == 69, "\(cutUp.err)")
        for db in [p.owner, p.kid] {
            #expect(try Store(path: db).db.scalarText("PRAGMA integrity_check") == "ok")
        }
        // The next sync (more than one if a session limit cut it; here one) completes, and both hold everything.
        let next = try Tools.run("peer-sync", ["connect", "--db", p.kid, "--via", p.stdioServe], timeout: 120)
        #expect(next.status == 0, "\(next.err)")
        #expect(next.json?.at("digest", "equal")?.boolValue == true)
        #expect(try Household.digest(p.kid) == Household.digest(p.owner))
        #expect(try Household.photoCount(p.owner) == 120)
        #expect(try Household.photoCount(p.kid) == 120)
    }

    /// A transport that carries 600 kB, then ends.
    static let cut = "dd iflag=count_bytes count=600000 bs=64k status=none"

    /// One session at a time over every way into a store: while a session
    /// holds the store's session lock (here, this test process, as another
    /// serve's session would), a TCP serve and a `serve --stdio` both answer
    /// BUSY; once it is released, each syncs.
    @Test func oneSessionAtATimeAcrossTCPAndStdio() throws {
        let p = try Pair(records: 2, photos: 0)
        let server = try ServeProcess(db: p.owner, dir: p.dir, name: "serve-again")
        defer { server.stop() }
        let lock = try SessionLock.forStore(at: p.owner)
        #expect(lock.tryAcquire())
        let stdio = try Tools.run("peer-sync", ["connect", "--db", p.kid, "--wait", "0", "--via", p.stdioServe], timeout: 30)
        #expect(stdio.status == 75, "\(stdio.err)")
        #expect(stdio.err.contains("is busy syncing with another device"), "\(stdio.err)")
        let tcp = try Tools.run("peer-sync", ["connect", "--db", p.kid, "--wait", "0", server.address], timeout: 30)
        #expect(tcp.status == 75, "\(tcp.err)")
        // serve --stdio itself says busy with status 75.
        let direct = try Tools.run("peer-sync", ["connect", "--db", p.kid, "--wait", "0", "--via", "sh -c '\(p.stdioServe); echo $? > \(p.dir.file("serve.status"))'"], timeout: 30)
        #expect(direct.status == 75)
        #expect((try? String(contentsOfFile: p.dir.file("serve.status"), encoding: .utf8)) == "75\n")
        lock.release()
        try Household.addRecords(p.kid, prefix: "k", count: 2)
        let ok = try Tools.run("peer-sync", ["connect", "--db", p.kid, "--via", p.stdioServe], timeout: 30)
        #expect(ok.status == 0, "\(ok.err)")
        #expect(ok.json?.int("records", "sent") == 2)
        let okTCP = try Tools.run("peer-sync", ["connect", "--db", p.kid, server.address], timeout: 30)
        #expect(okTCP.status == 0, "\(okTCP.err)")
        // A busy stdio session is retried by connect's backoff, like a TCP one: released after the first try, it succeeds.
        #expect(lock.tryAcquire())
        let releaser = Thread { usleep(700_000); lock.release() }
        releaser.start()
        let retried = try Tools.run("peer-sync", ["connect", "--db", p.kid, "--wait", "20s", "--via", p.stdioServe], timeout: 60)
        #expect(retried.status == 0, "\(retried.err)")
    }
}
