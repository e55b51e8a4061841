import Foundation
import Testing
import FamilySync

/// Discovery as a good neighbour on a simulated household network: a name
/// another device holds is given up for a new one (RFC 6762 probing and
/// conflict resolution), and a device reachable only over IPv6 is found and
/// synced with. Skipped, with the reason, where namespaces cannot be made.
@Suite(.serialized, .disabled(if: NetworkLab.unavailableReason != nil, Comment(rawValue: NetworkLab.unavailableReason ?? "")))
struct DiscoveryNeighbourTests {
    static let port = "\(SyncLimits.defaultPort)"

    static func lines(_ file: String) -> String { (try? String(contentsOfFile: file, encoding: .utf8)) ?? "" }

    /// Two serves of one store (a copied disk, say) claim the same day's
    /// name on one network: the second one's probe meets the first one's
    /// answer, it renames itself, and a member finds both.
    @Test func twoServesClaimingOneNameOneRenamesAndBothAreFound() throws {
        let lab = try NetworkLab(devices: 3)
        let dir = TempDir()
        let owner = dir.file("owner.db"), copy = dir.file("copy.db"), kid = dir.file("kid.db")
        let offer = try lab.run(0, "pair-qr", ["--db", owner, "--format", "text", "-o", dir.file("pair.txt")])
        #expect(offer.status == 0, "\(offer.err)")
        try FileManager.default.copyItem(atPath: owner, toPath: copy)
        let first = try lab.start(0, "peer-sync", ["serve", "--db", owner], dir: dir, name: "first")
        try HouseholdNetworkTests.waitFor("the first serve to advertise") { first.err.contains("advertising _family-sync._tcp on eth0") }
        let j = try lab.run(2, "peer-sync", ["join", "--db", kid], input: offer.json!["qr"]!.stringValue! + "\n")
        #expect(j.status == 0, "\(j.err)")
        // The member sees the first: its names are claimed (a serve answers only then).
        let seen = try lab.run(2, "peer-sync", ["discover", "--db", kid])
        #expect(seen.status == 0, "\(seen.err)")
        let second = try lab.start(1, "peer-sync", ["serve", "--db", copy], dir: dir, name: "second")
        do {
            try HouseholdNetworkTests.waitFor("the second serve to rename") { second.err.contains("advertising as ") }
        } catch {
            Issue.record("\(error): first: \(first.err) second: \(second.err)")
            throw error
        }
        #expect(second.err.contains("is taken on the network by another device"), "\(second.err)")

        let d = try lab.run(2, "peer-sync", ["discover", "--db", kid])
        #expect(d.status == 0, "\(d.err)")
        let found = d.json?["devices"]?.arrayValue ?? []
        let ownerID = try Household.device(owner)
        #expect(found.compactMap { $0["device"]?.stringValue } == [ownerID, ownerID], "\(d.out)")
        #expect(Set(found.compactMap { $0["address"]?.stringValue }) == ["\(lab.address(0)):\(Self.port)", "\(lab.address(1)):\(Self.port)"])

        // The first kept its name: it never saw a conflict.
        kill(first.pid, SIGTERM); kill(second.pid, SIGTERM)
        #expect(first.wait(timeout: 20) == 143)
        #expect(second.wait(timeout: 20) == 143)
        #expect(!first.err.contains("taken on the network"), "\(first.err)")
    }

    /// The addresses that answer an mDNS query for `name`'s A record on
    /// device `i`, asked the way a one-shot resolver asks (from an ephemeral
    /// port, RFC 6762 section 6.7), for `seconds`: an independent querier in
    /// Python's standard library, not our browser.
    static func answersForA(_ lab: NetworkLab, _ i: Int, _ name: String, seconds: Double = 2) throws -> Set<String> {
        let script = """
            import socket, struct, sys, time
            name, via, wait = sys.argv[1], sys.argv[2], float(sys.argv[3])
            q = struct.pack(">HHHHHH", 0x4a4a, 0, 1, 0, 0, 0) + b"".join(bytes([len(l)]) + l.encode() for l in name.split(".")) + b"\\0" + struct.pack(">HH", 1, 1)
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton(via))
            s.bind((via, 0))
            def skip(m, o):
                while m[o] != 0:
                    if m[o] & 0xC0 == 0xC0: return o + 2
                    o += 1 + m[o]
                return o + 1
            end = time.time() + wait
            s.sendto(q, ("224.0.0.251", 5353))
            while time.time() < end:
                s.settimeout(max(0.01, end - time.time()))
                try: m, src = s.recvfrom(9000)
                except socket.timeout: break
                qd, an = struct.unpack(">HH", m[4:8])
                o = 12
                for _ in range(qd): o = skip(m, o) + 4
                for _ in range(an):
                    o = skip(m, o)
                    t, c, ttl, n = struct.unpack(">HHIH", m[o:o + 10])
                    if t == 1 and n == 4: print(socket.inet_ntoa(m[o + 10:o + 14]), flush=True)
                    o += 10 + n
            """
        let r = try Tools.run(NetworkLab.ip, ["netns", "exec", lab.devices[i], "/usr/bin/python3", "-c", script, name, lab.address(i), "\(seconds)"], timeout: 30)
        guard r.status == 0 else { throw HarnessError("python3 mDNS query: \(r.err)") }
        return Set(r.lines)
    }

