import Foundation
import Testing
import FamilySync

/// Nothing linkable in clear (docs/protocol.md §3.3, §5.2, §12a): what a
/// stranger on the network sees of a family, with the release tools and a
/// hostile client of the tests' own. The ClientHellos of sessions and joins
/// (captured by a relay on the path) name no family, device or host and
/// share nothing; a stranger that copies a member's identity into its own
/// ClientHello learns no device from the notice it gets; meanwhile the
/// members still find and recognise each other.
@Suite(.serialized) struct NothingLinkableTests {
    /// A TCP relay on loopback in front of `target`: it carries each
    /// connection both ways, byte for byte, and keeps the first TLS record
    /// each client sent (its ClientHello), as a stranger on the path would.
    final class Relay: @unchecked Sendable {
        let listener: TCPSocket
        let port: UInt16
        let hellos = Locked<[[UInt8]]>([])
        private let stopped = Locked(false)
        /// Signalled once the accepting thread has closed the listener: only that thread touches it.
        private let closed = DispatchSemaphore(value: 0)

        init(to target: UInt16) throws {
            listener = try TCPSocket.listen(on: HostPort(host: "127.0.0.1", port: 0))
            port = try #require(listener.localAddress()?.port)
            Thread.detachNewThread { [self] in
                while !stopped.withLock({ $0 }) {
                    guard (try? listener.wait(for: Int16(POLLIN), deadline: Deadline(after: TimeSpan(milliseconds: 100)))) == true,
                          let client = try? listener.accept(),
                          let server = try? TCPSocket.connect(to: HostPort(host: "127.0.0.1", port: target), timeout: .seconds(5)) else { continue }
                    nonisolated(unsafe) let (c, sv) = (client, server)
                    Thread.detachNewThread { [self] in pump(c, sv, keep: true) }
                    Thread.detachNewThread { [self] in pump(sv, c, keep: false) }
                }
                listener.close()
                closed.signal()
            }
        }

        var address: String { "127.0.0.1:\(port)" }

        func stop() {
            stopped.withLock { $0 = true }
            closed.wait()
        }

        private func pump(_ from: TCPSocket, _ to: TCPSocket, keep: Bool) {
            var first: [UInt8] = []
            var kept = !keep
            var chunk = [UInt8](repeating: 0, count: 16384)
            while true {
                let n = chunk.withUnsafeMutableBytes { Glibc.read(from.fd, $0.baseAddress, $0.count) }
                if n < 0 && (errno == EINTR || errno == EAGAIN) {
                    guard (try? from.wait(for: Int16(POLLIN), deadline: Deadline(after: .seconds(60)))) == true else { break }
                    continue
                }
                guard n > 0 else { break }
                if !kept {
                    first += chunk[0..<n]
                    if first.count >= 5, first.count >= 5 + (Int(first[3]) << 8 | Int(first[4])) {
                        let record = Array(first[0..<(5 + (Int(first[3]) << 8 | Int(first[4])))])
                        hellos.withLock { $0.append(record) }
                        kept = true
                    }
                }
                var off = 0
                while off < n {
                    let w = chunk.withUnsafeBytes { Glibc.write(to.fd, $0.baseAddress! + off, n - off) }
                    if w < 0 && (errno == EINTR || errno == EAGAIN) {
                        guard (try? to.wait(for: Int16(POLLOUT), deadline: Deadline(after: .seconds(60)))) == true else { return }
                        continue
                    }
                    guard w > 0 else { return }
                    off += w
                }
            }
            shutdown(to.fd, Int32(SHUT_WR))
        }
    }

