/// A stop was requested (a signal) while a session ran.
struct SessionInterrupted: Error {}

/// The server refused on an authenticated session (the refusal is genuine).
struct SessionRefused: Error {
    var refusal: RefusalMessage
}

/// The server's handshake completed while another device's session took
/// its one slot: BUSY as the first frame of the authenticated session (§5.1).
struct SessionBusy: Error {
    var retryAfter: TimeSpan
}

/// The peer ended the session with ERROR (its protocol error, about us).
struct PeerReportedError: Error {
    var message: String
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

    // Records out: the rows whose change number was in (after, snapshot] when
    // the peer's HELLO arrived. `sendAfter` is the last change number sent;
    // sentFrom is where they began.
    private var sendAfter: Int64 = 0
    private var sentFrom: Int64 = 0
    private var snapshot: Int64 = 0
    private var rangeExhausted = false
    /// Rows of that set the peer's records replaced before they were sent:
    /// they go out (as now held) after the rest, so the set stays the one fixed at HELLO.
    private var displaced: [Int64] = []
    /// Rows the peer sent this store, unchanged since, are not sent back (schema 6's `came_from`).
    private var skipPeersOwn = false
    /// The meta key set when a session with `peer` ended with the digests apart.
    static func resyncKey(_ peer: String) -> String { "resync_with:\(peer)" }
    private var displacedSent = 0
    /// The owner's copies of the member's versions that an edit here replaced
    /// before they went back (§7.4 "Copies owed"): they go ahead of the range.
    private var returnsOut: [(payload: [UInt8], count: Int64)] = []
    /// The resume chain our marks name (§7.4b), nil for a peer that keeps no marks;
    /// `markUpTo` is set when the batch about to go out came from the range.
    private var outChain: String?
    private var markUpTo: Int64?
    /// The peer's last mark this session, and the one for the batch that comes next.
    private var peerMark: ResumePoint?
    private var pendingPeerMark: ResumePoint?
    /// The point for the peer's records that our HELLO named: a first mark in its chain says the peer went on from it.
    private var namedResume: ResumePoint?
    private var recordsOutDone = false
    /// The clamp (docs/protocol.md §7.4), fixed at HELLO. A version leaves the
    /// device that made it no later than the family's clock + the clamp
    /// window: in a session with the owner, the owner's HELLO clock, which
    /// both sides read alike; between members, the sender's own reading of
    /// the family's clock. `ownBound` is what we pull our own versions back
    /// to before they go out (we keep what we sent); `receiveBound` is what
    /// the owner pulls a member's versions back to if they come later (never
    /// below what it holds); a member takes the owner's versions as they are.
    private var ownBound: OwnVersionBound?
    /// A member: the owner's HELLO clock and this device's when it arrived (FamilyClock.swift).
    private var ownerClockReading: (owner: Timestamp, local: Timestamp)?
    private var receiveBound = Int64.max
    // Records in.
    private var peerRecordsEnded = false
    /// Change numbers our store used for the peer's records this session.
    private var seqsUsedForPeer: Int64 = 0
    /// Some of the peer's versions were pulled back here: those rows must go back to it.
    private var peerLacksOurCopies = false
    /// Purge records for the peer (§4.5), signed by the owner, sent before our
    /// records: the owner's numbered in (sendAfter, snapshot] as fixed at
    /// HELLO; a member's, all it holds, when it sends everything.
    private var purgesOut: [[UInt8]] = []
    /// A member: what the owner said every device acknowledged, kept once
    /// the session completes (by then this store holds what the owner held
    /// when it said so, so a purge by it never races the records it implies).
    private var pendingAcknowledgement: (acked: Int64, waitingFor: [(device: String, lastSynced: Timestamp?)])?

    /// Which of the peer's versions need a proof of who made them (§7.4 "Authorship").
    private lazy var authorship = AuthorshipCheck.forIntake(store: store, family: family, me: me, from: peer.device)

