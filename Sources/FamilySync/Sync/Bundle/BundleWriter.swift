import Glibc

/// What a bundle says before its data (docs/protocol.md §12b): the writer,
/// its clock and family-key epoch, how far of the reader's changes it holds from bundles, and the
/// photos it wants.
struct BundleHead {
    var device: String
    var role: FamilyInfo.Role
    var clock: Timestamp
    var epoch: Int64
    var ack: Int64
    /// The newest bundle of the reader's the writer applied (so a reader restored from a copy numbers its next one above it).
    var applied: Int64
    /// The writer's change counter when it wrote the part.
    var changes: Int64
    var wants: [String]
    /// Revision 8: this write's name (RandomName, the same in every part) and the change number its range
    /// starts after; and the name of the reader's write that `ack` counts from (nil: none, or a writer of
    /// revision 6 or 7, whose `ack` the reader takes as before).
    var token: String?
    var base: Int64?
    var ackToken: String?

    var json: JSONValue {
        var o: [(String, JSONValue)] = [("protocol", .int(Int64(SyncProtocol.version))), ("device", .string(device)), ("role", .string(role.rawValue)),
                                        ("clock", .string(clock.rfc3339)), ("epoch", .int(epoch)), ("ack", .int(ack)), ("applied", .int(applied)),
                                        ("changes", .int(changes)), ("wants", .array(wants.map { .string($0) }))]
        if let token, let base { o += [("token", .string(token)), ("base", .int(base))] }
        o.append(("ackToken", .optional(ackToken)))
        return .object(o)
    }

    init(device: String, role: FamilyInfo.Role, clock: Timestamp, epoch: Int64, ack: Int64, applied: Int64, changes: Int64, wants: [String],
         token: String?, base: Int64?, ackToken: String?) {
        (self.device, self.role, self.clock, self.epoch, self.ack, self.applied, self.changes, self.wants) = (device, role, clock, epoch, ack, applied, changes, wants)
        (self.token, self.base, self.ackToken) = (token, base, ackToken)
    }

    init(_ f: Frame) throws(ProtocolError) {
        let r = try FieldReader(f).renamed("bundle head")
        _ = try r.protocolVersion(who: "bundle's writer")
        device = try r.uuid("device")
        guard let role = FamilyInfo.Role(rawValue: try r.string("role", maxBytes: 16)) else { throw ProtocolError("bundle head field 'role': not 'owner' or 'member'") }
        self.role = role
        clock = try r.time("clock")
        epoch = try r.int("epoch")
        ack = try r.int("ack")
        applied = try r.int("applied", max: BundleLimits.maxNumber - 1)
        changes = try r.int("changes")
        guard case let .array(list)? = r.value["wants"], list.count <= BundleLimits.maxWanted else {
            throw ProtocolError("bundle head field 'wants': not an array of at most \(BundleLimits.maxWanted) photo hashes")
        }
        wants = try list.map { v throws(ProtocolError) in
            guard case let .string(h) = v, Record.isPhotoHash(h) else { throw ProtocolError("bundle head field 'wants': not a list of SHA-256 hashes in lower-case hex") }
            return h
        }
        token = try r.optionalRandomName("token")
        base = token == nil ? nil : try r.int("base", max: changes)
        ackToken = try r.optionalRandomName("ackToken")
    }
}

/// What `peer-sync bundle` wrote.
public struct BundleWriteSummary: Sendable {
    public var to: String
    public var parts: [String] = []
    public var bytes: Int64 = 0
    public var records: Int64 = 0
    public var clamped: Int64 = 0
    public var photos: Int64 = 0
    public var purgeRecords: Int64 = 0
    /// The range of this device's change numbers the bundle covers.
    public var after: Int64 = 0
    public var upTo: Int64 = 0
    /// Everything, nothing held back (a first bundle, or after a restore on either side).
    public var full = false
    public var write: Int64 = 0
}

