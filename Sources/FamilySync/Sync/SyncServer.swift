import Dispatch
import FoundationEssentials
import Glibc
import Synchronization

/// What the server decided for a client's PSK identity, before the handshake completes.
enum ServerDecision {
    /// A sync session with a device that proved the key.
    case sync(peer: String, key: SecretBytes)
    /// A pairing join on an open offer.
    case pair(nonce: String, key: SecretBytes)
    /// The key is known, so the refusal goes over an authenticated session
    /// (the client can trust it: a revoked device then drops to free).
    case refuseAuthenticated(key: SecretBytes, RefusalMessage)
    /// No key: the refusal goes as a notice on an unauthenticated session.
    case refuse(RefusalMessage)

    /// A session follows the handshake (so it needs the server's one session slot).
    var startsSession: Bool {
        switch self {
        case .sync, .pair: return true
        case .refuseAuthenticated, .refuse: return false
        }
    }

    var key: SecretBytes? {
        switch self {
        case let .sync(_, k), let .pair(_, k), let .refuseAuthenticated(k, _): return k
        case .refuse: return nil
        }
    }
}

/// `peer-sync serve`. Three kinds of thread, so nobody can stall it:
/// - the acceptor takes every connection at once and gives it a thread of
///   its own, inside a bounded `PreAuthPool`;
/// - each such thread runs the TLS handshake under a short deadline, decides
///   on the client's identity (reading the store through a connection of its
///   own), and sends REFUSED or BUSY itself;
/// - the calling thread, which owns the store, runs the sessions of
///   authenticated peers one at a time; a peer whose identity arrives while
///   one runs gets BUSY (docs/protocol.md §5).
/// Pairing joins are admitted on the session thread, with the offer's nonce
/// consumed in the same transaction. Not Sendable.
public final class SyncServer {
    private let store: Store
    private let options: SyncOptions
    private let clock: SyncClock
    /// Called from every thread of the server, one event at a time.
    private let observer: SyncObserver?
    private let verifier: ProofVerifier
    private let context: TLSContext
    /// Called once the listener is bound, with its address (port 0 resolved):
    /// where `serve` starts advertising and records its address.
    public var onListening: ((HostPort) throws -> Void)?

    /// What became of one accepted connection.
    public enum Outcome {
        /// A session ran (successfully or not).
        case session(Result<SyncSummary, any Error>)
        /// The connection got a notice (refused, busy) or failed its handshake: no session.
        case notice
    }

    /// `verifier` judges the proofs peers send (its anchors: Apple's root, or pinned ones).
    public init(store: Store, options: SyncOptions, now: Timestamp, observer: SyncObserver?, verifier: ProofVerifier) throws {
        self.store = store
        self.verifier = verifier
        self.options = options
        self.clock = SyncClock(base: now)
        self.observer = observer.map(SerializedObserver.init).map { o in { o.send($0) } }
        self.context = try TLSContext(role: .server)
    }

    private func emit(_ name: String, _ fields: [(String, JSONValue)] = []) { observer?(SyncEvent(name, fields)) }

