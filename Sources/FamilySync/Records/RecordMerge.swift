import FoundationEssentials
import Glibc
import Dispatch

/// The pure merge (`merge-records LOCAL REMOTE`): both inputs are scanned in
/// place (in parallel chunks), every version becomes a small entry pointing
/// at its bytes, entries are sorted by id, and each id's versions are folded
/// by the LWW rule. Memory is the inputs plus ~64 bytes per line.
public enum RecordMerge {
    /// Below this many bytes an input is scanned as one chunk: threads cost
    /// more than they save on small inputs.
    public static let parallelChunkBytes = 4 << 20

    /// What `explain` hears for each id: which rule decided, which input the
    /// kept version came from, how many versions there were, whether it was clamped.
    public struct Explanation {
        public var id: UnsafeRawBufferPointer
        public var rule: LWW.Rule
        public var fromRemote: Bool
        public var versions: Int
        public var clamped: Bool
    }

    public struct Summary: Sendable, Equatable {
        public var localLines = 0
        public var remoteLines = 0
        public var written = 0
        public var clamped = 0
    }

    /// Merges `local` and `remote` (clamping REMOTE only, against `now`) and
    /// hands the merged lines, sorted by id in byte order, to `write`, each
    /// with its newline. Every line of both inputs is validated before the
    /// first byte is written: a bad line throws a `RecordLineError`
    /// (FILE:LINE: field: problem) and nothing is written.
    public static func merge(local: RecordInput, remote: RecordInput, now: Timestamp,
                             explain: ((Explanation) throws -> Void)? = nil,
                             write: (UnsafeRawBufferPointer) throws -> Void) throws -> Summary {
        try merge(local: local, remote: remote, now: now, chunkBytes: parallelChunkBytes, explain: explain, write: write)
    }

    /// The same with a chosen chunk size (tests use tiny chunks to exercise the parallel path).
    static func merge(local: RecordInput, remote: RecordInput, now: Timestamp, chunkBytes: Int,
                      explain: ((Explanation) throws -> Void)?,
                      write: (UnsafeRawBufferPointer) throws -> Void) throws -> Summary {
        let limit = LWW.clamp(Timestamp.latest, now: now).milliseconds
        let localChunks = chunks(of: local.bytes, chunkBytes: chunkBytes)
        let remoteChunks = chunks(of: remote.bytes, chunkBytes: chunkBytes)
        var jobs: [ChunkJob] = []
        for c in localChunks { jobs.append(ChunkJob(input: local.bytes, range: c, remote: false, clampLimit: limit)) }
        for c in remoteChunks { jobs.append(ChunkJob(input: remote.bytes, range: c, remote: true, clampLimit: limit)) }
        let results = runJobs(jobs)

        // The first bad line, in input order, wins the report.
        var summary = Summary()
        var lineBase = [0, 0]
        for (job, res) in zip(jobs, results) {
            let src = job.remote ? 1 : 0
            if let (line, err) = res.error {
                let name = job.remote ? remote.name : local.name
                throw RecordLineError(file: name, line: lineBase[src] + line, err)
            }
            lineBase[src] += res.lines
            summary.clamped += res.clamped
        }
        summary.localLines = lineBase[0]
        summary.remoteLines = lineBase[1]

        var total = 0
        for r in results { total += r.entries.count }
        let keys = UnsafeMutableBufferPointer<SortKey>.allocate(capacity: max(total, 1))
        defer { keys.deallocate() }
        var k = 0
        for r in results {
            for i in 0..<r.entries.count {
                let e = r.entries.base + i
                keys[k] = SortKey(prefix: e.pointee.prefix, entry: UnsafePointer(e))
                k += 1
            }
        }
        let sorted = UnsafeMutableBufferPointer(rebasing: keys[0..<total])
        sortKeys(sorted)

        var out = [UInt8]()
        let flushAt = 1 << 20
        out.reserveCapacity(flushAt + Record.maxLineBytes + 1)
        var i = 0
        let n = total
        while i < n {
            var j = i + 1
            while j < n && MergeEntry.sameID(sorted[i].entry.pointee, sorted[j].entry.pointee) { j += 1 }
            var best = sorted[i].entry
            if j - i > 1 {
                for x in (i + 1)..<j where MergeEntry.beats(sorted[x].entry.pointee, best.pointee) { best = sorted[x].entry }
            }
            let w = best.pointee
            out.append(contentsOf: UnsafeBufferPointer(start: w.line, count: Int(w.lineLen)))
            out.append(0x0A)
            if out.count >= flushAt {
                try out.withUnsafeBytes { try write($0) }
                out.removeAll(keepingCapacity: true)
            }
            if let explain {
                var rule = LWW.Rule.new
                if j - i > 1 {
                    var second: UnsafePointer<MergeEntry>? = nil
                    for x in i..<j where sorted[x].entry != best {
                        if let s2 = second, !MergeEntry.beats(sorted[x].entry.pointee, s2.pointee) { continue }
                        second = sorted[x].entry
                    }
                    // Never nil: the group has more than one entry, so one is not the winner.
                    rule = MergeEntry.decide(held: second!.pointee, incoming: w).rule
                }
                try explain(Explanation(id: UnsafeRawBufferPointer(start: w.id, count: Int(w.idLen)), rule: rule,
                                        fromRemote: w.isRemote, versions: j - i, clamped: w.isClamped))
            }
            summary.written += 1
            i = j
        }
        if !out.isEmpty { try out.withUnsafeBytes { try write($0) } }
        // The entries and arenas the keys point into live in the chunk results.
        withExtendedLifetime(results) {}
        return summary
    }