/// Writes what `peer` has not acknowledged in bundles yet, as one bundle
/// of one or more parts (§12b): each part a head, FAMILY, the owner's
/// purge records (first part), record batches in change order each with
/// the photos its records name that this store holds, and an end frame.
/// A part applies on its own, in any order; its records and their photos
/// travel together. Own versions leave the store under the same bound as in
/// a session between members (the family's clock as this device reads it,
/// + the clamp window), and are kept as sent.
enum BundleWriter {
    static func write(store: Store, family: FamilyInfo, me: String, to peer: String, path: String, maxBytes: Int64?,
                      now: Timestamp, verifier: ProofVerifier, warn: (String) -> Void) throws -> BundleWriteSummary {
        let kind = try BundleWriter.keyKind(family: family, me: me, peer: peer)
        var state = try store.bundlePeer(peer)
        let full = state.resendUntil != 0
        let start = full ? 0 : state.sent
        let snapshot = try store.currentChangeSeq
        let epoch = try store.familyEpoch
        let bound: OwnVersionBound? = family.role == .owner ? nil : OwnVersionBound(limit: LWW.bound(clock: try store.familyTime(at: now)))
        let purges: [[UInt8]] = family.role == .owner || start == 0
            ? try store.write { try store.purgePayloads(after: start, upTo: snapshot, all: family.role != .owner, family: family) } : []
        let sealing = BundleHeader(family: family.id, from: me, to: peer, key: kind, epoch: epoch, id: "", write: 0, part: 0).heldKind(owner: family.ownerDevice)
        guard let held = try store.heldKeys(offers: false).first(where: { $0.kind == sealing }) else {
            throw BundleError(.notForUs, "this store holds no key for \(peer)")
        }
        let (familyMessage, _) = try FamilyStatement.make(store: store, family: family, peer: peer, peerEpoch: epoch, verifier: verifier, now: now, warn: warn)
        var familyJSON = Array(familyMessage.json.serialized.utf8)
        defer { familyJSON.withUnsafeMutableBytes { _ = $0.initializeMemory(as: UInt8.self, repeating: 0) } }
        let wants = try store.wantedPhotos(limit: BundleLimits.maxWanted)
        let write = state.written + 1
        // The reader echoes this name with its acknowledgement: one it cannot find here means the reader
        // counted changes of a history this store no longer holds (§12b), and everything goes again.
        let token = try RandomName.make()
        var summary = BundleWriteSummary(to: peer, after: start, upTo: snapshot, full: full, write: write)

        var partAfter = start
        var partRecords: Int64 = 0, partPhotos: Int64 = 0, partPurges: Int64 = 0
        // Copies owed the reader in this part (addReturns), counted apart so a part holding only them still
        // takes a batch; the summary's `records` counts the range's rows only.
        var partReturned: Int64 = 0
        var sentPhotos = Set<String>()
        var finished: [BundleSealer] = []

        func partPath(_ n: Int) -> String { n == 1 ? path : "\(path).\(n)" }
        func open(after: Int64) throws -> BundleSealer {
            let n = finished.count + 1
            guard n <= BundleLimits.maxParts else { throw BundleError(.malformed, "the bundle would need more than \(BundleLimits.maxParts) parts; give a larger --max-bytes") }
            let header = BundleHeader(family: family.id, from: me, to: peer, key: kind, epoch: epoch, id: try RandomName.make(), write: write, part: Int64(n))
            let s = try BundleSealer(path: partPath(n), header: header, held: held)
            try s.append(.hello, Array(BundleHead(device: me, role: family.role, clock: now, epoch: epoch, ack: state.recv, applied: state.applied,
                                                   changes: snapshot, wants: wants, token: token, base: start,
                                                   ackToken: state.newest?.token).json.serialized.utf8))
            try s.append(.family, familyJSON)
            partAfter = after
            (partRecords, partPhotos, partPurges, partReturned) = (0, 0, 0, 0)
            return s
        }
        func close(_ s: BundleSealer, upTo: Int64) throws {
            try s.append(.done, Array(JSONValue.object([("after", .int(partAfter)), ("upTo", .int(upTo)), ("records", .int(partRecords + partReturned)),
                                                        ("photos", .int(partPhotos)), ("purgeBatches", .int(partPurges))]).serialized.utf8))
            try s.finish()
            summary.bytes += s.plaintextBytes
            finished.append(s)
        }
        func addPhoto(_ hash: String, to s: BundleSealer) throws {
            guard !sentPhotos.contains(hash), let loc = try store.photoLocation(hash) else { return }
            sentPhotos.insert(hash)
            let reader = PhotoBlobReader(store: store, offset: loc.offset, size: loc.size)
            let digest = Hex.decode(hash) ?? []
            repeat {
                var payload = PhotoWaves.dataHeader(hash: digest, total: loc.size, offset: reader.done)
                try reader.readChunk(max: SyncLimits.photoChunkBytes, into: &payload)
                try s.append(.photoData, payload)
            } while !reader.isFinished
            partPhotos += 1
            summary.photos += 1
        }

        // Copies owed to a member that an edit here replaced before they went back: each part carries
        // them ahead of its records, so whichever part the member applies first, it takes the copy
        // before what replaced it (§12b).
        // Batched once; every part repeats the same batches.
        let returnBatches = family.role == .owner ? try store.supersededReturnBatches(peer: peer).batches : []
        func addReturns(to s: BundleSealer) throws {
            for b in returnBatches {
                try s.append(.records, b.payload)
                partReturned += b.count
            }
        }

        // A bundle is written whole or not at all: on failure the parts already in place go.
        var done = false
        defer { if !done { for f in finished { unlink(f.path) } } }
        var s = try open(after: start)
        for p in purges {
            try s.append(.purged, p)
            partPurges += 1
            summary.purgeRecords += Int64((p.count - Ed25519.signatureBytes) / PurgeEntry.encodedBytes)
        }
        try addReturns(to: s)
        // Photos the peer said it wants go first: the records naming them are there already.
        for h in state.wants { try addPhoto(h, to: s) }
        var cursor = start
        // With a cap, a batch shrinks until it and its photos fit the part's room (a lone record always goes).
        var count = SyncLimits.recordBatchCount
        while true {
            // Rows the peer sent this store go back to it too (their lines, not their photos): with no
            // session to compare digests, that is how a peer restored from a copy gets its own edits back.
            let b = try store.exportRecordBatch(after: cursor, upTo: snapshot, maxCount: count,
                                                maxBytes: SyncLimits.recordBatchBytes, bound: bound, skipping: nil)
            guard b.count > 0 else { break }
            let photos = try store.heldPhotos(namedByChangesAfter: cursor, upTo: b.lastSeq, notFrom: peer).filter { !sentPhotos.contains($0) }
            if let maxBytes {
                var size = Int64(b.payload.count + Frame.headerBytes)
                for h in photos {
                    let n = Int64(try store.photoLocation(h)?.size ?? 0)
                    size += n + (n / Int64(SyncLimits.photoChunkBytes) + 1) * Int64(PhotoWaves.dataHeaderBytes + Frame.headerBytes)
                }
                if s.plaintextBytes + size > maxBytes {
                    if b.count > 1 {
                        count = max(1, b.count / 2)
                        continue
                    }
                    if partRecords > 0 || partPhotos > 0 {
                        try close(s, upTo: cursor)
                        s = try open(after: cursor)
                        try addReturns(to: s)
                        count = SyncLimits.recordBatchCount
                        continue
                    }
                }
            }
            if !b.clamped.isEmpty || !b.released.isEmpty {
                // Own edits leave this store now, pulled back if need be, and are kept as sent (§7.4).
                try store.write {
                    try store.releaseInTransaction(b.released)
                    _ = try store.adoptClampedInTransaction(b.clamped)
                }
                summary.clamped += Int64(b.clamped.count)
            }
            try s.append(.records, b.payload)
            partRecords += Int64(b.count)
            summary.records += Int64(b.count)
            for h in photos { try addPhoto(h, to: s) }
            cursor = b.lastSeq
            count = SyncLimits.recordBatchCount
        }
        try close(s, upTo: snapshot)
        summary.parts = finished.map(\.path)
        // Parts a larger bundle left at this path before would be taken for this one's.
        var n = finished.count + 1
        while BundleWriter.isBundlePart(partPath(n)) {
            unlink(partPath(n))
            n += 1
        }
        state.written = write
        if full { state.resendUntil = snapshot }
        try store.write {
            try store.setBundlePeerInTransaction(peer, state)
            try store.rememberBundleWriteInTransaction(peer: peer, token: token, number: write)
        }
        done = true
        return summary
    }

    /// Whether `path` is a regular file that begins as a bundle does.
    static func isBundlePart(_ path: String) -> Bool {
        var st = stat()
        guard lstat(path, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else { return false }
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        // Either format: a part of a bundle written before is one too.
        var first = [UInt8](repeating: 0, count: BundleHeader.magic.count)
        return first.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) } == first.count && [BundleHeader.magic, BundleHeader.previousMagic].contains(first)
    }

    /// Owner ↔ member bundles are sealed with the member's device key, member ↔ member ones with the family key.
    static func keyKind(family: FamilyInfo, me: String, peer: String) throws -> BundleHeader.KeyKind {
        me == family.ownerDevice || peer == family.ownerDevice ? .device : .family
    }
}
