/// The entitlement part of a contact: which proof this device sends, and
/// what it does with the one it receives and with a revocation of itself.
///
/// Proofs travel as compact JWS text. This device sends the newest proof it
/// holds; a received one is kept with its source so that `jws-verify` can
/// judge it on the next launch. Verification is not done here: a proof that
/// fails it never makes a device premium, whoever sent it.
enum EntitlementExchange {
    /// The longest proof accepted from a peer (a StoreKit JWS with its
    /// three-certificate chain is a few kilobytes).
    static let maxProofBytes = 64 << 10

    /// The proof to send: the newest this store holds, or nil.
    static func outgoingProof(_ store: Store) throws -> String? {
        try store.db.scalarText("SELECT jws FROM proofs ORDER BY coalesce(signed_at, saved_at) DESC, id DESC LIMIT 1")
    }

    /// Keeps a proof a peer sent, if it is shaped like a compact JWS (three
    /// base64url parts). Returns whether it was new to this store.
    @discardableResult
    static func receive(_ jws: String, from peer: String, store: Store, now: Timestamp) throws -> Bool {
        guard isCompactJWS(jws) else { return false }
        try store.db.run("INSERT OR IGNORE INTO proofs (jws, source, saved_at) VALUES (?, ?, ?)",
                         [.text(jws), .text("peer:" + peer), .int(now.milliseconds)])
        return store.db.changes > 0
    }

    /// The owner told this device, on an authenticated session, that it was
    /// revoked: it keeps its records but no longer the family's proofs, so
    /// jws-verify finds it free.
    static func dropToFree(_ store: Store, now: Timestamp) throws {
        try store.write {
            try store.markSelfRevoked(at: now)
            try store.db.run("DELETE FROM proofs")
        }
    }

    static func isCompactJWS(_ s: String) -> Bool {
        guard s.utf8.count <= maxProofBytes else { return false }
        let parts = s.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 3 && parts.allSatisfy { p in
            !p.isEmpty && p.utf8.allSatisfy { c in (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || c == 0x2D || c == 0x5F }
        }
    }
}

/// What `peer-sync status` says about entitlement.
public enum SyncStatus {
    /// The proofs this store holds. Whether they are valid is jws-verify's
    /// verdict; this reports what is held and where it came from.
    public static func proofState(_ store: Store, now: Timestamp) throws -> JSONValue {
        let held = try store.db.scalarInt("SELECT count(*) FROM proofs") ?? 0
        let s = try store.db.prepare("SELECT source, saved_at, expires_at FROM proofs ORDER BY coalesce(signed_at, saved_at) DESC, id DESC LIMIT 1")
        defer { s.reset() }
        var newest: JSONValue = .null
        if try s.step() {
            newest = .object([("source", .string(s.text(0))), ("savedAt", .string(Timestamp(milliseconds: s.int64(1)).rfc3339)),
                              ("expiresAt", s.optionalInt64(2).map { .string(Timestamp(milliseconds: $0).rfc3339) } ?? .null)])
        }
        return .object([("held", .int(held)), ("newest", newest), ("revokedDevice", .bool(try store.isSelfRevoked))])
    }
}