    // MARK: Chunks

    /// Splits an input at line boundaries into pieces for parallel scanning.
    static func chunks(of bytes: UnsafeRawBufferPointer, chunkBytes: Int) -> [Range<Int>] {
        let n = bytes.count
        guard n > 0 else { return [] }
        let cores = max(1, ProcessInfo.processInfo.activeProcessorCount)
        let pieces = min(max(cores * 2, n / chunkBytes / 8), max(1, n / chunkBytes))
        guard pieces > 1, let base = bytes.baseAddress else { return [0..<n] }
        var out: [Range<Int>] = []
        var start = 0
        for k in 1..<pieces {
            var cut = n * k / pieces
            if cut <= start { continue }
            guard let nl = memchr(base + cut, 0x0A, n - cut) else { break }
            cut = base.distance(to: UnsafeRawPointer(nl)) + 1
            out.append(start..<cut)
            start = cut
        }
        if start < n { out.append(start..<n) }
        return out
    }

    struct ChunkJob: @unchecked Sendable {
        var input: UnsafeRawBufferPointer
        var range: Range<Int>
        var remote: Bool
        var clampLimit: Int64
    }

    final class ChunkResult: @unchecked Sendable {
        /// Entries in a buffer that never moves once scanning is done, so sort keys can point at them.
        var entries = EntryBuffer()
        let arena = ByteArena()
        var lines = 0
        var clamped = 0
        var error: (Int, RecordError)?
        deinit { entries.free() }
    }

    static func runJobs(_ jobs: [ChunkJob]) -> [ChunkResult] {
        let results = jobs.map { _ in ChunkResult() }
        if jobs.count == 1 {
            scanChunk(jobs[0], into: results[0])
        } else {
            DispatchQueue.concurrentPerform(iterations: jobs.count) { k in scanChunk(jobs[k], into: results[k]) }
        }
        return results
    }

