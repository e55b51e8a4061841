import Foundation
import Testing
@testable import FamilySync

/// docs/protocol.md §6: a session that ends without an error of either side
/// (a member that learns of its own revocation, a peer silent for 45 s) ends
/// with close_notify and no ERROR, so the other side never takes it for a
/// truncated connection or a protocol error.
@Suite struct SessionEndTests {
    static let start = Timestamp(rfc3339: "2026-12-01T10:00:00.000Z")!

    /// The owner revoked the member; the member hears of it from the owner's
    /// signed roster in FAMILY, records it and ends the session with
    /// close_notify: the owner's side sees a clean close, not a lost connection.
    @Test func aMemberLearningItsRevocationSendsCloseNotify() throws {
        let h = try InProcessHousehold(members: 1, start: Self.start)
        let m = h.members[0]
        try h.revoke(m)
        let (client, server) = try h.session(m)
        guard case let .failure(e as SyncError) = client else { Issue.record("the member's session did not end revoked: \(client)"); return }
        #expect(e.kind == .revokedByRoster)
        guard case let .failure(o as SyncError) = server else { Issue.record("the owner's session did not end: \(server)"); return }
        #expect(o.kind == .connectionLost)
        #expect(o.detail.contains("closed the connection"), "\(o.detail)")
        #expect(!o.detail.contains("without a TLS close"), "\(o.detail)")
    }

    /// The owner's session with a peer that goes silent after its FAMILY ends
    /// at 45 s of silence (its timers read a clock the test moves) and sends
    /// close_notify: the silent side reads a clean close, and no ERROR.
    @Test func aSilentPeerIsSentCloseNotify() throws {
        let h = try InProcessHousehold(members: 1, start: Self.start)
        let m = h.members[0]
        let o = try Store(path: h.owner.path), s = try Store(path: m.path)
        let fam = try o.family()!
        let key = try SessionKeys.devicePSK(deviceKey: try s.ownDeviceKey()!, family: fam.id, client: m.id, server: h.owner.id)
        let identity = try s.sessionCredentials(server: h.owner.id).identity
        let listener = try TCPSocket.listen(on: HostPort(host: "127.0.0.1", port: 0))
        defer { listener.close() }
        let port = listener.localAddress()!.port
        // The owner's monotonic clock: the system's, plus a jump the test makes.
        let jump = Locked<UInt64>(0)
        let ownerTimers = MonotonicClock { Deadline(nanoseconds: Deadline.now().nanoseconds &+ jump.withLock { $0 }) }
        let result = Locked<Result<SyncSummary, any Error>?>(nil)
        nonisolated(unsafe) let (l, ownerStore) = (listener, o)
        let ownerID = h.owner.id, memberID = m.id
        nonisolated(unsafe) let verifier = try ProofVerifier()
        let t = Thread {
            let r = Result<SyncSummary, any Error> {
                guard try l.wait(for: Int16(POLLIN), deadline: Deadline(after: .seconds(20))), let sock = try l.accept() else { throw HarnessError("no connection") }
                let conn = try TLSConnection(server: sock, context: try TLSContext(role: .server), lookup: { _ in .key(key) })
                try conn.handshake(deadline: Deadline(after: .seconds(20)))
                return try SyncSession(store: ownerStore, family: fam, me: ownerID,
                                       peer: SessionPeer(device: memberID, address: nil, side: .server, joined: false),
                                       channel: FrameChannel(conn, clock: ownerTimers), options: SyncOptions(),
                                       clock: SyncClock(base: Self.start, monotonic: ownerTimers), observer: nil, verifier: verifier).run()
            }
            result.withLock { $0 = r }
        }
        t.start()
        let sock = try TCPSocket.connect(to: HostPort(host: "127.0.0.1", port: port), timeout: .seconds(10))
        let conn = try TLSConnection(client: sock, context: try TLSContext(role: .client), identity: identity, key: key)
        try conn.handshake(deadline: Deadline(after: .seconds(20)))
        let ch = FrameChannel(conn)
        ch.send(.hello, json: HelloMessage(device: m.id, family: fam.id, role: .member, clock: Self.start, epoch: try s.familyEpoch, after: 0).json)
        ch.send(.family, json: FamilyMessage(owner: h.owner.id, epoch: try s.familyEpoch, maxDevices: 4, devices: [], proof: nil, familyKey: nil).json)
        // The owner ends its records only after ours (its kept copies go back in the same session).
        ch.send(.recordsEnd, json: .object([("count", .int(0)), ("after", .int(0))]))
        try ch.drain(deadline: Deadline(after: .seconds(10)))
        var seen: [FrameType] = []
        func next() throws -> Frame? {
            let stashed = ch.takeStash()
            if let f = stashed.first { ch.stash = Array(stashed.dropFirst()); return f }
            return try ch.receive(deadline: Deadline(after: .seconds(20)))
        }
        while let f = try next() {
            seen.append(f.type)
            if f.type == .recordsEnd { break }
        }
        #expect(seen.contains(.recordsEnd))
        // We say nothing more; the owner's clock moves past its idle limit.
        jump.withLock { $0 = UInt64(SyncLimits.idleTimeout.milliseconds + 1_000) * 1_000_000 }
        while let f = try next() { seen.append(f.type) }
        #expect(ch.peerClosed == true)
        #expect(!seen.contains(.error))
        while result.withLock({ $0 == nil }) { usleep(1000) }
        guard case let .failure(e as SyncError) = result.withLock({ $0! }) else { Issue.record("the owner's session did not end"); return }
        #expect(e.kind == .connectionLost)
        sock.close()
    }
}
