/// The last-writer-wins rule (docs/design.md §3): which of two versions of one record
/// id a device keeps. Every device must decide alike, so the rule is total and
/// compares device IDs by bytes, never by locale.
public enum LWW {
    /// A remote `modifiedAt` later than now + this is pulled back to it, so one
    /// device with a wrong clock cannot beat every legitimate edit for months.
    public static let maxClockSkew = TimeSpan.minutes(5)

    /// Which rule decided, for `--explain` and summaries.
    public enum Rule: String, Sendable {
        /// No local version: the remote one is new here.
        case new = "new"
        case laterWins = "later-wins"
        case liveBeatsTombstone = "live-beats-tombstone"
        case greaterDevice = "greater-device"
        case sameVersion = "same-version"
        /// A member takes the owner's copy of one of its own versions, which
        /// the owner pulled back by its clock (docs/protocol.md §7.4).
        case ownerCopy = "owner-copy"
    }

    public struct Decision: Equatable, Sendable {
        public var takeRemote: Bool
        public var rule: Rule
        @inlinable public init(takeRemote: Bool, rule: Rule) {
            self.takeRemote = takeRemote
            self.rule = rule
        }
    }

    /// The parts of a version the rule looks at.
    public struct Version: Sendable {
        public var modifiedAt: Timestamp
        public var deviceID: Substring.UTF8View
        public var deleted: Bool
        public init(modifiedAt: Timestamp, deviceID: String, deleted: Bool) {
            self.modifiedAt = modifiedAt
            self.deviceID = Substring(deviceID).utf8
            self.deleted = deleted
        }
    }

    /// Step 1: the clamp. Applies to remote versions only.
    @inlinable
    public static func clamp(_ t: Timestamp, now: Timestamp) -> Timestamp {
        let limit = now.adding(maxClockSkew)
        return t > limit ? limit : t
    }

    /// The latest `modifiedAt` (ms) a version may have where the clock reads `clock`.
    @inlinable
    public static func bound(clock: Timestamp) -> Int64 { clamp(Timestamp.latest, now: clock).milliseconds }

    /// The clamp with causality kept: a time later than `bound` is pulled
    /// back to it, but never to or below `floor` (the version an edit
    /// replaced, or the version the receiver holds), so an edit made after
    /// seeing a version still beats it whatever the clocks said. Never raises
    /// a time.
    @inlinable
    public static func pullBack(_ t: Int64, bound: Int64, floor: Int64?) -> Int64 {
        guard t > bound else { return t }
        guard let floor, floor < Int64.max else { return bound }
        return min(t, max(bound, floor + 1))
    }

    /// Steps 2–4. `remote` must already be clamped. Ties that are the same
    /// version keep the held one (step 4), and the winner is kept verbatim (5).
    public static func decide(local: Version, remote: Version) -> Decision {
        return decide(localTime: local.modifiedAt, localDeleted: local.deleted, localDevice: local.deviceID,
                      remoteTime: remote.modifiedAt, remoteDeleted: remote.deleted, remoteDevice: remote.deviceID)
    }

    @inlinable
    public static func decide<L: Collection<UInt8>, R: Collection<UInt8>>(
        localTime: Timestamp, localDeleted: Bool, localDevice: L,
        remoteTime: Timestamp, remoteDeleted: Bool, remoteDevice: R
    ) -> Decision {
        if remoteTime != localTime {
            return Decision(takeRemote: remoteTime > localTime, rule: .laterWins)
        }
        if remoteDeleted != localDeleted {
            // Edit-after-delete beats the delete: resurrecting is recoverable, losing an edit is not.
            return Decision(takeRemote: !remoteDeleted, rule: .liveBeatsTombstone)
        }
        if remoteDevice.elementsEqual(localDevice) {
            return Decision(takeRemote: false, rule: .sameVersion)
        }
        return Decision(takeRemote: localDevice.lexicographicallyPrecedes(remoteDevice), rule: .greaterDevice)
    }
}
