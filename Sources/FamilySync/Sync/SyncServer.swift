import Foundation
import Synchronization

/// What the server decided for a client's PSK identity, before the handshake completes.
enum ServerDecision {
    /// A sync session with a device that proved the key.
    case sync(peer: String, key: [UInt8])
    /// A pairing join on an open offer.
    case pair(nonce: String, key: [UInt8])
    /// The key is known, so the refusal goes over an authenticated session
    /// (the client can trust it: a revoked device then drops to free).
    case refuseAuthenticated(key: [UInt8], RefusalMessage)
    /// No key: the refusal goes as a notice on an unauthenticated session.
    case refuse(RefusalMessage)

    var key: [UInt8]? {
        switch self {
        case let .sync(_, k), let .pair(_, k), let .refuseAuthenticated(k, _): return k
        case .refuse: return nil
        }
    }
}

/// `peer-sync serve`: accepts peers one session at a time on a listening
/// socket; latecomers get an explicit BUSY; pairing joins on the store's open
/// offers are admitted with the nonce consumed in the same transaction.
/// Runs on the calling thread (busy replies go out from short-lived threads
/// that never touch the store). Not Sendable.
public final class SyncServer {
    private let store: Store
    private let options: SyncOptions
    private let clock: SyncClock
    private let observer: SyncObserver?
    private let verifier: ProofVerifier
    private let context: TLSContext
    private let busyResponders = BusyCounter()

    /// What became of one accepted connection.
    public enum Outcome {
        /// A session ran (successfully or not).
        case session(Result<SyncSummary, ToolError>)
        /// The connection got a notice (refused, busy) or failed its handshake: no session.
        case notice
    }

    /// `verifier` judges the proofs peers send (its anchors: Apple's root, or pinned ones).
    public init(store: Store, options: SyncOptions, now: Timestamp, observer: SyncObserver?, verifier: ProofVerifier) throws {
        self.store = store
        self.verifier = verifier
        self.options = options
        self.clock = SyncClock(base: now)
        self.observer = observer
        self.context = try TLSContext(role: .server)
    }

    private func emit(_ name: String, _ fields: [(String, JSONValue)] = []) { observer?(SyncEvent(name, fields)) }

    /// Listens on `address` and serves until a stop is requested or, with
    /// `once`, until the first session ends (whose status it then returns).
    /// `report` hears every session's outcome.
    public func run(listen address: HostPort, once: Bool, report: (Result<SyncSummary, ToolError>) throws -> Void) throws -> ExitStatus {
        guard let fam = try store.family() else {
            throw ToolError(.noInput, "this store belongs to no family yet: make an offer with 'pair-qr' (owner) or redeem one with 'peer-sync join'")
        }
        let listener: TCPSocket
        do { listener = try TCPSocket.listen(on: address) } catch let e as SocketError {
            if e.code == EADDRNOTAVAIL {
                throw ToolError.usage("--listen: \(address.host) is not an address of this machine (see 'ip -brief address')")
            }
            throw ToolError(.unavailable, "cannot listen on \(address): \(String(cString: strerror(e.code)))")
        }
        let bound = listener.localAddress()?.description ?? address.description
        emit("listening", [("address", .string(bound)), ("device", .string(try store.deviceID)), ("family", .string(fam.id)),
                           ("role", .string(fam.role.rawValue))])
        while !SyncStop.isRequested {
            guard try listener.wait(for: Int16(POLLIN), deadline: Deadline(after: SyncLimits.stopCheckInterval)) else { continue }
            guard let sock = try listener.accept() else { continue }
            switch try serve(sock, listener: listener) {
            case let .session(result):
                try report(result)
                if once {
                    switch result {
                    case .success: return .success
                    case let .failure(e): return e.status
                    }
                }
            case .notice:
                continue
            }
        }
        return .success
    }

