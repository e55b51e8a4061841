/// What `peer-sync unbundle` did with one part.
public struct BundleApplySummary: Sendable {
    public var path: String
    public var from: String
    public var fromName: String?
    public var write: Int64
    public var part: Int64
    public var recordsReceived: Int64 = 0
    public var recordsApplied: Int64 = 0
    public var recordsPurged: Int64 = 0
    public var recordsClampedIn: Int64 = 0
    /// The writer's versions not taken because nothing showed that the device they name made them.
    public var recordsUnattributed: Int64 = 0
    public var purgeRecords: Int64 = 0
    public var photosReceived: Int64 = 0
    public var photosKept: Int64 = 0
    /// How far of the writer's changes this store now holds from bundles, without a gap.
    public var cursor: Int64 = 0
    public var photosWanted: Int64 = 0
}

/// Applies one part of a bundle (docs/protocol.md §12b) exactly as a
/// session's data: FAMILY as FamilyStatement takes it, the owner's purge
/// records by their signature, records by last-writer-wins under the same
/// bound a session puts on the writer, photos only where a record here
/// names them and their bytes hash to that name. First every chunk is
/// authenticated and the frames checked; then the part is applied in one
/// transaction with its ledger entry, so a part is applied whole or not at
/// all, and once.
enum BundleApplier {
    static func apply(path: String, store: Store, family: FamilyInfo, me: String, now: Timestamp, verifier: ProofVerifier,
                      emit: (String, [(String, JSONValue)]) -> Void) throws -> BundleApplySummary {
        let opener = try BundleOpener(path: path, keys: try TrialKeys(try store.heldKeys(offers: false), family: family.id, use: .bundleHeader))
        let h = opener.header
        func refuse(_ kind: BundleError.Kind, _ why: String) -> BundleError { BundleError(kind, "\(path): \(why)", from: h.from) }
        // The key that opened the header is one of this family's, and it must be the one the header names.
        guard h.family == family.id, h.heldKind(owner: family.ownerDevice) == opener.held.kind else {
            throw refuse(.malformed, "its sealed header names a key other than the one it is sealed under")
        }
        guard h.to == me else { throw refuse(.notForUs, "a bundle for device \(h.to), not this device (\(me))") }
        guard h.from != me else { throw refuse(.notForUs, "a bundle this device wrote (for \(h.to))") }
        guard let sender = try store.device(h.from) else { throw refuse(.notForUs, "from device \(h.from), which this store does not know") }
        if let t = sender.revokedAt { throw refuse(.notForUs, "from device \(h.from), revoked at \(t.rfc3339)") }
        let kind = try BundleWriter.keyKind(family: family, me: me, peer: h.from)
        guard h.key == kind else { throw refuse(.malformed, "sealed with the \(h.key.rawValue) key, where these two devices use the \(kind.rawValue) key") }
        guard !(try store.bundlePartApplied(h.id)) else { throw refuse(.replayed, "part \(h.part) of bundle \(h.write) from \(h.from) was applied here already; nothing changed") }
        var state = try store.bundlePeer(h.from)

        // Pass 1: every chunk authenticated, the frames in order, the counts as the end says.
        let checked: Checked
        do { checked = try check(opener, header: h, family: family) } catch let e as ProtocolError { throw refuse(.malformed, e.message) }
        let head = checked.head
        // Older than one applied, by the writer's numbers and its clock alike: the newer carries what it does.
        // (A writer restored from a copy numbers from its copy, but writes later: that is not stale.)
        guard h.write >= state.applied || head.clock.milliseconds > state.appliedClock else {
            throw refuse(.stale, "bundle \(h.write) from \(h.from) is older than bundle \(state.applied), applied here already, which carries what it does")
        }
        if family.role == .owner, head.epoch > (try store.familyEpoch) + SyncLimits.maxEpochLead {
            throw refuse(.malformed, "bundle head field 'epoch': \(head.epoch) is more than \(SyncLimits.maxEpochLead) above the owner's \(try store.familyEpoch)")
        }

        // Pass 2: applied in one transaction, ledger included.
        opener.rewind()
        var summary = BundleApplySummary(path: path, from: h.from, fromName: sender.name, write: h.write, part: h.part)
        let bound: Int64 = family.role == .owner ? LWW.bound(clock: now)
            : h.from == family.ownerDevice ? Int64.max : LWW.bound(clock: try store.familyTime(at: now))
        let adopt: [UInt8]? = family.role == .member && h.from == family.ownerDevice ? Array(me.utf8) : nil
        let keep: [UInt8]? = family.role == .owner ? Array(h.from.utf8) : nil
        let authorship = AuthorshipCheck.forIntake(store: store, family: family, me: me, from: h.from)
        var warnings: [String] = []
        let received: FamilyStatement.Received
        do {
            received = try store.write {
                let ownChanges = try store.currentChangeSeq
                var received = FamilyStatement.Received()
                var assembly: PhotoAssembly?
                var kept: [Int64] = [], owed: [ApplySummary.OwedCopy] = []
                // Which of this store's writes the writer's `ack` counts from: nil when it names none (a first
                // bundle, or a writer of revision 6 or 7); 0 when it names one this store did not make in the history it
                // holds now (this store was put back from a copy since), so the `ack` counts other changes.
                let ackedWrite: Int64? = try head.ackToken.map { try store.bundleWriteNumber(peer: h.from, token: $0) ?? 0 }
                // The writer's acknowledgement, when it is one this store can take (below), ends what is owed to
                // it first: a version of its that comes in this part after it took the copy is a new one.
                if family.role == .owner, head.ack <= ownChanges, head.ack >= state.sent, ackedWrite != 0 {
                    try store.dropReturnsInTransaction(peer: h.from, upTo: head.ack)
                }
                var decoder = FrameDecoder()
                while let chunk = try opener.nextChunk() {
                    chunk.withUnsafeBytes { decoder.append($0) }
                    while let f = try decoder.next() {
                        switch f.type {
                        case .family:
                            received = try FamilyStatement.receiveInTransaction(try FamilyMessage(f), from: h.from, peerEpoch: head.epoch, store: store,
                                                                                family: family, verifier: verifier, now: now)
                        case .purged:
                            let outcome = try f.payload.withUnsafeBytes { try store.receivePurgePayload($0, family: family) }
                            guard case let .success(dropped) = outcome else { throw ProtocolError("PURGED batch not signed by the family's owner (its roster key)") }
                            summary.recordsPurged += Int64(dropped)
                            summary.purgeRecords += Int64((f.payload.count - Ed25519.signatureBytes) / PurgeEntry.encodedBytes)
                        case .records:
                            let s = try f.payload.withUnsafeBufferPointer { buf throws -> ApplySummary in
                                // Never nil: pass 1 checked the payload to be non-empty and to end with 0x0A.
                                let base = buf.baseAddress!
                                let scans = try IncomingRecords.scan(base, count: buf.count, recordsBefore: summary.recordsReceived)
                                summary.recordsReceived += Int64(scans.count)
                                return try store.applyRemoteInTransaction(base, scans, now: now, watching: nil, bound: bound,
                                                                          adoptOwnerCopiesOf: adopt, keepOwnCopiesOf: keep, from: h.from,
                                                                          authorship: authorship, reportingHeldOver: true)
                            }
                            summary.recordsApplied += Int64(s.applied)
                            summary.recordsPurged += Int64(s.purged)
                            summary.recordsClampedIn += Int64(s.clamped)
                            summary.recordsUnattributed += Int64(s.unattributed)
                            kept += s.ownCopiesKept
                            // The writer's own version of these lost here: it does not hold ours, which may
                            // be behind its acknowledgement (it rejected ours before it pulled its own back).
                            kept += s.heldOver
                            owed += s.owed
                        case .photoData:
                            let p = f.payload
                            let hash = Hex.encode(p[0..<32])
                            let total = Int(PhotoWaves.dataSizes(p).total)
                            if assembly == nil {
                                summary.photosReceived += 1
                                // Only a photo a record here names, and not held yet, is kept.
                                let wanted = try !store.hasPhoto(hash) && store.photoIsNamed(hash)
                                assembly = PhotoAssembly(hash: hash, total: total, discard: !wanted)
                            }
                            // Never nil: set just above when no photo was being read.
                            let a = assembly!
                            a.append(p[PhotoWaves.dataHeaderBytes...])
                            guard a.count == a.total else { break }
                            assembly = nil
                            if a.discard { break }
                            guard a.digestHex() == hash else {
                                warnings.append("photo \(hash.prefix(12))… came with bytes that do not match its SHA-256; not kept")
                                break
                            }
                            try store.keepVerifiedPhotoInTransaction(a.chunks, size: a.total, sha256: hash, now: now)
                            summary.photosKept += 1
                        default:
                            break
                        }
                    }
                }
                if summary.recordsUnattributed > 0 { warnings.append(Authorship.refusalWarning(summary.recordsUnattributed, from: h.from)) }
                // Copies kept here in place of the writer's, and rows that beat what it sent, go back to it in the next bundle.
                _ = try store.resendRowsInTransaction(kept)
                // The owner's copies of its member's versions are owed to it until it acknowledges them, even
                // when an edit here replaces one first: the member takes the copy, and then what replaced it.
                if family.role == .owner { try store.queueReturnsInTransaction(peer: h.from, owed: owed) }
                // The writer's word on how far of ours it holds.
                if ackedWrite == 0 {
                    warnings.append("\(h.from) acknowledges a bundle this store has no record of writing (the store was restored from a copy or joined again since, or has written \(Store.rememberedBundleWrites) bundles to \(h.from) after that one); the next bundle to \(h.from) carries everything")
                    state.sent = 0
                    state.resendUntil = Int64.max
                } else if head.ack > ownChanges {
                    // It holds more of our changes than this store ever made: this store went back in time.
                    warnings.append("\(h.from) holds changes of this device's up to \(head.ack), but this store has made only \(ownChanges): it was restored from a copy; the next bundle to \(h.from) carries everything")
                    state.sent = 0
                    state.resendUntil = Int64.max
                } else if head.ack < state.sent {
                    // It holds less than it said before: its store went back in time.
                    state.sent = 0
                    state.resendUntil = Int64.max
                } else {
                    state.sent = head.ack
                    if state.resendUntil != Int64.max, state.resendUntil != 0, head.ack >= state.resendUntil { state.resendUntil = 0 }
                    if let n = ackedWrite { try store.forgetBundleWritesInTransaction(peer: h.from, before: n) }
                }
                if head.changes < state.recv {
                    // The writer has made fewer changes than this store holds of it: its numbers mean other changes now.
                    try store.forgetBundleRangesInTransaction(of: h.from)
                    state.recv = 0
                }
                if h.write >= state.applied { (state.applied, state.appliedClock) = (h.write, max(state.appliedClock, head.clock.milliseconds)) }
                // Our own numbering stays above what the writer applied of ours (this store may have been restored).
                state.written = max(state.written, head.applied)
                state.wants = head.wants
                // The part's photos on disk before the part commits and counts them as held.
                try store.flushStagedPhotos()
                let write = head.token.map { Store.BundleWrite(token: $0, number: h.write, clock: head.clock.milliseconds, base: head.base ?? 0) }
                try store.recordBundlePartInTransaction(h.id, peer: h.from, after: checked.after, upTo: checked.upTo, write: write, state: &state, now: now)
                summary.cursor = state.recv
                return received
            }
        } catch {
            // A refused part keeps none of its photos either.
            store.discardStagedPhotos()
            if let e = error as? ProtocolError { throw refuse(.malformed, e.message) }
            throw error
        }
        for w in warnings { emit("warning", [("message", .string(w))]) }
        try FamilyStatement.settle(received, store: store, me: me, peerName: h.from, emit: emit)
        summary.photosWanted = Int64(try store.wantedPhotoCount())
        return summary
    }