    private let waves: PhotoWaves
    private let responder: PhotoResponder
    /// Called once both DONEs have crossed, before the closing handshake and
    /// the bookkeeping: a server frees its session slot then, so a device
    /// connecting at once is queued behind the closing rather than told BUSY.
    var onDoneExchanged: (() -> Void)?

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

    /// Runs the session to the end of the DONE handshake. Throws a `SyncError`
    /// whose kind says how it ended otherwise (a protocol error, the peer
    /// vanished or went silent); the store keeps whole applied batches only.
    func run() throws -> SyncSummary {
        // Checkpoints run beside the session; where they cannot, the session's
        // connection does them itself, less often than usual.
        let checkpointer = store.startBackgroundCheckpointer()
        let checkpointBefore = checkpointer == nil ? try store.raiseAutoCheckpoint(bytes: SyncLimits.sessionCheckpointBytes) : nil
        let store = self.store
        defer {
            channel.eachTurn = nil
            try? store.stopPhotoWriter()
            checkpointer?.stop()
            if let checkpointBefore { try? store.restoreAutoCheckpoint(pages: checkpointBefore) }
        }
        // Photos received go to disk on a writer thread; each turn records as held what it has written.
        try store.startPhotoWriter()
        channel.eachTurn = { try store.flushStagedPhotosIfDue() }
        do {
            // Durability: the session's commits are not synced one by one; it
            // syncs before its DONE and after moving its cursors (Durability.swift).
            return try store.deferringSyncs {
                try exchangeHellos()
                try loop()
                try finish()
                return summary
            }
        } catch let e as ProtocolError {
            // ERROR, then close_notify, so the peer can tell the end from a truncation (§6, §11).
            channel.send(.error, json: .object([("message", .string(e.message))]))
            try? channel.drain(deadline: Deadline(after: SyncLimits.errorCloseTimeout))
            _ = channel.tls.shutdown(deadline: Deadline(after: SyncLimits.errorCloseTimeout))
            emit("ended", [("outcome", .string("protocol-error")), ("message", .string(e.message))])
            throw SyncError(.protocolViolation, peer: peerName, detail: e.message, outcome: .cursorsNotMoved)
        } catch let e as PeerReportedError {
            _ = channel.tls.shutdown(deadline: Deadline(after: SyncLimits.errorCloseTimeout))
            emit("ended", [("outcome", .string("peer-error")), ("message", .string(e.message))])
            throw SyncError(.peerReportedError, peer: peerName, detail: e.message, outcome: .cursorsNotMoved)
        } catch let e as SyncError where e.kind == .revokedByRoster {
            // Not an error of the peer's: the session just ends, with close_notify and no ERROR (§6).
            _ = channel.tls.shutdown(deadline: Deadline(after: SyncLimits.errorCloseTimeout))
            throw e
        } catch is SessionInterrupted {
            emit("ended", [("outcome", .string("interrupted"))])
            throw SyncError(.interrupted, peer: peerName, outcome: .cursorsNotMoved)
        } catch let e as TLSError {
            // A silent peer (§8) is given close_notify, as any end that is not an error; a lost connection has nothing to send it on.
            if e.kind == .timeout { _ = channel.tls.shutdown(deadline: Deadline(after: SyncLimits.errorCloseTimeout)) }
            emit("ended", [("outcome", .string("vanished"))])
            throw SyncError(.connectionLost, peer: peerName, detail: e.description, outcome: .cursorsNotMoved)
        } catch let e as SocketError {
            emit("ended", [("outcome", .string("vanished"))])
            throw SyncError(.connectionLost, peer: peerName, detail: e.description, outcome: .cursorsNotMoved)
        }
    }

    private func enter(_ p: SessionPhase, _ extra: [(String, JSONValue)] = []) {
        phase = p
        emit("phase", [("phase", .string(p.rawValue))] + extra)
    }

    private var peerName: String { peer.address.map { "\(peer.device) at \($0)" } ?? peer.device }

    private func emit(_ name: String, _ fields: [(String, JSONValue)] = []) {
        observer?(SyncEvent(name, fields))
    }

    // MARK: Opening

