/// What bundles (docs/protocol.md §12b) have moved, per peer, kept apart
/// from the session cursors so neither kind of exchange can mislead the
/// other (schema 7). A peer's changes count as held only up to where the
/// applied parts meet without a gap; a part applied early waits in
/// `bundle_ranges` until the gap before it is filled.
extension Store {
    struct BundlePeerState {
        /// How far of the peer's changes bundles brought here without a gap.
        var recv: Int64 = 0
        /// How far of ours the peer acknowledged in its bundles.
        var sent: Int64 = 0
        /// The number of the last bundle written to the peer.
        var written: Int64 = 0
        /// The highest bundle number applied from the peer, and the peer's clock when it wrote that one.
        var applied: Int64 = 0
        var appliedClock: Int64 = 0
        /// Nonzero: bundles to the peer carry everything, nothing held back,
        /// until it acknowledges this change number (Int64.max: none written yet).
        var resendUntil: Int64 = 0
        /// Photos the peer said it wants (hashes).
        var wants: [String] = []
        /// The newest write applied from the peer (schema 11): `recv` counts only its ranges above its base.
        var newest: BundleWrite?
    }

    /// One write of a bundle as its reader knows it (docs/protocol.md §12b): the writer's
    /// token for it, its number and clock, and the change number its range starts after.
    struct BundleWrite: Equatable {
        var token: String
        var number: Int64
        var clock: Int64
        var base: Int64
    }

    func bundlePeer(_ peer: String) throws -> BundlePeerState {
        let s = try db.prepare("""
            SELECT p.recv, p.sent, p.written, p.applied, p.resend, p.wants, p.applied_clock, n.token, n.write, n.clock, n.base
            FROM bundle_peers p LEFT JOIN bundle_newest n ON n.peer = p.peer WHERE p.peer = ?
            """)
        try s.bind([.text(peer)])
        defer { s.reset() }
        guard try s.step() else { return BundlePeerState() }
        let wants = s.text(5)
        return BundlePeerState(recv: s.int64(0), sent: s.int64(1), written: s.int64(2), applied: s.int64(3), appliedClock: s.int64(6), resendUntil: s.int64(4),
                               wants: wants.isEmpty ? [] : wants.split(separator: " ").map(String.init),
                               newest: s.isNull(7) ? nil : BundleWrite(token: s.text(7), number: s.int64(8), clock: s.int64(9), base: s.int64(10)))
    }

    func setBundlePeerInTransaction(_ peer: String, _ p: BundlePeerState) throws {
        try db.run("""
            INSERT INTO bundle_peers (peer, recv, sent, written, applied, applied_clock, resend, wants) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT(peer) DO UPDATE SET recv = excluded.recv, sent = excluded.sent, written = excluded.written,
                applied = excluded.applied, applied_clock = excluded.applied_clock, resend = excluded.resend, wants = excluded.wants
            """, [.text(peer), .int(p.recv), .int(p.sent), .int(p.written), .int(p.applied), .int(p.appliedClock), .int(p.resendUntil),
                  .text(p.wants.joined(separator: " "))])
        if let n = p.newest {
            try db.run("INSERT OR REPLACE INTO bundle_newest (peer, token, write, clock, base) VALUES (?, ?, ?, ?, ?)",
                       [.text(peer), .text(n.token), .int(n.number), .int(n.clock), .int(n.base)])
        } else {
            try db.run("DELETE FROM bundle_newest WHERE peer = ?", [.text(peer)])
        }
    }

    /// How many of its writes to one peer a store remembers: a reader's echo of an older one
    /// (it lost every bundle since, or went back to a copy) makes the next bundle carry everything.
    static let rememberedBundleWrites = 64

    /// Keeps the token of write `number` to `peer`, forgetting the oldest beyond `rememberedBundleWrites`.
    func rememberBundleWriteInTransaction(peer: String, token: String, number: Int64) throws {
        try db.run("INSERT OR REPLACE INTO bundle_writes (peer, token, write) VALUES (?, ?, ?)", [.text(peer), .text(token), .int(number)])
        try db.run("""
            DELETE FROM bundle_writes WHERE peer = ?1 AND write < (
                SELECT min(write) FROM (SELECT write FROM bundle_writes WHERE peer = ?1 ORDER BY write DESC LIMIT ?2))
            """, [.text(peer), .int(Int64(Store.rememberedBundleWrites))])
    }

    /// The number of the write to `peer` that `token` names, if this store made it (in the history it now holds).
    func bundleWriteNumber(peer: String, token: String) throws -> Int64? {
        try db.scalarInt("SELECT write FROM bundle_writes WHERE peer = ? AND token = ?", [.text(peer), .text(token)])
    }

