/// How long this store has held its changes, by its own clock alone
/// (docs/design.md §4): the 90-day horizon of a tombstone counts from when
/// this store got it, not from the `modifiedAt` its author's clock gave it, so
/// no peer's clock can make a delete look old. The `seq_clock` table keeps
/// marks "every change numbered at most `seq` was here at `at`", at most one
/// an hour; a change between two marks counts from the later one, which can
/// only keep a tombstone longer. Marks never go back in time: a clock set back
/// makes the next marks repeat the last time instead.
extension Store {
    /// At most one mark per this span: a busy store adds about 24 rows a day.
    public static let heldSinceMarkInterval = TimeSpan.hours(1)

    /// Marks what this store holds now. Call inside `write`, after the
    /// transaction's changes took their numbers.
    func markHeldSince(now: Timestamp) throws {
        let seq = try currentChangeSeq
        let last = try db.prepare("SELECT seq, at FROM seq_clock ORDER BY seq DESC LIMIT 1")
        defer { last.reset() }
        var at = now.milliseconds
        if try last.step() {
            let (lastSeq, lastAt) = (last.int64(0), last.int64(1))
            if lastSeq >= seq { return }
            if now < Timestamp(milliseconds: lastAt).adding(Store.heldSinceMarkInterval) { return }
            at = max(at, lastAt)
        }
        last.reset()
        try db.run("INSERT INTO seq_clock (seq, at) VALUES (?, ?) ON CONFLICT(seq) DO NOTHING", [.int(seq), .int(at)])
    }

    /// The highest change number this store held at or before `t` (0: none).
    func heldSinceSeq(atOrBefore t: Timestamp) throws -> Int64 {
        try db.scalarInt("SELECT max(seq) FROM seq_clock WHERE at <= ?", [.int(t.milliseconds)]) ?? 0
    }
}
