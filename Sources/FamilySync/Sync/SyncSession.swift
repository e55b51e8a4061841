/// A stop was requested (a signal) while a session ran.
struct SessionInterrupted: Error {}

/// The server refused on an authenticated session (the refusal is genuine).
struct SessionRefused: Error {
    var refusal: RefusalMessage
}

/// The other end of a session, as far as this side knows before HELLO.
struct SessionPeer {
    /// The device the TLS key was bound to: HELLO must name the same one.
    var device: String
    /// Where we reached it (the connecting side only); remembered for Sync Now.
    var address: String?
    var side: SyncSummary.Side
    var joined: Bool
}

/// Where a session is, as the `phase` and `progress` events name it.
enum SessionPhase: String, Sendable {
    /// HELLO and FAMILY each way.
    case hello
    /// Records streaming (photo waves may already run beside them).
    case records
    /// Every record of the peer is in; photo waves continue.
    case photos
    /// Our DONE is sent; waiting for the peer's.
    case done
}

/// One authenticated sync session, the same on both sides (docs/protocol.md,
/// "Session"): HELLO and FAMILY each way, then records from the peer's cursor
/// in bounded batches, photo waves in both directions, and the DONE handshake.
/// Cursors and last-synced move only when both DONEs have crossed; a session
/// that ends any other way keeps the records it applied (they are valid LWW
/// state) and moves nothing. One thread drives it; not Sendable.
final class SyncSession {
    private let store: Store
    private let family: FamilyInfo
    private let me: String
    private let peer: SessionPeer
    private let channel: FrameChannel
    private let options: SyncOptions
    private let clock: SyncClock
    private let observer: SyncObserver?
    private let verifier: ProofVerifier
    private var summary: SyncSummary
    private let started: Deadline

    // Records out: (sendAfter, snapshot] of our change numbers.
    private var sendAfter: Int64 = 0
    private var snapshot: Int64 = 0
    private var recordsOutDone = false
    // Records in.
    private var peerRecordsEnded = false
    /// Change numbers our store used for the peer's records this session.
    private var seqsUsedForPeer: Int64 = 0

    private let waves: PhotoWaves
    private let responder: PhotoResponder

    private var peerHello: HelloMessage?
    private var doneSent: DoneMessage?
    private var peerDone: DoneMessage?
    private var phase = SessionPhase.hello
    private var lastProgress: Deadline
    private var timers: MonotonicClock { clock.monotonic }

    init(store: Store, family: FamilyInfo, me: String, peer: SessionPeer, channel: FrameChannel,
         options: SyncOptions, clock: SyncClock, observer: SyncObserver?, verifier: ProofVerifier) {
        self.store = store
        self.verifier = verifier
        self.family = family
        self.me = me
        self.peer = peer
        self.channel = channel
        self.options = options
        self.clock = clock
        self.observer = observer
        self.waves = PhotoWaves(store: store, waveTimeout: options.waveTimeout, clock: clock.monotonic)
        started = clock.monotonic.now()
        lastProgress = started
        self.responder = PhotoResponder(store: store, faults: options.faults)
        var s = SyncSummary(side: peer.side)
        s.peer = peer.device
        s.address = peer.address
        s.joined = peer.joined
        summary = s
    }