    /// Forgets the writes to `peer` older than `number`: its reader acknowledged that one, and never goes back to an
    /// older one unless its store does (and then, any unknown echo makes the next bundle carry everything anyway).
    func forgetBundleWritesInTransaction(peer: String, before number: Int64) throws {
        try db.run("DELETE FROM bundle_writes WHERE peer = ? AND write < ?", [.text(peer), .int(number)])
    }

    /// Whether the part `id` was applied here already.
    func bundlePartApplied(_ id: String) throws -> Bool {
        try db.scalarInt("SELECT 1 FROM bundle_parts WHERE id = ?", [.text(id)]) != nil
    }

    /// Records the part `id` as applied, covering the peer's changes in
    /// (after, upTo], moves `state.recv` as far as the applied parts now meet
    /// without a gap, and keeps `state`. `write`: the part's write, when its
    /// writer names its writes. A part of a newer write than `state.newest`
    /// makes it the newest, and only its ranges count from then on, above its
    /// base: its writer reckons from that base in the history it holds now,
    /// while what other writes brought above it may be changes of a history
    /// the writer no longer has (its store was put back from a copy), whose
    /// numbers its new changes reuse. A part of an older write counts nothing.
    func recordBundlePartInTransaction(_ id: String, peer: String, after: Int64, upTo: Int64, write: BundleWrite?,
                                       state: inout BundlePeerState, now: Timestamp) throws {
        try db.run("INSERT INTO bundle_parts (id, peer, applied_at) VALUES (?, ?, ?)", [.text(id), .text(peer), .int(now.milliseconds)])
        if let write, write.token != state.newest?.token {
            guard write.number > state.newest?.number ?? 0 || write.clock > state.newest?.clock ?? 0 else {
                try setBundlePeerInTransaction(peer, state)
                return
            }
            try forgetBundleRangesInTransaction(of: peer)
            state.recv = min(state.recv, write.base)
            state.newest = write
        }
        try db.run("INSERT OR IGNORE INTO bundle_ranges (peer, after, up_to) VALUES (?, ?, ?)", [.text(peer), .int(after), .int(upTo)])
        // Ranges that now meet the cursor move it; the rest wait.
        let next = try db.prepare("SELECT max(up_to) FROM bundle_ranges WHERE peer = ? AND after <= ?")
        while true {
            try next.bind([.text(peer), .int(state.recv)])
            let end = try next.step() && !next.isNull(0) ? next.int64(0) : nil
            next.reset()
            guard let end else { break }
            try db.run("DELETE FROM bundle_ranges WHERE peer = ? AND after <= ?", [.text(peer), .int(state.recv)])
            state.recv = max(state.recv, end)
        }
        try setBundlePeerInTransaction(peer, state)
    }

    /// Keeps the copies in `owed` as owed to `peer`, each with the time its version came at:
    /// versions this store pulled back, or kept its earlier copy of, whose copy the row holds
    /// now; and copies it made before of a version `peer` sent again, which the row may no
    /// longer hold (CopiesMade.swift).
    func queueReturnsInTransaction(peer: String, owed: [ApplySummary.OwedCopy]) throws {
        guard !owed.isEmpty else { return }
        let fromRow = try db.prepare("INSERT OR REPLACE INTO bundle_returns (peer, rid, line, seq, theirs) SELECT ?, rid, line, seq, ? FROM records WHERE rid = ?")
        // A copy of the same version owed already stays as it is, acknowledged by the change it was owed from.
        let made = try db.prepare("""
            INSERT INTO bundle_returns (peer, rid, line, seq, theirs) SELECT ?, rid, ?, seq, ? FROM records WHERE rid = ?
            ON CONFLICT (peer, rid) DO UPDATE SET line = excluded.line, seq = excluded.seq, theirs = excluded.theirs
                WHERE bundle_returns.theirs IS NOT excluded.theirs
            """)
        for o in owed {
            if let line = o.line {
                try made.bind(.text(peer), at: 1)
                try line.withUnsafeBytes { try made.bindText($0, at: 2) }
                try made.bind(.int(o.theirs), at: 3)
                try made.bind(.int(o.rid), at: 4)
                _ = try made.step()
                made.reset()
            } else {
                try fromRow.bind([.text(peer), .int(o.theirs), .int(o.rid)])
                _ = try fromRow.step()
                fromRow.reset()
            }
        }
    }

