import Foundation
import Testing
import FamilySync

/// A flood of connections that never prove a key costs serve's journal and
/// --events one summary an interval, not a line each; a device that proved
/// its key is still told of, and reported, one line each.
@Suite(.serialized) struct BoundedNoiseTests {
    /// Connects, sends bytes that are not TLS, and waits until serve closes
    /// the connection (by then it has judged the handshake failed).
    static func garbage(port: UInt16) throws {
        let s = try TCPSocket.connect(to: HostPort(host: "127.0.0.1", port: port), timeout: .seconds(5))
        defer { s.close() }
        let junk = [UInt8](repeating: 0x47, count: 64)
        _ = junk.withUnsafeBytes { Glibc.write(s.fd, $0.baseAddress, $0.count) }
        var buf = [UInt8](repeating: 0, count: 4096)
        let deadline = Deadline(after: .seconds(20))
        while try s.wait(for: Int16(POLLIN), deadline: deadline) {
            let n = buf.withUnsafeMutableBytes { Glibc.read(s.fd, $0.baseAddress, $0.count) }
            if n <= 0 { return }
        }
        throw HarnessError("serve did not close a connection that sent garbage")
    }

    @Test func aFloodOfKeylessConnectionsIsOneSummaryNotALineEach() throws {
        let dir = TempDir()
        let (_, member, server) = try PeerSyncFaultTests.pair(dir)
        defer { server.stop() }
        let flood = 300
        for _ in 0..<flood { try Self.garbage(port: server.port) }
        // Two devices the owner never admitted: refused, unauthenticated.
        let clone = dir.file("clone.db")
        try FileManager.default.copyItem(atPath: member, toPath: clone)
        try Store(path: clone).db.run("UPDATE meta SET value = ? WHERE key = 'device_id'", [.text(try randomUUID())])
        for _ in 0..<2 { #expect(try Tools.run("peer-sync", ["connect", "--db", clone, "--wait", "0s", server.address]).status == 77) }
        // The member's own sync is reported as ever.
        let r = try Tools.run("peer-sync", ["connect", "--db", member, server.address], timeout: 60)
        #expect(r.status == 0, "\(r.err)")
        #expect(server.stop() == 143, "SIGTERM ends serve with 143")

        let events = server.eventLines()
        #expect(!events.contains { ["rejected", "refused", "busy"].contains($0["event"]?.stringValue ?? "") }, "no event per keyless connection")
        #expect(events.filter { $0["event"]?.stringValue == "joined" }.count == 1)
        #expect(events.filter { $0["event"]?.stringValue == "session" }.count == 1)
        let keyless = events.filter { $0["event"]?.stringValue == "keyless" }
        // The whole flood fits in one interval, so one summary, written when serve stopped.
        #expect(keyless.count == 1, "\(keyless)")
        let s = try #require(keyless.first)
        #expect(s["connections"]?.int64Value == Int64(flood + 2))
        #expect(s.at("reasons", "handshake")?.int64Value == Int64(flood))
        #expect(s.at("reasons", "unknown-key")?.int64Value == 2)
        #expect(s["addresses"]?.int64Value == 1)
        let first = try #require(s["first"]?.stringValue.flatMap { Timestamp(rfc3339: $0) })
        let last = try #require(s["last"]?.stringValue.flatMap { Timestamp(rfc3339: $0) })
        #expect(first <= last)

        // The journal: the listening line, the two sessions, the summary; nothing per connection.
        let lines = server.err.split(separator: "\n").map(String.init)
        #expect(!lines.contains { $0.contains("refused") }, "\(server.err)")
        let summary = lines.filter { $0.contains("without a key of this family") }
        #expect(summary == ["peer-sync: \(flood + 2) connections without a key of this family from 1 address (\(first.rfc3339) to \(last.rfc3339)): handshake \(flood), unknown-key 2"],
                "\(server.err)")
        #expect(lines.count <= 8, "\(server.err)")
    }
}

/// An mDNS query flood on a simulated household network: serve multicasts
/// each record at most once a second on the interface (RFC 6762 section 6),
/// not an answer per query. Skipped, with the reason, where namespaces cannot be made.
@Suite(.serialized, .disabled(if: NetworkLab.unavailableReason != nil, Comment(rawValue: NetworkLab.unavailableReason ?? "")))
struct MDNSQueryFloodTests {
    /// A querier on port 5353 (so answers are multicast to the group) in
    /// Python's standard library: asks for the service's PTR `count` times,
    /// a millisecond apart, then listens a second more; prints the responses
    /// that came from `server` and the seconds it all took.
    static let flood = """
        import socket, struct, sys, time
        via, server, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("", 5353))
        s.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, socket.inet_aton("224.0.0.251") + socket.inet_aton(via))
        s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton(via))
        s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_LOOP, 0)
        s.setblocking(False)
        q = struct.pack(">HHHHHH", 0, 0, 1, 0, 0, 0) + b"".join(bytes([len(l)]) + l.encode() for l in "_family-sync._tcp.local".split(".")) + b"\\0" + struct.pack(">HH", 12, 1)
        responses = 0
        def drain():
            global responses
            while True:
                try: m, src = s.recvfrom(9000)
                except BlockingIOError: return
                if src[0] == server and len(m) >= 12 and m[2] & 0x80: responses += 1
        start = time.time()
        for _ in range(count):
            s.sendto(q, ("224.0.0.251", 5353))
            drain()
            time.sleep(0.001)
        end = time.time() + 1
        while time.time() < end:
            drain()
            time.sleep(0.01)
        print(responses, time.time() - start)
        """

    @Test func aQueryFloodGetsAboutOneAnswerASecond() throws {
        let lab = try NetworkLab(devices: 2)
        let dir = TempDir()
        let owner = dir.file("owner.db")
        let offer = try lab.run(0, "pair-qr", ["--db", owner, "--format", "text", "-o", dir.file("pair.txt")])
        #expect(offer.status == 0, "\(offer.err)")
        let serve = try lab.start(0, "peer-sync", ["serve", "--db", owner], dir: dir, name: "serve")
        defer { if serve.process.isRunning { kill(serve.pid, SIGKILL) } }
        try HouseholdNetworkTests.waitFor("serve to advertise") { serve.err.contains("advertising _family-sync._tcp on eth0") }
        let r = try Tools.run(NetworkLab.ip, ["netns", "exec", lab.devices[1], "/usr/bin/python3", "-c", Self.flood, lab.address(1), lab.address(0), "2000"], timeout: 120)
        #expect(r.status == 0, "\(r.err)")
        let parts = r.out.split(separator: " ")
        let responses = try #require(parts.first.flatMap { Int($0) }, "\(r.out)")
        let seconds = try #require(parts.last.flatMap { Double($0.trimmingCharacters(in: .whitespacesAndNewlines)) }, "\(r.out)")
        // 2,000 queries: the PTR still answered (at least once), but at most
        // once for each second the flood lasted (plus the first, and the
        // announcements that may still be going out), not once a query.
        #expect(responses >= 1, "\(r.out)")
        #expect(responses <= Int(seconds) + 5, "\(responses) responses in \(seconds) s to 2,000 queries")
        kill(serve.pid, SIGTERM)
        #expect(serve.wait(timeout: 20) == 143)
    }
}
