import Foundation
import Testing
import FamilySync

/// Connections that open and then say nothing (or half a ClientHello) on
/// loopback, held by the test, closed when the value goes away.
final class StalledConnections {
    private(set) var fds: [Int32] = []

    /// `idle` connections that send nothing and `partial` that send the
    /// first part of a TLS ClientHello record and stop.
    init(port: UInt16, idle: Int, partial: Int) throws {
        for i in 0..<(idle + partial) {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard fd >= 0 else { throw HarnessError("socket: \(String(cString: strerror(errno)))") }
            fds.append(fd)
            var a = sockaddr_in()
            a.sin_family = sa_family_t(AF_INET)
            a.sin_port = port.bigEndian
            a.sin_addr.s_addr = inet_addr("127.0.0.1")
            let rc = withUnsafePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
            guard rc == 0 else { throw HarnessError("connect: \(String(cString: strerror(errno)))") }
            if i >= idle {
                // A handshake record announcing 512 bytes, a ClientHello header, then 60 of them.
                let part: [UInt8] = [0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xFC, 0x03, 0x03] + [UInt8](repeating: 0x5A, count: 60)
                _ = part.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
            }
        }
    }

    deinit { for fd in fds { close(fd) } }

    /// How many of them the server has closed (a read sees end of file or a reset), waiting at most `timeout`.
    func closedByServer(timeout: TimeInterval) -> Int {
        let deadline = Date().addingTimeInterval(timeout)
        var closed = Set<Int32>()
        while closed.count < fds.count && Date() < deadline {
            var polls = fds.filter { !closed.contains($0) }.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            guard poll(&polls, nfds_t(polls.count), 100) > 0 else { continue }
            for p in polls where p.revents != 0 {
                var buf = [UInt8](repeating: 0, count: 4096)
                let n = recv(p.fd, &buf, buf.count, Int32(MSG_DONTWAIT))
                if n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) { closed.insert(p.fd) }
            }
        }
        return closed.count
    }
}

/// A server nobody can stall: idle and half-open connections hold up no real
/// peer, and the server lets go of them.
@Suite(.serialized) struct PeerSyncStallTests {
    /// 50 idle connections and 10 that sent half a ClientHello are open when
    /// a member joins: the join completes, and the server closes all 60.
    @Test func joinCompletesPastSixtyStalledConnections() throws {
        let dir = TempDir()
        let owner = dir.file("owner.db"), kid = dir.file("kid.db")
        let offer = try Household.owner(owner)
        try Household.addRecords(owner, prefix: "o", count: 20)
        let server = try ServeProcess(db: owner, dir: dir)
        defer { server.stop() }

        let stalled = try StalledConnections(port: server.port, idle: 50, partial: 10)
        let j = try Household.join(kid, server: server, offer: offer)
        #expect(j.status == 0, "\(j.err)")
        #expect(j.json?["joined"]?.boolValue == true)
        #expect(j.json?.int("records", "received") == 20)
        #expect(try Household.digest(kid) == Household.digest(owner))
        // Every stalled connection is let go: the oldest when newer ones came, the rest at their deadline.
        #expect(stalled.closedByServer(timeout: 30) == 60)
        #expect(server.process.isRunning)
        // Each of them is counted in the keyless summary serve writes when it stops, none on its own.
        server.stop()
        let events = server.eventLines()
        #expect(!events.contains { $0["event"]?.stringValue == "rejected" })
        let counted = events.filter { $0["event"]?.stringValue == "keyless" }.compactMap { $0["connections"]?.int64Value }.reduce(0, +)
        #expect(counted >= 60)
    }

    /// One idle connection open before a member's sync: the sync goes through
    /// as if it were not there, and a later one does too.
    @Test func syncGoesPastOneIdleConnection() throws {
        let dir = TempDir()
        let owner = dir.file("owner.db"), kid = dir.file("kid.db")
        let offer = try Household.owner(owner)
        let server = try ServeProcess(db: owner, dir: dir)
        defer { server.stop() }
        let j = try Household.join(kid, server: server, offer: offer)
        #expect(j.status == 0, "\(j.err)")

        let stalled = try StalledConnections(port: server.port, idle: 1, partial: 0)
        try Household.addRecords(kid, prefix: "k", count: 5)
        let c = try Tools.run("peer-sync", ["connect", "--db", kid, "--wait", "0s", server.address], timeout: 60)
        #expect(c.status == 0, "\(c.err)")
        #expect(c.json?.int("records", "sent") == 5)
        let again = try Tools.run("peer-sync", ["connect", "--db", kid, "--wait", "0s", server.address], timeout: 60)
        #expect(again.status == 0, "\(again.err)")
        #expect(stalled.closedByServer(timeout: 30) == 1)
    }
}

