/// A sync, join or serve that did not complete: what happened, with whom
/// (`peer`: an address, or a device), and what it left behind (`outcome`).
/// `causes` holds the failures behind a summary ("no known peer could sync")
/// or behind a failed first sync after a join.
public struct SyncError: Error, CustomStringConvertible, Sendable {
    public enum Kind: Sendable, Equatable {
        /// The peer broke the protocol (`detail`: how).
        case protocolViolation
        /// The peer ended with ERROR: its complaint about us (`detail`).
        case peerReportedError
        /// A stop was requested while the session ran.
        case interrupted
        /// The connection failed under the session (`detail`: the TLS error).
        case connectionLost
        /// Nobody listens at `peer`.
        case noPeer
        /// `peer` closed before answering the join.
        case closedBeforeAnswer
        /// `peer` refused the TLS key without a notice (`detail`: how it ended).
        case keyRejectedSilently
        case handshakeTimeout
        /// The TLS handshake failed (`detail`: OpenSSL's reason).
        case handshakeFailed
        /// `peer` stayed busy until the wait ran out (`detail`: the wait and the tries).
        case busy
        /// `peer` refused (`reason`, `detail`: its message).
        case refused
        /// `peer` refused because the owner revoked this device; it dropped to free.
        case refusedRevoked
        /// The owner's device does not know this member device (`detail`: its
        /// message): never admitted, or admitted after the copy the owner's
        /// store was restored from. Nothing changed here.
        case unknownToOwner
        /// `peer` does not accept this device's key.
        case keyNotAccepted
        /// `peer` is this device itself (the hint of its notice names this device).
        case reachedItself
        /// `peer`, where a member looked for the owner's device, holds no key
        /// for it and its hint could not be read (`detail`: what that may be).
        case perhapsUnknownToOwner
        /// This device was revoked from `family` at `detail` (the store says so).
        case revoked
        /// The family's signed roster says this device was revoked at `detail`.
        case revokedByRoster
        /// The family has no other device to sync with.
        case noOtherDevice
        /// `peer` (a device) is not a current member.
        case notAMember
        /// Every known peer was tried (`causes`); `detail` is "busy" when all were busy.
        case noPeerCouldSync
        /// The joined family (`family`)'s first sync failed (`causes`).
        case firstSyncFailed
        /// The WELCOME names family `detail`, not the offer's `family`.
        case wrongFamily
        /// A store of `family` redeemed an offer whose owner does not prove
        /// the roster key the store holds: a forged offer, or a new key.
        case ownerKeyDiffers
        /// `peer` (a host name) does not resolve (`detail`).
        case cannotResolve
        /// Nobody answered for the `.local` name `peer` (`detail`: where and how long it was asked).
        case localNameUnanswered
        /// Discovery found no `peer` (what was looked for) in `detail` seconds: the
        /// last known addresses failed (`causes`), and `notes` says what else was tried.
        case nobodyAnswered
        /// `peer` is a host that is not an address of this machine, to listen on.
        case notLocalAddress
        /// Listening on `peer` failed (`detail`).
        case cannotListen
        /// The listener stopped accepting connections (`detail`).
        case acceptFailed
        /// The `--via` command `peer` could not be started (`detail`: why).
        case transportCannotStart
        /// The `--via` command `peer` ended (`detail`: its exit in words) before the session did.
        case transportEnded
        /// What the `--via` command `peer` carried is not a family-sync peer (`detail`: OpenSSL's reason).
        case transportGarbage
        /// The store failed during a session (`detail`).
        case storeFailed
        /// A fault of this program (`detail`).
        case inconsistent
    }

    /// What the failure left of the session's work.
    public enum Outcome: Sendable, Equatable {
        case unsaid
        /// The session ended; the cursors did not move, so the next one resends.
        case cursorsNotMoved
        /// A join that stored nothing.
        case nothingStored
    }

    public var kind: Kind
    public var peer: String
    public var detail: String
    public var reason: String?
    public var family: String?
    public var outcome: Outcome
    public var causes: [any Error]
    public var notes: [String]
    /// A refusal that came as a notice before authentication: anyone on the
    /// network could have sent it, so its words are told as unverified.
    public var unverified = false

