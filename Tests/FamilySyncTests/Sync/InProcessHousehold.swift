import Foundation
@testable import FamilySync
import Testing

/// A star household whose sessions run in this process: real stores, real
/// TLS over loopback, the real `SyncSession` on both ends, each device with a
/// clock of its own. It skips what the tools add around a session (argument
/// parsing, the serve loop, refusals), so thousands of schedules fit in a test
/// run; the end-to-end suites run the same rules through the tools.
final class InProcessHousehold {
    final class Device {
        let path: String
        let isOwner: Bool
        /// This device's clock minus true time.
        var offset: TimeSpan
        var id: String
        init(path: String, isOwner: Bool, offset: TimeSpan, id: String) {
            self.path = path
            self.isOwner = isOwner
            self.offset = offset
            self.id = id
        }
    }

    let dir: String
    let owner: Device
    private(set) var members: [Device] = []
    /// True time, which only the test knows.
    var now: Timestamp
    /// How both sides of every session behave (a small batch count cuts sessions between many batches).
    var options = SyncOptions()
    private let verifier: ProofVerifier
    /// One open store per device, by path, as a serve keeps its own open: opening a store
    /// (its checks, its photo file, its schema) costs more than most steps of a schedule.
    /// Used from the test's thread, and each by one session side at a time.
    private var stores: [String: Store] = [:]

    var all: [Device] { [owner] + members }

    /// `onDisk`: the stores in the temporary folder, for a test of how they
    /// reach the disk; else in memory where there is room (the schedules test
    /// the rules, not the disk).
    init(members count: Int, start: Timestamp, ownerOffset: TimeSpan = .seconds(0), onDisk: Bool = false) throws {
        let base = !onDisk && FileManager.default.isWritableFile(atPath: "/dev/shm") ? "/dev/shm" : NSTemporaryDirectory()
        dir = base + "/fs-household-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        now = start
        verifier = try ProofVerifier()
        let o = try Store(path: dir + "/owner.db")
        stores[o.path] = o
        _ = try o.write { try o.createFamily(now: start.adding(ownerOffset)) }
        owner = Device(path: o.path, isOwner: true, offset: ownerOffset, id: try o.deviceID)
        for i in 0..<count { _ = try admit(name: "m\(i)") }
    }

    deinit { try? FileManager.default.removeItem(atPath: dir) }

    func clock(_ d: Device) -> Timestamp { now.adding(d.offset) }

    /// Pairs a new store (as a WELCOME would) and runs its first session.
    func admit(name: String, offset: TimeSpan = .seconds(0)) throws -> Device {
        let m = try Store(path: dir + "/\(name).db")
        stores[m.path] = m
        let d = Device(path: m.path, isOwner: false, offset: offset, id: try m.deviceID)
        try rejoin(d)
        return d
    }

    /// A new admission of `d`'s store: a new device key, cursors cleared, then a session.
    func rejoin(_ d: Device) throws {
        let (o, m) = (try store(owner), try store(d))
        let fam = try o.family()!
        let key = try o.write {
            // As the owner's join does: a revoked device invited again starts over.
            if try o.device(d.id) != nil {
                try o.forgetDeviceInTransaction(d.id)
                try o.forgetAcknowledgementPoints(member: d.id)
            }
            return try o.admitDeviceInTransaction(d.id, now: clock(owner))
        }
        let rejoining = try m.family() != nil
        try m.write {
            if rejoining { try m.prepareRejoin() }
            try m.joinFamily(id: fam.id, ownerDevice: fam.ownerDevice, secret: try o.familySecret()!, now: clock(d))
            try m.setOwnDeviceKey(key)
            if try o.familyEpoch > m.familyEpoch { try m.setFamilyKey(try o.familySecret()!, epoch: try o.familyEpoch) }
        }
        if !members.contains(where: { $0 === d }) { members.append(d) }
        try sync(d)
    }

