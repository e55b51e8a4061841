import FoundationEssentials
import Glibc

/// The connecting side: `connect` (one session with a paired device, busy
/// peers retried with backoff), Sync Now (the known peers in turn) and
/// `join` (redeem an offer, then a first sync). Not Sendable.
public final class SyncClient {
    private let store: Store
    private let options: SyncOptions
    private let clock: SyncClock
    private let observer: SyncObserver?
    private let verifier: ProofVerifier
    private let context: TLSContext
    /// A connection `PeerFinder` already made, used by the next `open` to that address.
    private var found: PeerFinder.Connected?

    /// `verifier` judges the proofs peers send (its anchors: Apple's root, or pinned ones).
    public init(store: Store, options: SyncOptions, now: Timestamp, observer: SyncObserver?, verifier: ProofVerifier) throws {
        self.store = store
        self.verifier = verifier
        self.options = options
        self.clock = SyncClock(base: now)
        self.observer = observer
        self.context = try TLSContext(role: .client)
    }

    private func emit(_ name: String, _ fields: [(String, JSONValue)] = []) { observer?(SyncEvent(name, fields)) }


    private func requireFamily() throws -> FamilyInfo {
        guard let fam = try store.family() else {
            throw StoreError(.noFamily, path: store.path)
        }
        if let t = try store.device(try store.deviceID)?.revokedAt {
            throw SyncError(.revoked, detail: t.rfc3339, family: fam.id)
        }
        return fam
    }

    // MARK: connect

    /// One session with the device at `address`, retrying while it is busy
    /// until `wait` has passed (then exit 75). `expected` is the device we
    /// believe is there; without it we guess and follow the server's hint.
    /// With `browseIfDistrusted`, a `NAME.local` that leads to something that
    /// does not prove the family's key is passed over: the family's devices
    /// are browsed for instead (names are hints; keys decide).
    public func sync(with address: HostPort, wait: TimeSpan, expected: String? = nil, browseIfDistrusted: Bool = true) throws -> SyncSummary {
        let giveUp = Deadline(after: wait)
        do {
            return try syncAt(address, wait: wait, expected: expected)
        } catch let e as SyncError where browseIfDistrusted && e.isUnauthenticatedAnswer && LocalNames.isLocal(address.host) && !SyncStop.isRequested {
            var distrusted: Set<String> = []
            distrust(address, into: &distrusted)
            guard let other = try browseInstead(try requireFamily(), me: try store.deviceID, passingOver: distrusted, because: e) else { throw e }
            found = other
            return try syncAt(other.candidate.address, wait: TimeSpan(milliseconds: max(0, Int64(giveUp.remainingMilliseconds))), expected: other.candidate.device)
        }
    }

    private func syncAt(_ address: HostPort, wait: TimeSpan, expected: String?) throws -> SyncSummary {
        let fam = try requireFamily()
        let me = try store.deviceID
        // A NAME.local is resolved once, here. What is remembered for next
        // time is the address it resolved to when NAME is one of the family's
        // day tags (tomorrow it names nobody), else the name as given (a
        // host's own name outlives its address).
        let target = found?.candidate.address == address ? address : try LocalNames.resolve(address)
        let remembered = try isDayTag(address.host) ? target : address
        let guess = try expected ?? initialGuess(for: remembered.description, family: fam, me: me)
        return try sessionWithRetries(at: address.description, remembered: remembered.description, guess: guess, family: fam, me: me, wait: wait) {
            try open(target, identity: $0, key: $1)
        }
    }

    /// One session over the standard input and output of `command` (split
    /// into words, run without a shell: `ssh -T home peer-sync serve --stdio`),
    /// with the same keys, refusals, busy retries and exit statuses as over
    /// TCP. Each try runs the command anew. No address is remembered: the
    /// command is the way there. A member expects the owner's device at the
    /// other end; the owner, the member it synced with last; either follows
    /// the server's hint once when it is another.
    public func sync(via command: String, wait: TimeSpan) throws -> SyncSummary {
        let fam = try requireFamily()
        let me = try store.deviceID
        let guess = try initialGuess(for: nil, family: fam, me: me)
        return try sessionWithRetries(at: "'\(command)'", remembered: nil, guess: guess, family: fam, me: me, wait: wait) {
            try openVia(command, identity: $0, key: $1)
        }
    }