    /// The PSK identity a ClientHello record offers (RFC 8446 §4.2.11), and
    /// its random: the fields a client makes anew for each connection.
    static func identityAndRandom(_ record: [UInt8]) throws -> (identity: [UInt8], random: [UInt8]) {
        guard record.count > 9, record[0] == 0x16, record[5] == 0x01 else { throw HarnessError("not a ClientHello") }
        var i = 9 + 2
        let random = Array(record[i..<(i + 32)])
        i += 32
        i += 1 + Int(record[i])                                   // legacy_session_id
        i += 2 + (Int(record[i]) << 8 | Int(record[i + 1]))       // cipher_suites
        i += 1 + Int(record[i])                                   // legacy_compression_methods
        let end = i + 2 + (Int(record[i]) << 8 | Int(record[i + 1]))
        i += 2
        while i + 4 <= end {
            let type = Int(record[i]) << 8 | Int(record[i + 1]), length = Int(record[i + 2]) << 8 | Int(record[i + 3])
            if type == 41 {
                // identities<7..2^16-1>: the first identity<1..2^16-1>, then its obfuscated_ticket_age.
                let n = Int(record[i + 6]) << 8 | Int(record[i + 7])
                return (Array(record[(i + 8)..<(i + 8 + n)]), random)
            }
            i += 4 + length
        }
        throw HarnessError("the ClientHello offers no PSK")
    }