    func revoke(_ d: Device) throws {
        let o = try store(owner)
        _ = try o.write { try o.revokeDeviceInTransaction(d.id, now: clock(owner)) }
    }

    /// Local edits on `d`, stamped by its clock.
    func edit(_ d: Device, _ lines: [String]) throws {
        let s = try store(d)
        _ = try s.applyLocalEdits(try lines.map { try Record(line: $0, mode: .localEdit) }, now: clock(d))
    }

    func gc(_ d: Device) throws -> GarbageReport {
        try store(d).collectGarbage(now: clock(d))
    }

    /// One session between member `m` and the owner whose connection is cut
    /// after `bytes` have crossed it, either way (a link dropped, a laptop
    /// closed): both sides end as they do when a connection is lost, keeping
    /// whole batches and moving no cursor. Returns whether it completed anyway
    /// (the cut came after everything).
    @discardableResult
    func interruptedSync(_ m: Device, cutAfter bytes: Int) throws -> Bool {
        // As every tool does: a write to a connection the cut closed is EPIPE, not the end of the process.
        signal(SIGPIPE, SIG_IGN)
        let relay = try TCPSocket.listen(on: HostPort(host: "127.0.0.1", port: 0))
        let relayPort = relay.localAddress()!.port
        let (client, server) = try session(m, via: relay, relayPort: relayPort, cutAfter: bytes, owner: owner)
        for side in [client, server] {
            guard case let .failure(e) = side else { continue }
            // Learning its revocation is no cut; anything but a lost link is a failure of its own.
            if let e = e as? SyncError, e.kind == .revokedByRoster { throw e }
            guard e is SyncError || e is TLSError || e is ProtocolError || e is PeerReportedError else { throw e }
        }
        if case .success = client, case .success = server { return true }
        return false
    }

    /// Forwards bytes between `a` and `b` until `limit` have crossed, then
    /// ends both directions with a FIN and drops whatever either end still
    /// sends until it closes. Closing at once with bytes unread would send a
    /// reset instead, and a reset discards what already crossed but was not
    /// yet read: where the cut falls would then depend on how fast each side
    /// reads, not on the byte count.
    static func relay(_ a: TCPSocket, _ b: TCPSocket, limit: Int) {
        var moved = 0
        var buf = [UInt8](repeating: 0, count: 4096)
        defer {
            shutdown(a.fd, Int32(SHUT_WR))
            shutdown(b.fd, Int32(SHUT_WR))
            var open = [a, b]
            while !open.isEmpty {
                var fds = open.map { pollfd(fd: $0.fd, events: Int16(POLLIN), revents: 0) }
                guard poll(&fds, nfds_t(fds.count), 20_000) > 0 else { break }
                for (i, s) in open.enumerated().reversed() where fds[i].revents != 0 {
                    if buf.withUnsafeMutableBytes({ Glibc.read(s.fd, $0.baseAddress, $0.count) }) <= 0 { open.remove(at: i) }
                }
            }
            a.close(); b.close()
        }
        while moved < limit {
            var fds = [pollfd(fd: a.fd, events: Int16(POLLIN), revents: 0), pollfd(fd: b.fd, events: Int16(POLLIN), revents: 0)]
            guard poll(&fds, 2, 20_000) > 0 else { return }
            for (i, (from, to)) in [(a, b), (b, a)].enumerated() where fds[i].revents != 0 {
                let n = buf.withUnsafeMutableBytes { Glibc.read(from.fd, $0.baseAddress, min($0.count, limit - moved)) }
                if n <= 0 { return }
                var off = 0
                while off < n {
                    let w = buf.withUnsafeBytes { Glibc.write(to.fd, $0.baseAddress! + off, n - off) }
                    if w < 0 {
                        if errno == EAGAIN { usleep(200); continue }
                        return
                    }
                    off += w
                }
                moved += n
            }
        }
    }

