/// What one session did: the JSON summary peer-sync prints on stdout.
public struct SyncSummary: Sendable {
    public enum Side: String, Sendable { case client, server }

    public var side: Side
    public var peer: String = ""
    /// The peer's name as this store knows it (DeviceName), if it has one.
    public var peerName: String?
    public var address: String?
    /// True for a session that began as a pairing join.
    public var joined = false
    public var recordsSent: Int64 = 0
    public var recordsReceived: Int64 = 0
    public var recordsApplied: Int64 = 0
    /// Our own versions sent pulled back to the family's clock (and kept so here).
    public var recordsClamped: Int64 = 0
    /// The peer's versions this side pulled back to the family's clock.
    public var recordsClampedIn: Int64 = 0
    /// Our records, or the peer's, went on from where a session with this peer that was cut off stopped (§7.4b).
    public var recordsResumed = false
    /// Records not taken, or dropped here, because the family purged them (purge records).
    public var recordsPurged: Int64 = 0
    /// The peer's versions not taken because nothing showed that the device they name made them (§7.4 "Authorship").
    public var recordsUnattributed: Int64 = 0
    /// Purge records the owner sent, or a member received.
    public var purgeRecordsSent: Int64 = 0
    public var purgeRecordsReceived: Int64 = 0
    public var photosSent: Int64 = 0
    public var photosReceived: Int64 = 0
    public var photosUnavailable: Int64 = 0
    /// Photos still wanted when the session ended (they are asked for again next time).
    public var photosWanted: Int64 = 0
    public var waves: Int64 = 0
    public var bytesSent: Int64 = 0
    public var bytesReceived: Int64 = 0
    public var durationMilliseconds: Int64 = 0
    /// The peer's clock minus ours, as its HELLO showed it.
    public var clockSkewMilliseconds: Int64 = 0
    public var lastSynced: Timestamp?
    public var localDigest: String?
    public var peerDigest: String?
    /// Whether this side sent a proof, and what became of the peer's.
    public var proofSent = false
    var proofReceived = EntitlementExchange.Received.none

    public init(side: Side) { self.side = side }

    public var clockSkewReported: Bool { abs(clockSkewMilliseconds) > SyncLimits.reportedClockSkew.milliseconds }

    public var json: JSONValue {
        let seconds = Double(durationMilliseconds) / 1000
        let rate = seconds > 0 ? Double(bytesSent + bytesReceived) / seconds : 0
        return .object([
            ("peer", .string(peer)), ("peerName", .optional(peerName)), ("address", .optional(address)), ("side", .string(side.rawValue)), ("joined", .bool(joined)),
            ("records", .object([("sent", .int(recordsSent)), ("received", .int(recordsReceived)), ("applied", .int(recordsApplied)),
                                 ("clamped", .int(recordsClamped)), ("clampedIn", .int(recordsClampedIn)), ("purged", .int(recordsPurged)),
                                 ("unattributed", .int(recordsUnattributed)), ("resumed", .bool(recordsResumed))])),
            ("purgeRecords", .object([("sent", .int(purgeRecordsSent)), ("received", .int(purgeRecordsReceived))])),
            ("photos", .object([("sent", .int(photosSent)), ("received", .int(photosReceived)), ("unavailable", .int(photosUnavailable)),
                                ("wanted", .int(photosWanted)), ("waves", .int(waves))])),
            ("bytes", .object([("sent", .int(bytesSent)), ("received", .int(bytesReceived)), ("perSecond", .int(Int64(rate)))])),
            ("durationMs", .int(durationMilliseconds)),
            ("clockSkew", .object([("ms", .int(clockSkewMilliseconds)), ("reported", .bool(clockSkewReported))])),
            ("lastSynced", lastSynced.map { .string($0.rfc3339) } ?? .null),
            ("proof", .object([("sent", .bool(proofSent)), ("received", proofReceived.json)])),
            ("digest", .object([("local", .optional(localDigest)), ("peer", .optional(peerDigest)),
                                ("equal", .bool(localDigest != nil && localDigest == peerDigest))])),
        ])
    }
}