    static var hostName: String {
        var buf = [CChar](repeating: 0, count: 256)
        gethostname(&buf, buf.count - 1)
        return String(decoding: buf.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// §3.3: two syncs and a join, through a relay that keeps their
    /// ClientHellos. No family, device or host ID is in any of them, in any
    /// form, and no two identities share as much as 4 bytes past the
    /// version prefix; the owner still knows the member each time.
    @Test func theClientHellosOfSessionsAndJoinsNameNobodyAndShareNothing() throws {
        let dir = TempDir()
        let (owner, member, server) = try PeerSyncFaultTests.pair(dir)
        defer { server.stop() }
        let relay = try Relay(to: server.port)
        defer { relay.stop() }
        for round in 0..<2 {
            let r = try Tools.run("peer-sync", ["connect", "--db", member, relay.address], timeout: 60)
            #expect(r.status == 0, "round \(round): \(r.err)")
        }
        let joiner = dir.file("joiner.db")
        let j = try Tools.run("peer-sync", ["join", "--db", joiner, "--connect", relay.address], input: try Household.offer(owner) + "\n")
        #expect(j.status == 0, "\(j.err)")
        let hellos = relay.hellos.withLock { $0 }
        #expect(hellos.count == 3, "two syncs and a join, one connection each")
        let ids = [try #require(try Store(path: owner).family()).id, try Household.device(owner), try Household.device(member), try Household.device(joiner)]
        let host = Self.hostName
        var seen: [(identity: [UInt8], random: [UInt8])] = []
        for (n, hello) in hellos.enumerated() {
            for id in ids { #expect(!InClear.holds(hello, id), "ClientHello \(n) holds \(id)") }
            if host.count >= 4 { #expect(!InClear.holds(hello, word: host), "ClientHello \(n) holds the host name \(host)") }
            let fields = try Self.identityAndRandom(hello)
            #expect(fields.identity.starts(with: Array("FS4 ".utf8)), "\(String(decoding: fields.identity, as: UTF8.self))")
            for before in seen {
                #expect(InClear.sharedRun(Array(fields.identity.dropFirst(4)), Array(before.identity.dropFirst(4)), length: 8) == nil, "identity \(n)")
                #expect(fields.random != before.random)
            }
            seen.append(fields)
        }
    }

    /// §5.1, §5.2: a stranger copies the identities of a member's
    /// ClientHellos (one meant for the owner, one for another member) into
    /// ClientHellos of its own and sends them, and a made-up one, to the
    /// owner's and the member's serves. Where the identity opens to a
    /// session the handshake fails (it cannot prove the key); everywhere
    /// else it gets one notice, `unknown-key`, the same words each time, a
    /// hint it cannot read and no ID: nothing tells a copied identity from a
    /// made-up one. Meanwhile the member, which guessed the owner at the
    /// other member's address, read that member's hint and synced with it.
    @Test func aStrangerCopyingAMembersIdentityLearnsNoDeviceFromNotices() throws {
        let dir = TempDir()
        let owner = dir.file("owner.db"), a = dir.file("a.db"), b = dir.file("b.db")
        _ = try Household.owner(owner)
        let server = try ServeProcess(db: owner, dir: dir)
        defer { server.stop() }
        for m in [a, b] { #expect(try Household.join(m, server: server, offer: try Household.offer(owner)).status == 0) }
        let bServe = try ServeProcess(db: b, dir: dir, name: "b")
        defer { bServe.stop() }
        let relay = try Relay(to: bServe.port)
        defer { relay.stop() }
        // A has never completed a session at this address: it guesses the owner, B cannot open
        // that identity, and A follows B's hint to a second ClientHello, sealed for B.
        let r = try Tools.run("peer-sync", ["connect", "--db", a, "--events", dir.file("a.events"), relay.address], timeout: 60)
        #expect(r.status == 0, "\(r.err)")
        let aEvents = (try? String(contentsOfFile: dir.file("a.events"), encoding: .utf8)) ?? ""
        let bID = try Household.device(b)
        #expect(aEvents.contains("\"peer-hint\"") && aEvents.contains(bID), "\(aEvents)")
        let hellos = relay.hellos.withLock { $0 }
        #expect(hellos.count == 2)
        let copied = try hellos.map { try Self.identityAndRandom($0).identity }
        let madeUp = try SessionIdentity.sync(client: try randomUUID(), server: try randomUUID())
            .sealed(family: try randomUUID(), under: HeldKey(.family(epoch: 0), secret: try SecretBytes.random(count: 32)))
        let ids = [try #require(try Store(path: owner).family()).id] + (try [owner, a, b].map { try Household.device($0) })
        var notices: [JSONValue] = []
        var failed = 0
        for port in [server.port, bServe.port] {
            for identity in copied + [madeUp] {
                guard let peer = try? RawPeer(port: port, identity: identity, key: try SecretBytes.random(count: 32)) else {
                    // The serve took the identity for one it serves and chose its key: the copy cannot finish the handshake.
                    failed += 1
                    continue
                }
                defer { peer.drop() }
                #expect(!peer.conn.isAuthenticated)
                let f = try #require(try peer.readFrame(timeout: 30))
                #expect(f.type == 0x03)
                for id in ids { #expect(!InClear.holds(f.payload, id), "a notice names \(id): \(String(decoding: f.payload, as: UTF8.self))") }
                notices.append(try JSONParser.parse(String(decoding: f.payload, as: UTF8.self)))
            }
        }
        // A's identity for B at B, and for the owner at the owner (a key each holds), fail; four notices.
        #expect(failed == 2 && notices.count == 4, "\(failed) \(notices)")
        #expect(Set(notices.compactMap { $0["reason"]?.stringValue }) == ["unknown-key"], "\(notices)")
        #expect(Set(notices.compactMap { $0["message"]?.stringValue }).count == 1, "\(notices)")
        let hints = notices.compactMap { $0["hint"]?.stringValue }
        #expect(hints.count == 4 && Set(hints).count == 4, "\(notices)")
        #expect(notices.allSatisfy { $0["device"] == nil })
    }

    /// §5.2: a member that connects to an address where its own serve
    /// listens reads its own ID in the hint of the notice, says so, and
    /// changes nothing; nothing in the notice names it to anyone else.
    @Test func aDeviceThatReachesItselfSaysSo() throws {
        let dir = TempDir()
        let (_, member, server) = try PeerSyncFaultTests.pair(dir)
        defer { server.stop() }
        let own = try ServeProcess(db: member, dir: dir, name: "own")
        defer { own.stop() }
        let before = try Household.fingerprint(member)
        let r = try Tools.run("peer-sync", ["connect", "--db", member, "--wait", "0s", own.address], timeout: 60)
        #expect(r.status == 77, "\(r.err)")
        #expect(r.err.contains("\(own.address) is this device itself"), "\(r.err)")
        own.stop()
        #expect(try Household.fingerprint(member) == before)
    }

    /// §12a: a passive listener on the household network, over two days of
    /// serve's clock (`--now`), with an offer open on the first: no record
    /// carries the family, a device or the machine's name (which it also
    /// asks for), the TXT is the protocol version alone, and no name or
    /// string of the first day comes back on the second. A member still
    /// finds the owner on both days.
    @Test(.disabled(if: NetworkLab.unavailableReason != nil, Comment(rawValue: NetworkLab.unavailableReason ?? "")))
    func theAdvertisementsOfTwoDaysNameNobodyAndShareNothing() throws {
        let lab = try NetworkLab(devices: 2)
        let dir = TempDir()
        let owner = dir.file("owner.db"), kid = dir.file("kid.db")
        let host = "annas-laptop"
        let today = Timestamp.current()
        var captures: [[(source: String, packet: DNSMessage, bytes: [UInt8])]] = []
        for (day, now) in [today, today.adding(.days(1))].enumerated() {
            let listener = try BackgroundRun("/usr/sbin/ip", ["netns", "exec", lab.devices[1], "/usr/bin/python3", "-c", Self.passiveListener,
                                                             lab.address(1), "\(host).local", "7"], dir: dir, name: "listen\(day)")
            usleep(300_000)
            // The owner's family (and the offer the member redeems) before serve starts.
            let offer = day == 0 ? try lab.run(0, "pair-qr", ["--db", owner, "--format", "text", "-o", dir.file("pair.txt")]) : nil
            let serve = try BackgroundRun("/usr/bin/unshare", ["--uts", "/bin/sh", "-c",
                                                               "hostname \(host) && exec \(NetworkLab.ip) netns exec \"$0\" \"$1\" serve --db \"$2\" --now \"$3\"",
                                                               lab.devices[0], Tools.path("peer-sync"), owner, now.rfc3339], dir: dir, name: "serve\(day)")
            defer { if serve.process.isRunning { kill(serve.pid, SIGKILL) } }
            if day == 0 {
                try HouseholdNetworkTests.waitFor("serve to listen") { serve.err.contains("listening on") }
                let j = try lab.run(1, "peer-sync", ["join", "--db", kid, "--now", now.rfc3339], input: offer!.json!["qr"]!.stringValue! + "\n")
                #expect(j.status == 0, "\(j.err)")
                // An offer stays open for the rest of the day's capture.
                #expect(try lab.run(0, "pair-qr", ["--db", owner, "--format", "text", "-o", dir.file("pair2.txt")]).status == 0)
            }
            #expect(listener.wait(timeout: 30) == 0, "\(String(decoding: FileManager.default.contents(atPath: listener.stderrPath) ?? Data(), as: UTF8.self))")
            let d = try lab.run(1, "peer-sync", ["discover", "--db", kid, "--now", now.rfc3339])
            let ownerID = try Household.device(owner)
            #expect(d.status == 0 && d.json?["devices"]?.arrayValue?.first?["device"]?.stringValue == ownerID, "day \(day): \(d.out) \(d.err)")
            kill(serve.pid, SIGTERM)
            #expect(serve.wait(timeout: 20) == 143)
            let text = (try? String(contentsOfFile: listener.stdoutPath, encoding: .utf8)) ?? ""
            captures.append(text.split(separator: "\n").compactMap { line in
                let parts = line.split(separator: " ")
                guard parts.count == 2, let bytes = Hex.decode(String(parts[1])), let m = try? DNSMessage(parsing: bytes) else { return nil }
                return (String(parts[0]), m, bytes)
            }.filter { $0.source == lab.address(0) })
        }
        let ids = [try #require(try Store(path: owner).family()).id, try Household.device(owner), try Household.device(kid)]
        var words: [Set<String>] = []
        for (day, packets) in captures.enumerated() {
            #expect(packets.contains { $0.packet.isResponse }, "day \(day): serve answered or announced")
            var seen: Set<String> = []
            for p in packets {
                for id in ids { #expect(!InClear.holds(p.bytes, id), "day \(day) names \(id)") }
                #expect(!InClear.holds(p.bytes, word: host), "day \(day) names the machine")
                for r in p.packet.answers + p.packet.additionals + p.packet.authorities {
                    seen.formUnion(Self.words(r.name))
                    switch r.data {
                    case let .txt(strings):
                        #expect(strings.map { String(decoding: $0, as: UTF8.self) } == ["v=\(SyncProtocol.version)"], "day \(day)")
                        seen.formUnion(strings.map { String(decoding: $0, as: UTF8.self) })
                    case let .ptr(target): seen.formUnion(Self.words(target))
                    case let .srv(_, _, _, target): seen.formUnion(Self.words(target))
                    default: break
                    }
                }
            }
            words.append(seen)
        }
        // What every family-sync device of this version sends alike; everything else is the day's own.
        let alike: Set<String> = ["_family-sync", "_tcp", "local", "_services", "_dns-sd", "_udp", "v=\(SyncProtocol.version)"]
        #expect(words[0].subtracting(alike).count >= 1 && words[1].subtracting(alike).count >= 1, "\(words)")
        #expect(words[0].intersection(words[1]).subtracting(alike).isEmpty, "\(words)")
    }

    static func words(_ name: DNSName) -> [String] { name.labels.map { String(decoding: $0, as: UTF8.self).lowercased() } }

    /// A listener in Python's standard library on the household network: it
    /// asks, once a second, for the service, for the list of services and
    /// for the machine's `NAME.local`, and prints every mDNS packet it hears
    /// as "SOURCE HEX", for the seconds given.
    static let passiveListener = """
        import socket, struct, sys, time
        via, name, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
        def q(n, t): return b"".join(bytes([len(l)]) + l.encode() for l in n.split(".")) + b"\\0" + struct.pack(">HH", t, 1)
        query = struct.pack(">HHHHHH", 0, 0, 3, 0, 0, 0) + q("_family-sync._tcp.local", 12) + q("_services._dns-sd._udp.local", 12) + q(name, 255)
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("", 5353))
        s.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, socket.inet_aton("224.0.0.251") + socket.inet_aton(via))
        s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton(via))
        end, ask = time.time() + seconds, 0
        while time.time() < end:
            if time.time() >= ask:
                s.sendto(query, ("224.0.0.251", 5353))
                ask = time.time() + 1
            s.settimeout(max(0.01, min(end, ask) - time.time()))
            try: m, src = s.recvfrom(9000)
            except socket.timeout: continue
            print(src[0], m.hex(), flush=True)
        """

    /// Finding the owner with an offer and nothing on the network naming it
    /// (§12a, §9): the offer's address leads to another family's serve,
    /// which answers `unknown-key`; join passes it over, tries the services
    /// it browses for, and joins the owner that made the offer.
    @Test(.disabled(if: NetworkLab.unavailableReason != nil, Comment(rawValue: NetworkLab.unavailableReason ?? "")))
    func aJoinPassesOverAnotherFamilysServiceToTheOwnerThatMadeTheOffer() throws {
        let lab = try NetworkLab(devices: 3)
        let dir = TempDir()
        let other = dir.file("other.db"), owner = dir.file("owner.db"), kid = dir.file("kid.db")
        #expect(try lab.run(0, "pair-qr", ["--db", other, "--format", "text", "-o", dir.file("other.txt")]).status == 0)
        // The offer says the owner is where the other family's device is (a lease that moved, say).
        let offer = try lab.run(1, "pair-qr", ["--db", owner, "--addr", "\(lab.address(0)):\(SyncLimits.defaultPort)", "--format", "text", "-o", dir.file("pair.txt")])
        #expect(offer.status == 0, "\(offer.err)")
        var serves: [BackgroundRun] = []
        defer { for s in serves where s.process.isRunning { kill(s.pid, SIGKILL) } }
        for (i, db) in [other, owner].enumerated() {
            let s = try lab.start(i, "peer-sync", ["serve", "--db", db], dir: dir, name: "serve\(i)")
            serves.append(s)
            try HouseholdNetworkTests.waitFor("serve \(i) to advertise") { s.err.contains("advertising _family-sync._tcp on eth0") }
        }
        let j = try lab.run(2, "peer-sync", ["join", "--db", kid, "--events", dir.file("join.events")], input: offer.json!["qr"]!.stringValue! + "\n", timeout: 90)
        #expect(j.status == 0, "\(j.err)")
        #expect(try Store(path: kid).family()?.id == (try Store(path: owner).family()?.id))
        #expect(j.json?["address"]?.stringValue == "\(lab.address(1)):\(SyncLimits.defaultPort)", "\(j.out)")
        let events = (try? String(contentsOfFile: dir.file("join.events"), encoding: .utf8)) ?? ""
        #expect(events.contains("\"passing-over\"") && events.contains("\(lab.address(0)):\(SyncLimits.defaultPort)"), "\(events)")
    }
}