    /// A bundle from `from` for `to` (docs/protocol.md §12b), as its parts'
    /// paths; `maxBytes` may be below the tool's minimum, to make many parts.
    func writeBundle(from: Device, to: Device, maxBytes: Int64?) throws -> [String] {
        let s = try store(from)
        let fam = try s.family()!
        let path = dir + "/bundle-" + UUID().uuidString
        return try BundleWriter.write(store: s, family: fam, me: from.id, to: to.id, path: path, maxBytes: maxBytes,
                                      now: clock(from), verifier: verifier, warn: { _ in }).parts
    }

    /// A bundle from `from` to `to`, every part applied there, in order.
    func carry(from: Device, to: Device) throws {
        for p in try writeBundle(from: from, to: to, maxBytes: nil) { _ = try applyBundle(p, at: to) }
    }

    /// Applies one part at `d`, as `peer-sync unbundle` does.
    func applyBundle(_ path: String, at d: Device) throws -> BundleApplySummary {
        try Bundles.apply(store: try store(d), path: path, now: clock(d), verifier: verifier, emit: { _, _ in })
    }

    /// One session between member `m` and the owner; both sides' summaries.
    /// `owner` may name a copy of the owner's store (a device of the same ID).
    @discardableResult
    func sync(_ m: Device, owner: Device? = nil) throws -> (client: SyncSummary, server: SyncSummary) {
        let (client, server) = try session(m, via: nil, relayPort: 0, cutAfter: 0, owner: owner ?? self.owner)
        return (try client.get(), try server.get())
    }

    /// One session between member `m` and the owner, however each side ended.
    func session(_ m: Device) throws -> (client: Result<SyncSummary, any Error>, server: Result<SyncSummary, any Error>) {
        try session(m, via: nil, relayPort: 0, cutAfter: 0, owner: owner)
    }

    private func session(_ m: Device, via relay: TCPSocket?, relayPort: UInt16, cutAfter: Int,
                         owner: Device) throws -> (client: Result<SyncSummary, any Error>, server: Result<SyncSummary, any Error>) {
        let o = try store(owner), s = try store(m)
        let fam = try o.family()!, mfam = try s.family()!
        let key = try SessionKeys.devicePSK(deviceKey: try s.ownDeviceKey()!, family: fam.id, client: m.id, server: owner.id)
        let identity = try s.sessionCredentials(server: owner.id).identity
        let listener = try TCPSocket.listen(on: HostPort(host: "127.0.0.1", port: 0))
        let port = listener.localAddress()!.port
        let result = Locked<Result<SyncSummary, any Error>?>(nil)
        let (ownerClock, memberClock) = (clock(owner), clock(m))
        nonisolated(unsafe) let l = listener
        nonisolated(unsafe) let (ownerStore, v) = (o, verifier)
        let ownerFam = fam
        let ownerID = owner.id, memberID = m.id
        let serverKey = key
        let sessionOptions = options
        let t = Thread {
            let r = Result<SyncSummary, any Error> {
                guard try l.wait(for: Int16(POLLIN), deadline: Deadline(after: .seconds(20))) else { throw HarnessError("no connection") }
                guard let sock = try l.accept() else { throw HarnessError("accept failed") }
                let conn = try TLSConnection(server: sock, context: try TLSContext(role: .server), lookup: { _ in .key(serverKey) })
                try conn.handshake(deadline: Deadline(after: .seconds(20)))
                let session = SyncSession(store: ownerStore, family: ownerFam, me: ownerID,
                                          peer: SessionPeer(device: memberID, address: nil, side: .server, joined: false),
                                          channel: FrameChannel(conn), options: sessionOptions, clock: SyncClock(base: ownerClock),
                                          observer: nil, verifier: v)
                return try session.run()
            }
            result.withLock { $0 = r }
        }
        t.start()
        if let relay {
            // The member reaches the owner through the relay, which cuts the link after `cutAfter` bytes.
            nonisolated(unsafe) let r = relay
            let limit = cutAfter
            Thread {
                guard (try? r.wait(for: Int16(POLLIN), deadline: Deadline(after: .seconds(20)))) == true, let inbound = try? r.accept(),
                      let outbound = try? TCPSocket.connect(to: HostPort(host: "127.0.0.1", port: port), timeout: .seconds(10)) else { return }
                InProcessHousehold.relay(inbound, outbound, limit: limit)
            }.start()
        }
        let sock = try TCPSocket.connect(to: HostPort(host: "127.0.0.1", port: relay == nil ? port : relayPort), timeout: .seconds(10))
        let client = Result { () throws -> SyncSummary in
            let conn = try TLSConnection(client: sock, context: try TLSContext(role: .client), identity: identity, key: key)
            try conn.handshake(deadline: Deadline(after: .seconds(20)))
            return try SyncSession(store: s, family: mfam, me: m.id,
                                   peer: SessionPeer(device: owner.id, address: nil, side: .client, joined: false),
                                   channel: FrameChannel(conn), options: sessionOptions, clock: SyncClock(base: memberClock),
                                   observer: nil, verifier: verifier).run()
        }
        // The member's side may end first (a roster that revokes it): its end closes the connection, and the owner's side ends too.
        // The owner's side is always waited for, so no session of it outlives this call.
        if case .failure = client { sock.close() }
        while result.withLock({ $0 == nil }) { usleep(500) }
        listener.close()
        let server = result.withLock { $0! }
        return (client, server)
    }