    /// Listens on `address` and serves until a stop is requested or, with
    /// `once`, until the first session ends (whose outcome it then returns).
    /// `report` hears every session's outcome.
    @discardableResult
    public func run(listen address: HostPort, once: Bool, report: (Result<SyncSummary, any Error>) throws -> Void) throws -> Result<SyncSummary, any Error>? {
        guard let fam = try store.family() else {
            throw StoreError(.noFamily, path: store.path)
        }
        let listener: TCPSocket
        do { listener = try TCPSocket.listen(on: address, backlog: SyncLimits.listenBacklog) } catch let e as SocketError {
            if e.code == EADDRNOTAVAIL {
                throw SyncError(.notLocalAddress, peer: address.host)
            }
            throw SyncError(.cannotListen, peer: address.description, detail: String(cString: strerror(e.code)))
        }
        let boundAddress = listener.localAddress() ?? address
        let bound = boundAddress.description
        try onListening?(boundAddress)
        // The handshake threads decide on identities through a store connection of their own.
        let gate = try makeGate()
        emit("listening", [("address", .string(bound)), ("device", .string(try store.deviceID)), ("family", .string(fam.id)),
                           ("role", .string(fam.role.rawValue))])
        let acceptor = gate.startAccepting(listener)
        defer { acceptor.stop() }
        while !SyncStop.isRequested && !acceptor.hasEnded {
            guard let peer = gate.handoff.take(timeout: SyncLimits.stopCheckInterval) else { continue }
            // Sessions run one after another on this thread, so the slot may be
            // freed once the DONEs have crossed: the next device's handshake then
            // completes and its session waits here for this one's closing. Not
            // with `once`, which ends after this session.
            let hold = SlotHold(gate.slot)
            let result = serveAuthenticated(peer, whenDone: once ? nil : hold.release)
            hold.release()
            guard case let .session(result) = result else { continue }
            try report(result)
            if once { return result }
        }
        if let e = acceptor.failure { throw SyncError(.acceptFailed, detail: "\(e)") }
        return nil
    }

    /// The pre-authentication half, with its own store connection and the store's session lock.
    private func makeGate() throws -> ServerGate {
        ServerGate(reader: try store.anotherConnection(), slot: SessionSlot(try SessionLock.forStore(at: store.path)),
                   context: context, clock: clock, observer: observer)
    }

    /// `serve --stdio`: one connection that is already there (standard input
    /// and output under ssh, inetd or a socket unit), answered exactly as an
    /// accepted TCP connection is: the handshake, then a refusal, BUSY (when
    /// another session on this store runs, in this process or another) or the
    /// session. Nil when the connection got a notice or failed its handshake.
    public func serveOne(over link: any ByteLink) throws -> Result<SyncSummary, any Error>? {
        guard let fam = try store.family() else {
            throw StoreError(.noFamily, path: store.path)
        }
        let gate = try makeGate()
        emit("listening", [("address", .string(link.address)), ("device", .string(try store.deviceID)), ("family", .string(fam.id)),
                           ("role", .string(fam.role.rawValue))])
        gate.greet(link, gate.pool.admit(fd: link.readFD).0)
        guard let peer = gate.handoff.take(timeout: TimeSpan(milliseconds: 0)) else { return nil }
        let hold = SlotHold(gate.slot)
        defer { hold.release() }
        guard case let .session(result) = serveAuthenticated(peer) else { return nil }
        return result
    }

    /// Runs the session of a peer whose handshake proved its key.
    func serveAuthenticated(_ peer: AuthenticatedPeer, whenDone: (() -> Void)? = nil) -> Outcome {
        do { return try serveSession(peer, whenDone: whenDone) } catch let e as SQLiteError {
            return .session(.failure(SyncError(.storeFailed, detail: e.description, outcome: .cursorsNotMoved)))
        } catch {
            return .session(.failure(error))
        }
    }

