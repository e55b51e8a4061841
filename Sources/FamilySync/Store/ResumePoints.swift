/// Where a session that was cut off had got to, so the next one goes on from
/// there instead of sending everything again (docs/protocol.md §7.4b, schema 8).
///
/// Per peer and direction, one point: a chain of sessions that all started
/// sending from the sender's change number `after` (the cursor of the last
/// completed session), and had delivered its changes up to `upTo`. The
/// receiver keeps its point (`in`) in the transaction that applies the
/// batch the point covers, so the point never claims more than the store
/// holds, whatever cuts it short. The sender keeps its own (`out`) before it
/// says so: it goes on from a receiver's point only when both name the same
/// chain and start, and never past its own, so a sender's store restored
/// from a copy (whose change numbers then name other changes) resends.
/// A completed session moves the cursors and ends the chain.
struct ResumePoint: Equatable, Sendable {
    enum Direction: String { case incoming = "in", outgoing = "out" }
    /// The sender's random name for the chain (RandomName).
    var chain: String
    var after: Int64
    var upTo: Int64
}

extension Store {
    func resumePoint(_ peer: String, _ direction: ResumePoint.Direction) throws -> ResumePoint? {
        let s = try db.prepare("SELECT chain, after, up_to FROM resume_points WHERE peer = ? AND direction = ?")
        try s.bind([.text(peer), .text(direction.rawValue)])
        defer { s.reset() }
        return try s.step() ? ResumePoint(chain: s.text(0), after: s.int64(1), upTo: s.int64(2)) : nil
    }

    /// Keeps `point` for `peer`. Call inside a transaction (the receiver's: the one applying the batch it covers).
    func setResumePointInTransaction(_ point: ResumePoint, peer: String, _ direction: ResumePoint.Direction) throws {
        try db.run("""
            INSERT INTO resume_points (peer, direction, chain, after, up_to) VALUES (?, ?, ?, ?, ?)
            ON CONFLICT(peer, direction) DO UPDATE SET chain = excluded.chain, after = excluded.after, up_to = excluded.up_to
            """, [.text(peer), .text(direction.rawValue), .text(point.chain), .int(point.after), .int(point.upTo)])
    }

    /// Ends `peer`'s chains (a completed session moved the cursors past them), or every peer's with nil.
    func clearResumePointsInTransaction(peer: String?) throws {
        if let peer {
            try db.run("DELETE FROM resume_points WHERE peer = ?", [.text(peer)])
        } else {
            try db.run("DELETE FROM resume_points")
        }
    }
}