/// A server that completes the TLS handshake without any key (as for a
/// notice) and then sends one frame of its choosing: what a fake server on
/// the network can do to a client.
final class FakeNoticeServer: @unchecked Sendable {
    let port: UInt16
    private let listener: TCPSocket
    private let done = DispatchSemaphore(value: 0)

    init(frame: [UInt8]) throws {
        listener = try TCPSocket.listen(on: HostPort(host: "127.0.0.1", port: 0))
        guard let bound = listener.localAddress() else { throw HarnessError("the fake server has no port") }
        port = bound.port
        let context = try TLSContext(role: .server)
        Thread.detachNewThread { [self] in
            defer { done.signal() }
            guard (try? listener.wait(for: Int16(POLLIN), deadline: Deadline(after: .seconds(60)))) == true,
                  let sock = try? listener.accept(),
                  let conn = try? TLSConnection(server: sock, context: context, lookup: { _ in .noKey }),
                  (try? conn.handshake(deadline: Deadline(after: .seconds(10)))) != nil else { return }
            var off = 0
            let until = Deadline(after: .seconds(20))
            while off < frame.count && !until.hasPassed {
                guard let r = try? frame.withUnsafeBytes({ try conn.write(UnsafeRawBufferPointer(rebasing: $0[off...])) }) else { return }
                switch r {
                case let .bytes(n): off += n
                case .closed: return
                case .wantRead, .wantWrite: _ = try? sock.wait(for: Int16(POLLOUT), deadline: Deadline(after: .seconds(1)))
                }
            }
        }
    }

    var address: String { "127.0.0.1:\(port)" }
    func finish() { _ = done.wait(timeout: .now() + 30) }

    /// A BUSY notice whose payload is an object of `keys` members (about 10 bytes each).
    static func busyFrame(keys: Int) -> [UInt8] {
        let alphabet = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789".utf8)
        var p: [UInt8] = [UInt8(ascii: "{")]
        p.reserveCapacity(keys * 10 + 2)
        for i in 0..<keys {
            if i > 0 { p.append(UInt8(ascii: ",")) }
            let a = alphabet[i % 62], b = alphabet[i / 62 % 62], c = alphabet[i / 3844 % 62]
            p += [0x22, a, b, c, 0x22, UInt8(ascii: ":"), UInt8(ascii: "1"), UInt8(ascii: "."), UInt8(ascii: "5")]
        }
        p.append(UInt8(ascii: "}"))
        let n = UInt32(p.count)
        return [UInt8(n >> 24), UInt8(n >> 16 & 0xFF), UInt8(n >> 8 & 0xFF), UInt8(n & 0xFF), 0x04] + p
    }
}

/// Before authentication a server has proved nothing: a client reads at most
/// a few KiB of notice from it and gives up on anything larger.
@Suite(.serialized) struct HostileServerTests {
    @Test func hugeNoticeIsRefusedByConnect() throws {
        let dir = TempDir()
        let owner = dir.file("owner.db"), kid = dir.file("kid.db")
        let offer = try Household.owner(owner)
        do {
            let server = try ServeProcess(db: owner, dir: dir)
            defer { server.stop() }
            #expect(try Household.join(kid, server: server, offer: offer).status == 0)
        }
        let frame = FakeNoticeServer.busyFrame(keys: 200_000)
        #expect(frame.count > 1_900_000 && frame.count <= Frame.maxPayloadBytes)
        let fake = try FakeNoticeServer(frame: frame)
        let before = try Household.fingerprint(kid)
        let r = try Tools.run("peer-sync", ["connect", "--db", kid, "--wait", "0s", fake.address], timeout: 60)
        fake.finish()
        #expect(r.status == 65, "\(r.err)")
        #expect(r.err.contains("protocol error from \(fake.address): a notice before authentication: frame of \(frame.count - 5) bytes exceeds the limit of \(Frame.maxNoticeBytes)"), "\(r.err)")
        #expect(r.out.isEmpty)
        #expect(try Household.fingerprint(kid) == before)
    }

    @Test func hugeNoticeIsRefusedByJoinAndNothingIsStored() throws {
        let dir = TempDir()
        let offer = try Household.owner(dir.file("owner.db"))
        let fake = try FakeNoticeServer(frame: FakeNoticeServer.busyFrame(keys: 200_000))
        let kid = dir.file("kid.db")
        let r = try Tools.run("peer-sync", ["join", "--db", kid, "--connect", fake.address], input: offer + "\n")
        fake.finish()
        #expect(r.status == 65, "\(r.err)")
        #expect(r.err.contains("a notice before authentication"))
        #expect(!FileManager.default.fileExists(atPath: kid))
    }
}