    private func serveSession(_ peer: AuthenticatedPeer, whenDone: (() -> Void)?) throws -> Outcome {
        let from = peer.from
        let channel = FrameChannel(peer.connection)
        guard let fam = try store.family() else { throw StoreError(.familyGone, path: store.path) }
        let me = try store.deviceID
        switch peer.decision {
        case let .sync(device, _):
            emit("session", [("from", .string(from)), ("peer", .string(device))])
            let session = SyncSession(store: store, family: fam, me: me, peer: SessionPeer(device: device, address: nil, side: .server, joined: false),
                                      channel: channel, options: options, clock: clock, observer: observer, verifier: verifier)
            session.onDoneExchanged = whenDone
            return .session(runSession(session))
        case let .pair(nonce, _):
            let admission: (member: String, welcome: WelcomeMessage, readmitted: Bool)
            do {
                switch try PairingAdmission.admit(store: store, family: fam, nonce: nonce, channel: channel, clock: clock) {
                case let .refused(r):
                    ServerGate.sendNotice(.refused, r.json, on: channel, deadline: Deadline(after: SyncLimits.closeTimeout))
                    emit("refused", [("from", .string(from)), ("reason", .string(r.reason.rawValue)), ("message", .string(r.message)), ("authenticated", .bool(true))])
                    return .notice
                case let .admitted(member, welcome, readmitted):
                    admission = (member, welcome, readmitted)
                }
            } catch let e as ProtocolError {
                ServerGate.sendNotice(.error, .object([("message", .string(e.message))]), on: channel, deadline: Deadline(after: SyncLimits.closeTimeout))
                return .session(.failure(SyncError(.protocolViolation, peer: "a joining device at \(from)", detail: e.message)))
            } catch let e as TLSError {
                return .session(.failure(SyncError(.connectionLost, peer: "a joining device at \(from)", detail: e.description)))
            }
            // Durability: the admission is on disk before the member is told it is in.
            try store.makeDurable()
            channel.sendSecret(.welcome, json: admission.welcome.json)
            emit("joined", [("from", .string(from)), ("device", .string(admission.member))])
            guard let joined = try store.family() else { throw StoreError(.inconsistent, path: store.path, detail: "the family vanished during a join") }
            let session = SyncSession(store: store, family: joined, me: me,
                                      peer: SessionPeer(device: admission.member, address: nil, side: .server, joined: true),
                                      channel: channel, options: options, clock: clock, observer: observer, verifier: verifier)
            session.onDoneExchanged = whenDone
            return .session(runSession(session))
        case .refuseAuthenticated, .refuse:
            // The handshake threads answer these themselves; none is handed on.
            return .notice
        }
    }

    private func runSession(_ s: SyncSession) -> Result<SyncSummary, any Error> {
        do { return .success(try s.run()) } catch let e as SQLiteError {
            return .failure(SyncError(.storeFailed, detail: e.description, outcome: .cursorsNotMoved))
        } catch {
            return .failure(error)
        }
    }
}

/// A connection whose TLS handshake used the PSK its identity named, on its
/// way from its handshake thread to the session thread (which then owns it).
struct AuthenticatedPeer: @unchecked Sendable {
    let connection: TLSConnection
    let decision: ServerDecision
    let from: String
}

/// An observer several threads may call: one event at a time, in the order they come.
final class SerializedObserver: @unchecked Sendable {
    private let lock = ThreadLock()
    private let observer: SyncObserver
    init(_ observer: @escaping SyncObserver) { self.observer = observer }
    func send(_ e: SyncEvent) {
        lock.lock()
        defer { lock.unlock() }
        observer(e)
    }
}

/// The pre-authentication half of the server: accepting, handshakes,
/// identity decisions, notices. Shared by the acceptor and the handshake
/// threads: `reader` is used only under `readerLock`; the observer is
/// serialized; the pool, slot (BusyReply.swift) and handoff are thread-safe.
final class ServerGate: @unchecked Sendable {
    let context: TLSContext
    let pool = PreAuthPool()
    let slot: SessionSlot
    let handoff = SessionHandoff<AuthenticatedPeer>()
    private let reader: Store
    private let readerLock = ThreadLock()
    private let clock: SyncClock
    private let observer: SyncObserver?

    init(reader: Store, slot: SessionSlot, context: TLSContext, clock: SyncClock, observer: SyncObserver?) {
        self.reader = reader
        self.slot = slot
        self.context = context
        self.clock = clock
        self.observer = observer
    }

    private func emit(_ name: String, _ fields: [(String, JSONValue)] = []) { observer?(SyncEvent(name, fields)) }