    /// The copies owed to `peer` that another edit replaced here before they went
    /// back, as NDJSON lines in row order, each with the row that replaced it. The
    /// others go with their rows: a row that still holds the copy, or the same edit
    /// of the peer's dated otherwise (taken in a session since), which the peer takes
    /// as the owner's copy of its own.
    func supersededReturns(peer: String) throws -> [(rid: Int64, line: [UInt8])] {
        let s = try db.prepare("""
            SELECT b.line, r.line, r.device_id = b.peer, b.rid FROM bundle_returns b JOIN records r ON r.rid = b.rid
            WHERE b.peer = ? AND r.line IS NOT b.line ORDER BY b.rid
            """)
        try s.bind([.text(peer)])
        defer { s.reset() }
        var out: [(rid: Int64, line: [UInt8])] = []
        while try s.step() {
            let copy = Array(s.text(0).utf8)
            if s.int64(2) == 1, Array(s.text(1).utf8).withUnsafeBytes({ RecordContent.same(held: copy, incoming: $0) }) { continue }
            out.append((s.int64(3), copy))
        }
        return out
    }

    /// `supersededReturns` as RECORDS payloads within a batch's limits: they lead
    /// what the owner sends the peer, in a session (§7.4) as in every bundle part
    /// (§12b), so the peer takes each copy before the edit that replaced it.
    func supersededReturnBatches(peer: String) throws -> (batches: [(payload: [UInt8], count: Int64)], rows: [Int64]) {
        let owed = try supersededReturns(peer: peer)
        var batches: [(payload: [UInt8], count: Int64)] = []
        for (_, line) in owed {
            if let last = batches.last, last.count < SyncLimits.recordBatchCount,
               last.payload.count + line.count + 1 <= SyncLimits.recordBatchBytes {
                batches[batches.count - 1].payload += line + [0x0A]
                batches[batches.count - 1].count += 1
            } else {
                batches.append((line + [0x0A], 1))
            }
        }
        return (batches, owed.map(\.rid))
    }

    /// Forgets the copies owed to `peer` that its acknowledgement of our changes up to `ack` shows it holds.
    func dropReturnsInTransaction(peer: String, upTo ack: Int64) throws {
        try db.run("DELETE FROM bundle_returns WHERE peer = ? AND seq <= ?", [.text(peer), .int(ack)])
    }

    /// Forgets the parts of `peer`'s applied past the cursor (its store went back in time: its numbers mean other changes now).
    func forgetBundleRangesInTransaction(of peer: String) throws {
        try db.run("DELETE FROM bundle_ranges WHERE peer = ?", [.text(peer)])
    }

    /// Forgets every bundle cursor (with the session cursors, when a revoked
    /// member is admitted again): the next bundle each way carries everything.
    func resetBundleCursorsInTransaction() throws {
        try db.run("DELETE FROM bundle_ranges")
        try db.run("DELETE FROM bundle_writes")
        try db.run("DELETE FROM bundle_newest")
        try db.run("UPDATE bundle_peers SET recv = 0, sent = 0, resend = 9223372036854775807")
    }

    /// Gives `rids` new change numbers, so the next export to a peer carries
    /// them again (copies this store keeps in place of the peer's, which the
    /// peer lacks). Inside a write transaction; returns how many it used.
    func resendRowsInTransaction(_ rids: [Int64]) throws -> Int64 {
        guard !rids.isEmpty else { return 0 }
        let first = try currentChangeSeq
        var seq = first
        let u = try db.prepare("UPDATE records SET seq = ?, came_from = NULL, came_seq = NULL WHERE rid = ?")
        for rid in Set(rids).sorted() {
            try u.bind([.int(seq + 1), .int(rid)])
            _ = try u.step()
            u.reset()
            if db.changes == 1 { seq += 1 }
        }
        try setMeta("change_seq", String(seq))
        return seq - first
    }

    /// The photos live records changed in (after, upTo] name that this store
    /// holds, in hash order, leaving out those of rows `peer` sent unchanged since (it holds them).
    func heldPhotos(namedByChangesAfter after: Int64, upTo: Int64, notFrom peer: String) throws -> [String] {
        let s = try db.prepare("""
            SELECT DISTINCT rp.sha256 FROM records r JOIN record_photos rp ON rp.record = r.rid
            WHERE r.seq > ? AND r.seq <= ? AND NOT (r.came_seq IS r.seq AND r.came_from IS ?)
              AND EXISTS (SELECT 1 FROM photos p WHERE p.sha256 = rp.sha256)
            ORDER BY rp.sha256
            """)
        try s.bind([.int(after), .int(upTo), .text(peer)])
        defer { s.reset() }
        var out: [String] = []
        while try s.step() { out.append(s.text(0)) }
        return out
    }

    /// Whether a live record here names the photo `sha256`.
    func photoIsNamed(_ sha256: String) throws -> Bool {
        try db.scalarInt("SELECT 1 FROM record_photos WHERE sha256 = ? LIMIT 1", [.text(sha256)]) != nil
    }
}