    /// The transport a `--via` try started, ended when the try ends.
    private var transport: CommandTransport?

    /// The loop both ways of reaching a peer share: open (TCP or a command),
    /// read a notice or run the session, follow the hint of an `unknown-key`
    /// notice once, and wait out a busy peer until `wait` has passed.
    private func sessionWithRetries(at name: String, remembered: String?, guess initial: String, family fam: FamilyInfo, me: String, wait: TimeSpan,
                                    open: ([UInt8], SecretBytes) throws -> FrameChannel) throws -> SyncSummary {
        var guess = initial
        var followedHint = false
        let giveUp = Deadline(after: wait)
        var backoff = BusyBackoff()
        var attempt = 0
        while true {
            attempt += 1
            defer { endTransport() }
            let (identity, key) = try store.sessionCredentials(server: guess, previousVersion: options.faults.contains(.speakPreviousVersion))
            let channel = try open(identity, key)
            if !channel.tls.isAuthenticated {
                let notice = try readNotice(channel, from: name)
                switch notice {
                case let .busy(retryAfter):
                    endTransport()
                    try pauseWhenBusy(name, attempt: attempt, retryAfter: retryAfter, backoff: &backoff, giveUp: giveUp, wait: wait)
                    continue
                case let .refused(r):
                    // Who answered, when it is a device of this family at this epoch (§5.2).
                    let answered = try r.hint.flatMap { try readHint($0, family: fam, identity: identity) }
                    if answered == me { throw SyncError(.reachedItself, peer: name) }
                    if let hint = answered, hint != guess, !followedHint {
                        emit("peer-hint", [("address", .string(name)), ("device", .string(hint))])
                        guess = hint
                        followedHint = true
                        continue
                    }
                    emit("refused", [("address", .string(name)), ("reason", .string(r.reason.rawValue)), ("message", .string(r.message))])
                    throw SyncError.notice(r, from: name, family: fam, guess: guess, answered: answered)
                }
            }
            emit("session", [("address", .string(name)), ("peer", .string(guess))])
            let session = SyncSession(store: store, family: fam, me: me, peer: SessionPeer(device: guess, address: remembered, side: .client, joined: false),
                                      channel: channel, options: options, clock: clock, observer: observer, verifier: verifier)
            do {
                return try session.run()
            } catch let e as SessionRefused {
                try handleAuthenticatedRefusal(e.refusal, from: guess, family: fam, address: name)
            } catch let e as SessionBusy {
                endTransport()
                try pauseWhenBusy(name, attempt: attempt, retryAfter: e.retryAfter, backoff: &backoff, giveUp: giveUp, wait: wait)
            } catch var e as SyncError where e.kind == .connectionLost {
                // The command that carried the session ended under it: said as that, naming it.
                if let t = transport, let status = t.exited(within: TimeSpan.seconds(1)) {
                    e = SyncError(.transportEnded, peer: name, detail: CommandTransport.describe(status), outcome: e.outcome)
                }
                throw e
            }
        }
    }

    /// The device a notice's hint names, read with this device's family key
    /// (nil without one, or when the hint was not sealed for `identity`
    /// under it: another family's device, or another epoch's).
    private func readHint(_ hint: String, family fam: FamilyInfo, identity: [UInt8]) throws -> String? {
        guard let f = try store.familySecret() else { return nil }
        return try IdentityHint.open(hint, key: try IdentityHint.key(familyKey: f, family: fam.id, epoch: try store.familyEpoch), identity: identity)
    }

    /// Closes the current `--via` command's pipes and reaps it.
    private func endTransport() {
        transport?.finish()
        transport = nil
    }

    /// A busy server, by notice or on an authenticated session: waits out the
    /// backoff, or gives up (exit 75) once `giveUp` has passed.
    private func pauseWhenBusy(_ address: String, attempt: Int, retryAfter: TimeSpan, backoff: inout BusyBackoff, giveUp: Deadline, wait: TimeSpan) throws {
        emit("busy", [("address", .string(address)), ("attempt", .int(attempt))])
        guard !giveUp.hasPassed else {
            throw SyncError(.busy, peer: address, detail: "\(wait) (\(attempt) tries)")
        }
        sleep(backoff.pause(retryAfter: retryAfter, until: giveUp))
    }