    /// Serves one accepted connection: handshake, then a notice or a session.
    public func serve(_ sock: TCPSocket, listener: TCPSocket?) throws -> Outcome {
        let from = sock.address
        var decision: ServerDecision?
        let conn = try TLSConnection(server: sock, context: context) { [unowned self] identity in
            let d: ServerDecision
            do { d = try self.decide(identity) } catch {
                d = .refuse(RefusalMessage(reason: .badIdentity, message: "this device could not read its store"))
            }
            decision = d
            return d.key.map(TLSKeyLookup.key) ?? .noKey
        }
        do {
            try conn.handshake(deadline: Deadline(after: SyncLimits.handshakeTimeout))
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
            emit("rejected", fields)
            return .notice
        }
        let channel = FrameChannel(conn, clock: clock.monotonic)
        if let listener { channel.sideWatch = (listener.fd, { [unowned self] in self.answerBusy(listener) }) }

        guard conn.isAuthenticated, let d = decision else {
            let r: RefusalMessage
            if case let .refuse(m)? = decision { r = m } else {
                r = RefusalMessage(reason: .badIdentity, message: "no family-sync key was offered")
            }
            sendNotice(.refused, r.json, on: channel)
            emit("refused", [("from", .string(from)), ("reason", .string(r.reason.rawValue)), ("message", .string(r.message)), ("authenticated", .bool(false))])
            return .notice
        }
        let fam = try store.family()!
        let me = try store.deviceID
        switch d {
        case let .refuseAuthenticated(_, r), let .refuse(r):
            sendNotice(.refused, r.json, on: channel)
            emit("refused", [("from", .string(from)), ("reason", .string(r.reason.rawValue)), ("message", .string(r.message)), ("authenticated", .bool(true))])
            return .notice
        case let .sync(peer, _):
            emit("session", [("from", .string(from)), ("peer", .string(peer))])
            let session = SyncSession(store: store, family: fam, me: me, peer: SessionPeer(device: peer, address: nil, side: .server, joined: false),
                                      channel: channel, options: options, clock: clock, observer: observer, verifier: verifier)
            return .session(runSession(session))
        case let .pair(nonce, _):
            let admission: (member: String, welcome: WelcomeMessage, readmitted: Bool)
            do {
                switch try PairingAdmission.admit(store: store, family: fam, nonce: nonce, channel: channel, clock: clock) {
                case let .refused(r):
                    sendNotice(.refused, r.json, on: channel)
                    emit("refused", [("from", .string(from)), ("reason", .string(r.reason.rawValue)), ("message", .string(r.message)), ("authenticated", .bool(true))])
                    return .notice
                case let .admitted(member, welcome, readmitted):
                    admission = (member, welcome, readmitted)
                }
            } catch let e as ProtocolError {
                sendNotice(.error, .object([("message", .string(e.message))]), on: channel)
                return .session(.failure(ToolError(.dataError, "protocol error from a joining device at \(from): \(e.message)")))
            } catch let e as TLSError {
                return .session(.failure(ToolError(.unavailable, "joining device at \(from) went away: \(e.description)")))
            }
            channel.send(.welcome, json: admission.welcome.json)
            emit("joined", [("from", .string(from)), ("device", .string(admission.member))])
            let session = SyncSession(store: store, family: try store.family()!, me: me,
                                      peer: SessionPeer(device: admission.member, address: nil, side: .server, joined: true,
                                                        newToFamily: !admission.readmitted),
                                      channel: channel, options: options, clock: clock, observer: observer, verifier: verifier)
            return .session(runSession(session))
        }
    }

    private func runSession(_ s: SyncSession) -> Result<SyncSummary, ToolError> {
        do { return .success(try s.run()) } catch let e as ToolError {
            return .failure(e)
        } catch let e as SQLiteError {
            return .failure(ToolError(.ioError, "store: \(e.description); session ended, cursors not moved"))
        } catch {
            return .failure(ToolError(.software, "\(error)"))
        }
    }

    private func sendNotice(_ type: FrameType, _ json: JSONValue, on channel: FrameChannel) {
        channel.send(type, json: json)
        try? channel.drain(deadline: Deadline(after: SyncLimits.closeTimeout))
        _ = channel.tls.shutdown(deadline: Deadline(after: TimeSpan.seconds(1)))
    }

    /// Answers every waiting latecomer with BUSY, each on its own short-lived
    /// thread so the running session never waits on a stranger's handshake.
    private func answerBusy(_ listener: TCPSocket) {
        while let sock = try? listener.accept() {
            let from = sock.address
            let admitted = busyResponders.enter()
            emit("busy", [("from", .string(from))])
            guard admitted else { continue }  // too many at once: closing is answer enough
            let job = BusyReply(socket: sock, context: context)
            let counter = busyResponders
            Thread.detachNewThread {
                job.run()
                counter.leave()
            }
        }
    }

