import Foundation
import Testing
import FamilySync

/// A stranger with no key: it keeps a member's ClientHello it once saw (here
/// by answering that member at an address the member was given) and
/// replays it at the owner's serve. The PSK binder in those bytes verifies,
/// but the stranger cannot complete the handshake (its (EC)DHE share is the
/// member's), so nothing scarce may be taken for it (docs/protocol.md §5.1).
@Suite struct KeylessStrangerTests {
    /// The first TLS record a `peer-sync connect` of `member` sends to an
    /// address where the test listens: the member's ClientHello, as a
    /// stranger on the path keeps it.
    static func captureClientHello(of member: String) throws -> [UInt8] {
        let listener = try TCPSocket.listen(on: HostPort(host: "127.0.0.1", port: 0))
        defer { listener.close() }
        let port = try #require(listener.localAddress()?.port)
        let connect = try BackgroundRun("peer-sync", ["connect", "--db", member, "--wait", "0s", "127.0.0.1:\(port)"], dir: TempDir(), name: "victim")
        defer { _ = connect.wait(timeout: 30) }
        guard try listener.wait(for: Int16(POLLIN), deadline: Deadline(after: .seconds(30))), let s = try listener.accept() else {
            throw HarnessError("the member did not connect")
        }
        defer { s.close() }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while bytes.count < 5 || bytes.count < 5 + (Int(bytes[3]) << 8 | Int(bytes[4])) {
            guard try s.wait(for: Int16(POLLIN), deadline: Deadline(after: .seconds(30))) else { throw HarnessError("no ClientHello") }
            let n = chunk.withUnsafeMutableBytes { Glibc.read(s.fd, $0.baseAddress, $0.count) }
            guard n > 0 else { throw HarnessError("the member closed before its ClientHello") }
            bytes += chunk[0..<n]
        }
        let record = Array(bytes[0..<(5 + (Int(bytes[3]) << 8 | Int(bytes[4])))])
        guard record[0] == 0x16, record[5] == 0x01 else { throw HarnessError("not a ClientHello record") }
        return record
    }

    /// Replays `hello` at `port` every 50 ms on a thread of its own, holding
    /// each connection open, until `stop()`.
    final class Replayer: @unchecked Sendable {
        private let stopped = Locked(false)
        private let done = DispatchSemaphore(value: 0)
        let sent = Locked(0)

        init(_ hello: [UInt8], port: UInt16) {
            Thread.detachNewThread { [self] in
                var held: [TCPSocket] = []
                while !stopped.withLock({ $0 }) {
                    if let s = try? TCPSocket.connect(to: HostPort(host: "127.0.0.1", port: port), timeout: .seconds(1)) {
                        _ = hello.withUnsafeBytes { Glibc.write(s.fd, $0.baseAddress, $0.count) }
                        held.append(s)
                        sent.withLock { $0 += 1 }
                        if held.count > 200 { held.removeFirst().close() }
                    }
                    usleep(50_000)
                }
                for s in held { s.close() }
                done.signal()
            }
        }

        func stop() {
            stopped.withLock { $0 = true }
            done.wait()
        }
    }

    /// §5.1: a member's ClientHello replayed every 50 ms takes no session
    /// slot (the stranger never completes the handshake), so the member's
    /// own sync completes meanwhile, and so does a join; serve is not told
    /// BUSY by the stranger's connections.
    @Test func aReplayedClientHelloStallsNoSync() throws {
        let dir = TempDir()
        let (owner, member, server) = try PeerSyncFaultTests.pair(dir)
        defer { server.stop() }
        let hello = try Self.captureClientHello(of: member)
        let replayer = Replayer(hello, port: server.port)
        defer { replayer.stop() }
        // Replays are going on: wait until a few have been sent.
        for _ in 0..<200 where replayer.sent.withLock({ $0 }) < 10 { usleep(20_000) }
        for round in 0..<3 {
            let r = try Tools.run("peer-sync", ["connect", "--db", member, "--wait", "10s", server.address], timeout: 60)
            #expect(r.status == 0, "round \(round): \(r.err)")
            #expect(!r.err.contains("busy"), "round \(round): \(r.err)")
        }
        let second = dir.file("second.db")
        let offer = try Store(path: owner).makeOffer(ttl: .minutes(10), address: nil, now: Timestamp.current())
        let j = try Tools.run("peer-sync", ["join", "--db", second, "--wait", "10s", "--connect", server.address], input: offer.text + "\n")
        #expect(j.status == 0, "\(j.err)")
        #expect(replayer.sent.withLock { $0 } > 10)
    }
}