    struct Checked {
        var head: BundleHead
        var after: Int64
        var upTo: Int64
    }

    /// Pass 1: reads the whole part, authenticating each chunk, and checks
    /// the frames: the head (naming the header's writer in its family role),
    /// FAMILY, the purge records, record batches and whole photos, and the end
    /// frame last, whose counts must match.
    private static func check(_ opener: BundleOpener, header h: BundleHeader, family: FamilyInfo) throws -> Checked {
        var decoder = FrameDecoder()
        var head: BundleHead?
        var sawFamily = false
        var end: (after: Int64, upTo: Int64)?
        var records: Int64 = 0, photos: Int64 = 0, purges: Int64 = 0
        var photo: (hash: ArraySlice<UInt8>, total: UInt64, got: UInt64)?
        var frames = 0
        while let chunk = try opener.nextChunk() {
            chunk.withUnsafeBytes { decoder.append($0) }
            while let f = try decoder.next() {
                frames += 1
                guard end == nil else { throw ProtocolError("\(f.type.name) after the bundle's end frame") }
                switch (frames, f.type) {
                case (1, .hello):
                    let hd = try BundleHead(f)
                    guard hd.device == h.from else { throw ProtocolError("bundle head names device \(hd.device), but the header says \(h.from)") }
                    guard (hd.role == .owner) == (hd.device == family.ownerDevice) else {
                        throw ProtocolError("bundle head says role '\(hd.role.rawValue)', but \(family.ownerDevice) is the family's owner")
                    }
                    guard h.key == .device || hd.epoch == h.epoch else { throw ProtocolError("bundle head field 'epoch': \(hd.epoch), but the part is sealed with epoch \(h.epoch)'s key") }
                    head = hd
                case (1, _):
                    throw ProtocolError("the bundle begins with \(f.type.name), not its head")
                case (2, .family):
                    _ = try FamilyMessage(f)
                    sawFamily = true
                case (2, _):
                    throw ProtocolError("expected FAMILY after the bundle's head, got \(f.type.name)")
                case (_, .purged):
                    guard records == 0, photos == 0, photo == nil else { throw ProtocolError("PURGED after records or photos") }
                    guard f.payload.count > Ed25519.signatureBytes, (f.payload.count - Ed25519.signatureBytes) % PurgeEntry.encodedBytes == 0 else {
                        throw ProtocolError("PURGED payload of \(f.payload.count) bytes is not a signature followed by whole \(PurgeEntry.encodedBytes)-byte entries")
                    }
                    purges += 1
                case (_, .records):
                    guard photo == nil else { throw ProtocolError("RECORDS in the middle of a photo") }
                    guard !f.payload.isEmpty else { throw ProtocolError("RECORDS frame with no records") }
                    guard f.payload.last == 0x0A else { throw ProtocolError("RECORDS payload does not end with a line feed (0x0A) after its last record") }
                    records += Int64(f.payload.reduce(0) { $0 + ($1 == 0x0A ? 1 : 0) })
                case (_, .photoData):
                    let p = f.payload
                    guard p.count >= PhotoWaves.dataHeaderBytes else { throw ProtocolError("PHOTO-DATA frame shorter than its header") }
                    let (total, offset) = PhotoWaves.dataSizes(p)
                    let body = UInt64(p.count - PhotoWaves.dataHeaderBytes)
                    // An empty photo travels as one empty frame; any other frame carries bytes.
                    guard body > 0 || total == 0 else { throw ProtocolError("PHOTO-DATA frame with no bytes after its header") }
                    guard total <= UInt64(Store.maxPhotoBytes) else { throw ProtocolError("PHOTO-DATA declares \(total) bytes, over the photo limit of \(Store.maxPhotoBytes)") }
                    if let cur = photo {
                        guard cur.hash == p[0..<32], cur.total == total, cur.got == offset else { throw ProtocolError("PHOTO-DATA out of order inside a photo") }
                        photo = (cur.hash, total, cur.got + body)
                    } else {
                        guard offset == 0 else { throw ProtocolError("PHOTO-DATA starts at offset \(offset), not 0") }
                        photo = (p[0..<32], total, body)
                    }
                    // Never nil: set just above.
                    let cur = photo!
                    guard cur.got <= cur.total else { throw ProtocolError("PHOTO-DATA runs past the photo's declared size") }
                    if cur.got == cur.total { photo = nil; photos += 1 }
                case (_, .done):
                    guard photo == nil else { throw ProtocolError("the bundle's end frame in the middle of a photo") }
                    let r = try FieldReader(f).renamed("bundle end")
                    let after = try r.int("after"), upTo = try r.int("upTo")
                    // Never nil: frame 1 was the head.
                    guard upTo >= after, upTo <= head!.changes else { throw ProtocolError("bundle end: range (\(after), \(upTo)] is not within the writer's \(head!.changes) changes") }
                    if let base = head?.base, after < base { throw ProtocolError("bundle end: range (\(after), \(upTo)] starts below the write's base \(base)") }
                    guard try r.int("records") == records, try r.int("photos") == photos, try r.int("purgeBatches") == purges else {
                        throw ProtocolError("bundle end counts \(try r.int("records")) records, \(try r.int("photos")) photos and \(try r.int("purgeBatches")) purge batches, but the part holds \(records), \(photos) and \(purges)")
                    }
                    end = (after, upTo)
                default:
                    throw ProtocolError("unexpected \(f.type.name) in a bundle")
                }
            }
        }
        guard decoder.buffered == 0 else { throw ProtocolError("the bundle's last frame is cut off") }
        guard let head, sawFamily, let end else { throw ProtocolError("the bundle has no end frame") }
        return Checked(head: head, after: end.after, upTo: end.upTo)
    }
}
