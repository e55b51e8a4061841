import Glibc

/// The requesting side of photo transfer: waves of `SyncLimits.waveSize`
/// wanted photos, the next wave only when every request of the last is
/// answered (bytes or *unavailable*) or the wave has been silent for the
/// wave timeout, after which what is missing counts as unavailable. Photos
/// not received stay wanted (the store derives "wanted" from the records),
/// so they are asked for again next session. Not Sendable.
///
/// Waves start while the peer's records are still arriving, so the photos
/// of the first batches are on their way while the rest are applied. Each
/// wave takes the wanted photos not yet asked for in hash order from where
/// the last one stopped, wrapping around at the end of the list (records
/// that arrive later may name photos behind the cursor), so a wave is short
/// of 20 only when fewer are left to ask for. The waves are over when, with
/// every record of the peer in, nothing wanted is left unasked.
final class PhotoWaves {
    private let store: Store
    private let waveTimeout: TimeSpan
    private let clock: MonotonicClock

    /// The last hash looked at in the wanted list.
    private var cursor = ""
    /// Records were applied since the wanted list was last found exhausted:
    /// until then, looking again would find nothing new.
    private var recordsSinceExhausted = true
    private(set) var outstanding: Set<String> = []
    /// Every hash asked for this session: data or *unavailable* for anything
    /// else is a protocol error, and no hash is asked for twice.
    private var requested: Set<String> = []
    /// Requests given up on by the timeout; a late answer to one is discarded.
    private var expired: Set<String> = []
    private var lastActivity: Deadline
    private var assembly: PhotoAssembly?

    private(set) var waveNumber = 0
    private(set) var finished = false
    private(set) var received: Int64 = 0
    private(set) var unavailable: Int64 = 0

    init(store: Store, waveTimeout: TimeSpan, clock: MonotonicClock = .system) {
        self.store = store
        self.waveTimeout = waveTimeout
        self.clock = clock
        lastActivity = clock.now()
    }

    /// When the current wave times out, if one is waiting.
    var timeoutDeadline: Deadline? { outstanding.isEmpty ? nil : lastActivity.adding(waveTimeout) }

    /// A batch of the peer's records was applied (or its RECORDS-END came):
    /// the batch may name photos, and a peer still sending records is not
    /// silent. It answers photo requests once its records are out, so a wave
    /// asked for early waits behind them without timing out.
    func recordsArrived() {
        recordsSinceExhausted = true
        if !outstanding.isEmpty { lastActivity = clock.now() }
    }

    /// Sends the next wave when the last one is complete. Returns the number
    /// of photos asked for, 0 when nothing was sent, and marks the waves
    /// finished when nothing more is wanted and `recordsComplete` (every
    /// record of the peer is in).
    func advance(_ channel: FrameChannel, recordsComplete: Bool) throws -> Int {
        guard let next = try nextWave(recordsComplete: recordsComplete) else { return 0 }
        channel.send(.photoRequest, json: .object([("photos", .array(next.map { .string($0) }))]))
        return next.count
    }

    /// The hashes of the next wave, from then on outstanding; nil when no
    /// wave is due (the last is unanswered, or nothing new is wanted yet).
    func nextWave(recordsComplete: Bool) throws -> [String]? {
        guard !finished, outstanding.isEmpty else { return nil }
        if !recordsSinceExhausted && !recordsComplete { return nil }
        var next: [String] = []
        let origin = cursor
        var wrapped = false
        scan: while next.count < SyncLimits.waveSize {
            let page = try store.wantedPhotos(after: cursor, limit: SyncLimits.waveSize)
            for h in page {
                if wrapped && h > origin { break scan }  // came round to where this wave began
                cursor = h
                if !requested.contains(h) {
                    next.append(h)
                    if next.count == SyncLimits.waveSize { break scan }
                }
            }
            guard page.count == SyncLimits.waveSize else {
                // The end of the list: go round once to what sorts before the start.
                if wrapped || origin.isEmpty { break }
                wrapped = true
                cursor = ""
                continue
            }
        }
        if next.isEmpty {
            // Nothing left to ask for: over, or until the peer's next records.
            if recordsComplete { finished = true } else { recordsSinceExhausted = false }
            return nil
        }
        waveNumber += 1
        outstanding = Set(next)
        requested.formUnion(next)
        lastActivity = clock.now()
        return next
    }

    /// Gives up on the current wave if it has been silent too long. Returns how many requests expired.
    func expireIfSilent() -> Int {
        guard let d = timeoutDeadline, clock.hasPassed(d) else { return 0 }
        let n = outstanding.count
        unavailable += Int64(n)
        expired.formUnion(outstanding)
        outstanding.removeAll()
        if let a = assembly, !a.discard, expired.contains(a.hash) { a.discard = true }
        return n
    }