    /// A refusal on an authenticated session is genuine: a revoked device drops to free.
    private func handleAuthenticatedRefusal(_ r: RefusalMessage, from peer: String, family: FamilyInfo, address: String) throws -> Never {
        emit("refused", [("address", .string(address)), ("reason", .string(r.reason.rawValue)), ("message", .string(r.message))])
        if r.reason == .revoked, peer == family.ownerDevice {
            // The owner's time, so every store holds one revocation time.
            let at = r.revokedAt ?? clock.now()
            try EntitlementExchange.dropToFree(store, now: at)
            emit("revoked", [("device", .string(try store.deviceID)), ("revokedAt", .string(at.rfc3339))])
            throw SyncError(.refusedRevoked, peer: address, detail: r.message)
        }
        throw SyncError(.refused, peer: address, detail: r.message, reason: r.reason.rawValue)
    }

    /// `host` is a `TAG.local` name a device of this family advertises
    /// today (or the day before or after), renamed ("TAG-2") or not.
    private func isDayTag(_ host: String) throws -> Bool {
        guard LocalNames.isLocal(host), let key = try store.familySecret(), let fam = try store.family() else { return false }
        let label = ServiceAdvertisement.baseHostLabel(String(host.lowercased().split(separator: ".").first ?? ""))
        let tags = try DiscoveryTags(familyKey: key, family: fam.id)
        let days = DiscoveryTags.acceptedDays(clock.now())
        return try store.devices().contains { d in days.contains { tags.deviceTag(d.deviceID, day: $0) == label } }
    }

    /// Which device we expect at an address: the one last reached there, else
    /// the owner (for a member), else the owner's most recently synced member.
    private func initialGuess(for address: String?, family: FamilyInfo, me: String) throws -> String {
        let devices = try store.devices().filter { $0.deviceID != me && $0.revokedAt == nil }
        if let address, let d = devices.first(where: { $0.lastAddress == address }) { return d.deviceID }
        if family.role == .member { return family.ownerDevice }
        let members = devices.sorted { ($0.lastSyncedAt?.milliseconds ?? 0) > ($1.lastSyncedAt?.milliseconds ?? 0) }
        guard let first = members.first else { throw SyncError(.noOtherDevice) }
        return first.deviceID
    }

    /// TCP connect and TLS handshake. Nobody listening: exit 69 with the standard message.
    private func open(_ address: HostPort, identity: [UInt8], key: SecretBytes) throws -> FrameChannel {
        let sock: TCPSocket
        if let f = found, f.candidate.address == address {
            found = nil
            sock = f.socket
        } else {
            do { sock = try TCPSocket.connect(to: try LocalNames.resolve(address), timeout: SyncLimits.connectTimeout) } catch let e as SocketError {
                emit("unreachable", [("address", .string(address.description)), ("error", .string(String(cString: strerror(e.code))))])
                throw SyncError(.noPeer, peer: address.description)
            }
        }
        let conn = try TLSConnection(client: sock, context: context, identity: identity, key: key)
        do {
            try conn.handshake(deadline: Deadline(after: SyncLimits.handshakeTimeout))
        } catch let e as TLSError {
            if e.peerRejectedKey {
                throw SyncError(.keyNotAccepted, peer: address.description)
            }
            if e.kind == .timeout { throw SyncError(.handshakeTimeout, peer: address.description) }
            // Said once: the TLS error's own context already names the handshake and the address.
            throw SyncError(.handshakeFailed, peer: address.description, detail: e.reasonText.isEmpty ? "no reason given" : e.reasonText)
        }
        return FrameChannel(conn, clock: clock.monotonic)
    }