    private func exchangeHellos() throws {
        let myClock = clock.now()
        let (myRecv, mySent) = (try store.receivedCursor(from: peer.device), try store.sentCursor(to: peer.device))
        var hello = HelloMessage(version: options.faults.contains(.speakPreviousVersion) ? Int64(SyncProtocol.version - 1) : Int64(SyncProtocol.version), device: me, family: family.id, role: family.role, clock: myClock,
                                 epoch: try store.familyEpoch, after: myRecv, sent: mySent, changes: try store.currentChangeSeq)
        hello.resume = try store.resumePoint(peer.device, .incoming)
        namedResume = hello.resume
        channel.send(.hello, json: hello.json)
        let f = try nextFrame(expecting: "HELLO")
        if f.type == .refused, peer.side == .client { throw SessionRefused(refusal: try RefusalMessage(f)) }
        if f.type == .busy, peer.side == .client {
            _ = channel.tls.shutdown(deadline: Deadline(after: SyncLimits.errorCloseTimeout))
            throw SessionBusy(retryAfter: BusyReply.retryAfter(f))
        }
        guard f.type == .hello else { throw ProtocolError("expected HELLO, got \(f.type.name)") }
        let h = try HelloMessage(f)
        guard h.device == peer.device else { throw ProtocolError("HELLO names device \(h.device), but the session key is \(peer.device)'s") }
        guard h.family == family.id else { throw ProtocolError("HELLO names family \(h.family), not \(family.id)") }
        guard (h.role == .owner) == (h.device == family.ownerDevice) else {
            throw ProtocolError("HELLO says role '\(h.role.rawValue)', but \(family.ownerDevice) is the family's owner")
        }
        // Trust (§4.7): a member's epoch above the owner's moves the owner's
        // key (§4.6), so it is judged before anything is written.
        if family.role == .owner, h.epoch > (try store.familyEpoch) + SyncLimits.maxEpochLead {
            throw ProtocolError("HELLO field 'epoch': \(h.epoch) is more than \(SyncLimits.maxEpochLead) above the owner's \(try store.familyEpoch)")
        }
        peerHello = h
        // The set of records we send is fixed now (§7.2), and so is the clamp (§7.4).
        snapshot = try store.currentChangeSeq
        let arrived = clock.now()
        summary.clockSkewMilliseconds = h.clock.milliseconds - arrived.milliseconds
        if family.role == .owner {
            // The owner's clock is the family's: it bounds what members make. The owner's own
            // edits were stamped by that clock and go out as they are, so a copy of the owner's
            // store restored from a backup sends the very versions its members hold.
            receiveBound = LWW.bound(clock: myClock)
        } else if h.role == .owner {
            // A member reads the family's clock off the owner's HELLO, and stamps by it once the session completes.
            ownerClockReading = (h.clock, arrived)
            ownBound = OwnVersionBound(limit: LWW.bound(clock: h.clock))
        } else {
            // Between members: each bounds its own versions, and what it takes, by its reading of the family's clock.
            let limit = LWW.bound(clock: try store.familyTime(at: myClock))
            ownBound = OwnVersionBound(limit: limit)
            receiveBound = limit
        }
        // The peer says how far of our changes it holds. More than we ever made
        // means our store went back in time (a restore): send everything. So
        // does a peer that remembers another last session than we do (one of
        // the two stores was restored from a copy): neither cursor can be
        // trusted, and both sides, seeing the same four numbers, send everything.
        let continuous = h.after == mySent && h.sent == myRecv
        // Both stores remember the same last session, so what the peer sent us
        // (unchanged since) it holds, even if a session cut off before its
        // cursors moved brought it: that is not sent back. But when the last
        // session ended with the two digests apart, both send everything this
        // time, nothing held back, so whatever one store lost comes back.
        let resync = try store.meta(SyncSession.resyncKey(peer.device)) != nil
        skipPeersOwn = continuous && !resync
        sendAfter = h.after <= snapshot && continuous && !resync ? h.after : 0
        sentFrom = sendAfter
        if h.marks { try resume(from: h.resume) }
        if !continuous && family.role == .owner {
            try store.write { try store.forgetAcknowledgementPoints(member: peer.device) }
        }
        if family.role == .owner {
            // What the member holds of ours ends what is owed to it, when its word can be taken;
            // the copies still owed that another edit replaced go first, what replaced them after the range.
            if continuous && h.after <= snapshot { try store.write { try store.dropReturnsInTransaction(peer: peer.device, upTo: h.after) } }
            let owed = try store.supersededReturnBatches(peer: peer.device)
            returnsOut = owed.batches
            displaced += owed.rows
        }
        if family.role == .owner || sendAfter == 0 {
            purgesOut = try store.write { try store.purgePayloads(after: sendAfter, upTo: snapshot, all: family.role != .owner, family: family) }
        }
        // A member holding a later family key than the owner's: the owner's
        // store went back in time (restored from a copy taken before a
        // revocation). The owner moves on to a fresh key above the member's,
        // so no key a revoked device may hold stays in use (§4.6).
        if family.role == .owner, h.epoch > (try store.familyEpoch) {
            _ = try store.write { try store.rotateFamilyKey(above: h.epoch) }
        }
        // How many records are coming at most, for progress: the peer's changes after where it sends from.
        var peerSendsAfter = continuous ? myRecv : 0
        if let r = hello.resume, r.after == peerSendsAfter { peerSendsAfter = r.upTo }
        let expected: JSONValue = h.changes.map { .int(max(0, $0 - (peerSendsAfter <= $0 ? peerSendsAfter : 0))) } ?? .null
        summary.peerName = try store.device(h.device)?.name
        emit("hello", [("peer", .string(h.device)), ("peerName", .optional(summary.peerName)), ("role", .string(h.role.rawValue)), ("clockSkewMs", .int(summary.clockSkewMilliseconds)),
                       ("full", .bool(sentFrom == 0)), ("resumed", .bool(summary.recordsResumed)), ("continuous", .bool(continuous)), ("recordsExpected", expected)])
        if summary.clockSkewReported {
            emit("clock-skew", [("ms", .int(summary.clockSkewMilliseconds)), ("peerRole", .string(h.role.rawValue)), ("role", .string(family.role.rawValue))])
        }

        // FAMILY: roster, revocations, the newest proof; the family key for a member that is behind.
        let (message, proofSent) = try FamilyStatement.make(store: store, family: family, peer: peer.device, peerEpoch: h.epoch,
                                                            verifier: verifier, now: clock.now()) { emit("warning", [("message", .string($0))]) }
        summary.proofSent = proofSent
        channel.sendSecret(.family, json: message.json)
        let g = try nextFrame(expecting: "FAMILY")
        guard g.type == .family else { throw ProtocolError("expected FAMILY, got \(g.type.name)") }
        try apply(try FamilyMessage(g), from: h)
        enter(.records)
    }