    /// Scans one chunk: validates every line and makes its entries.
    static func scanChunk(_ job: ChunkJob, into res: ChunkResult) {
        guard let raw = job.input.baseAddress else { return }
        let base = raw.assumingMemoryBound(to: UInt8.self)
        var pos = job.range.lowerBound
        let stop = job.range.upperBound
        var workspace = RecordScanner.ScanWorkspace()
        res.entries.reserve((stop - pos) / 256 + 16)
        let order0 = (job.remote ? 1 : 0) << 56
        while pos < stop {
            var lineEnd = stop
            var next = stop
            if let nl = memchr(base + pos, 0x0A, stop - pos) {
                lineEnd = base.distance(to: nl.assumingMemoryBound(to: UInt8.self))
                next = lineEnd + 1
            }
            res.lines += 1
            var e = lineEnd
            if e > pos && base[e - 1] == 0x0D { e -= 1 }
            defer { pos = next }
            if e - pos > Record.maxLineBytes {
                res.error = (res.lines, RecordError(field: nil, "line longer than \(Record.maxLineBytes) bytes"))
                return
            }
            if isBlank(base, pos, e) { continue }
            let r: RecordScan
            do throws(RecordError) {
                r = try RecordScanner.scan(base, start: pos, end: e, mode: .exchanged, workspace: &workspace)
            } catch {
                res.error = (res.lines, error)
                return
            }
            var entry = MergeEntry()
            entry.order = order0 | pos
            entry.time = r.time
            if r.deleted == 1 { entry.flags |= MergeEntry.deletedFlag }
            if job.remote { entry.flags |= MergeEntry.remoteFlag }
            (entry.id, entry.idLen) = stringBytes(base, r.id, arena: res.arena)
            (entry.device, entry.deviceLen) = stringBytes(base, r.deviceID, arena: res.arena)
            entry.prefix = MergeEntry.prefix(entry.id, Int(entry.idLen))
            var time = r.time
            if job.remote && time > job.clampLimit {
                time = job.clampLimit
                entry.time = time
                entry.flags |= MergeEntry.clampedFlag
                res.clamped += 1
            }
            if time == r.time && r.isTimeCanonical(base) {
                entry.line = base + r.start
                entry.lineLen = Int32(r.end - r.start)
            } else {
                var out: [UInt8] = []
                RecordLine.rewrite(base, r, time: time, device: nil, ensureDeleted: false, into: &out)
                entry.line = res.arena.store(out)
                entry.lineLen = Int32(out.count)
            }
            res.entries.append(entry)
        }
    }

    /// A scanned string's content: in place in the input when it has no
    /// escapes, else decoded into `arena`.
    @inline(__always)
    static func stringBytes(_ base: UnsafePointer<UInt8>, _ span: RecordScan.StringSpan, arena: ByteArena) -> (UnsafePointer<UInt8>, Int32) {
        guard span.escaped else { return (base + span.start, Int32(span.count)) }
        let d = RecordScanner.decode(base, span)
        return (arena.store(d), Int32(d.count))
    }

    @inline(__always)
    static func isBlank(_ p: UnsafePointer<UInt8>, _ from: Int, _ to: Int) -> Bool {
        var i = from
        while i < to {
            let c = p[i]
            if c != 0x20 && c != 0x09 && c != 0x0D { return false }
            i += 1
        }
        return true
    }

    // MARK: Sorting

    /// A sort key: the id's first 8 bytes and the entry they come from.
    struct SortKey {
        var prefix: UInt64
        var entry: UnsafePointer<MergeEntry>
    }

    /// Sorts by id (byte order), then input order: a stable LSD radix sort on
    /// the 8-byte prefix (16 bits a pass, skipping passes where every key has
    /// the same digit), then a comparison sort inside each run of equal prefixes.
    static func sortKeys(_ keys: UnsafeMutableBufferPointer<SortKey>) {
        let n = keys.count
        guard n > 1 else { return }
        let tmp = UnsafeMutableBufferPointer<SortKey>.allocate(capacity: n)
        defer { tmp.deallocate() }
        var src = keys, dst = tmp
        let counts = UnsafeMutableBufferPointer<Int>.allocate(capacity: 65_536)
        defer { counts.deallocate() }
        for shift in stride(from: UInt64(0), to: 64, by: 16) {
            counts.initialize(repeating: 0)
            for i in 0..<n { counts[Int(truncatingIfNeeded: (src[i].prefix >> shift) & 0xFFFF)] += 1 }
            if counts[Int(truncatingIfNeeded: (src[0].prefix >> shift) & 0xFFFF)] == n { continue }
            var sum = 0
            for d in 0..<65_536 { let c = counts[d]; counts[d] = sum; sum += c }
            for i in 0..<n {
                let d = Int(truncatingIfNeeded: (src[i].prefix >> shift) & 0xFFFF)
                dst[counts[d]] = src[i]
                counts[d] += 1
            }
            swap(&src, &dst)
        }
        if src.baseAddress != keys.baseAddress {
            _ = keys.update(fromContentsOf: src)
        }
        // Runs of equal prefixes: the full ids (and then input order) decide.
        var i = 0
        while i < n {
            var j = i + 1
            while j < n && keys[j].prefix == keys[i].prefix { j += 1 }
            if j - i > 1 {
                var run = UnsafeMutableBufferPointer(rebasing: keys[i..<j])
                if j - i <= 16 {
                    for a in 1..<run.count {
                        let x = run[a]
                        var b = a
                        while b > 0 && MergeEntry.less(x.entry.pointee, run[b - 1].entry.pointee) { run[b] = run[b - 1]; b -= 1 }
                        run[b] = x
                    }
                } else {
                    run.sort { MergeEntry.less($0.entry.pointee, $1.entry.pointee) }
                }
            }
            i = j
        }
    }
}

