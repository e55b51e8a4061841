/// How long this store has held its changes, by its own clock alone
/// (docs/design.md §4): the 90-day horizon of a tombstone counts from when
/// this store got it, not from the `modifiedAt` its author's clock gave it, so
/// no peer's clock can make a delete look old. The `seq_clock` table keeps,
/// per hour of this store's clock, the highest change number written in it:
/// "every change numbered at most `seq` was here by `at`", `at` being the end
/// of that hour, so a change counts from at most an hour after it arrived
/// (never before). Hours never go back: a clock set back makes the next
/// writes count in the latest hour already marked.
extension Store {
    /// The span one mark covers: a busy store adds at most 24 rows a day.
    public static let heldSinceMarkInterval = TimeSpan.hours(1)

    /// Marks what this store holds now. Call inside `write`, after the
    /// transaction's changes took their numbers.
    func markHeldSince(now: Timestamp) throws {
        let span = Store.heldSinceMarkInterval.milliseconds
        let t = now.milliseconds
        // The end of the hour `now` falls in (floored division, so times before 1970 work too).
        var end = (t >= 0 ? t / span : (t - span + 1) / span) * span + span
        if let latest = try db.scalarInt("SELECT max(at) FROM seq_clock"), latest > end { end = latest }
        try db.run("INSERT INTO seq_clock (at, seq) VALUES (?, ?) ON CONFLICT(at) DO UPDATE SET seq = max(seq, excluded.seq)",
                   [.int(end), .int(try currentChangeSeq)])
    }

    /// The highest change number this store held at or before `t` (0: none).
    func heldSinceSeq(atOrBefore t: Timestamp) throws -> Int64 {
        try db.scalarInt("SELECT max(seq) FROM seq_clock WHERE at <= ?", [.int(t.milliseconds)]) ?? 0
    }
}