    // MARK: Deciding on an identity

    func decide(_ bytes: [UInt8]) throws -> ServerDecision {
        guard let id = SessionIdentity(bytes: bytes) else {
            return .refuse(RefusalMessage(reason: .badIdentity, message: "not a family-sync session identity"))
        }
        guard let fam = try store.family() else {
            return .refuse(RefusalMessage(reason: .noFamily, message: "this device belongs to no family yet"))
        }
        let me = try store.deviceID
        switch id {
        case let .sync(f, client, server, epoch):
            guard f == fam.id else { return .refuse(RefusalMessage(reason: .wrongFamily, message: "this device belongs to another family")) }
            guard server == me else {
                return .refuse(RefusalMessage(reason: .wrongPeer, message: "this is device \(me), not \(server)", device: me))
            }
            guard client != me else { return .refuse(RefusalMessage(reason: .selfConnect, message: "a device cannot sync with itself")) }
            if try store.isSelfRevoked {
                return .refuse(RefusalMessage(reason: .revoked, message: "this device has been revoked from the family"))
            }
            if fam.role == .owner {
                guard let dev = try store.device(client), dev.role == .member, let key = try store.memberDeviceKey(client) else {
                    return .refuse(RefusalMessage(reason: .unknownDevice, message: "the owner's device does not know device \(client); pair it first"))
                }
                let psk = try SessionKeys.devicePSK(deviceKey: key, family: f, client: client, server: me)
                if let t = dev.revokedAt {
                    return .refuseAuthenticated(key: psk, RefusalMessage(reason: .revoked, message: "device \(client) was revoked by the family's owner at \(t.rfc3339)",
                                                                         revokedAt: t))
                }
                return .sync(peer: client, key: psk)
            }
            if client == fam.ownerDevice {
                guard let key = try store.ownDeviceKey() else {
                    return .refuse(RefusalMessage(reason: .unknownDevice, message: "this device holds no key for the owner"))
                }
                return .sync(peer: client, key: try SessionKeys.devicePSK(deviceKey: key, family: f, client: client, server: me))
            }
            // A client this member does not know yet holds the family key, so it is a
            // member; its FAMILY brings the owner's newer signed roster listing it.
            if let t = try store.device(client)?.revokedAt {
                return .refuse(RefusalMessage(reason: .revoked, message: "device \(client) was revoked by the family's owner at \(t.rfc3339)"))
            }
            let mine = try store.familyEpoch
            if epoch < mine {
                return .refuse(RefusalMessage(reason: .staleKey, message: "device \(client) holds an older family key (epoch \(epoch), this device has \(mine)): it must sync with the owner's device first"))
            }
            if epoch > mine {
                return .refuse(RefusalMessage(reason: .newerKey, message: "this device holds an older family key (epoch \(mine), yours is \(epoch)): it must sync with the owner's device first"))
            }
            guard let fk = try store.familySecret() else {
                return .refuse(RefusalMessage(reason: .noFamily, message: "this device holds no family key"))
            }
            return .sync(peer: client, key: try SessionKeys.familyPSK(familyKey: fk, family: f, epoch: epoch, client: client, server: me))
        case let .pair(f, tag):
            guard f == fam.id else { return .refuse(RefusalMessage(reason: .wrongFamily, message: "this device belongs to another family")) }
            guard fam.role == .owner else {
                return .refuse(RefusalMessage(reason: .notOwner, message: "this device is a member; only the owner's device redeems pairing offers"))
            }
            for (nonce, state) in try store.offerStates(now: clock.now()) where try SessionKeys.offerTag(nonce: nonce, family: f) == tag {
                let psk = try SessionKeys.pairingPSK(nonce: nonce, family: f)
                switch state {
                case .accepted: return .pair(nonce: nonce, key: psk)
                case .alreadyUsed: return .refuseAuthenticated(key: psk, RefusalMessage(reason: .offerUsed, message: "offer already used"))
                case .expired: return .refuseAuthenticated(key: psk, RefusalMessage(reason: .offerExpired, message: "offer expired"))
                case .closed, .unknown: return .refuseAuthenticated(key: psk, RefusalMessage(reason: .offerClosed, message: "offer closed"))
                }
            }
            return .refuse(RefusalMessage(reason: .unknownOffer, message: "unknown offer: this device never made it"))
        }
    }
}