    /// Goes on from where a session that was cut off stopped (§7.4b): only
    /// when the peer's point and ours name the same chain and both start
    /// where this session starts, and the peer's is no further than ours,
    /// which we kept before saying it. A peer's point past ours means our
    /// store went back to a copy: its numbers past our point may name
    /// other changes now, so a new chain begins, as it does otherwise.
    private func resume(from theirs: ResumePoint?) throws {
        if let theirs, let mine = try store.resumePoint(peer.device, .outgoing),
           mine.chain == theirs.chain, mine.after == sentFrom, theirs.after == sentFrom, theirs.upTo <= mine.upTo {
            outChain = mine.chain
            let upTo = min(theirs.upTo, snapshot)
            if upTo > sendAfter {
                sendAfter = upTo
                summary.recordsResumed = true
            }
        } else {
            outChain = try RandomName.make()
        }
    }

    /// The next frame, skipping keepalives, and sending ours while we wait
    /// (§8: after 10 s of sending nothing, in every phase).
    private func nextFrame(expecting what: String) throws -> Frame {
        while true {
            var frames = channel.takeStash()
            if frames.isEmpty {
                try checkPeerClosed(before: what)
                if SyncStop.isRequested { throw SessionInterrupted() }
                try keepAlive()
                frames = try channel.turn(waitMilliseconds: waitMilliseconds())
            }
            guard !frames.isEmpty else { continue }
            let f = frames.removeFirst()
            channel.stash = frames
            if f.type == .ping { continue }
            if f.type == .error { throw PeerReportedError(message: peerErrorMessage(f)) }
            return f
        }
    }