    /// `d`'s store, open from its first use until `replacingStore` (or the household's end).
    func store(_ d: Device) throws -> Store {
        if let s = stores[d.path] { return s }
        let s = try Store(path: d.path)
        stores[d.path] = s
        return s
    }

    /// Runs `body`, which puts other files in place of `d`'s store (a copy put back), with the
    /// store closed: an open connection would go on reading the file that was there before.
    func replacingStore(_ d: Device, _ body: () throws -> Void) throws {
        stores[d.path] = nil
        try body()
    }

    /// Puts `d`'s store back from `copy` (a backup), as a household restoring one would.
    func restore(_ d: Device, from copy: String) throws {
        try replacingStore(d) {
            for suffix in ["", "-wal", "-shm"] { unlink(d.path + suffix) }
            try FileManager.default.copyItem(atPath: copy, toPath: d.path)
        }
    }

    typealias Rows = [String: (time: Int64, deleted: Bool, device: String, line: String)]

    /// Every row of `d`'s store: id → (modifiedAt, deleted, deviceId, line).
    func rows(_ d: Device) throws -> Rows { try Self.rows(of: try store(d)) }

    func digest(_ d: Device) throws -> String { try store(d).recordStateDigest() }

    /// Expects record `id` on every device to be the version whose line holds `value`
    /// (`why`: which edit that is, and why it wins), and every store equal to the owner's.
    func expectEveryStoreHolds(_ id: String, _ value: String, _ why: String,
                               sourceLocation: SourceLocation = #_sourceLocation) throws {
        for d in all {
            let r = try #require(try rows(d)[id], sourceLocation: sourceLocation)
            #expect(r.line.contains(value), "\(why) on \(d.path.suffix(9)): \(r.line)", sourceLocation: sourceLocation)
            #expect(try digest(d) == digest(owner), sourceLocation: sourceLocation)
        }
    }

    /// Every row of the store at `path`, opened for this: id → (modifiedAt, deleted, deviceId, line).
    static func rows(_ path: String) throws -> Rows { try rows(of: try Store(path: path)) }

    static func rows(of s: Store) throws -> Rows {
        let st = try s.db.prepare("SELECT id, modified_at, deleted, device_id, line FROM records")
        defer { st.reset() }
        var out: Rows = [:]
        while try st.step() { out[st.text(0)] = (st.int64(1), st.int64(2) == 1, st.text(3), st.text(4)) }
        return out
    }

    static func digest(_ path: String) throws -> String { try Store(path: path).recordStateDigest() }
}

struct HarnessError: Error, CustomStringConvertible {
    var description: String
    init(_ d: String) { description = d }
}