    /// PHOTO-UNAVAILABLE: the peer cannot provide one requested photo.
    func handleUnavailable(_ frame: Frame) throws(ProtocolError) {
        let r = try FieldReader(frame)
        let h = try r.string("photo", maxBytes: 64)
        guard requested.contains(h) else { throw ProtocolError("PHOTO-UNAVAILABLE for a photo that was not requested") }
        if let a = assembly, a.hash == h { throw ProtocolError("PHOTO-UNAVAILABLE in the middle of that photo's data") }
        lastActivity = clock.now()
        if outstanding.remove(h) != nil { unavailable += 1 }
    }

    /// The header of a PHOTO-DATA frame: SHA-256 (32 bytes), total size and offset (8 bytes each, big-endian).
    static let dataHeaderBytes = 48

    /// A PHOTO-DATA header for the photo whose raw SHA-256 is `hash`.
    static func dataHeader(hash: [UInt8], total: Int, offset: Int) -> [UInt8] {
        var out = hash
        for v in [UInt64(total), UInt64(offset)] {
            for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8((v >> UInt64(shift)) & 0xFF)) }
        }
        return out
    }

    /// The total size and offset a PHOTO-DATA payload of at least `dataHeaderBytes` declares.
    static func dataSizes(_ p: [UInt8]) -> (total: UInt64, offset: UInt64) {
        func u64(_ at: Int) -> UInt64 { p[at..<(at + 8)].reduce(0) { $0 << 8 | UInt64($1) } }
        return (u64(32), u64(40))
    }

    /// PHOTO-DATA: one chunk of a requested photo. Chunks of one photo arrive
    /// in order and uninterrupted by another photo's. Returns a warning when a
    /// completed photo's bytes do not match its hash (it is then discarded).
    func handleData(_ frame: Frame, now: Timestamp) throws -> String? {
        let p = frame.payload
        guard p.count >= PhotoWaves.dataHeaderBytes else { throw ProtocolError("PHOTO-DATA frame shorter than its header") }
        let hash = Hex.encode(p[0..<32])
        let (total, offset) = PhotoWaves.dataSizes(p)
        let body = p[PhotoWaves.dataHeaderBytes...]
        guard requested.contains(hash) else { throw ProtocolError("PHOTO-DATA for a photo that was not requested") }
        guard total <= UInt64(Store.maxPhotoBytes) else {
            throw ProtocolError("PHOTO-DATA declares \(total) bytes, over the photo limit of \(Store.maxPhotoBytes)")
        }
        // A frame with no bytes moves nothing forward, so it must not keep a wave (or the session) alive.
        guard !body.isEmpty || total == 0 else { throw ProtocolError("PHOTO-DATA frame with no bytes after its header") }
        let a: PhotoAssembly
        if let current = assembly {
            guard current.hash == hash else { throw ProtocolError("PHOTO-DATA for another photo before the last one was complete") }
            guard UInt64(current.count) == offset, UInt64(current.total) == total else {
                throw ProtocolError("PHOTO-DATA at offset \(offset) where \(current.count) was expected")
            }
            a = current
        } else {
            guard offset == 0 else { throw ProtocolError("PHOTO-DATA starts at offset \(offset), not 0") }
            guard outstanding.contains(hash) || expired.contains(hash) else { throw ProtocolError("PHOTO-DATA for a photo already answered") }
            a = PhotoAssembly(hash: hash, total: Int(total), discard: !outstanding.contains(hash))
            assembly = a
        }
        guard a.count + body.count <= a.total else { throw ProtocolError("PHOTO-DATA runs past the photo's declared size") }
        a.append(body)
        lastActivity = clock.now()
        guard a.count == a.total else { return nil }
        assembly = nil
        if a.discard { return nil }
        outstanding.remove(hash)
        guard a.digestHex() == hash else {
            unavailable += 1
            return "photo \(hash.prefix(12))… arrived with bytes that do not match its SHA-256; discarded"
        }
        try store.keepVerifiedPhoto(a.chunks, size: a.total, sha256: hash, now: now)
        received += 1
        return nil
    }
}

/// One photo being received: its chunks so far, as the frames brought them
/// (kept, not joined: the store writes them one after another), and their
/// running SHA-256.
final class PhotoAssembly {
    let hash: String
    let total: Int
    /// A late answer to a timed-out request: read, hashed and counted, not kept.
    var discard: Bool { didSet { if discard { kept = []; small = [] } } }
    private var kept: [ArraySlice<UInt8>] = []
    /// Chunks shorter than `smallChunkBytes`, joined: a peer sending a photo
    /// a byte at a time must not cost a slice and an allocation per byte.
    private var small: [UInt8] = []
    /// The running digest; taken when the photo is complete.
    private var digest: SHA256? = SHA256()