    /// A closed connection before the session's end: a clean close in the
    /// middle of a frame is a protocol error; any other close means the peer
    /// vanished (an unclean one cannot be told from a lost connection) (§6).
    private func checkPeerClosed(before what: String) throws {
        guard let clean = channel.peerClosed else { return }
        if clean && channel.closedMidFrame { throw ProtocolError("the connection was closed (close_notify) in the middle of a frame") }
        let how = clean ? "closed the connection" : "the connection ended without a TLS close"
        throw TLSError(.io, channel.closedMidFrame ? "\(how) in the middle of a frame" : "\(how) before \(what)")
    }

    private func peerErrorMessage(_ f: Frame) -> String {
        let m = (try? FieldReader(f).string("message", maxBytes: 1024)) ?? "(no message)"
        return DisplayText.escaped(m)
    }

    /// Applies the peer's FAMILY in one transaction (FamilyStatement.swift);
    /// a member keeps the owner's acknowledgement until the session completes.
    private func apply(_ m: FamilyMessage, from h: HelloMessage) throws {
        let r = try store.write {
            try FamilyStatement.receiveInTransaction(m, from: h.device, peerEpoch: h.epoch, store: store, family: family, verifier: verifier, now: clock.now())
        }
        if let a = r.acknowledgement { pendingAcknowledgement = a }
        summary.proofReceived = r.proof
        try FamilyStatement.settle(r, store: store, me: me, peerName: peerName) { name, fields in emit(name, fields) }
    }

    // MARK: The main loop

