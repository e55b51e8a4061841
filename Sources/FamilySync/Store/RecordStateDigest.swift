import COpenSSL

/// The record-state digest (docs/protocol.md §7.8): the sum, modulo 2^256,
/// over every record row, of SHA-256(id ‖ 0x00 ‖ line ‖ 0x0A) read as a
/// big-endian number. Unlike one hash over the whole state in id order, a
/// sum can be kept current as rows change (add the new row's term, take away
/// the old one's), so a session pays for the records it changes, not for the
/// size of the store. Every write to `records` goes through
/// `RecordDigestSum.add`/`subtract`, and the sum is kept in `meta`
/// (`record_digest`) in the same transaction.
struct RecordDigestSum: Equatable {
    /// Little-endian 64-bit limbs: l0 is the least significant.
    private var l0: UInt64 = 0, l1: UInt64 = 0, l2: UInt64 = 0, l3: UInt64 = 0

    init() {}

    /// Parses the stored hex (64 digits, big-endian); nil if it is not that.
    init?(hex: String) {
        guard hex.utf8.count == 64, let bytes = Hex.decode(hex) else { return nil }
        let v = bytes.withUnsafeBytes { RecordDigestSum.limbs(bigEndian: $0) }
        (l3, l2, l1, l0) = v
    }

    /// The digest as DONE carries it: 64 lowercase hex digits, big-endian.
    var hex: String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(32)
        for limb in [l3, l2, l1, l0] {
            for s in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: limb >> UInt64(s))) }
        }
        return Hex.encode(bytes)
    }

    mutating func add(_ t: Term) {
        var c: UInt64 = 0
        func step(_ a: inout UInt64, _ b: UInt64) {
            let (x, o1) = a.addingReportingOverflow(b)
            let (y, o2) = x.addingReportingOverflow(c)
            a = y
            c = (o1 || o2) ? 1 : 0
        }
        step(&l0, t.l0); step(&l1, t.l1); step(&l2, t.l2); step(&l3, t.l3)
    }

    mutating func subtract(_ t: Term) {
        var c: UInt64 = 0
        func step(_ a: inout UInt64, _ b: UInt64) {
            let (x, o1) = a.subtractingReportingOverflow(b)
            let (y, o2) = x.subtractingReportingOverflow(c)
            a = y
            c = (o1 || o2) ? 1 : 0
        }
        step(&l0, t.l0); step(&l1, t.l1); step(&l2, t.l2); step(&l3, t.l3)
    }

    /// 32 big-endian bytes as limbs, most significant first.
    fileprivate static func limbs(bigEndian b: UnsafeRawBufferPointer) -> (UInt64, UInt64, UInt64, UInt64) {
        func at(_ i: Int) -> UInt64 { UInt64(bigEndian: b.loadUnaligned(fromByteOffset: i, as: UInt64.self)) }
        return (at(0), at(8), at(16), at(24))
    }

    /// One row's term: SHA-256(id ‖ 0x00 ‖ line ‖ 0x0A) as a 256-bit number.
    struct Term {
        fileprivate var l0: UInt64 = 0, l1: UInt64 = 0, l2: UInt64 = 0, l3: UInt64 = 0

        /// `id` is the record's id as stored (UTF-8, unescaped); `scratch` is reused between calls.
        init(id: UnsafeRawBufferPointer, line: UnsafeRawBufferPointer, scratch: TermScratch) {
            scratch.bytes.removeAll(keepingCapacity: true)
            scratch.bytes.append(contentsOf: id)
            scratch.bytes.append(0)
            scratch.bytes.append(contentsOf: line)
            scratch.bytes.append(0x0A)
            var h: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
            withUnsafeMutableBytes(of: &h) { scratch.hashBytes(into: $0) }
            (l3, l2, l1, l0) = withUnsafeBytes(of: &h) { RecordDigestSum.limbs(bigEndian: $0) }
        }
    }
}

/// What computing terms needs, made once per batch of writes and reused:
/// a buffer, and a SHA-256 context with the algorithm fetched once (the
/// one-shot call looks the algorithm up again on every use, which cost as
/// much as hashing a record line).
final class TermScratch {
    fileprivate var bytes: [UInt8] = []
    private let md: OpaquePointer
    private let ctx: OpaquePointer

    init() {
        // Cannot fail short of memory: SHA-256 is in OpenSSL's default provider, which the TLS code needs too.
        md = EVP_MD_fetch(nil, "SHA256", nil)!
        ctx = EVP_MD_CTX_new()!  // nil only when out of memory
    }
    deinit {
        EVP_MD_CTX_free(ctx)
        EVP_MD_free(md)
    }

    fileprivate func hashBytes(into out: UnsafeMutableRawBufferPointer) {
        var n: UInt32 = 0
        bytes.withUnsafeBufferPointer { b in
            EVP_DigestInit_ex2(ctx, md, nil)
            EVP_DigestUpdate(ctx, b.baseAddress, b.count)
            EVP_DigestFinal_ex(ctx, out.baseAddress!.assumingMemoryBound(to: UInt8.self), &n)  // out: a 32-byte tuple's bytes, never empty
        }
    }
}

extension Store {
    /// The record-state digest as kept (docs/protocol.md §7.8): O(1), read
    /// from `meta`. Equal on two devices exactly when they hold the same
    /// versions of the same ids (up to SHA-256 collisions of sums).
    public func recordStateDigest() throws -> String {
        try storedRecordDigest().hex
    }

    /// The same digest computed afresh from every row (a full scan), for
    /// migrations and for checking that the kept one is right.
    public func recomputedRecordStateDigest() throws -> String {
        try computeRecordDigest().hex
    }

    func storedRecordDigest() throws -> RecordDigestSum {
        guard let text = try meta(Store.recordDigestKey) else { return try computeRecordDigest() }
        guard let sum = RecordDigestSum(hex: text) else {
            throw StoreError(.inconsistent, path: path, detail: "store \(path): meta '\(Store.recordDigestKey)' is not a 64-digit hex digest")
        }
        return sum
    }

    /// Stores the kept digest. Call inside `write`, with the rows it describes.
    func setStoredRecordDigest(_ sum: RecordDigestSum) throws {
        try setMeta(Store.recordDigestKey, sum.hex)
    }

    /// Reads the kept digest, lets `body` adjust it, and stores it. Call inside `write`.
    func adjustRecordDigest<T>(_ body: (inout RecordDigestSum, TermScratch) throws -> T) throws -> T {
        var sum = try storedRecordDigest()
        let v = try body(&sum, TermScratch())
        try setStoredRecordDigest(sum)
        return v
    }

    func computeRecordDigest() throws -> RecordDigestSum {
        var sum = RecordDigestSum()
        let scratch = TermScratch()
        let s = try db.prepare("SELECT id, line FROM records")
        defer { s.reset() }
        while try s.step() {
            s.withBytes(0) { id in s.withBytes(1) { line in sum.add(.init(id: id, line: line, scratch: scratch)) } }
        }
        return sum
    }

    static let recordDigestKey = "record_digest"
}
