import CSQLite
import FoundationEssentials
import Glibc

/// Records in the store: applying incoming versions by the LWW rule, local
/// edits, and export from a change cursor. merge-records and peer-sync both
/// go through here, so the store has one merge code path (`RecordApplier`).
public struct ApplySummary: Sendable, Equatable {
    public var received = 0
    /// Incoming versions that replaced (or created) the held one.
    public var applied = 0
    /// Incoming versions that lost to the held one.
    public var keptLocal = 0
    /// Incoming versions identical to the held one.
    public var unchanged = 0
    /// Incoming versions whose future `modifiedAt` was clamped.
    public var clamped = 0
    /// Incoming versions not taken: ids this store does not hold, in versions
    /// one of its purges covers (PurgeRecords.swift).
    public var purged = 0
    /// Incoming versions not taken, though they would have won: they name
    /// another device than the sender as their author, and carry no tag that
    /// shows that device made them (AuthorshipCheck).
    public var unattributed = 0
    /// Versions taken from a file into a member's store that name another
    /// device and carry no authorship tag: the owner will not take them from
    /// this member (docs/protocol.md §7.4), so the tool says so.
    public var untaggedInOthersNames = 0
    /// Live versions that replaced a tombstone.
    public var resurrected = 0
    /// Rows replaced whose previous change number lay in the watched range
    /// (a session's records not yet sent, docs/protocol.md §7.2).
    public var displaced: [Int64] = []
    /// Rows whose copy the owner kept against its member's later-dated same edit:
    /// they go back to the member (docs/protocol.md §7.4).
    public var ownCopiesKept: [Int64] = []
    /// Rows that beat the incoming version by the rule, when asked for (`reportsHeldOver`): the
    /// sender, whose current version that was, does not hold them.
    public var heldOver: [Int64] = []
    /// Rows holding this store's copy of an incoming version it pulled back to its bound, or
    /// kept its earlier-dated copy of: the row, and that version's time as it came (BundleLedger.swift).
    public var owed: [OwedCopy] = []
    public struct OwedCopy: Equatable, Sendable {
        public var rid: Int64
        public var theirs: Int64
        /// A copy this store made before, of a version sent again, that the row no longer holds; nil: the row's line.
        public var line: [UInt8]? = nil
    }
    /// Tombstones that replaced a live version.
    public var deleted = 0
    public init() {}

    public var json: JSONValue {
        .object([("received", .int(received)), ("applied", .int(applied)), ("keptLocal", .int(keptLocal)),
                 ("unchanged", .int(unchanged)), ("clamped", .int(clamped)), ("resurrected", .int(resurrected)),
                 ("deleted", .int(deleted)), ("purged", .int(purged))])
    }
}

/// What the rule decided for one incoming version, for `--explain`.
public struct ApplyExplanation {
    /// The record id (UTF-8), valid during the callback only.
    public var id: UnsafeRawBufferPointer
    public var rule: LWW.Rule
    /// The incoming version replaced (or created) the held one.
    public var tookIncoming: Bool
    public var clamped: Bool
    /// The input line number, when applying lines.
    public var lineNumber: Int
}

extension Store {
    /// Page cache for bulk applies, in KiB: enough to keep the id index of a
    /// few million records in memory, so random ids do not thrash the disk.
    public static let bulkCacheKiB = 131_072
    /// Lines are read, validated and sorted by id in batches this large
    /// (bytes, lines) before they are applied: sorted keys touch each index
    /// page once per batch instead of once per record.
    public static let applyBatchBytes = 32 << 20
    public static let applyBatchLines = 200_000

    /// Applies remote versions by the LWW rule (clamp included) inside one
    /// transaction: all or nothing. `explain` hears, per version, which rule
    /// decided and whether the incoming version was taken. A record's `line`
    /// is authoritative: its fields are read from it.
    public func applyRemote(_ records: [Record], now: Timestamp,
                            explain: ((_ id: String, _ rule: LWW.Rule, _ tookRemote: Bool) -> Void)? = nil) throws -> ApplySummary {
        try write { try applyRemoteInTransaction(records, now: now, explain: explain) }
    }

    /// The same, for a caller that already holds the write transaction.
    /// Rows replaced whose change number was in `watching` are listed in
    /// the summary's `displaced`. A version of an id this store does not
    /// hold that one of its purges covers is not taken (PurgeRecords.swift).
    public func applyRemoteInTransaction(_ records: [Record], now: Timestamp, watching: ClosedRange<Int64>? = nil,
                                         explain: ((String, LWW.Rule, Bool) -> Void)? = nil) throws -> ApplySummary {
        try applyRecords(records, stamping: false, now: now, watching: watching, explain: explain)
    }

    /// The same for versions already validated where they lie: `scans` are
    /// record lines in the bytes at `base` (a session's RECORDS batch, read
    /// once by the session and not parsed again here).
    /// `bound`: the session's clamp (SyncSession, docs/protocol.md §7.4);
    /// `adoptOwnerCopiesOf`: a member's device ID, when the owner sends;
    /// `keepOwnCopiesOf`: the member's, when the owner receives (the copies it owes the member stand, BundleLedger.swift);
    /// `authorship`: which versions need a proof of who made them (AuthorshipCheck.forIntake).
    func applyRemoteInTransaction(_ base: UnsafePointer<UInt8>, _ scans: [RecordScan], now: Timestamp, watching: ClosedRange<Int64>?,
                                  bound: Int64, adoptOwnerCopiesOf: [UInt8]?, keepOwnCopiesOf: [UInt8]? = nil, from peer: String? = nil,
                                  authorship: AuthorshipCheck? = nil, reportingHeldOver: Bool = false) throws -> ApplySummary {
        try applying(now: now, stamping: false, watching: watching) { applier in
            applier.reportsHeldOver = reportingHeldOver
            applier.cameFrom = peer.map { Array($0.utf8) }
            applier.authorship = authorship
            applier.receiveBound = bound
            applier.pullBackStopsAtHeld = true
            applier.adoptOwnerCopiesOf = adoptOwnerCopiesOf
            applier.keepOwnCopiesOf = keepOwnCopiesOf
            for scan in scans { try applier.apply(base, scan, explain: nil) }
        }
    }

