/// The copies a store made of other devices' versions (schema 11, `copies_made`;
/// docs/design.md §3.1): each version it pulled back to its bound where it
/// arrived, or kept its earlier-dated copy of, by the time the version came with,
/// with the copy's line. The version itself may live on elsewhere as it came, so
/// the store remembers it for as long as it could still beat the row:
/// - the owner judges the very version coming again, from whichever device, as
///   its copy (RecordApplier), which is then owed to the sender (BundleLedger.swift);
/// - a member stamps its own edits of the record after that time, so an edit it
///   makes after seeing the version beats the version wherever it went.
extension Store {
    /// Remembers the copies the `owed` rows hold now (those a row holds; a copy made
    /// before, named with its line, is remembered already). Inside the applying transaction.
    func rememberCopiesInTransaction(_ owed: [ApplySummary.OwedCopy]) throws {
        guard owed.contains(where: { $0.line == nil }) else { return }
        let s = try db.prepare("INSERT OR IGNORE INTO copies_made (rid, theirs, line) SELECT rid, ?, line FROM records WHERE rid = ?")
        for o in owed where o.line == nil {
            try s.bind([.int(o.theirs), .int(o.rid)])
            _ = try s.step()
            s.reset()
        }
    }

    /// Forgets the copies no version can need any more: of rows gone, or held now at a time
    /// later than the version came with (which then loses to the row, pulled back or not).
    func forgetOutgrownCopiesInTransaction() throws {
        try db.run("DELETE FROM copies_made WHERE NOT EXISTS (SELECT 1 FROM records r WHERE r.rid = copies_made.rid AND r.modified_at <= copies_made.theirs)")
    }
}