    /// The acceptor thread, running until `stop()`.
    final class Acceptor: @unchecked Sendable {
        private let stopFlag = Atomic<Bool>(false)
        private let ended = DispatchSemaphore(value: 0)
        private let endedFlag = Atomic<Bool>(false)
        private let failureText = Locked<String?>(nil)
        var hasEnded: Bool { endedFlag.load(ordering: .acquiring) }
        var failure: String? { failureText.withLock { $0 } }
        var stopRequested: Bool { stopFlag.load(ordering: .relaxed) || SyncStop.isRequested }
        func fail(_ text: String) { failureText.withLock { $0 = text } }
        func finish() { endedFlag.store(true, ordering: .releasing); ended.signal() }
        /// Asks the thread to stop and waits until it has, so the listener closes under nobody. Call once.
        func stop() {
            stopFlag.store(true, ordering: .relaxed)
            ended.wait()
        }
    }

    /// Starts the acceptor thread on `listener` (which must outlive it: `Acceptor.stop()` waits).
    func startAccepting(_ listener: TCPSocket) -> Acceptor {
        let acceptor = Acceptor()
        let box = Owned(listener)
        Threads.detach { [self] in
            acceptLoop(box.value, acceptor)
            acceptor.finish()
        }
        return acceptor
    }

    private func acceptLoop(_ listener: TCPSocket, _ acceptor: Acceptor) {
        while !acceptor.stopRequested {
            do {
                guard try listener.wait(for: Int16(POLLIN), deadline: Deadline(after: SyncLimits.stopCheckInterval)) else { continue }
                while let sock = try listener.accept() { admit(sock) }
            } catch let e as SocketError where [EMFILE, ENFILE, ENOBUFS, ENOMEM].contains(e.code) {
                // Out of descriptors or memory for now: pause rather than spin; the pool frees some soon.
                emit("warning", [("message", .string("cannot accept a connection: \(e.description)"))])
                usleep(50_000)
            } catch {
                acceptor.fail("\(error)")
                return
            }
        }
    }

    /// Puts a new connection in the pool (dropping the most stalled one when
    /// full) and starts its handshake thread.
    private func admit(_ sock: TCPSocket) {
        let (entry, _) = pool.admit(fd: sock.fd)
        let box = Owned(sock)
        Threads.detach { [self] in
            greet(box.value, entry)
        }
    }

    /// One connection before authentication, on its own thread: the handshake,
    /// then a notice, or the hand-off to the session thread.
    func greet(_ sock: any ByteLink, _ entry: PreAuthPool.Entry) {
        let from = sock.address
        let deadline = Deadline(after: SyncLimits.preAuthGrace)
        var decision: ServerDecision?
        var busy = false
        // Whether the identity named a key this device holds: BUSY to such a
        // device is reported on its own; to any other it is keyless noise.
        var known = false
        // Nothing scarce is taken on the ClientHello: its binder proves only
        // that someone once held the key (a ClientHello can be replayed). The
        // slot is reserved once the handshake has completed with the key and
        // a fresh (EC)DHE share, which a replayer cannot do (§5.1).
        guard let conn = try? TLSConnection(server: sock, context: context, lookup: { [unowned self] identity in
            entry.progressed()
            let d = decide(identity)
            known = d.key != nil
            if slot.isTaken { busy = true; decision = nil; return .noKey }
            decision = d
            guard let key = d.key else { return .noKey }
            return .key(key)
        }) else {
            pool.leave(entry)
            return
        }
        do {
            try conn.handshake(deadline: deadline, onProgress: entry.progressed)
        } catch let e as TLSError {
            var fields: [(String, JSONValue)] = [("from", .string(from))]
            if e.binderFailed, case let .sync(peer, _)? = decision {
                fields += [("reason", .string("bad-key")), ("device", .string(peer)),
                           ("message", .string("device \(peer) offered a key that does not match (wrong family secret, or one from before a revocation)"))]
            } else if e.binderFailed, case .pair? = decision {
                fields += [("reason", .string("bad-key")), ("message", .string("a joining device offered a key that does not match the offer"))]
            } else {
                fields += [("reason", .string("handshake")), ("message", .string(e.description))]
            }
            pool.leave(entry)
            emit("rejected", fields)
            return
        } catch {
            pool.leave(entry)
            emit("rejected", [("from", .string(from)), ("reason", .string("handshake")), ("message", .string("\(error)"))])
            return
        }
        let channel = FrameChannel(conn, clock: clock.monotonic)
        let noticeDeadline = min(deadline, Deadline(after: SyncLimits.closeTimeout))
        if conn.isAuthenticated { entry.markVetted() }
        if conn.isAuthenticated, let d = decision, d.startsSession {
            if slot.reserve() {
                pool.leave(entry)
                // The session thread releases the slot when the session ends.
                handoff.put(AuthenticatedPeer(connection: conn, decision: d, from: from))
                return
            }
            // Another peer's handshake completed first: BUSY, on this authenticated session.
            busy = true
        }
        defer { pool.leave(entry) }
        if busy {
            emit("busy", [("from", .string(from)), ("known", .bool(known || conn.isAuthenticated))])
            ServerGate.sendNotice(.busy, BusyReply.json(), on: channel, deadline: noticeDeadline)
            return
        }
        let r: RefusalMessage
        switch decision {
        case let .refuseAuthenticated(_, m)? where conn.isAuthenticated: r = m
        case let .refuse(m)?: r = m
        default: r = RefusalMessage(reason: .badIdentity, message: "no family-sync identity was offered")
        }
        ServerGate.sendNotice(.refused, r.json, on: channel, deadline: noticeDeadline)
        emit("refused", [("from", .string(from)), ("reason", .string(r.reason.rawValue)), ("message", .string(r.message)),
                         ("authenticated", .bool(conn.isAuthenticated))])
    }