    /// One applier's pass inside the caller's transaction: `body` applies
    /// versions through it, then it finishes and its summary is returned.
    private func applying(now: Timestamp, stamping: Bool, watching: ClosedRange<Int64>? = nil,
                          _ body: (RecordApplier) throws -> Void) throws -> ApplySummary {
        let applier = try RecordApplier(store: self, now: now, stamping: stamping)
        applier.watching = watching
        try body(applier)
        try applier.finish()
        return applier.summary
    }

    /// Applies edits made on this device: each gets `deviceId` = this device
    /// and `modifiedAt` = now — or 1 ms after the version held, when that is
    /// later, so an edit always supersedes the version it edits — then goes
    /// through the same LWW rule. One transaction.
    public func applyLocalEdits(_ records: [Record], now: Timestamp) throws -> ApplySummary {
        try write { try applyRecords(records, stamping: true, now: now, watching: nil, explain: nil) }
    }

    private func applyRecords(_ records: [Record], stamping: Bool, now: Timestamp, watching: ClosedRange<Int64>?,
                              explain: ((String, LWW.Rule, Bool) -> Void)?) throws -> ApplySummary {
        try applying(now: now, stamping: stamping, watching: watching) { applier in
            for r in records {
                var line = r.line
                try line.withUTF8 { buf in
                    // Never nil: bitPattern 1 is not zero (a stand-in base for an empty buffer, never read).
                    let base = buf.baseAddress ?? UnsafePointer(bitPattern: 1)!
                    let scan: RecordScan
                    do { scan = try RecordScanner.scan(base, start: 0, end: buf.count, mode: stamping ? .localEdit : .exchanged) }
                    catch let e as RecordError { throw RecordLineError(record: r.id, e) }
                    try applier.apply(base, scan) { e in
                        explain?(String(decoding: e.id, as: UTF8.self), e.rule, e.tookIncoming)
                    }
                }
            }
        }
    }

    /// Applies every record line of `reader` in one transaction (all or
    /// nothing): remote versions with the clamp, or, with `stamping`, local
    /// edits. A bad line throws a `RecordLineError` (FILE:LINE: field:
    /// problem) and the store is left unchanged. Blank lines are skipped.
    public func applyLines(_ reader: LineReader, stamping: Bool, now: Timestamp,
                           explain: ((ApplyExplanation) throws -> Void)? = nil,
                           progress: ((Int) -> Void)? = nil) throws -> ApplySummary {
        try db.execute("PRAGMA cache_size = -\(Store.bulkCacheKiB)")
        return try write {
            try applying(now: now, stamping: stamping) { applier in
                if !stamping, try family()?.role == .member { applier.untaggedOthersOf = Array(try deviceID.utf8) }
                var workspace = RecordScanner.ScanWorkspace()
                let mode: RecordScanMode = stamping ? .localEdit : .exchanged
                var batch = [UInt8]()
                batch.reserveCapacity(Store.applyBatchBytes + Record.maxLineBytes)
                var items: [(scan: RecordScan, line: Int)] = []
                var order: [Int] = []
                var done = false
                while !done {
                    // Read and validate a batch of lines.
                    batch.removeAll(keepingCapacity: true)
                    items.removeAll(keepingCapacity: true)
                    while batch.count < Store.applyBatchBytes && items.count < Store.applyBatchLines {
                        guard let line = try reader.next() else { done = true; break }
                        switch line {
                        case .tooLong:
                            throw RecordLineError(file: reader.name, line: reader.lineNumber, RecordError(field: nil, "line longer than \(Record.maxLineBytes) bytes"))
                        case let .text(buf):
                            guard let raw = buf.baseAddress, !RecordMerge.isBlank(raw.assumingMemoryBound(to: UInt8.self), 0, buf.count) else { continue }
                            let from = batch.count
                            batch.append(contentsOf: buf)
                            let scan: RecordScan = try batch.withUnsafeBufferPointer { b throws(RecordLineError) in
                                do throws(RecordError) {
                                    // Never nil: a non-blank line was just appended.
                                    return try RecordScanner.scan(b.baseAddress!, start: from, end: b.count, mode: mode, workspace: &workspace)
                                } catch {
                                    throw RecordLineError(file: reader.name, line: reader.lineNumber, error)
                                }
                            }
                            items.append((scan, reader.lineNumber))
                        }
                    }
                    // Apply it in id order: neighbouring ids share index pages. The
                    // sort is stable, so duplicates keep their input order.
                    try batch.withUnsafeBufferPointer { b in
                        // Never nil: bitPattern 1 is not zero (a stand-in base for an empty buffer, never read).
                        let base = b.baseAddress ?? UnsafePointer(bitPattern: 1)!
                        order.removeAll(keepingCapacity: true)
                        order.append(contentsOf: items.indices)
                        order.sort { x, y in
                            let a = items[x].scan.id, c = items[y].scan.id
                            let m = memcmp(base + a.start, base + c.start, min(a.count, c.count))
                            if m != 0 { return m < 0 }
                            return a.count != c.count ? a.count < c.count : x < y
                        }
                        for k in order {
                            let n = items[k].line
                            if let explain {
                                try applier.apply(base, items[k].scan) { e in
                                    var e = e
                                    e.lineNumber = n
                                    try explain(e)
                                }
                            } else {
                                try applier.apply(base, items[k].scan, explain: nil)
                            }
                        }
                    }
                    progress?(applier.summary.received)
                }
            }
        }
    }

