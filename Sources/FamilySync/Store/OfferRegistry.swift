/// The owner's registry of one-time pairing nonces: an offer is open until it
/// expires, is closed, or is redeemed once.
public enum OfferRedemption: Equatable, Sendable {
    case accepted
    case unknown
    case alreadyUsed
    case expired
    case closed

    /// Why a redemption was refused, for the joining device.
    public var reason: String {
        switch self {
        case .accepted: return "accepted"
        case .unknown: return "unknown offer"
        case .alreadyUsed: return "offer already used"
        case .expired: return "offer expired"
        case .closed: return "offer closed"
        }
    }
}

extension Store {
    /// Registers a fresh offer for this store's family (creating the family,
    /// with this device as owner, on first use). A member's store makes no offers.
    public func makeOffer(ttl: TimeSpan, address: String?, now: Timestamp) throws -> PairingOffer {
        try write {
            let fam = try family() ?? createFamily(now: now)
            guard fam.role == .owner else {
                throw PairingError(.notOwner, family: fam.id)
            }
            let offer = try PairingOffer.make(family: fam.id, ttl: ttl, address: address, now: now)
            try db.run("INSERT INTO offers (nonce, created_at, expires_at, addr) VALUES (?, ?, ?, ?)",
                       [.text(offer.nonce), .int(now.milliseconds), .int(offer.expiresAt.milliseconds), offer.address.map { .text($0) } ?? .null])
            return offer
        }
    }

    /// Offers still open at `now`, oldest first.
    public func openOffers(now: Timestamp) throws -> [PairingOffer] {
        guard let fam = try family() else { return [] }
        let s = try db.prepare("""
            SELECT nonce, expires_at, addr FROM offers
            WHERE used_at IS NULL AND closed_at IS NULL AND expires_at > ? ORDER BY created_at, nonce
            """)
        try s.bind([.int(now.milliseconds)])
        defer { s.reset() }
        var out: [PairingOffer] = []
        while try s.step() {
            out.append(PairingOffer(family: fam.id, nonce: s.text(0), expiresAt: Timestamp(milliseconds: s.int64(1)), address: s.optionalText(2)))
        }
        return out
    }

    /// Closes one open offer, or all when `nonce` is nil. Returns how many closed.
    @discardableResult
    public func closeOffers(nonce: String?, now: Timestamp) throws -> Int {
        try write {
            if let nonce {
                try db.run("UPDATE offers SET closed_at = ? WHERE nonce = ? AND used_at IS NULL AND closed_at IS NULL", [.int(now.milliseconds), .text(nonce)])
            } else {
                try db.run("UPDATE offers SET closed_at = ? WHERE used_at IS NULL AND closed_at IS NULL", [.int(now.milliseconds)])
            }
            return db.changes
        }
    }

    /// Whether an offer is past its time, judged by the owner's clock where it
    /// is redeemed. An offer lasts its lifetime from when it was made; a clock
    /// now earlier than that, by more than the clamp window, was set back since
    /// (a clock that ran fast when the offer was made, then corrected): how
    /// long the offer has been open cannot be told, so it counts as expired
    /// rather than staying open for as long as the clock was wrong.
    static func offerHasExpired(created: Int64, expires: Int64, now: Timestamp) -> Bool {
        expires <= now.milliseconds || now < Timestamp(milliseconds: created).subtracting(LWW.maxClockSkew)
    }

    /// Consumes a nonce for `deviceID`, once. Call inside the write transaction
    /// that also admits the device, so a nonce can never admit two.
    public func redeemOfferInTransaction(nonce: String, by deviceID: String, now: Timestamp) throws -> OfferRedemption {
        let state = try offerState(nonce: nonce, now: now)
        guard state == .accepted else { return state }
        try db.run("UPDATE offers SET used_at = ?, used_by = ? WHERE nonce = ? AND used_at IS NULL", [.int(now.milliseconds), .text(deviceID), .text(nonce)])
        return db.changes == 1 ? .accepted : .alreadyUsed
    }

    /// The state at `now` of an offer this store made (a joining device's
    /// identity opened under its nonce); `.unknown` for one it never made.
    func offerState(nonce: String, now: Timestamp) throws -> OfferRedemption {
        let s = try db.prepare("SELECT expires_at, used_at, closed_at, created_at FROM offers WHERE nonce = ?")
        try s.bind([.text(nonce)])
        defer { s.reset() }
        guard try s.step() else { return .unknown }
        if !s.isNull(1) { return .alreadyUsed }
        if !s.isNull(2) { return .closed }
        return Store.offerHasExpired(created: s.int64(3), expires: s.int64(0), now: now) ? .expired : .accepted
    }
}