    /// One frame, then close_notify, all by `deadline`.
    static func sendNotice(_ type: FrameType, _ json: JSONValue, on channel: FrameChannel, deadline: Deadline) {
        channel.send(type, json: json)
        try? channel.drain(deadline: deadline)
        _ = channel.tls.shutdown(deadline: min(deadline, Deadline(after: TimeSpan.seconds(1))))
    }

    /// The keys identities are tried with, read again only when another
    /// connection changed the store (a join, a revocation, a new offer).
    private var keys: GateKeys?

    /// Decides on a client's PSK identity, reading the store under the lock.
    func decide(_ identity: [UInt8]) -> ServerDecision {
        readerLock.lock()
        defer { readerLock.unlock() }
        do {
            let version = try reader.dataVersion
            if keys?.version != version { keys = try GateKeys(store: reader, version: version) }
            // Never nil: set just above.
            return try ServerGate.decide(identity, keys: keys!, store: reader, now: clock.now())
        } catch {
            keys = nil
            return .refuse(RefusalMessage(reason: .unknownKey, message: GateKeys.unknownKeyWords))
        }
    }

    // MARK: Deciding on an identity

    /// One ClientHello's identity (docs/protocol.md §5.1): tried with every
    /// key this device holds, at most `SyncLimits.maxTrialKeys` tag checks.
    /// Every refusal before a key is chosen is the same `unknown-key` notice,
    /// whatever the reason, so a stranger (one replaying a member's
    /// ClientHello included) learns nothing from it; the hint tells a device
    /// of the family who answered.
    static func decide(_ bytes: [UInt8], keys: GateKeys, store: Store, now: Timestamp) throws -> ServerDecision {
        switch try SessionIdentity.read(bytes, keys: keys.trial) {
        case .malformed:
            return .refuse(RefusalMessage(reason: .badIdentity, message: "not a family-sync identity of protocol version \(SyncProtocol.version)"))
        case .previousVersion:
            return .refuse(RefusalMessage(reason: .badIdentity, message: "the connecting device speaks family-sync protocol version 3 or older, "
                + "this device version \(SyncProtocol.version); update family-sync on the connecting device"))
        case .unrecognised:
            return try keys.unknownKey(bytes)
        case let .opened(id, key):
            guard let fam = keys.family, let d = try served(id, under: key, family: fam, me: keys.me, store: store, now: now) else {
                return try keys.unknownKey(bytes)
            }
            return d
        }
    }