    /// Runs the session to the end of the DONE handshake. Throws a ToolError
    /// whose status says how it ended otherwise (65 protocol error, 69 the
    /// peer vanished or went silent); the store keeps whole applied batches only.
    func run() throws -> SyncSummary {
        // Checkpoints run beside the session; where they cannot, the session's
        // connection does them itself, less often than usual.
        let checkpointer = store.startBackgroundCheckpointer()
        let checkpointBefore = checkpointer == nil ? try store.raiseAutoCheckpoint(bytes: SyncLimits.sessionCheckpointBytes) : nil
        defer {
            checkpointer?.stop()
            if let checkpointBefore { try? store.restoreAutoCheckpoint(pages: checkpointBefore) }
        }
        do {
            try exchangeHellos()
            try loop()
            try finish()
            return summary
        } catch let e as ProtocolError {
            channel.send(.error, json: .object([("message", .string(e.message))]))
            try? channel.drain(deadline: Deadline(after: .seconds(1)))
            emit("ended", [("outcome", .string("protocol-error")), ("message", .string(e.message))])
            throw ToolError(.dataError, "protocol error from \(peerName): \(e.message); session ended, cursors not moved")
        } catch is SessionInterrupted {
            emit("ended", [("outcome", .string("interrupted"))])
            throw ToolError(.tempFail, "interrupted; session with \(peerName) ended, cursors not moved")
        } catch let e as TLSError {
            emit("ended", [("outcome", .string("vanished"))])
            throw ToolError(.unavailable, "connection to \(peerName) lost (\(e.description)); session ended, cursors not moved")
        } catch let e as SocketError {
            emit("ended", [("outcome", .string("vanished"))])
            throw ToolError(.unavailable, "connection to \(peerName) lost (\(e.description)); session ended, cursors not moved")
        }
    }

    private func enter(_ p: SessionPhase) {
        phase = p
        emit("phase", [("phase", .string(p.rawValue))])
    }

    private var peerName: String { peer.address.map { "\(peer.device) at \($0)" } ?? peer.device }

    private func emit(_ name: String, _ fields: [(String, JSONValue)] = []) {
        observer?(SyncEvent(name, fields))
    }

    // MARK: Opening

    private func exchangeHellos() throws {
        snapshot = try store.currentChangeSeq
        let hello = HelloMessage(device: me, family: family.id, role: family.role, clock: clock.now(),
                                 epoch: try store.familyEpoch, after: try store.receivedCursor(from: peer.device))
        channel.send(.hello, json: hello.json)
        let deadline = Deadline(after: SyncLimits.idleTimeout)
        let f = try nextFrame(deadline: deadline, expecting: "HELLO")
        if f.type == .refused, peer.side == .client { throw SessionRefused(refusal: try RefusalMessage(f)) }
        guard f.type == .hello else { throw ProtocolError("expected HELLO, got \(f.type.name)") }
        let h = try HelloMessage(f)
        guard h.device == peer.device else { throw ProtocolError("HELLO names device \(h.device), but the session key is \(peer.device)'s") }
        guard h.family == family.id else { throw ProtocolError("HELLO names family \(h.family), not \(family.id)") }
        guard (h.role == .owner) == (h.device == family.ownerDevice) else {
            throw ProtocolError("HELLO says role '\(h.role.rawValue)', but \(family.ownerDevice) is the family's owner")
        }
        peerHello = h
        summary.clockSkewMilliseconds = h.clock.milliseconds - clock.now().milliseconds
        // The peer says how far of our changes it holds. More than we ever made
        // means our store went back in time (a restore): send everything.
        sendAfter = h.after <= snapshot ? h.after : 0
        emit("hello", [("peer", .string(h.device)), ("role", .string(h.role.rawValue)), ("clockSkewMs", .int(summary.clockSkewMilliseconds)),
                       ("full", .bool(sendAfter == 0))])
        if summary.clockSkewReported {
            emit("clock-skew", [("ms", .int(summary.clockSkewMilliseconds))])
        }

        // FAMILY: roster, revocations, the newest proof; the family key for a member that is behind.
        let roster = try store.devices().map { RosterEntry(device: $0.deviceID, role: $0.role, joinedAt: $0.joinedAt, revokedAt: $0.revokedAt) }
        var key: [UInt8]? = nil
        if family.role == .owner, h.epoch < (try store.familyEpoch) { key = try store.familySecret() }
        let maxDevices = Int64(family.role == .owner ? try store.maxDevices : Int(try store.meta("family_max_devices") ?? "") ?? Store.defaultMaxDevices)
        let outgoing = EntitlementExchange.outgoingProof(store, verifier: verifier, now: clock.now())
        if let problem = outgoing.problem { emit("warning", [("message", .string("no proof sent: \(problem)"))]) }
        summary.proofSent = outgoing.jws != nil
        let fm = FamilyMessage(owner: family.ownerDevice, epoch: try store.familyEpoch, maxDevices: maxDevices,
                               devices: Array(roster.prefix(FamilyMessage.maxRosterEntries)),
                               proof: outgoing.jws, policy: EntitlementExchange.policy(store), familyKey: key)
        channel.send(.family, json: fm.json)
        let g = try nextFrame(deadline: Deadline(after: SyncLimits.idleTimeout), expecting: "FAMILY")
        guard g.type == .family else { throw ProtocolError("expected FAMILY, got \(g.type.name)") }
        try apply(try FamilyMessage(g), from: h)
        enter(.records)
    }

