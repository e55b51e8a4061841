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