    private func loop() throws {
        var pending = channel.takeStash()
        while true {
            for f in pending { try handle(f) }
            pending = []
            if doneSent != nil, peerDone != nil { return }
            try checkPeerClosed(before: "DONE")
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
        // The owner's purge records first: the member drops what they name (§4.5).
        while !purgesOut.isEmpty && channel.backlog < SyncLimits.outputHighWater {
            let batch = purgesOut.removeFirst()
            channel.send(.purged, batch)
            summary.purgeRecordsSent += Int64((batch.count - Ed25519.signatureBytes) / PurgeEntry.encodedBytes)
        }
        // The copies owed, ahead of the range.
        while purgesOut.isEmpty && !returnsOut.isEmpty && channel.backlog < SyncLimits.outputHighWater {
            let b = returnsOut.removeFirst()
            channel.send(.records, b.payload)
            summary.recordsSent += b.count
        }
        // Our records: the set fixed at the peer's HELLO.
        while purgesOut.isEmpty && returnsOut.isEmpty && !recordsOutDone && channel.backlog < SyncLimits.outputHighWater {
            if options.faults.contains(.holdRecordsAfterFirstBatch) && summary.recordsSent > 0 { break }
            guard let b = try nextOutgoingBatch() else {
                // The owner's copies of edits a member sends again go back to it in this
                // session (§7.4), so the owner's RECORDS-END waits for the member's.
                if family.role == .owner && !peerRecordsEnded { break }
                channel.send(.recordsEnd, json: .object([("count", .int(summary.recordsSent)), ("after", .int(sentFrom))]))
                recordsOutDone = true
                break
            }
            // The mark for a batch of the range: kept here before it is said (§7.4b).
            let mark = outChain.flatMap { chain in markUpTo.map { ResumePoint(chain: chain, after: sentFrom, upTo: $0) } }
            if !b.clamped.isEmpty || !b.released.isEmpty || mark != nil {
                // Our own edits leave this store now: pulled back if later than the family's clock allows,
                // and kept as sent (§7.4); from here on no session rewrites them.
                seqsUsedForPeer += try store.write {
                    try store.releaseInTransaction(b.released)
                    if let mark { try store.setResumePointInTransaction(mark, peer: peer.device, .outgoing) }
                    return try store.adoptClampedInTransaction(b.clamped)
                }
                summary.recordsClamped += Int64(b.clamped.count)
            }
            if let mark { channel.send(.recordsMark, json: RecordsMarkMessage(mark).json) }
            channel.send(.records, b.payload)
            summary.recordsSent += Int64(b.count)
        }
        // Answers to the peer's photo requests.
        if peerDone == nil { try responder.produce(channel) }
        summary.photosSent = responder.sent
        // Our own photo waves, from the peer's first records on.
        if !waves.finished {
            if peerRecordsEnded && phase != .photos {
                enter(.photos, [("photosWanted", .int(Int64(try store.wantedPhotoCount()) + waves.received))])
            }
            let n = try waves.advance(channel, recordsComplete: peerRecordsEnded)
            if n > 0 { emit("wave", [("wave", .int(waves.waveNumber)), ("requested", .int(n))]) }
        }
        try sendDoneIfReady()
    }

    /// The next batch of the set: rows still in (sendAfter, snapshot] by change
    /// number, then the displaced ones. Nil when all are out.
    private func nextOutgoingBatch() throws -> OutgoingBatch? {
        markUpTo = nil
        if !rangeExhausted {
            let b = try store.exportRecordBatch(after: sendAfter, upTo: snapshot, maxCount: options.recordBatchCount,
                                                maxBytes: SyncLimits.recordBatchBytes, bound: ownBound, skipping: skipPeersOwn ? peer.device : nil)
            if b.count > 0 {
                sendAfter = b.lastSeq
                markUpTo = b.lastSeq
                return b
            }
            rangeExhausted = true
        }
        while displacedSent < displaced.count {
            let rows = displaced[displacedSent..<min(displaced.count, displacedSent + options.recordBatchCount)]
            let (b, used) = try store.exportRecordRows(rows, maxBytes: SyncLimits.recordBatchBytes, bound: ownBound,
                                                       skipping: skipPeersOwn ? peer.device : nil)
            displacedSent += used
            if b.count > 0 { return b }
        }
        return nil
    }

    private func sendDoneIfReady() throws {
        guard doneSent == nil, recordsOutDone, peerRecordsEnded, waves.finished else { return }
        // If nothing but the peer's records moved our counter, the peer holds
        // everything up to our current change number; otherwise only up to the snapshot.
        let current = try store.currentChangeSeq
        let upTo = current - snapshot == seqsUsedForPeer && !peerLacksOurCopies ? current : snapshot
        let d = DoneMessage(recordsSent: summary.recordsSent, recordsReceived: summary.recordsReceived, recordsApplied: summary.recordsApplied,
                            photosSent: responder.sent, photosReceived: waves.received, photosUnavailable: waves.unavailable,
                            digest: try store.recordStateDigest(), upTo: upTo)
        // Durability: DONE tells the peer it may move its cursor past what it
        // sent, so everything received is on disk before it goes.
        try store.makeDurable()
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
        try keepAlive()
    }

    /// A silent peer has vanished; a side that has sent nothing for a while pings.
    private func keepAlive() throws {
        if timers.hasPassed(channel.lastReceived.adding(SyncLimits.idleTimeout)) {
            throw TLSError(.timeout, "\(peer.device) sent nothing for \(SyncLimits.idleTimeout)")
        }
        // Every session makes progress (§10): keepalives alone, or a session
        // past its length, do not hold the peer (or a server's slot) any longer.
        if timers.hasPassed(channel.lastWork.adding(options.quietLimit)) {
            throw ProtocolError("the session made no progress: nothing but keepalives for \(options.quietLimit)")
        }
        if timers.hasPassed(started.adding(options.sessionLimit)) {
            throw ProtocolError("the session reached its limit of \(options.sessionLimit); what it applied is kept, the rest comes in the next session")
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
            let end = try FieldReader(f)
            let count = try end.int("count")
            let peerAfter = try end.int("after")
            guard count == summary.recordsReceived else {
                throw ProtocolError("RECORDS-END counts \(count) records, but \(summary.recordsReceived) arrived")
            }
            guard peerAfter >= 0 else { throw ProtocolError("RECORDS-END field 'after': negative") }
            guard pendingPeerMark == nil else { throw ProtocolError("RECORDS-MARK followed by RECORDS-END, not by its RECORDS") }
            peerRecordsEnded = true
            if summary.recordsUnattributed > 0 {
                emit("warning", [("message", .string(Authorship.refusalWarning(summary.recordsUnattributed, from: peer.device)))])
            }
            waves.recordsArrived()
        case .recordsMark:
            guard !peerRecordsEnded else { throw ProtocolError("RECORDS-MARK after RECORDS-END") }
            guard pendingPeerMark == nil else { throw ProtocolError("a second RECORDS-MARK before its RECORDS") }
            let m = try RecordsMarkMessage(f).point
            if let last = peerMark, m.chain != last.chain || m.after != last.after || m.upTo < last.upTo {
                throw ProtocolError("RECORDS-MARK names another chain, start or an earlier point than the session's last mark")
            }
            pendingPeerMark = m
            // The peer kept the chain we named, so its records go on from our point (§7.4b).
            if peerMark == nil, let named = namedResume, named.chain == m.chain, named.after == m.after, named.upTo > named.after {
                summary.recordsResumed = true
            }
        case .purged:
            // Only the owner decides what the family forgets (§4.5): its signature decides, whoever relays it.
            guard !peerRecordsEnded else { throw ProtocolError("PURGED after RECORDS-END") }
            let outcome = try f.payload.withUnsafeBytes { b in try store.write { try store.receivePurgePayload(b, family: family) } }
            let n: Int
            switch outcome {
            case let .success(dropped): n = dropped
            case .failure(.malformed):
                throw ProtocolError("PURGED payload of \(f.payload.count) bytes is not a signature followed by whole \(PurgeEntry.encodedBytes)-byte entries")
            case .failure(.badSignature):
                throw ProtocolError("PURGED batch not signed by the family's owner (its roster key)")
            }
            summary.purgeRecordsReceived += Int64((f.payload.count - Ed25519.signatureBytes) / PurgeEntry.encodedBytes)
            summary.recordsPurged += Int64(n)
            if n > 0 { emit("purged", [("records", .int(Int64(n)))]) }
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
            throw PeerReportedError(message: peerErrorMessage(f))
        case .hello, .family, .refused, .busy, .join, .welcome:
            throw ProtocolError("unexpected \(f.type.name) in the middle of a session")
        }
    }

    /// One RECORDS batch (§7.4): every line is exactly one record object
    /// ended by 0x0A (no blank line, no CR, no bytes around the object), with
    /// `modifiedAt` in canonical form and no later than our limit; one bad line
    /// and nothing of the batch is applied. Then the batch is applied by the
    /// LWW rule in one transaction. Each line is scanned once, where it lies
    /// in the payload, and applied from that scan.
    private func applyRecords(_ payload: [UInt8]) throws {
        guard !payload.isEmpty else { throw ProtocolError("RECORDS frame with no records") }
        guard payload.last == 0x0A else { throw ProtocolError("RECORDS payload does not end with a line feed (0x0A) after its last record") }
        let now = clock.now()
        let watching: ClosedRange<Int64>? = !rangeExhausted && sendAfter < snapshot ? (sendAfter + 1)...snapshot : nil
        let (s, count) = try payload.withUnsafeBufferPointer { buf throws -> (ApplySummary, Int) in
            // Never nil: the payload was checked to be non-empty.
            let base = buf.baseAddress!
            let scans = try IncomingRecords.scan(base, count: buf.count, recordsBefore: summary.recordsReceived)
            let adopt: [UInt8]? = family.role == .member && peer.device == family.ownerDevice ? Array(me.utf8) : nil
            let keep: [UInt8]? = family.role == .owner ? Array(peer.device.utf8) : nil
            let mark = pendingPeerMark
            let check = authorship
            let s = try store.write {
                let s = try store.applyRemoteInTransaction(base, scans, now: now, watching: watching, bound: receiveBound,
                                                           adoptOwnerCopiesOf: adopt, keepOwnCopiesOf: keep, from: peer.device,
                                                           authorship: check)
                // The owner's copies of the member's versions are owed to it until it holds them, as from a bundle.
                if keep != nil { try store.queueReturnsInTransaction(peer: peer.device, owed: s.owed) }
                // The peer's mark for this batch, in the batch's transaction: it never claims more than the store holds (§7.4b).
                if let mark { try store.setResumePointInTransaction(mark, peer: peer.device, .incoming) }
                return s
            }
            return (s, scans.count)
        }
        if let m = pendingPeerMark { peerMark = m }
        pendingPeerMark = nil
        displaced += s.displaced
        // The member holds a later-dated copy of these: ours go back to it, in this session
        // (their new change numbers go to records it will hold).
        displaced += s.ownCopiesKept
        seqsUsedForPeer += Int64(s.ownCopiesKept.count)
        summary.recordsPurged += Int64(s.purged)
        summary.recordsClampedIn += Int64(s.clamped)
        summary.recordsUnattributed += Int64(s.unattributed)
        // A version pulled back here differs from the peer's: the peer does not hold our copy yet.
        if s.clamped > 0 { peerLacksOurCopies = true }
        seqsUsedForPeer += Int64(s.applied)
        waves.recordsArrived()
        summary.recordsReceived += Int64(count)
        summary.recordsApplied += Int64(s.applied)
    }

    private func reportProgress() {
        let now = timers.now()
        guard now >= lastProgress.adding(SyncLimits.progressInterval) else { return }
        lastProgress = now
        let ms = max(1, now.milliseconds(since: started))
        let rate = (channel.bytesSent + channel.bytesReceived) * 1000 / ms
        emit("progress", [("phase", .string(phase.rawValue)), ("wave", .int(waves.waveNumber)), ("bytesSent", .int(channel.bytesSent)),
                          ("bytesReceived", .int(channel.bytesReceived)), ("bytesPerSecond", .int(rate)),
                          ("recordsReceived", .int(summary.recordsReceived)), ("photosReceived", .int(waves.received)),
                          ("recordsSent", .int(summary.recordsSent)), ("photosSent", .int(responder.sent)),
                          ("photosUnavailable", .int(waves.unavailable))])
    }

    // MARK: Closing

    private func finish() throws {
        guard let mine = doneSent, let theirs = peerDone else { return }
        onDoneExchanged?()
        try channel.drain(deadline: Deadline(after: SyncLimits.closeTimeout))
        let now = clock.now()
        try store.write {
            try store.recordCompletedSync(peer: peer.device, recvSeq: theirs.upTo, sentSeq: mine.upTo, at: now, address: peer.address)
            if family.role == .owner {
                try store.recordAcknowledgementPoint(member: peer.device, peerSeq: theirs.upTo, ownSeq: try store.currentChangeSeq)
            }
            if let a = pendingAcknowledgement { try store.setFamilyAcknowledgement(acked: a.acked, waitingFor: a.waitingFor) }
            if let r = ownerClockReading { try store.setFamilyClockOffset(ownerClock: r.owner, localClock: r.local) }
            // Digests apart after a whole session: one store lacks what the other holds (a copy restored
            // after a session that was cut off). Both sides see it, and the next session sends everything.
            try store.setMeta(SyncSession.resyncKey(peer.device), mine.digest == theirs.digest ? nil : "1")
        }
        // Durability: the session is reported synced only with its cursors on disk.
        try store.makeDurable()
        summary.lastSynced = now
        // The name as it stands now: this session's roster may have renamed the peer.
        summary.peerName = try store.device(peer.device)?.name
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
