import CSQLite
import COpenSSL

/// Records of purges (docs/design.md §4, docs/protocol.md §4.5): what makes a
/// purged record stay purged once its tombstone is gone. A purge record names
/// the id by a hash and keeps the purged tombstone's delete time; a version of
/// an id this store does not hold that the tombstone would have beaten is not
/// taken back, whoever sends it and whatever its clock said. Nothing else ever
/// removes a record without a tombstone: not a time, not a peer's silence.
///
/// Only the owner's device writes new purge records (its garbage collection,
/// which alone can tell that every current device has heard of a delete) and
/// signs each batch with its roster key; a batch travels in PURGED frames and
/// is taken only when the signature verifies under the roster key the receiver
/// holds, so a member can pass the owner's batches on (to a restored owner, or
/// another member) but no member, and no revoked device, can make another
/// store forget anything the owner did not purge.
public struct PurgeEntry: Equatable, Sendable {
    /// The first 8 bytes of SHA-256 of the id's UTF-8 bytes, big-endian.
    public var idHash: UInt64
    /// The purged tombstone's `modifiedAt`, in milliseconds.
    public var deletedAt: Int64

    public init(idHash: UInt64, deletedAt: Int64) {
        self.idHash = idHash
        self.deletedAt = deletedAt
    }

    /// The id's hash: 8 bytes of SHA-256, so a million purged ids take 16 MB
    /// and two ids share a hash with odds of about 1 in 10^13 at that size.
    public static func hash(_ id: UnsafeRawBufferPointer) -> UInt64 {
        // On the stack: a purge hashes every id it drops.
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 32) { out in
            _ = COpenSSL.SHA256(id.baseAddress?.assumingMemoryBound(to: UInt8.self), id.count, out.baseAddress)
            var h: UInt64 = 0
            for i in 0..<8 { h = h << 8 | UInt64(out[i]) }
            return h
        }
    }

    public static func hash(_ id: String) -> UInt64 {
        var id = id
        return id.withUTF8 { hash(UnsafeRawBufferPointer($0)) }
    }

    /// Whether this purge covers a version of its id at `time`: the purged
    /// tombstone beat it (it is older, or a delete at the same time).
    @inline(__always)
    public func covers(time: Int64, deleted: Bool) -> Bool {
        time < deletedAt || (time == deletedAt && deleted)
    }

    /// Bytes per entry on disk and on the wire: the hash, then the time, each 8 bytes big-endian.
    public static let encodedBytes = 16

    static func encode(_ entries: [PurgeEntry]) -> [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(entries.count * encodedBytes)
        for e in entries {
            for i in (0..<8).reversed() { out.append(UInt8(truncatingIfNeeded: e.idHash >> (8 * UInt64(i)))) }
            let t = UInt64(bitPattern: e.deletedAt)
            for i in (0..<8).reversed() { out.append(UInt8(truncatingIfNeeded: t >> (8 * UInt64(i)))) }
        }
        return out
    }

    /// Nil when the length is not a whole number of entries.
    static func decode(_ bytes: UnsafeRawBufferPointer) -> [PurgeEntry]? {
        guard bytes.count % encodedBytes == 0 else { return nil }
        var out: [PurgeEntry] = []
        out.reserveCapacity(bytes.count / encodedBytes)
        var i = 0
        while i < bytes.count {
            var h: UInt64 = 0, t: UInt64 = 0
            for k in 0..<8 { h = h << 8 | UInt64(bytes[i + k]) }
            for k in 8..<16 { t = t << 8 | UInt64(bytes[i + k]) }
            out.append(PurgeEntry(idHash: h, deletedAt: Int64(bitPattern: t)))
            i += encodedBytes
        }
        return out
    }
}

/// What a store knows was purged, for judging incoming versions of ids it
/// does not hold: its purge records, looked up by hash.
final class PurgeEvidence {
    private var hashes: [UInt64] = []
    private var times: [Int64] = []

    var isEmpty: Bool { hashes.isEmpty }