    /// Starts `command` and runs the TLS handshake over its pipes. A command
    /// that cannot start, ends, or writes what is not TLS from a family-sync
    /// peer is said as that, naming the command (exit 69, or 65 for garbage).
    private func openVia(_ command: String, identity: [UInt8], key: SecretBytes) throws -> FrameChannel {
        let name = "'\(command)'"
        let t = try CommandTransport.start(command)
        transport = t
        emit("via", [("command", .string(command))])
        let conn = try TLSConnection(client: t.link, context: context, identity: identity, key: key)
        do {
            try conn.handshake(deadline: Deadline(after: SyncLimits.viaHandshakeTimeout))
        } catch let e as TLSError {
            if e.peerRejectedKey { throw SyncError(.keyNotAccepted, peer: name) }
            if e.kind == .timeout { throw SyncError(.handshakeTimeout, peer: name) }
            if e.endOfFile {
                let status = t.exited(within: TimeSpan.seconds(1))
                throw SyncError(.transportEnded, peer: name, detail: status.map(CommandTransport.describe) ?? "closed its output")
            }
            // Whatever it runs is not a peer: it need not be waited for.
            t.finish(grace: TimeSpan(milliseconds: 0))
            throw SyncError(.transportGarbage, peer: name, detail: e.reasonText.isEmpty ? "no reason given" : e.reasonText)
        }
        return FrameChannel(conn, clock: clock.monotonic)
    }

    enum Notice {
        case busy(retryAfter: TimeSpan)
        case refused(RefusalMessage)
    }

    /// The one frame an unauthenticated session may carry.
    private func readNotice(_ channel: FrameChannel, from address: String) throws -> Notice {
        let f: Frame?
        channel.maxPayload = Frame.maxNoticeBytes
        do { f = try channel.receive(deadline: Deadline(after: SyncLimits.noticeTimeout)) } catch let e as ProtocolError {
            _ = channel.tls.shutdown(deadline: Deadline(after: TimeSpan.seconds(1)))
            throw SyncError(.protocolViolation, peer: address, detail: "a notice before authentication: \(e.message)")
        } catch {
            throw SyncError(.keyRejectedSilently, peer: address, detail: "sent no reason")
        }
        _ = channel.tls.shutdown(deadline: Deadline(after: TimeSpan.seconds(1)))
        guard let f else { throw SyncError(.keyRejectedSilently, peer: address, detail: "closed without a reason") }
        do {
            switch f.type {
            case .busy:
                return .busy(retryAfter: BusyReply.retryAfter(f))
            case .refused:
                return .refused(try RefusalMessage(f))
            default:
                throw ProtocolError("\(f.type.name) on a session without a key")
            }
        } catch let e as ProtocolError {
            throw SyncError(.protocolViolation, peer: address, detail: e.message)
        }
    }

    private func sleep(_ span: TimeSpan) {
        let until = Deadline(after: span)
        while !until.hasPassed && !SyncStop.isRequested {
            usleep(UInt32(min(Int64(until.remainingMilliseconds), 100)) * 1000)
        }
    }

    // MARK: Sync Now

    /// The "Sync Now" pass: the peers this store reached before, at their
    /// last known addresses, most recent first, until one session completes.
    /// At the same time, this family's service is browsed for on the local
    /// network (`PeerFinder`): the first that answers is synced with, and the
    /// address it was found at is remembered when the session completes.
    public func syncNow(wait: TimeSpan) throws -> SyncSummary {
        let fam = try requireFamily()
        let peers = try store.knownPeers()
        let giveUp = Deadline(after: wait)
        let me = try store.deviceID
        let known = peers.compactMap { p in p.lastAddress.flatMap(HostPort.init(parsing:)).map { ($0, Optional(p.deviceID)) } }
        let recognise = try familyRecogniser(fam, me: me)
        let winner = try PeerFinder.find(known: known, recognise: recognise, what: "device of family \(fam.id)", observer: observer)
        found = winner
        var failures: [any Error] = []
        var allBusy = true
        // Addresses whose answer did not prove the family's key: passed over, and a browse follows.
        var distrusted: Set<String> = []
        var firstDistrusted: SyncError?
        func moveOn(_ e: SyncError, at address: HostPort) {
            if !e.isBusy { allBusy = false }
            if e.isUnauthenticatedAnswer {
                distrust(address, into: &distrusted)
                firstDistrusted = firstDistrusted ?? e
            }
            failures.append(e)
        }
        var left: TimeSpan { TimeSpan(milliseconds: max(0, Int64(giveUp.remainingMilliseconds))) }
        do {
            return try sync(with: winner.candidate.address, wait: left, expected: winner.candidate.device, browseIfDistrusted: false)
        } catch let e as SyncError where (e.isUnreachable || e.isBusy || e.isUnauthenticatedAnswer) && !SyncStop.isRequested {
            // A stop request ends the pass; any other failure moves on to the next peer.
            moveOn(e, at: winner.candidate.address)
        }
        found = nil
        for p in peers where p.lastAddress != winner.candidate.address.description {
            guard let addr = p.lastAddress.flatMap(HostPort.init(parsing:)) else { continue }
            emit("trying", [("peer", .string(p.deviceID)), ("address", .string(addr.description))])
            do {
                return try sync(with: addr, wait: left, expected: p.deviceID, browseIfDistrusted: false)
            } catch let e as SyncError where (e.isUnreachable || e.isBusy || e.isUnauthenticatedAnswer) && !SyncStop.isRequested {
                moveOn(e, at: addr)
            }
        }
        if let first = firstDistrusted {
            if let other = try browseInstead(fam, me: me, passingOver: distrusted, because: first) {
                found = other
                return try sync(with: other.candidate.address, wait: left, expected: other.candidate.device, browseIfDistrusted: false)
            }
            // Nobody else: a refusal, unverified as it is, is the only word there is (a restored owner that does not know this device).
            if [.refused, .unknownToOwner, .perhapsUnknownToOwner].contains(first.kind) { throw first }
        }
        throw SyncError(.noPeerCouldSync, detail: allBusy ? "busy" : "", causes: failures)
    }