    public init(_ kind: Kind, peer: String = "", detail: String = "", reason: String? = nil, family: String? = nil,
                outcome: Outcome = .unsaid, causes: [any Error] = [], notes: [String] = []) {
        self.kind = kind
        self.peer = peer
        self.detail = detail
        self.reason = reason
        self.family = family
        self.outcome = outcome
        self.causes = causes
        self.notes = notes
    }

    /// The failure a client reports for a notice (§5.2) that it did not
    /// follow: `guess` is the device it meant, `answered` the device the
    /// notice's hint names when it could read it. A notice's words are
    /// anyone's, so the failure is unverified and says what the client itself
    /// knows: what `unknown-key` can mean, what `bad-identity` from an older
    /// peer means.
    static func notice(_ r: RefusalMessage, from name: String, family fam: FamilyInfo, guess: String, answered: String?) -> SyncError {
        var e: SyncError
        switch r.reason {
        case .unknownKey where fam.role == .member && guess == fam.ownerDevice && answered == guess:
            // Its hint says the owner's device answered, under this device's own family key.
            e = SyncError(.unknownToOwner, peer: name, detail: "the owner's device holds no key for this device: it never admitted this device, "
                          + "or admitted it after the copy its store was restored from (or this store's device key is not the one it issued)")
        case .unknownKey where fam.role == .member && guess == fam.ownerDevice:
            // No hint it can read: it may be the owner's device under a family key this one lacks, or another's.
            e = SyncError(.perhapsUnknownToOwner, peer: name, detail: "\(r.message): the owner's device that never admitted this device or admitted "
                          + "it after the copy its store was restored from; or another device of this family, one of the two holding a family key the "
                          + "other does not (sync with the owner's device first); or another family's device")
        case .unknownKey:
            e = SyncError(.refused, peer: name, detail: "\(r.message): it is not a device of this family, or one of the two holds a family key "
                          + "the other does not (a device revoked, or one that missed a revocation: sync with the owner's device first)", reason: r.reason.rawValue)
        case .badIdentity:
            e = SyncError(.refused, peer: name, detail: badIdentityWords(r), reason: r.reason.rawValue)
        default:
            e = SyncError(.refused, peer: name, detail: r.message, reason: r.reason.rawValue)
        }
        e.unverified = true
        return e
    }

    /// A `bad-identity` notice's words, and what it means to this device,
    /// whose identities a device of an older version cannot read.
    static func badIdentityWords(_ r: RefusalMessage) -> String {
        "\(r.message) (this device sends identities of family-sync protocol version \(SyncProtocol.version); a device of an older version "
            + "answers so: update family-sync there)"
    }

    /// The peer could not be reached or did not answer (so another may be tried).
    public var isUnreachable: Bool {
        switch kind {
        case .connectionLost, .noPeer, .closedBeforeAnswer, .keyRejectedSilently, .handshakeTimeout, .handshakeFailed,
             .cannotResolve, .localNameUnanswered, .nobodyAnswered, .cannotListen, .transportCannotStart, .transportEnded:
            return true
        case .noPeerCouldSync: return detail != "busy"
        default: return false
        }
    }

    /// What answered did not prove the family's key: a notice anyone could
    /// send, a handshake that failed, a key refused without a word. Names and
    /// addresses are hints; keys decide, so another device may still be tried.
    public var isUnauthenticatedAnswer: Bool {
        unverified || kind == .keyRejectedSilently || kind == .handshakeFailed
    }

    /// The peer is there but cannot take this device now (so retry later).
    public var isBusy: Bool {
        kind == .busy || kind == .interrupted || (kind == .noPeerCouldSync && detail == "busy")
    }

    /// The words for the failure itself, without what it left behind.
    public var what: String { words { "\($0)" } }