    // MARK: Export

    /// Records changed after change number `afterSeq`, oldest change first, at
    /// most `limit`. Returns their lines and the last change number included.
    public func exportRecords(afterSeq: Int64, limit: Int) throws -> (lines: [String], lastSeq: Int64) {
        var lines: [String] = []
        var last = afterSeq
        try forEachChange(afterSeq: afterSeq, limit: limit) { line, seq in
            lines.append(String(decoding: line, as: UTF8.self))
            last = seq
        }
        return (lines, last)
    }

    /// Calls `body` with each record line changed after `afterSeq`, oldest
    /// change first, and its change number. Returns the last change number seen.
    @discardableResult
    public func forEachChange(afterSeq: Int64, limit: Int = Int.max,
                              _ body: (UnsafeRawBufferPointer, Int64) throws -> Void) throws -> Int64 {
        let s = try db.prepare("SELECT line, seq FROM records WHERE seq > ? ORDER BY seq LIMIT ?")
        try s.bind([.int(afterSeq), .int(Int64(min(limit, Int(Int64.max))))])
        defer { s.reset() }
        var last = afterSeq
        while try s.step() {
            last = s.int64(1)
            try s.withBytes(0) { try body($0, last) }
        }
        return last
    }

    /// Calls `body` with every record line in `id` byte order, tombstones included.
    public func forEachRecordLine(_ body: (UnsafeRawBufferPointer) throws -> Void) throws {
        let s = try db.prepare("SELECT line FROM records ORDER BY id")
        defer { s.reset() }
        while try s.step() { try s.withBytes(0, body) }
    }

    public var currentChangeSeq: Int64 { get throws { Int64(try meta("change_seq") ?? "0") ?? 0 } }

    /// How many record rows the store holds: (live, tombstones).
    public func recordCounts() throws -> (live: Int, tombstones: Int) {
        let live = try db.scalarInt("SELECT count(*) FROM records WHERE deleted = 0") ?? 0
        let dead = try db.scalarInt("SELECT count(*) FROM records WHERE deleted = 1") ?? 0
        return (Int(live), Int(dead))
    }
}