    /// The browse recogniser for this family's devices today (nil without a family key).
    private func familyRecogniser(_ fam: FamilyInfo, me: String) throws -> PeerFinder.Recogniser? {
        try store.familySecret().map {
            try DiscoveryTags(familyKey: $0, family: fam.id).recogniser(devices: try store.devices().filter { $0.revokedAt == nil }.map(\.deviceID), me: me, now: clock.now())
        }
    }

    /// Keeps `address`, which answered without proving the family's key, out of the browse that follows.
    private func distrust(_ address: HostPort, into set: inout Set<String>) {
        set.insert(address.description)
        if LocalNames.isLocal(address.host), let resolved = try? LocalNames.resolve(address) { set.insert(resolved.description) }
    }

    /// A browse, past the distrusted addresses, for another device of the family.
    /// When one answers, says why the first was passed over.
    private func browseInstead(_ fam: FamilyInfo, me: String, passingOver distrusted: Set<String>, because e: SyncError) throws -> PeerFinder.Connected? {
        guard let recognise = try familyRecogniser(fam, me: me), !SyncStop.isRequested else { return nil }
        emit("browsing", [("passingOver", .array(distrusted.sorted().map { .string($0) }))])
        guard let other = try? PeerFinder.find(known: [], recognise: recognise, what: "device of family \(fam.id)", observer: observer, excluding: distrusted)
        else { return nil }
        emit("warning", [("message", .string("\(e.peer) did not prove it is a device of this family (\(e.what)); a name or a remembered "
                                               + "address is a hint and the key decides: syncing with the family's device found at \(other.candidate.address) instead"))])
        return other
    }

    // MARK: join