    /// The next frame, answering nothing but skipping keepalives.
    private func nextFrame(deadline: Deadline, expecting what: String) throws -> Frame {
        while true {
            var frames = channel.takeStash()
            if frames.isEmpty, let f = try channel.receive(deadline: deadline) { frames = [f] + channel.takeStash() }
            if frames.isEmpty {
                if channel.peerClosed != nil { throw TLSError(.io, "\(peerName) closed the connection before \(what)") }
                continue
            }
            let f = frames.removeFirst()
            channel.stash = frames
            if f.type == .ping { continue }
            if f.type == .error { throw peerReportedError(f) }
            return f
        }
    }

    private func peerReportedError(_ f: Frame) -> ToolError {
        let m = (try? FieldReader(f).string("message", maxBytes: 1024)) ?? "(no message)"
        return ToolError(.dataError, "\(peerName) ended the session with a protocol error: \(m); cursors not moved")
    }

    private func apply(_ m: FamilyMessage, from h: HelloMessage) throws {
        guard m.owner == family.ownerDevice else { throw ProtocolError("FAMILY names owner \(m.owner), not \(family.ownerDevice)") }
        let fromOwner = h.device == family.ownerDevice
        let now = clock.now()
        var newKey = false
        var received = EntitlementExchange.Received.none
        try store.write {
            for e in m.devices where e.device != me || fromOwner {
                try store.mergeRosterEntry(device: e.device, role: e.role, joinedAt: e.joinedAt, revokedAt: e.revokedAt, authoritative: fromOwner)
            }
            if fromOwner {
                if let p = m.policy, p != (try store.proofPolicy()) { try store.setProofPolicy(p) }
                try store.setMeta("family_max_devices", String(m.maxDevices))
                if let k = m.familyKey, m.epoch > (try store.familyEpoch) {
                    try store.setFamilyKey(k, epoch: m.epoch)
                    newKey = true
                }
            }
            if let p = m.proof {
                received = try EntitlementExchange.receiveInTransaction(p, from: h.device, store: store, verifier: verifier, now: now)
            }
        }
        if newKey { emit("family-key", [("epoch", .int(m.epoch))]) }
        summary.proofReceived = received
        switch received {
        case .none: break
        case let .known(until): emit("proof", [("state", .string("known")), ("until", .optional(until?.rfc3339))])
        case let .kept(until): emit("proof", [("state", .string("kept")), ("until", .optional(until?.rfc3339))])
        case let .rejected(reason, detail):
            emit("proof", [("state", .string("rejected")), ("reason", .string(reason)), ("detail", .string(detail))])
        case .notJudged: emit("proof", [("state", .string("not-judged"))])
        }
    }

    // MARK: The main loop

    private func loop() throws {
        var pending = channel.takeStash()
        while true {
            for f in pending { try handle(f) }
            pending = []
            if doneSent != nil, peerDone != nil { return }
            if channel.peerClosed != nil {
                let why = channel.closedMidFrame ? "closed the connection in the middle of a frame" : "closed the connection before DONE"
                throw TLSError(.io, "the peer \(why)")
            }
            if SyncStop.isRequested { throw SessionInterrupted() }
            try produce()
            try checkTimers()
            if doneSent != nil, peerDone != nil { continue }
            pending = try channel.turn(waitMilliseconds: waitMilliseconds())
            reportProgress()
        }
    }