    /// Two devices of two families on one network whose machines have the
    /// same host name (two computers called "den"): neither serve answers
    /// for `den.local` (that answer would tie its day's tag to the machine,
    /// docs/protocol.md §12a), each claims and answers its own day's name,
    /// and neither sees a conflict.
    @Test func noServeAnswersForItsMachinesName() throws {
        let lab = try NetworkLab(devices: 3)
        let dir = TempDir()
        let host = "den"
        var serves: [BackgroundRun] = []
        defer { for s in serves where s.process.isRunning { kill(s.pid, SIGKILL) } }
        for (i, db) in [dir.file("a.db"), dir.file("b.db")].enumerated() {
            let offer = try lab.run(i, "pair-qr", ["--db", db, "--format", "text", "-o", dir.file("pair\(i).txt")])
            #expect(offer.status == 0, "\(offer.err)")
            // A UTS namespace of its own gives the serve the machine name.
            let s = try BackgroundRun("/usr/bin/unshare", ["--uts", "/bin/sh", "-c", "hostname \(host) && exec \(NetworkLab.ip) netns exec \"$0\" \"$1\" serve --db \"$2\"",
                                                           lab.devices[i], Tools.path("peer-sync"), db], dir: dir, name: "serve\(i)")
            serves.append(s)
            try HouseholdNetworkTests.waitFor("serve \(i) to advertise") { s.err.contains("advertising _family-sync._tcp on eth0") }
            // Its day's name is answered once claimed, i.e. after probing.
            let store = try Store(path: db)
            let tag = try DiscoveryTags(familyKey: try #require(try store.familySecret()), family: try #require(try store.family()).id)
                .deviceTag(try store.deviceID, day: DiscoveryTags.day(Timestamp.current()))
            try HouseholdNetworkTests.waitFor("\(tag).local to answer") { try Self.answersForA(lab, 2, "\(tag).local", seconds: 0.5) == [lab.address(i)] }
        }
        #expect(try Self.answersForA(lab, 2, "\(host).local").isEmpty)
        for s in serves { kill(s.pid, SIGTERM) }
        for s in serves { #expect(s.wait(timeout: 20) == 143) }
        for s in serves {
            #expect(!s.err.contains("taken on the network") && !s.err.contains("is used on the network"), "\(s.err)")
        }
    }

    /// An interface that comes up on the owner's device after its names are
    /// claimed (a second network on the same wire) is probed on before serve
    /// answers or announces anything there (RFC 6762 section 8.1). A listener
    /// on a member, in Python's standard library, asks for the service every
    /// 50 ms over that network and logs what comes from the new interface's
    /// address: three probes first, and only then answers.
    @Test func anInterfaceThatComesUpLaterIsProbedOnBeforeServeAnswersThere() throws {
        let lab = try NetworkLab(devices: 2)
        let dir = TempDir()
        let (_, offers, serve) = try HouseholdNetworkTests.ownerServing(lab, dir: dir, offers: 1)
        defer { if serve.process.isRunning { kill(serve.pid, SIGKILL) } }
        let kid = dir.file("kid.db")
        #expect(try lab.run(1, "peer-sync", ["join", "--db", kid], input: offers[0]["qr"]!.stringValue! + "\n").status == 0)
        // The names are claimed on eth0: a member's browse sees the owner.
        let seen = try lab.run(1, "peer-sync", ["discover", "--db", kid])
        #expect(seen.json?["devices"]?.arrayValue?.count == 1, "\(seen.out) \(seen.err)")

        try lab.sh(["-n", lab.devices[1], "addr", "add", "10.67.0.2/24", "dev", "eth0"])
        let script = """
            import socket, struct, sys, time
            watch, via, until = sys.argv[1], sys.argv[2], time.time() + float(sys.argv[3])
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
            s.bind(("", 5353))
            s.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, socket.inet_aton("224.0.0.251") + socket.inet_aton(via))
            s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton(via))
            ptr = struct.pack(">HHHHHH", 0, 0, 1, 0, 0, 0) + b"\\x0c_family-sync\\x04_tcp\\x05local\\x00" + struct.pack(">HH", 12, 1)
            print("ready", flush=True)
            next_query = 0
            while time.time() < until:
                if time.time() >= next_query:
                    s.sendto(ptr, ("224.0.0.251", 5353))
                    next_query = time.time() + 0.05
                s.settimeout(0.05)
                try: m, src = s.recvfrom(9000)
                except socket.timeout: continue
                if src[0] != watch or len(m) < 12: continue
                flags, qd, an, ns = struct.unpack(">HHHH", m[2:10])
                if flags & 0x8000 and an: print("response", flush=True)
                elif not flags & 0x8000 and ns: print("probe", flush=True)
            """
        let listener = try BackgroundRun(NetworkLab.ip, ["netns", "exec", lab.devices[1], "/usr/bin/python3", "-c", script, "10.67.0.1", "10.67.0.2", "30"],
                                         dir: dir, name: "listener")
        defer { if listener.process.isRunning { kill(listener.pid, SIGKILL) } }
        try HouseholdNetworkTests.waitFor("the listener") { listener.out.contains("ready") }
        try lab.plugSecondInterface(0, "10.67.0.1/24")
        try HouseholdNetworkTests.waitFor("an answer from the new interface", timeout: 25) { listener.out.contains("response") }
        let heard = listener.out.split(separator: "\n").map(String.init).filter { $0 != "ready" }
        let probesFirst = heard.prefix { $0 == "probe" }.count
        #expect(probesFirst >= 3, "\(heard)")
        // serve writes its line for the new interface once it answers there,
        // which may be just after the listener heard the answer.
        try HouseholdNetworkTests.waitFor("serve's line for eth1", timeout: 10) { serve.err.contains("eth1 (10.67.0.1)") }
        // Nothing on eth1 was taken for a conflict.
        #expect(!serve.err.contains("taken on the network"), "\(serve.err)")
    }

    /// The owner moves to IPv6 only (no IPv4 address at all) and serves on
    /// "::": Sync Now finds it over IPv6 (a ULA, then only its link-local
    /// address with the interface as scope), and remembers where.
    @Test func anOwnerReachableOnlyOverIPv6IsFoundAndSynced() throws {
        let lab = try NetworkLab(devices: 2)
        let dir = TempDir()
        let (owner, offers, serve) = try HouseholdNetworkTests.ownerServing(lab, dir: dir, offers: 1)
        let kid = dir.file("kid.db")
        #expect(try lab.run(1, "peer-sync", ["join", "--db", kid], input: offers[0]["qr"]!.stringValue! + "\n").status == 0)
        kill(serve.pid, SIGTERM)
        #expect(serve.wait(timeout: 20) == 143)

        try lab.addIPv6(0, "fd66::1/64")
        try lab.addIPv6(1, "fd66::2/64")
        try lab.removeIPv4(0)
        try Household.addRecords(owner, prefix: "six", count: 2)
        let v6 = try lab.start(0, "peer-sync", ["serve", "--db", owner, "--listen", "[::]:\(Self.port)"], dir: dir, name: "serve6")
        try HouseholdNetworkTests.waitFor("serve to advertise over IPv6") { v6.err.contains("advertising _family-sync._tcp on eth0 (fd66::1)") }

        let d = try lab.run(1, "peer-sync", ["discover", "--db", kid])
        #expect(d.status == 0, "\(d.err)")
        #expect(d.json?["devices"]?.arrayValue?.first?["address"]?.stringValue == "[fd66::1]:\(Self.port)", "\(d.out)")

        let c = try lab.run(1, "peer-sync", ["connect", "--db", kid], timeout: 60)
        #expect(c.status == 0, "\(c.err)")
        #expect(c.json?["address"]?.stringValue == "[fd66::1]:\(Self.port)")
        #expect(c.json?.int("records", "received") == 2)
        let st = try Tools.run("peer-sync", ["status", "--db", kid])
        #expect(st.json?["devices"]?.arrayValue?.first { $0["role"]?.stringValue == "owner" }?["lastAddress"]?.stringValue == "[fd66::1]:\(Self.port)")

        // Only the link-local address left: found with its scope, synced with.
        try lab.sh(["-n", lab.devices[0], "-6", "addr", "del", "fd66::1/64", "dev", "eth0"])
        let ll = try #require(try lab.linkLocal(0))
        try HouseholdNetworkTests.waitFor("serve to advertise its link-local address") { v6.err.contains("advertising _family-sync._tcp on eth0 (\(ll))") }
        let c2 = try lab.run(1, "peer-sync", ["connect", "--db", kid], timeout: 60)
        #expect(c2.status == 0, "\(c2.err) [serve: \(v6.err)]")
        #expect(c2.json?["address"]?.stringValue == "[\(ll)%eth0]:\(Self.port)")
        kill(v6.pid, SIGTERM)
        #expect(v6.wait(timeout: 20) == 143)
    }
}