/// The one place a version enters the records table. Holds its statements
/// for the whole batch; used inside a write transaction only.
final class RecordApplier {
    let store: Store
    let db: Database
    let select: Statement, insert: Statement, update: Statement
    /// Prepared on first use: most batches name no photos and edit nothing
    /// locally, and a session's process prepares each statement afresh.
    private var deletePhotosStatement: Statement?, insertPhotoStatement: Statement?, selectHeldStatement: Statement?
    private func statement(_ cached: inout Statement?, _ sql: String) throws -> Statement {
        if let s = cached { return s }
        let s = try db.prepare(sql)
        cached = s
        return s
    }
    private var deletePhotos: Statement { get throws { try statement(&deletePhotosStatement, "DELETE FROM record_photos WHERE record = ?") } }
    private var insertPhoto: Statement { get throws { try statement(&insertPhotoStatement, "INSERT OR IGNORE INTO record_photos (sha256, record) VALUES (?, ?)") } }
    private var selectHeld: Statement { get throws { try statement(&selectHeldStatement, "SELECT type, line FROM records WHERE id = ?") } }
    private var selectCopyStatement: Statement?, selectLatestCopyStatement: Statement?, remembersCopies: Bool?
    private var selectCopy: Statement { get throws { try statement(&selectCopyStatement, "SELECT line FROM copies_made WHERE rid = ? AND theirs = ?") } }
    private var selectLatestCopy: Statement { get throws { try statement(&selectLatestCopyStatement, "SELECT max(theirs) FROM copies_made WHERE rid = ?") } }
    /// Whether this store remembers any copy it made (CopiesMade.swift): most remember none,
    /// so one look per batch, not one per record.
    private func anyCopiesMade() throws -> Bool {
        if remembersCopies == nil { remembersCopies = try db.scalarInt("SELECT 1 FROM copies_made LIMIT 1") != nil }
        return remembersCopies == true
    }
    /// The copy this store made of the version of row `rid` that came dated `theirs`, when the
    /// owner applies a member's versions.
    private func copyMade(_ rid: Int64, theirs: Int64) throws -> [UInt8]? {
        guard keepOwnCopiesOf != nil, try anyCopiesMade() else { return nil }
        let s = try selectCopy
        try s.bind([.int(rid), .int(theirs)])
        defer { s.reset() }
        return try s.step() ? Array(s.text(0).utf8) : nil
    }
    private var selectCopyLineStatement: Statement?
    private var selectCopyLine: Statement { get throws { try statement(&selectCopyLineStatement, "SELECT 1 FROM copies_made WHERE rid = ? AND line = ?") } }
    /// Whether the row `select` is on (row `rid`) holds a copy this store made of another device's version.
    private func heldIsCopyMade(_ rid: Int64) throws -> Bool {
        guard try anyCopiesMade(), let lp = sqlite3_column_blob(select.stmt, 6) else { return false }
        let s = try selectCopyLine
        try s.bind(.int(rid), at: 1)
        try s.bindText(UnsafeRawBufferPointer(start: lp, count: Int(sqlite3_column_bytes(select.stmt, 6))), at: 2)
        defer { s.reset() }
        return try s.step()
    }
    /// The latest time a version of row `rid` that this store pulled back came with, when a member
    /// stamps its own edit: the version lives on elsewhere as it came, and the edit must beat it.
    private func latestCopyMade(_ rid: Int64) throws -> Int64? {
        guard stampsAfterCopies, try anyCopiesMade() else { return nil }
        let s = try selectLatestCopy
        try s.bind([.int(rid)])
        defer { s.reset() }
        return try s.step() && !s.isNull(0) ? s.int64(0) : nil
    }
    /// A member stamping its own edits: each goes after the versions it pulled back (latestCopyMade).
    /// Not the owner: its copy is the family's version, and the version sent again is judged as it.
    private var stampsAfterCopies = false
    let now: Timestamp
    /// Local edits are stamped by the family's clock (FamilyClock.swift).
    let stampTime: Int64
    /// Local edits are tagged with this device's authorship key (Authorship.swift), when it has one.
    let stampKey: Authorship.Key?
    /// Incoming versions taken only with a proof of who made them, once they
    /// would change the store (AuthorshipCheck); nil: none judged.
    var authorship: AuthorshipCheck?
    /// Incoming versions later than this (ms) are pulled back to it, never
    /// below 1 ms after the version held (LWW.pullBack). `Int64.max`: none
    /// are (a member takes the owner's versions as the owner holds them).
    var receiveBound: Int64
    /// Whether the pull-back stops 1 ms after the version held: in a session,
    /// where the sender already pulled its own versions back no further than
    /// the version it replaced (RecordBatches.swift), so an edit of a version
    /// held here keeps beating it. merge-records' clamp keeps the seed's rule.
    var pullBackStopsAtHeld = false
    /// This device's id, when applying local edits.
    let me: [UInt8]?
    /// This device's id, when applying the owner's versions on a member: the
    /// owner's copy of a version held here (the same edit: content and
    /// deviceId), pulled back by the owner's clock, replaces the later-dated
    /// one held, whoever made it (the owner's copy is the one every other
    /// device holds: one of this device's own edits, or one the owner took
    /// from another device relaying it, a copy of the owner's store restored
    /// from a backup getting back its own lost edits, say).
    var adoptOwnerCopiesOf: [UInt8]?
    /// The peer a session receives these versions from: a row stored byte for
    /// byte as received is marked as come from it (schema version 6), and is
    /// not sent back to it. Nil outside a session.
    var cameFrom: [UInt8]?
    /// The member's device ID, when the owner applies that member's versions:
    /// the owner's copy of one of them stands against the same edit later-dated.
    var keepOwnCopiesOf: [UInt8]?
    /// A member's device ID, when a file is applied to its store: the versions
    /// taken in another device's name without a tag are counted (`untaggedInOthersNames`).
    var untaggedOthersOf: [UInt8]?
    /// Whether the rows that beat an incoming version are listed (`ApplySummary.heldOver`).
    var reportsHeldOver = false
    /// What this store purged (PurgeRecords.swift): versions of ids not held
    /// that a purge covers are not taken. Loaded on first need.
    private var evidence: PurgeEvidence?
    private var evidenceLoaded = false
    /// `prev_at` of an edit of an id this store did not hold. A row's
    /// `prev_at` is non-NULL while it is an edit of this device's that has not
    /// left the store (RecordBatches.swift releases it as it goes out).
    static let replacedNothing = Int64.min
    /// A local delete that named only its id: the held record's type, for its line.
    private var heldType: [UInt8]?
    var seq: Int64
    var summary = ApplySummary()
    /// The record-state digest, kept current row by row (RecordStateDigest.swift).
    private var digest: RecordDigestSum
    private let digestScratch = TermScratch()
    /// Change numbers whose replacement is reported in `summary.displaced`.
    var watching: ClosedRange<Int64>?
    /// The last id applied was held already: the next is looked up before an
    /// insert is tried (one index probe instead of two for a run of edits).
    private var lookUpFirst = false
    private var scratch: [UInt8] = []

    init(store: Store, now: Timestamp, stamping: Bool) throws {
        self.store = store
        db = store.db
        select = try db.prepare("SELECT rid, modified_at, device_id, deleted, photo_count, seq, line, prev_at FROM records WHERE id = ?")
        insert = try db.prepare("""
            INSERT INTO records (id, type, modified_at, device_id, deleted, line, seq, photo_count, prev_at, came_from, came_seq)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT(id) DO NOTHING
            """)
        update = try db.prepare("""
            UPDATE records SET type = ?2, modified_at = ?3, device_id = ?4, deleted = ?5, line = ?6, seq = ?7, photo_count = ?8, prev_at = ?9,
                came_from = ?10, came_seq = ?11
            WHERE rid = ?1
            """)
        self.now = now
        stampTime = stamping ? try store.familyTime(at: now).milliseconds : now.milliseconds
        receiveBound = LWW.bound(clock: now)
        me = stamping ? Array(try store.deviceID.utf8) : nil
        stampKey = stamping ? try store.ownAuthorshipKey() : nil
        stampsAfterCopies = try stamping && store.family()?.role == .member
        seq = try store.currentChangeSeq
        digest = try store.storedRecordDigest()
    }