    private func waitMilliseconds() -> Int32 {
        var d = channel.lastSent.adding(SyncLimits.keepaliveInterval)
        if let w = waves.timeoutDeadline, w < d { d = w }
        return max(1, min(timers.remainingMilliseconds(until: d), 250))
    }

    private func produce() throws {
        // Our records, from the peer's cursor up to the snapshot.
        while !recordsOutDone && channel.backlog < SyncLimits.outputHighWater {
            let b = try store.exportRecordBatch(after: sendAfter, upTo: snapshot, maxCount: SyncLimits.recordBatchCount, maxBytes: SyncLimits.recordBatchBytes)
            if b.count == 0 {
                channel.send(.recordsEnd, json: .object([("count", .int(summary.recordsSent))]))
                recordsOutDone = true
                break
            }
            channel.send(.records, b.payload)
            summary.recordsSent += Int64(b.count)
            sendAfter = b.lastSeq
        }
        // Answers to the peer's photo requests.
        if peerDone == nil { try responder.produce(channel) }
        summary.photosSent = responder.sent
        // Our own photo waves, from the peer's first records on.
        if !waves.finished {
            if peerRecordsEnded && phase != .photos { enter(.photos) }
            let n = try waves.advance(channel, recordsComplete: peerRecordsEnded)
            if n > 0 { emit("wave", [("wave", .int(waves.waveNumber)), ("requested", .int(n))]) }
        }
        try sendDoneIfReady()
    }

    private func sendDoneIfReady() throws {
        guard doneSent == nil, recordsOutDone, peerRecordsEnded, waves.finished else { return }
        // If nothing but the peer's records moved our counter, the peer holds
        // everything up to our current change number; otherwise only up to the snapshot.
        let current = try store.currentChangeSeq
        let upTo = current - snapshot == seqsUsedForPeer ? current : snapshot
        let d = DoneMessage(recordsSent: summary.recordsSent, recordsReceived: summary.recordsReceived, recordsApplied: summary.recordsApplied,
                            photosSent: responder.sent, photosReceived: waves.received, photosUnavailable: waves.unavailable,
                            digest: try store.recordStateDigest(), upTo: upTo)
        channel.send(.done, json: d.json)
        doneSent = d
        summary.localDigest = d.digest
        phase = .done
        emit("done-sent", [("digest", .string(d.digest))])
    }

    private func checkTimers() throws {
        let n = waves.expireIfSilent()
        if n > 0 {
            emit("wave-timeout", [("wave", .int(waves.waveNumber)), ("unavailable", .int(n)), ("afterMs", .int(options.waveTimeout.milliseconds))])
        }
        if timers.hasPassed(channel.lastReceived.adding(SyncLimits.idleTimeout)) {
            throw TLSError(.timeout, "\(peer.device) sent nothing for \(SyncLimits.idleTimeout)")
        }
        if channel.backlog == 0, timers.hasPassed(channel.lastSent.adding(SyncLimits.keepaliveInterval)) {
            channel.send(.ping, [])
        }
    }