    init(store: Store) throws {
        var all: [PurgeEntry] = []
        let s = try store.db.prepare("SELECT entries FROM purge_batches")
        defer { s.reset() }
        while try s.step() {
            if let e = s.withBytes(0, { PurgeEntry.decode($0) }) { all += e }
        }
        all.sort { $0.idHash != $1.idHash ? $0.idHash < $1.idHash : $0.deletedAt > $1.deletedAt }
        var last: UInt64? = nil
        for e in all where e.idHash != last {
            // Sorted latest first within a hash: the latest purge of an id is the one that counts.
            hashes.append(e.idHash)
            times.append(e.deletedAt)
            last = e.idHash
        }
    }

    /// The delete time of the latest purge of this id here, if any.
    func purgeTime(_ id: UnsafeRawBufferPointer) -> Int64? {
        guard !hashes.isEmpty else { return nil }
        let h = PurgeEntry.hash(id)
        var lo = 0, hi = hashes.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if hashes[mid] < h { lo = mid + 1 } else { hi = mid }
        }
        guard lo < hashes.count, hashes[lo] == h else { return nil }
        return times[lo]
    }
}

extension Store {
    /// The largest batch of purge records: one PURGED frame's payload (1 MiB).
    public static let maxPurgeBatchEntries = 65_536

    /// Keeps purge records under change number `seq` (0: not to be sent on
    /// by number), with the owner's `signature` when known. A batch already
    /// held is kept once. Returns whether it was new. Call inside `write`.
    @discardableResult
    func addPurgeBatch(_ entries: [PurgeEntry], seq: Int64, signature: [UInt8]? = nil) throws -> Bool {
        guard !entries.isEmpty else { return false }
        return try addPurgeBatch(encoded: PurgeEntry.encode(entries), seq: seq, signature: signature)
    }

    private func addPurgeBatch(encoded bytes: [UInt8], seq: Int64, signature: [UInt8]?) throws -> Bool {
        try db.run("INSERT INTO purge_batches (seq, digest, entries, signature) VALUES (?, ?, ?, ?) ON CONFLICT(digest) DO NOTHING",
                   [.int(seq), .blob(SHA256.hash(bytes)), .blob(bytes), signature.map { .blob($0) } ?? .null])
        return db.changes > 0
    }

    /// The bytes the owner signs for a batch: a context string, the family, the entries.
    static func purgeSigningMessage(family: String, entries: [UInt8]) -> [UInt8] {
        Array("family-sync/3 purge".utf8) + [0] + Array(family.utf8) + [0] + entries
    }

    /// PURGED payloads (docs/protocol.md §7.4a): the signature, then the
    /// entries. With `all`, every batch held (a side that sends everything);
    /// else the batches numbered in (after, upTo] (the owner). The owner
    /// signs, and keeps the signature of, a batch not yet signed; a batch
    /// without a signature on another store is not sent. Call inside `write`.
    func purgePayloads(after: Int64, upTo: Int64, all: Bool, family: FamilyInfo) throws -> [[UInt8]] {
        let s = try db.prepare(all ? "SELECT id, entries, signature FROM purge_batches ORDER BY id"
                                   : "SELECT id, entries, signature FROM purge_batches WHERE seq > ? AND seq <= ? ORDER BY seq")
        if !all { try s.bind([.int(after), .int(upTo)]) }
        var rows: [(id: Int64, entries: [UInt8], signature: [UInt8]?)] = []
        while try s.step() { rows.append((s.int64(0), s.blob(1), s.isNull(2) ? nil : s.blob(2))) }
        s.reset()
        var out: [[UInt8]] = []
        for var r in rows {
            if r.signature == nil, family.role == .owner {
                let sig = try signAsOwner(Store.purgeSigningMessage(family: family.id, entries: r.entries))
                try db.run("UPDATE purge_batches SET signature = ? WHERE id = ?", [.blob(sig), .int(r.id)])
                r.signature = sig
            }
            guard let sig = r.signature, sig.count == Ed25519.signatureBytes else { continue }
            out.append(sig + r.entries)
        }
        return out
    }