    func finish() throws {
        try store.rememberCopiesInTransaction(summary.owed)
        try store.setMeta("change_seq", String(seq))
        try store.setStoredRecordDigest(digest)
        try store.markHeldSince(now: now)
    }

    private func purgeEvidence() throws -> PurgeEvidence? {
        if !evidenceLoaded {
            let e = try PurgeEvidence(store: store)
            evidence = e.isEmpty ? nil : e
            evidenceLoaded = true
        }
        return evidence
    }

    @inline(__always)
    private func bindText(_ s: Statement, _ i: Int32, _ p: UnsafePointer<UInt8>, _ n: Int) throws {
        let rc = p.withMemoryRebound(to: CChar.self, capacity: max(n, 1)) {
            sqlite3_bind_text64(s.stmt, i, $0, sqlite3_uint64(n), fs_sqlite_static(), UInt8(SQLITE_UTF8))
        }
        if rc != SQLITE_OK { try db.check(rc, "binding a record field") }
    }

    /// Applies one scanned version at `base`. A new id is inserted straight
    /// away (one index probe); an id already held is looked up and judged.
    /// Which is tried first follows the last id: a bulk load of new ids
    /// inserts, a session's run of edits looks up.
    func apply(_ base: UnsafePointer<UInt8>, _ r: RecordScan, explain: ((ApplyExplanation) throws -> Void)?) throws {
        summary.received += 1
        let idDecoded: [UInt8]? = r.id.escaped ? RecordScanner.decode(base, r.id) : nil
        var typeDecoded: [UInt8]? = r.type.escaped ? RecordScanner.decode(base, r.type) : nil
        let deviceDecoded: [UInt8]? = me ?? (r.deviceID.escaped ? RecordScanner.decode(base, r.deviceID) : nil)
        // A version that names another author than the session's peer (AuthorshipCheck): judged once
        // it would change the store, so a relay of what is held already costs no proof.
        let unproven = try me == nil && (authorship.map { check in
            try withSpan(base, r.deviceID, deviceDecoded) { check.judges(UnsafeBufferPointer(start: $0, count: $1)) }
        } ?? false)
        func proven() throws -> Bool {
            guard let check = authorship else { return true }
            return try withSpan(base, r.deviceID, deviceDecoded) { try check.proves(base, r, device: UnsafeBufferPointer(start: $0, count: $1)) }
        }
        let deleted = r.deleted == 1
        let photoCount = deleted ? 0 : r.photoCount
        // The incoming version: stamped (local edit) or clamped (remote).
        var time = r.time
        var clamped = false
        if me != nil {
            time = stampTime
        } else if time > receiveBound {
            // Pulled back; once the held version is known, never below it (step 2).
            time = receiveBound
            clamped = true
            summary.clamped += 1
        }
        try withSpan(base, r.id, idDecoded) { idp, idn in
            // A local edit is judged against the version held first: the same
            // content again is no edit (a retried or re-applied export must not
            // claim every record for this device), and a delete may give only its id.
            heldType = nil
            if me != nil, let held = try heldVersion(idp, idn) {
                if RecordContent.same(held: held.line, incoming: UnsafeRawBufferPointer(start: base + r.start, count: r.end - r.start)) {
                    summary.unchanged += 1
                    if let explain {
                        try explain(ApplyExplanation(id: UnsafeRawBufferPointer(start: idp, count: idn), rule: .sameVersion,
                                                     tookIncoming: false, clamped: false, lineNumber: 0))
                    }
                    return
                }
                if !r.type.isPresent {
                    heldType = held.type
                    typeDecoded = held.type
                }
            } else if me != nil, !r.type.isPresent {
                throw RecordLineError(record: String(decoding: UnsafeRawBufferPointer(start: idp, count: idn), as: UTF8.self),
                                      RecordError(field: "field 'type'", "missing (a delete may give only its id when this store holds the record)"))
            }
            // Look the id up first after an id that was held (a session's
            // edits are mostly of records the store holds), and for a version
            // to judge (whether it would change the store); else insert first.
            var onHeldRow = false
            let lookedUp = lookUpFirst || unproven
            if lookedUp {
                try bindText(select, 1, idp, idn)
                let rc = sqlite3_step(select.stmt)
                if rc == SQLITE_ROW {
                    onHeldRow = true
                } else {
                    sqlite3_reset(select.stmt)
                    if rc != SQLITE_DONE { try db.check(rc, "looking up a record") }
                }
            }
            var rid: Int64 = 0
            var decision = LWW.Decision(takeRemote: true, rule: .new)
            var found = false, heldDeleted = false
            var inserted = false
            var prevAt: Int64? = nil
            var releaseHeld = false
            prepareLine(base, r, time: time)
            if !onHeldRow {
                // 0. Purged here: a version of an id this store no longer holds that a purge covers.
                if me == nil, let evidence = try purgeEvidence(), let purgedAt = evidence.purgeTime(UnsafeRawBufferPointer(start: idp, count: idn)) {
                    var rc = SQLITE_DONE
                    if !lookedUp {
                        try bindText(select, 1, idp, idn)
                        rc = sqlite3_step(select.stmt)
                        sqlite3_reset(select.stmt)
                    }
                    if rc != SQLITE_ROW && rc != SQLITE_DONE { try db.check(rc, "looking up a record") }
                    if rc == SQLITE_DONE {
                        // The purge stands for the tombstone it removed: a pull-back stops after it, as after a version held.
                        if clamped && pullBackStopsAtHeld {
                            let t = LWW.pullBack(r.time, bound: receiveBound, floor: purgedAt)
                            if t != time {
                                time = t
                                prepareLine(base, r, time: time)
                            }
                        }
                        if PurgeEntry(idHash: 0, deletedAt: purgedAt).covers(time: time, deleted: deleted) {
                            summary.purged += 1
                            lookUpFirst = false
                            return
                        }
                    }
                }
                if me != nil { prevAt = RecordApplier.replacedNothing }
                // A version of an id not held, naming an author it has no proof of: not taken.
                if unproven, try !proven() {
                    refuseUnattributed(clamped)
                    lookUpFirst = false
                    return
                }
                // 1. A new id: insert, done.
                inserted = try writeRow(base, r, stmt: insert, rid: nil, idp: idp, idn: idn, time: time,
                                        typeDecoded: typeDecoded, deviceDecoded: deviceDecoded, photoCount: photoCount, prevAt: prevAt)
                if !inserted {
                    try bindText(select, 1, idp, idn)
                    let rc = sqlite3_step(select.stmt)
                    guard rc == SQLITE_ROW else {
                        sqlite3_reset(select.stmt)
                        try db.check(rc, "looking up a record")
                        throw StoreError(.inconsistent, path: store.path, detail: "a record vanished while it was applied")
                    }
                }
            }
            lookUpFirst = !inserted
            if inserted {
                rid = sqlite3_last_insert_rowid(db.handle)
                seq += 1
                if clamped { summary.owed.append(.init(rid: rid, theirs: r.time)) }
            } else {
                // 2. Held already (`select` is on its row): let the rule decide.
                found = true
                defer { sqlite3_reset(select.stmt) }
                rid = sqlite3_column_int64(select.stmt, 0)
                let heldTime = sqlite3_column_int64(select.stmt, 1)
                heldDeleted = sqlite3_column_int64(select.stmt, 3) != 0
                let heldPhotos = sqlite3_column_int64(select.stmt, 4)
                let heldSeq = sqlite3_column_int64(select.stmt, 5)
                if me != nil {
                    // An edit supersedes the version it edits, and goes no lower than just after it when it
                    // leaves (its floor): even an edit of ours that has not left this store, since a store put
                    // back from a copy cannot know which of those left it after the copy was made. On a
                    // member, also after every version of the record it pulled back, as that version came
                    // and may be elsewhere (docs/design.md §3.1).
                    let floor = max(heldTime, try latestCopyMade(rid) ?? Int64.min)
                    if floor >= time {
                        time = floor + 1
                        prepareLine(base, r, time: time)
                    }
                    prevAt = floor
                } else if clamped, r.time == heldTime, heldIsIncoming(base, r) {
                    // The very version held, come again (relayed, or resent after a restore):
                    // nothing to pull back, and nothing changes. Pulling it back again would
                    // make a new version out of one every device may already hold.
                    time = r.time
                    prepareLine(base, r, time: time)
                    summary.clamped -= 1
                    clamped = false
                } else if clamped {
                    let t = LWW.pullBack(r.time, bound: receiveBound, floor: pullBackStopsAtHeld ? heldTime : nil)
                    if t != time {
                        time = t
                        prepareLine(base, r, time: time)
                    }
                }
                decision = try withSpan(base, r.deviceID, deviceDecoded) { dp, dn in
                    let hp = sqlite3_column_text(select.stmt, 2)
                    let hn = Int(sqlite3_column_bytes(select.stmt, 2))
                    let heldDevice = UnsafeBufferPointer(start: hp, count: hp == nil ? 0 : hn)
                    let incomingDevice = UnsafeBufferPointer(start: dp, count: dn)
                    var d = LWW.decide(localTime: Timestamp(milliseconds: heldTime), localDeleted: heldDeleted, localDevice: heldDevice,
                                       remoteTime: Timestamp(milliseconds: time), remoteDeleted: deleted, remoteDevice: incomingDevice)
                    // The owner's copy of a member's version stands, on both sides: a member takes it
                    // in place of its own (the owner pulled it back), and the owner keeps it when the
                    // member sends the same edit again later-dated (a store restored from a copy taken
                    // before the edit first went out).
                    func sameEdit() -> Bool {
                        guard let lp = sqlite3_column_blob(select.stmt, 6) else { return false }
                        return RecordContent.same(held: Array(UnsafeRawBufferPointer(start: lp, count: Int(sqlite3_column_bytes(select.stmt, 6)))),
                                                  incoming: UnsafeRawBufferPointer(start: base + r.start, count: r.end - r.start))
                    }
                    // Never in place of an edit of ours not sent yet: the owner cannot hold a copy of a version that
                    // never left this store, so an earlier one of ours with the same content (two deletes look
                    // alike) is an older version, not a copy (seed 6540).
                    if !d.takeRemote, time < heldTime, adoptOwnerCopiesOf != nil, sqlite3_column_type(select.stmt, 7) == SQLITE_NULL,
                       heldDevice.elementsEqual(incomingDevice), sameEdit() {
                        d = LWW.Decision(takeRemote: true, rule: .ownerCopy)
                    } else if d.takeRemote, time > heldTime, heldDevice.elementsEqual(incomingDevice),
                              (keepOwnCopiesOf.map { heldDevice.elementsEqual($0) } ?? false) || clamped,
                              sameEdit(), try heldIsCopyMade(rid) {
                        // The member's own edit sent again later-dated, or any version this store had
                        // to pull back of which it holds the same edit earlier-dated (a relay of one
                        // this store pulled back before, its clock behind since it was restored): taking
                        // it would only make a second copy of one edit, and the next relay a third.
                        // The copy held stands and goes back to the sender. Only a copy this store made:
                        // two edits alike (two deletes look alike) are two versions, the later one new.
                        d = LWW.Decision(takeRemote: false, rule: .ownerCopy)
                        summary.ownCopiesKept.append(rid)
                        summary.owed.append(.init(rid: rid, theirs: r.time))
                    } else if d.takeRemote, let copy = try copyMade(rid, theirs: r.time),
                              RecordContent.same(held: copy, incoming: UnsafeRawBufferPointer(start: base + r.start, count: r.end - r.start)) {
                        // The very version (its time and content) of which this store made a copy before, come
                        // again from whichever device (its author, or one that relays it): it is that copy,
                        // which the row holds or an edit made after it replaced. The row stands; the copy is
                        // owed to the sender, which takes it, then the row (docs/protocol.md §7.4 "Copies owed").
                        d = LWW.Decision(takeRemote: false, rule: .ownerCopy)
                        summary.owed.append(.init(rid: rid, theirs: r.time, line: copy))
                    }
                    return d
                }
                // A version that would replace the one held, naming an author it has no proof of: not taken.
                if decision.takeRemote, unproven, try !proven() {
                    refuseUnattributed(clamped)
                    return
                }
                // The very bytes of an edit of ours not sent yet, come from a peer: the edit left this store
                // after all (this store was put back from a copy taken before it went). It goes out as it
                // is from now on: pulled back now, it would be a second copy of a version others hold.
                if me == nil, decision.rule == .sameVersion, sqlite3_column_type(select.stmt, 7) != SQLITE_NULL, heldIsIncoming(base, r) {
                    releaseHeld = true
                }
                if decision.takeRemote, let lp = sqlite3_column_blob(select.stmt, 6) {
                    // The held version leaves the digest (the incoming one joins it in writeRow).
                    let ln = Int(sqlite3_column_bytes(select.stmt, 6))
                    digest.subtract(.init(id: UnsafeRawBufferPointer(start: idp, count: idn), line: UnsafeRawBufferPointer(start: lp, count: ln),
                                          scratch: digestScratch))
                }
                sqlite3_reset(select.stmt)
                if decision.takeRemote {
                    _ = try writeRow(base, r, stmt: update, rid: rid, idp: idp, idn: idn, time: time,
                                     typeDecoded: typeDecoded, deviceDecoded: deviceDecoded, photoCount: photoCount, prevAt: prevAt)
                    seq += 1
                    if clamped { summary.owed.append(.init(rid: rid, theirs: r.time)) }
                    if let w = watching, w.contains(heldSeq) { summary.displaced.append(rid) }
                    if heldPhotos > 0 {
                        let dp = try deletePhotos
                        sqlite3_bind_int64(dp.stmt, 1, rid)
                        let rc = sqlite3_step(dp.stmt)
                        sqlite3_reset(dp.stmt)
                        if rc != SQLITE_DONE { try db.check(rc, "updating photo references") }
                    }
                }
            }
            if let explain {
                try explain(ApplyExplanation(id: UnsafeRawBufferPointer(start: idp, count: idn), rule: decision.rule,
                                             tookIncoming: decision.takeRemote, clamped: clamped, lineNumber: 0))
            }
            guard decision.takeRemote else {
                if decision.rule == .sameVersion { summary.unchanged += 1 } else { summary.keptLocal += 1 }
                if reportsHeldOver, decision.rule != .sameVersion, decision.rule != .ownerCopy { summary.heldOver.append(rid) }
                if releaseHeld { try db.run("UPDATE records SET prev_at = NULL WHERE rid = ?", [.int(rid)]) }
                if decision.rule == .ownerCopy {
                    // A new change number, so the copy kept goes back to the member whatever this session still sends.
                    seq += 1
                    try db.run("UPDATE records SET seq = ? WHERE rid = ?", [.int(seq), .int(rid)])
                }
                return
            }
            if photoCount > 0 {
                let ip = try insertPhoto
                try RecordScanner.forEachPhoto(base, r) { h in
                    try bindText(ip, 1, h, 64)
                    sqlite3_bind_int64(ip.stmt, 2, rid)
                    let rc = sqlite3_step(ip.stmt)
                    sqlite3_reset(ip.stmt)
                    if rc != SQLITE_DONE { try db.check(rc, "recording photo references") }
                }
            }
            summary.applied += 1
            if let mine = untaggedOthersOf, r.tagAt < 0,
               try !withSpan(base, r.deviceID, deviceDecoded, { UnsafeBufferPointer(start: $0, count: $1).elementsEqual(mine) }) {
                summary.untaggedInOthersNames += 1
            }
            if found {
                if heldDeleted && !deleted { summary.resurrected += 1 }
                if !heldDeleted && deleted { summary.deleted += 1 }
            }
        }
    }