    private func handle(_ f: Frame) throws {
        switch f.type {
        case .records:
            guard !peerRecordsEnded else { throw ProtocolError("RECORDS after RECORDS-END") }
            try applyRecords(f.payload)
        case .recordsEnd:
            guard !peerRecordsEnded else { throw ProtocolError("a second RECORDS-END") }
            let count = try FieldReader(f).int("count")
            guard count == summary.recordsReceived else {
                throw ProtocolError("RECORDS-END counts \(count) records, but \(summary.recordsReceived) arrived")
            }
            peerRecordsEnded = true
            waves.recordsArrived()
        case .photoRequest:
            guard peerDone == nil else { throw ProtocolError("PHOTO-REQUEST after DONE") }
            try responder.enqueue(f)
        case .photoData:
            if doneSent != nil && peerDone != nil { return }
            if let warning = try waves.handleData(f, now: clock.now()) { emit("warning", [("message", .string(warning))]) }
        case .photoUnavailable:
            try waves.handleUnavailable(f)
        case .done:
            guard peerDone == nil else { throw ProtocolError("a second DONE") }
            let d = try DoneMessage(f)
            guard peerRecordsEnded else { throw ProtocolError("DONE before RECORDS-END") }
            guard d.recordsSent == summary.recordsReceived else {
                throw ProtocolError("DONE says \(d.recordsSent) records were sent, but \(summary.recordsReceived) arrived")
            }
            guard recordsOutDone, d.recordsReceived == summary.recordsSent else {
                throw ProtocolError("DONE says \(d.recordsReceived) records arrived, but \(summary.recordsSent) were sent")
            }
            peerDone = d
            summary.peerDigest = d.digest
            responder.stop()
            emit("done-received", [("digest", .string(d.digest))])
        case .ping:
            break
        case .error:
            throw peerReportedError(f)
        case .hello, .family, .refused, .busy, .join, .welcome:
            throw ProtocolError("unexpected \(f.type.name) in the middle of a session")
        }
    }

    /// One RECORDS batch: every line must be a valid record, or nothing of it
    /// is applied; then the batch is applied by the LWW rule in one transaction.
    private func applyRecords(_ payload: [UInt8]) throws {
        var records: [Record] = []
        var lineNumber = 0
        var start = 0
        while start < payload.count {
            let end = payload[start...].firstIndex(of: 0x0A) ?? payload.count
            lineNumber += 1
            if end > start {
                let line = String(decoding: payload[start..<end], as: UTF8.self)
                do { records.append(try Record(line: line)) } catch {
                    throw ProtocolError("RECORDS line \(lineNumber) (record \(summary.recordsReceived + Int64(records.count) + 1)): \(error)")
                }
            }
            start = end + 1
        }
        guard !records.isEmpty else { throw ProtocolError("RECORDS frame with no records") }
        let now = clock.now()
        let s = try store.write { try store.applyRemoteInTransaction(records, now: now) }
        seqsUsedForPeer += Int64(s.applied)
        waves.recordsArrived()
        summary.recordsReceived += Int64(records.count)
        summary.recordsApplied += Int64(s.applied)
        summary.recordsClamped += Int64(s.clamped)
    }

    private func reportProgress() {
        let now = timers.now()
        guard now >= lastProgress.adding(SyncLimits.progressInterval) else { return }
        lastProgress = now
        let ms = max(1, now.milliseconds(since: started))
        let rate = (channel.bytesSent + channel.bytesReceived) * 1000 / ms
        emit("progress", [("phase", .string(phase.rawValue)), ("wave", .int(waves.waveNumber)), ("bytesSent", .int(channel.bytesSent)),
                          ("bytesReceived", .int(channel.bytesReceived)), ("bytesPerSecond", .int(rate)),
                          ("recordsReceived", .int(summary.recordsReceived)), ("photosReceived", .int(waves.received))])
    }

    // MARK: Closing

    private func finish() throws {
        guard let mine = doneSent, let theirs = peerDone else { return }
        try channel.drain(deadline: Deadline(after: SyncLimits.closeTimeout))
        let now = clock.now()
        try store.write {
            try store.recordCompletedSync(peer: peer.device, recvSeq: theirs.upTo, sentSeq: mine.upTo, at: now, address: peer.address)
        }
        summary.lastSynced = now
        summary.photosReceived = waves.received
        summary.photosUnavailable = waves.unavailable
        summary.photosSent = responder.sent
        summary.waves = Int64(waves.waveNumber)
        summary.photosWanted = Int64(try store.wantedPhotoCount())
        _ = channel.tls.shutdown(deadline: Deadline(after: SyncLimits.closeTimeout))
        summary.bytesSent = channel.bytesSent
        summary.bytesReceived = channel.bytesReceived
        summary.durationMilliseconds = timers.now().milliseconds(since: started)
        emit("synced", [("peer", .string(peer.device)), ("lastSynced", .string(now.rfc3339)),
                        ("digestsEqual", .bool(mine.digest == theirs.digest))])
    }
}