    /// How many purge records this store keeps, and their bytes.
    public func purgeRecordCount() throws -> Int {
        Int(try db.scalarInt("SELECT coalesce(sum(length(entries)), 0) FROM purge_batches") ?? 0) / PurgeEntry.encodedBytes
    }

    /// Why a PURGED payload was not taken.
    enum PurgeBatchProblem: Error, Equatable {
        case malformed
        case badSignature
    }

    /// A PURGED payload arrived: the owner's signature over the entries must
    /// verify under the roster key this store holds (its own, on the owner).
    /// Keeps the batch and drops what it covers (`applyPurgeBatch`). Call inside `write`.
    func receivePurgePayload(_ payload: UnsafeRawBufferPointer, family: FamilyInfo) throws -> Result<Int, PurgeBatchProblem> {
        let n = Ed25519.signatureBytes
        guard payload.count > n, (payload.count - n) % PurgeEntry.encodedBytes == 0 else { return .failure(.malformed) }
        let signature = Array(payload[0..<n])
        let entries = Array(payload[n...])
        let key = family.role == .owner ? try ownerRosterPublicKey() : try ownerRosterKey
        guard let key, Ed25519.verify(signature, message: Store.purgeSigningMessage(family: family.id, entries: entries), publicKey: key) else {
            return .failure(.badSignature)
        }
        // The owner numbers a batch it takes back (it was restored from a copy) so its members are sent it.
        let seq = family.role == .owner ? try currentChangeSeq + 1 : 0
        let dropped = try entries.withUnsafeBytes { try applyPurgeBatch($0, seq: seq, signature: signature) }
        if family.role == .owner, dropped != nil, try purgeBatchSeq(digest: SHA256.hash(entries)) == seq { try setMeta("change_seq", String(seq)) }
        return dropped.map { .success($0) } ?? .failure(.malformed)
    }

    private func purgeBatchSeq(digest: [UInt8]) throws -> Int64? {
        try db.scalarInt("SELECT seq FROM purge_batches WHERE digest = ?", [.blob(digest)])
    }

    /// Purge batch `bytes` (entries only) is to be kept: keeps it, and drops
    /// every record held that a purge in it covers (a purge, not an edit: no
    /// change number is used). Returns how many records were dropped (0 for a
    /// batch held already). Nil when the bytes are not a whole number of
    /// entries. Call inside `write`.
    func applyPurgeBatch(_ bytes: UnsafeRawBufferPointer, seq: Int64 = 0, signature: [UInt8]? = nil) throws -> Int? {
        guard let entries = PurgeEntry.decode(bytes) else { return nil }
        guard !entries.isEmpty else { return 0 }
        var latest: [UInt64: Int64] = [:]
        latest.reserveCapacity(entries.count)
        var maxTime = Int64.min
        for e in entries {
            latest[e.idHash] = max(latest[e.idHash] ?? .min, e.deletedAt)
            maxTime = max(maxTime, e.deletedAt)
        }
        // A batch held already has been applied already.
        guard try addPurgeBatch(entries, seq: seq, signature: signature) else { return 0 }
        let pick = try db.prepare("SELECT rid, id, modified_at, deleted, line FROM records WHERE modified_at <= ?")
        try pick.bind([.int(maxTime)])
        var gone: [Int64] = []
        try adjustRecordDigest { digest, scratch in
            while try pick.step() {
                let h = pick.withBytes(1) { PurgeEntry.hash($0) }
                guard let t = latest[h], PurgeEntry(idHash: h, deletedAt: t).covers(time: pick.int64(2), deleted: pick.int64(3) != 0) else { continue }
                gone.append(pick.int64(0))
                pick.withBytes(1) { id in pick.withBytes(4) { digest.subtract(.init(id: id, line: $0, scratch: scratch)) } }
            }
        }
        pick.reset()
        for rid in gone {
            try db.run("DELETE FROM record_photos WHERE record = ?", [.int(rid)])
            try db.run("DELETE FROM records WHERE rid = ?", [.int(rid)])
        }
        return gone.count
    }
}