/// A growable buffer of entries that is freed with its owner.
struct EntryBuffer {
    private(set) var base = UnsafeMutablePointer<MergeEntry>.allocate(capacity: 16)
    private(set) var count = 0
    private var capacity = 16

    mutating func reserve(_ n: Int) {
        guard n > capacity else { return }
        let grown = UnsafeMutablePointer<MergeEntry>.allocate(capacity: n)
        grown.moveInitialize(from: base, count: count)
        base.deallocate()
        base = grown
        capacity = n
    }

    mutating func append(_ e: MergeEntry) {
        if count == capacity { reserve(capacity * 2) }
        (base + count).initialize(to: e)
        count += 1
    }

    func free() { base.deallocate() }
}

/// One version in the pure merge: where its id, device and line bytes are,
/// and what the LWW rule compares. 64 bytes.
struct MergeEntry {
    static let deletedFlag: UInt8 = 1
    static let remoteFlag: UInt8 = 2
    static let clampedFlag: UInt8 = 4
    // Never nil: bitPattern 1 is not zero (a stand-in base for an empty buffer, never read).
    nonisolated(unsafe) static let dummy = UnsafePointer<UInt8>(bitPattern: 1)!

    /// The id's first 8 bytes, big-endian, so most comparisons are one integer compare.
    var prefix: UInt64 = 0
    var id: UnsafePointer<UInt8> = dummy
    var line: UnsafePointer<UInt8> = dummy
    var device: UnsafePointer<UInt8> = dummy
    var time: Int64 = 0
    /// Input (top byte) and byte offset: the order versions were read in.
    var order: Int = 0
    var idLen: Int32 = 0
    var lineLen: Int32 = 0
    var deviceLen: Int32 = 0
    var flags: UInt8 = 0

    var isDeleted: Bool { flags & MergeEntry.deletedFlag != 0 }
    var isRemote: Bool { flags & MergeEntry.remoteFlag != 0 }
    var isClamped: Bool { flags & MergeEntry.clampedFlag != 0 }

    @inline(__always)
    static func prefix(_ p: UnsafePointer<UInt8>, _ n: Int) -> UInt64 {
        var v: UInt64 = 0
        for k in 0..<8 { v = v << 8 | (k < n ? UInt64(p[k]) : 0) }
        return v
    }

    @inline(__always)
    static func compareIDs(_ a: MergeEntry, _ b: MergeEntry) -> Int32 {
        if a.prefix != b.prefix { return a.prefix < b.prefix ? -1 : 1 }
        let m = Int(min(a.idLen, b.idLen))
        if m > 8 {
            let c = memcmp(a.id + 8, b.id + 8, m - 8)
            if c != 0 { return c }
        }
        return a.idLen == b.idLen ? 0 : (a.idLen < b.idLen ? -1 : 1)
    }

    @inline(__always)
    static func less(_ a: MergeEntry, _ b: MergeEntry) -> Bool {
        let c = compareIDs(a, b)
        return c != 0 ? c < 0 : a.order < b.order
    }

    @inline(__always)
    static func sameID(_ a: MergeEntry, _ b: MergeEntry) -> Bool {
        a.prefix == b.prefix && a.idLen == b.idLen && (a.idLen <= 8 || memcmp(a.id + 8, b.id + 8, Int(a.idLen) - 8) == 0)
    }

    @inline(__always)
    static func decide(held: MergeEntry, incoming: MergeEntry) -> LWW.Decision {
        LWW.decide(localTime: Timestamp(milliseconds: held.time), localDeleted: held.isDeleted,
                   localDevice: UnsafeBufferPointer(start: held.device, count: Int(held.deviceLen)),
                   remoteTime: Timestamp(milliseconds: incoming.time), remoteDeleted: incoming.isDeleted,
                   remoteDevice: UnsafeBufferPointer(start: incoming.device, count: Int(incoming.deviceLen)))
    }

    /// `incoming` replaces `held` by the LWW rule (equal versions keep the held one).
    @inline(__always)
    static func beats(_ incoming: MergeEntry, _ held: MergeEntry) -> Bool {
        decide(held: held, incoming: incoming).takeRemote
    }
}