    /// The same, with each cause told by `tell` (the tools tell them with their hints).
    public func words(telling tell: (any Error) -> String) -> String {
        switch kind {
        case .protocolViolation: return "protocol error from \(peer): \(detail)"
        case .peerReportedError: return "\(peer) reported a protocol error: \(detail)"
        case .interrupted: return "interrupted; session with \(peer) ended"
        case .connectionLost: return "connection to \(peer) lost (\(detail))"
        case .noPeer: return "no peer at \(peer)"
        case .closedBeforeAnswer: return "\(peer) closed the connection before answering the join"
        case .keyRejectedSilently: return "\(peer) did not accept this device's key and \(detail)"
        case .handshakeTimeout: return "no answer from \(peer) during the TLS handshake"
        case .handshakeFailed: return "TLS handshake with \(peer) failed: \(detail) (is a family-sync peer listening there?)"
        case .busy: return "\(peer) is busy syncing with another device; gave up after \(detail)"
        case .refused where unverified: return "refused by \(peer), unverified (a notice before authentication, which anyone on the network could send): \(detail) (\(reason ?? ""))"
        case .refused: return "refused by \(peer): \(detail) (\(reason ?? ""))"
        case .refusedRevoked: return "refused by \(peer): \(detail) (revoked); this device drops to free"
        case .unknownToOwner: return "refused by \(peer), unverified (a notice before authentication): \(detail) (unknown-key)"
        case .reachedItself: return "\(peer) is this device itself: a device does not sync with itself"
        case .perhapsUnknownToOwner: return "refused by \(peer), unverified (a notice before authentication): \(detail) (unknown-key)"
        case .keyNotAccepted: return "refused by \(peer): it does not accept this device's key (a wrong family secret, or a key from before a revocation)"
        case .revoked: return "this device was revoked from family \(family ?? "") at \(detail); it syncs no more"
        case .revokedByRoster: return "the family's owner revoked this device at \(detail) (its signed roster says so)"
        case .noOtherDevice: return "this family has no other device yet: pair one first"
        case .notAMember: return "device \(peer) is not a current member of this family"
        case .noPeerCouldSync: return "no known peer could sync: " + causes.map(tell).joined(separator: "; ")
        case .firstSyncFailed: return "joined family \(family ?? ""), but the first sync failed: \(causes.first.map(tell) ?? "")"
        case .ownerKeyDiffers: return "\(peer) does not prove the roster key this store holds for family \(family ?? ""): the offer is not from the family's owner (anyone can write an offer naming the family); if the owner really made a new roster key, join with --accept-new-owner-key"
        case .wrongFamily: return "protocol error from \(peer): WELCOME names family \(detail), not the offer's \(family ?? "")"
        case .cannotResolve: return "cannot resolve \(peer): \(detail)"
        case .localNameUnanswered: return "nobody answered for \(peer) \(detail)"
        case .nobodyAnswered:
            // Each part is a sentence of its own ("tried the last known address …", "browsed for …").
            var parts = notes
            if !causes.isEmpty {
                parts.insert("tried the last known address\(causes.count > 1 ? "es" : "") (\(causes.map(tell).joined(separator: "; ")))", at: 0)
            }
            return "no \(peer) answered after \(detail) s: \(parts.joined(separator: "; and "))"
        case .notLocalAddress: return "\(peer) is not an address of this machine"
        case .cannotListen: return "cannot listen on \(peer): \(detail)"
        case .acceptFailed: return "stopped accepting connections: \(detail)"
        case .transportCannotStart: return "cannot run the --via command \(peer): \(detail)"
        case .transportEnded: return "the --via command \(peer) \(detail) before the session ended"
        case .transportGarbage: return "the --via command \(peer) does not lead to a family-sync peer: what it wrote is not a family-sync session (\(detail))"
        case .storeFailed: return "store: \(detail)"
        case .inconsistent: return detail
        }
    }

    public var description: String { withOutcome(what) }

    /// `words` (this failure told one way or another) followed by what it left behind.
    public func withOutcome(_ words: String) -> String {
        switch outcome {
        case .unsaid: return words
        case .cursorsNotMoved: return kind == .interrupted ? "\(words), cursors not moved" : "\(words); session ended, cursors not moved"
        case .nothingStored: return "\(words); nothing was stored"
        }
    }
}