    /// The decision for an identity this device opened, or nil for one it
    /// does not serve (it names another device, this one as the client, a
    /// revoked one; or this device is revoked).
    private static func served(_ id: SessionIdentity, under key: HeldKey, family fam: FamilyInfo, me: String, store: Store, now: Timestamp) throws -> ServerDecision? {
        switch (id, key.kind) {
        case let (.sync(client, server), .device(member)):
            guard server == me, client != me, !(try store.isSelfRevoked) else { return nil }
            let psk = try SessionKeys.devicePSK(deviceKey: key.secret, family: fam.id, client: client, server: me)
            guard fam.role == .owner else { return client == fam.ownerDevice && member == me ? .sync(peer: client, key: psk) : nil }
            guard client == member, let dev = try store.device(client), dev.role == .member else { return nil }
            if let t = dev.revokedAt {
                return .refuseAuthenticated(key: psk, RefusalMessage(reason: .revoked, message: "device \(client) was revoked by the family's owner at \(t.rfc3339)", revokedAt: t))
            }
            return .sync(peer: client, key: psk)
        case let (.sync(client, server), .family(epoch)):
            // A client this member does not know yet holds the family key, so it is a
            // member; its FAMILY brings the owner's newer signed roster listing it.
            guard fam.role == .member, server == me, client != me, client != fam.ownerDevice, !(try store.isSelfRevoked),
                  try store.device(client)?.revokedAt == nil else { return nil }
            return .sync(peer: client, key: try SessionKeys.familyPSK(familyKey: key.secret, family: fam.id, epoch: epoch, client: client, server: me))
        case let (.pair, .offer(nonce)):
            guard fam.role == .owner else { return nil }
            let psk = try SessionKeys.pairingPSK(nonce: nonce, family: fam.id)
            switch try store.offerState(nonce: nonce, now: now) {
            case .accepted: return .pair(nonce: nonce, key: psk)
            case .alreadyUsed: return .refuseAuthenticated(key: psk, RefusalMessage(reason: .offerUsed, message: "offer already used"))
            case .expired: return .refuseAuthenticated(key: psk, RefusalMessage(reason: .offerExpired, message: "offer expired"))
            case .closed, .unknown: return .refuseAuthenticated(key: psk, RefusalMessage(reason: .offerClosed, message: "offer closed"))
            }
        default:
            return nil
        }
    }
}

/// What the handshake threads try identities with, read from the store at
/// once: the held keys (derived for identities), this device, and the key
/// its notices' hints are sealed under.
struct GateKeys {
    /// The store's `data_version` when read: another connection's commit changes it.
    let version: Int64
    let family: FamilyInfo?
    let me: String
    let trial: TrialKeys
    let hintKey: SecretBytes?

    /// The words of every `unknown-key` notice: one text, whatever the reason.
    static let unknownKeyWords = "this device holds no key for the identity offered"

    init(store: Store, version: Int64) throws {
        self.version = version
        family = try store.family()
        me = try store.deviceID
        trial = try TrialKeys(try store.heldKeys(offers: true), family: family?.id ?? "", use: .identity)
        if let fam = family, let f = try store.familySecret() {
            hintKey = try IdentityHint.key(familyKey: f, family: fam.id, epoch: try store.familyEpoch)
        } else {
            hintKey = nil
        }
    }

    /// The notice for an identity this device does not serve, with the hint bound to it.
    func unknownKey(_ identity: [UInt8]) throws -> ServerDecision {
        .refuse(RefusalMessage(reason: .unknownKey, message: GateKeys.unknownKeyWords,
                               hint: try hintKey.map { try IdentityHint.seal(device: me, key: $0, identity: identity) }))
    }
}

/// Moves a value that is not Sendable to the one thread that uses it from then on.
struct Owned<T>: @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}