    /// Counts an incoming version not taken for want of a proof of its author.
    private func refuseUnattributed(_ clamped: Bool) {
        summary.unattributed += 1
        if clamped { summary.clamped -= 1 }
    }

    /// Whether the row `select` is on holds exactly the incoming line, byte
    /// for byte: the same version, whatever a clamp would make of it.
    private func heldIsIncoming(_ base: UnsafePointer<UInt8>, _ r: RecordScan) -> Bool {
        guard let lp = sqlite3_column_blob(select.stmt, 6) else { return false }
        let held = UnsafeRawBufferPointer(start: lp, count: Int(sqlite3_column_bytes(select.stmt, 6)))
        return held.elementsEqual(UnsafeRawBufferPointer(start: base + r.start, count: r.end - r.start))
    }

    /// The type and line held for an id, if any.
    private func heldVersion(_ idp: UnsafePointer<UInt8>, _ idn: Int) throws -> (type: [UInt8], line: [UInt8])? {
        let selectHeld = try self.selectHeld
        try bindText(selectHeld, 1, idp, idn)
        defer { sqlite3_reset(selectHeld.stmt) }
        let rc = sqlite3_step(selectHeld.stmt)
        guard rc == SQLITE_ROW else {
            if rc != SQLITE_DONE { try db.check(rc, "looking up a record") }
            return nil
        }
        func bytes(_ i: Int32) -> [UInt8] {
            guard let p = sqlite3_column_text(selectHeld.stmt, i) else { return [] }
            return Array(UnsafeBufferPointer(start: p, count: Int(sqlite3_column_bytes(selectHeld.stmt, i))))
        }
        return (bytes(0), bytes(1))
    }