    /// Redeems `offer` at `address`: proves the nonce, sends JOIN, and on
    /// WELCOME stores the family, its key and this device's key, then runs a
    /// first sync on the same connection. Any refusal leaves the store as it was.
    /// With `browse`, the services on the network are browsed for at the same
    /// time and tried in turn (a sealed pairing identity that only the offer's
    /// maker can read; at most `SyncLimits.maxJoinCandidates`), so an offer
    /// whose address went stale, or that carries none, still finds the owner.
    /// `name`: what this device calls itself (DeviceName), sent in JOIN for the owner to keep.
    /// `acceptNewOwnerKey`: join again even when the owner's device does not
    /// prove the roster key this store holds (the owner made a new one).
    /// `onAdmitted` runs inside the transaction that stores the admission, so
    /// what the caller keeps with it (a trust root) is there even when the
    /// first sync is interrupted.
    public func join(offer: PairingOffer, at given: HostPort?, browse: Bool, wait: TimeSpan, name: String? = nil,
                     acceptNewOwnerKey: Bool = false, onAdmitted: ((Store) throws -> Void)? = nil) throws -> SyncSummary {
        let me = try store.deviceID
        // A member's store may join its family again with a new offer: a
        // revoked one, or one the owner does not know (its store was restored
        // from a copy older than this device's admission, §4.6). The owner
        // decides: it refuses a device it holds as a current member.
        var rejoining: FamilyInfo? = nil
        if let fam = try store.family() {
            guard fam.id == offer.family else {
                throw PairingError(.inAnotherFamily, family: fam.id)
            }
            guard fam.role == .member else {
                throw PairingError(.alreadyMember, family: fam.id)
            }
            rejoining = fam
        }
        // The owner is not named on the network (§12a): with `browse`, every
        // family-sync service answering is a candidate, tried in turn after
        // the offer's address until one holds the offer (at most
        // `SyncLimits.maxJoinCandidates`); the others answer `unknown-key`.
        var address: HostPort
        var passedOver: Set<String> = []
        var firstRefusal: SyncError?
        func nextCandidate(known: [(HostPort, String?)]) throws -> HostPort {
            let winner = try PeerFinder.find(known: known, recognise: { _ in .some(nil) }, what: "owner's device for this offer", observer: observer, excluding: passedOver)
            found = winner
            return winner.candidate.address
        }
        if browse || given == nil {
            address = try nextCandidate(known: given.map { [($0, nil)] } ?? [])
        } else {
            // Never nil: the branch above is taken when nothing was given.
            address = given!
        }
        let key = try SessionKeys.pairingPSK(nonce: offer.nonce, family: offer.family)
        let giveUp = Deadline(after: wait)
        var backoff = BusyBackoff()
        var attempt = 0
        while true {
            attempt += 1
            // Sealed anew for every try, so no two tries are alike (§3.3).
            let identity = options.faults.contains(.speakPreviousVersion) ? try SessionIdentity.previousVersionText(offer) : try SessionIdentity.pairing(offer)
            let channel = try open(address, identity: identity, key: key)
            if !channel.tls.isAuthenticated {
                switch try readNotice(channel, from: address.description) {
                case let .busy(retryAfter):
                    try pauseWhenBusy(address.description, attempt: attempt, retryAfter: retryAfter, backoff: &backoff, giveUp: giveUp, wait: wait)
                    continue
                case let .refused(r):
                    emit("refused", [("address", .string(address.description)), ("reason", .string(r.reason.rawValue)), ("message", .string(r.message))])
                    let words = r.reason == .unknownKey
                        ? "\(r.message): it is not the device of the owner that made this offer, or the offer is not among the \(SyncLimits.maxRecognisedOffers) it made last"
                        : r.reason == .badIdentity ? SyncError.badIdentityWords(r) : r.message
                    var e = SyncError(.refused, peer: address.description, detail: words, reason: r.reason.rawValue, outcome: .nothingStored)
                    e.unverified = true
                    firstRefusal = firstRefusal ?? e
                    passedOver.insert(address.description)
                    if browse, r.reason == .unknownKey, passedOver.count < SyncLimits.maxJoinCandidates, !SyncStop.isRequested,
                       let next = try? nextCandidate(known: []) {
                        emit("passing-over", [("address", .string(address.description)), ("next", .string(next.description))])
                        address = next
                        continue
                    }
                    // Never nil: set just above.
                    throw firstRefusal!
                }
            }
            channel.send(.join, json: JoinMessage(device: me, clock: clock.now(), name: name,
                                                  version: options.faults.contains(.speakPreviousVersion) ? Int64(SyncProtocol.version - 1) : Int64(SyncProtocol.version)).json)
            let welcome: WelcomeMessage
            do {
                let deadline = Deadline(after: SyncLimits.noticeTimeout)
                var next: Frame?
                repeat {
                    guard let f = try channel.receive(deadline: deadline) else {
                        throw SyncError(.closedBeforeAnswer, peer: address.description, outcome: .nothingStored)
                    }
                    next = f.type == .ping ? nil : f
                } while next == nil
                guard let reply = next else { throw ProtocolError("no answer to JOIN") }
                switch reply.type {
                case .welcome:
                    welcome = try WelcomeMessage(reply)
                case .busy:
                    // Another device's session took the slot as our handshake completed (§5.1).
                    _ = channel.tls.shutdown(deadline: Deadline(after: SyncLimits.errorCloseTimeout))
                    throw SessionBusy(retryAfter: BusyReply.retryAfter(reply))
                case .refused:
                    let r = try RefusalMessage(reply)
                    emit("refused", [("address", .string(address.description)), ("reason", .string(r.reason.rawValue)), ("message", .string(r.message))])
                    throw SyncError(.refused, peer: address.description, detail: r.message, reason: r.reason.rawValue, outcome: .nothingStored)
                case .error:
                    let m = DisplayText.escaped((try? FieldReader(reply).string("message", maxBytes: 1024)) ?? "")
                    _ = channel.tls.shutdown(deadline: Deadline(after: SyncLimits.errorCloseTimeout))
                    throw SyncError(.peerReportedError, peer: address.description, detail: m, outcome: .nothingStored)
                default:
                    throw ProtocolError("expected WELCOME or REFUSED, got \(reply.type.name)")
                }
            } catch let e as SessionBusy {
                try pauseWhenBusy(address.description, attempt: attempt, retryAfter: e.retryAfter, backoff: &backoff, giveUp: giveUp, wait: wait)
                continue
            } catch let e as ProtocolError {
                // ERROR, then close_notify (docs/protocol.md §6).
                channel.send(.error, json: .object([("message", .string(e.message))]))
                try? channel.drain(deadline: Deadline(after: SyncLimits.errorCloseTimeout))
                _ = channel.tls.shutdown(deadline: Deadline(after: SyncLimits.errorCloseTimeout))
                throw SyncError(.protocolViolation, peer: address.description, detail: e.message, outcome: .nothingStored)
            } catch let e as TLSError {
                throw SyncError(.connectionLost, peer: address.description, detail: e.description, outcome: .nothingStored)
            }
            guard welcome.family == offer.family else {
                throw SyncError(.wrongFamily, peer: address.description, detail: welcome.family, family: offer.family, outcome: .nothingStored)
            }
            if let fam = rejoining, welcome.owner != fam.ownerDevice {
                throw SyncError(.protocolViolation, peer: address.description,
                                detail: "WELCOME names owner \(welcome.owner), but family \(fam.id) is owned by \(fam.ownerDevice)", outcome: .nothingStored)
            }
            // One family per store: a store of the family takes a WELCOME only
            // from the owner whose roster key it holds. The family and owner
            // IDs an offer names are no secret, so anyone can forge an offer
            // that names them; only the owner holds the key (§9).
            if rejoining != nil, !acceptNewOwnerKey, let held = try store.ownerRosterKey,
               !WelcomeProof.verify(welcome, device: me, tag: try SessionKeys.offerTag(nonce: offer.nonce, family: offer.family), key: held) {
                _ = channel.tls.shutdown(deadline: Deadline(after: SyncLimits.errorCloseTimeout))
                throw SyncError(.ownerKeyDiffers, peer: address.description, family: welcome.family, outcome: .nothingStored)
            }
            let now = clock.now()
            try store.write {
                // A store whose family key is newer than the owner's keeps it: its first
                // session's HELLO then shows the owner its store went back in time, and
                // the owner moves on to a fresh key above it (§4.6).
                let newer = try rejoining != nil && store.familyEpoch > welcome.epoch
                let held = newer ? try store.familySecret() : nil
                if rejoining != nil { try store.prepareRejoin() }
                try store.joinFamily(id: welcome.family, ownerDevice: welcome.owner, secret: held ?? welcome.familyKey, now: now)
                if held == nil { try store.setFamilyKey(welcome.familyKey, epoch: welcome.epoch) }
                try store.setOwnDeviceKey(welcome.deviceKey)
                if let name { try store.setDeviceName(me, name) }
                // Where the owner's device answered, kept with the admission: a
                // first sync that does not finish leaves a store 'connect' can finish.
                try store.rememberAddressInTransaction(address.description, of: welcome.owner)
                try onAdmitted?(store)
            }
            emit("joined", [("family", .string(welcome.family)), ("owner", .string(welcome.owner)), ("device", .string(me))])
            guard let fam = try store.family() else { throw StoreError(.inconsistent, path: store.path, detail: "the family just stored could not be read back") }
            let session = SyncSession(store: store, family: fam, me: me,
                                      peer: SessionPeer(device: welcome.owner, address: address.description, side: .client, joined: true),
                                      channel: channel, options: options, clock: clock, observer: observer, verifier: verifier)
            do {
                return try session.run()
            } catch {
                throw SyncError(.firstSyncFailed, family: fam.id, causes: [error])
            }
        }
    }
}