    init(hash: String, total: Int, discard: Bool) {
        self.hash = hash
        self.total = total
        self.discard = discard
    }

    func append(_ chunk: ArraySlice<UInt8>) {
        chunk.withUnsafeBytes { digest?.update($0) }
        count += chunk.count
        guard !discard, !chunk.isEmpty else { return }
        if chunk.count < PhotoAssembly.smallChunkBytes {
            small.append(contentsOf: chunk)
            if small.count >= PhotoAssembly.smallChunkBytes { kept.append(small[...]); small = [] }
        } else {
            if !small.isEmpty { kept.append(small[...]); small = [] }
            kept.append(chunk)
        }
    }

    /// The bytes so far, in order, as slices of the frames that carried them.
    var chunks: [ArraySlice<UInt8>] { small.isEmpty ? kept : kept + [small[...]] }

    static let smallChunkBytes = 16 << 10

    /// Bytes received so far (kept, or only counted for a discarded late photo).
    private(set) var count = 0

    /// The photo's SHA-256 in hex; asked once, when all its bytes are in.
    func digestHex() -> String {
        guard let d = digest.take() else { preconditionFailure("a photo's digest is finished once") }
        return Hex.encode(d.finalize())
    }
}

/// The answering side: queued requests answered in order, each with the
/// photo's bytes in chunks (read from the store a chunk at a time) or an
/// explicit PHOTO-UNAVAILABLE. Not Sendable.
final class PhotoResponder {
    private let store: Store
    private let skipReplies: Bool
    private var queue: [String] = []
    private var head = 0
    private var current: (raw: [UInt8], reader: PhotoBlobReader)?
    private(set) var sent: Int64 = 0
    private(set) var unavailableSent: Int64 = 0

    init(store: Store, faults: SyncFaults) {
        self.store = store
        self.skipReplies = faults.contains(.skipPhotoReplies)
    }

    var isIdle: Bool { current == nil && head >= queue.count }

    /// PHOTO-REQUEST: queue the hashes asked for.
    func enqueue(_ frame: Frame) throws(ProtocolError) {
        let r = try FieldReader(frame)
        let items = try r.array("photos", maxCount: SyncLimits.waveSize)
        guard !items.isEmpty else { throw ProtocolError("PHOTO-REQUEST asks for no photos") }
        guard queue.count - head + items.count <= SyncLimits.maxQueuedPhotoRequests else {
            throw ProtocolError("PHOTO-REQUEST beyond \(SyncLimits.maxQueuedPhotoRequests) unanswered requests")
        }
        if skipReplies { return }  // Fault injection: silently drop, as old peers did.
        for (i, v) in items.enumerated() {
            guard case let .string(h) = v, Record.isPhotoHash(h) else {
                throw ProtocolError("PHOTO-REQUEST field 'photos[\(i)]': not a lowercase SHA-256 hex string")
            }
            queue.append(h)
        }
    }

    /// Stops answering (the requester said DONE).
    func stop() {
        queue.removeAll()
        head = 0
        current = nil
    }

    /// Answers queued requests while the output is below the high-water mark.
    func produce(_ channel: FrameChannel) throws {
        while channel.backlog < SyncLimits.outputHighWater {
            if let cur = current {
                let r = cur.reader
                let n = min(SyncLimits.photoChunkBytes, r.size - r.done)
                let head = PhotoWaves.dataHeader(hash: cur.raw, total: r.size, offset: r.done)
                try channel.sendBuilt(.photoData, length: head.count + n) { buf in
                    buf.append(contentsOf: head)
                    try r.readChunk(max: n, into: &buf)
                }
                if r.isFinished {
                    current = nil
                    sent += 1
                }
                continue
            }
            guard head < queue.count else {
                queue.removeAll(keepingCapacity: true)
                head = 0
                return
            }
            let h = queue[head]
            head += 1
            if let loc = try store.photoLocation(h), let raw = Hex.decode(h) {
                current = (raw, PhotoBlobReader(store: store, offset: loc.offset, size: loc.size))
                if loc.size == 0 {
                    // An empty photo still gets one (empty) data frame.
                    channel.send(.photoData, PhotoWaves.dataHeader(hash: raw, total: 0, offset: 0))
                    current = nil
                    sent += 1
                }
            } else {
                channel.send(.photoUnavailable, json: .object([("photo", .string(h))]))
                unavailableSent += 1
            }
        }
    }

}