    /// The line to keep for `r` at `time`, in `scratch`: empty when the
    /// source bytes are kept verbatim.
    private func prepareLine(_ base: UnsafePointer<UInt8>, _ r: RecordScan, time: Int64) {
        scratch.removeAll(keepingCapacity: true)
        if let me {
            me.withUnsafeBytes { d in
                RecordLine.rewrite(base, r, time: time, device: d, ensureDeleted: true, type: heldType, tag: stampKey, into: &scratch)
            }
        } else if time != r.time || !r.isTimeCanonical(base) {
            RecordLine.rewrite(base, r, time: time, device: nil, ensureDeleted: false, into: &scratch)
        }
    }

    /// Runs the insert (rid nil; returns false when the id is already held) or
    /// the update of row `rid`, with the line prepared in `scratch`.
    private func writeRow(_ base: UnsafePointer<UInt8>, _ r: RecordScan, stmt s: Statement, rid: Int64?,
                          idp: UnsafePointer<UInt8>, idn: Int, time: Int64,
                          typeDecoded: [UInt8]?, deviceDecoded: [UInt8]?, photoCount: Int, prevAt: Int64? = nil) throws -> Bool {
        try scratch.withUnsafeBufferPointer { sb in
            // Read only when scratch holds bytes.
            let lineP = scratch.isEmpty ? base + r.start : sb.baseAddress!
            let lineN = scratch.isEmpty ? r.end - r.start : sb.count
            return try withSpan(base, r.type, typeDecoded) { tp, tn in
                try withSpan(base, r.deviceID, deviceDecoded) { dp, dn in
                    if let rid { sqlite3_bind_int64(s.stmt, 1, rid) } else { try bindText(s, 1, idp, idn) }
                    try bindText(s, 2, tp, tn)
                    sqlite3_bind_int64(s.stmt, 3, time)
                    try bindText(s, 4, dp, dn)
                    sqlite3_bind_int64(s.stmt, 5, r.deleted == 1 ? 1 : 0)
                    try bindText(s, 6, lineP, lineN)
                    sqlite3_bind_int64(s.stmt, 7, seq + 1)
                    sqlite3_bind_int64(s.stmt, 8, Int64(photoCount))
                    if let prevAt { sqlite3_bind_int64(s.stmt, 9, prevAt) } else { sqlite3_bind_null(s.stmt, 9) }
                    // Verbatim from the session's peer: it holds these very bytes.
                    if let from = cameFrom, scratch.isEmpty {
                        let rc = from.withUnsafeBufferPointer { b in
                            b.withMemoryRebound(to: CChar.self) {
                                sqlite3_bind_text64(s.stmt, 10, $0.baseAddress, sqlite3_uint64($0.count), fs_sqlite_transient(), UInt8(SQLITE_UTF8))
                            }
                        }
                        if rc != SQLITE_OK { try db.check(rc, "binding a record's origin") }
                        sqlite3_bind_int64(s.stmt, 11, seq + 1)
                    } else {
                        sqlite3_bind_null(s.stmt, 10)
                        sqlite3_bind_null(s.stmt, 11)
                    }
                    let rc = sqlite3_step(s.stmt)
                    sqlite3_reset(s.stmt)
                    if rc != SQLITE_DONE { try db.check(rc, "writing a record") }
                    guard sqlite3_changes(db.handle) > 0 else { return false }
                    digest.add(.init(id: UnsafeRawBufferPointer(start: idp, count: idn), line: UnsafeRawBufferPointer(start: lineP, count: lineN),
                                     scratch: digestScratch))
                    return true
                }
            }
        }
    }

    /// Lends out a string field's bytes: decoded ones when given, else the span in place.
    @inline(__always)
    private func withSpan<T>(_ base: UnsafePointer<UInt8>, _ span: RecordScan.StringSpan, _ decoded: [UInt8]?,
                             _ body: (UnsafePointer<UInt8>, Int) throws -> T) throws -> T {
        if let decoded {
            // Never nil: bitPattern 1 is not zero (a stand-in base for an empty buffer, never read).
            return try decoded.withUnsafeBufferPointer { try body($0.baseAddress ?? UnsafePointer(bitPattern: 1)!, $0.count) }
        }
        return try body(base + max(span.start, 0), max(span.count, 0))
    }
}
