import Synchronization

/// Faults a test can inject into a serving or connecting side. Never set in
/// normal use; the command-line switches that set them are hidden.
public struct SyncFaults: OptionSet, Sendable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }
    /// Drop photo requests without a reply, as old peers did for photos they
    /// could not provide: the requester's per-wave silence timeout must end the wait.
    public static let skipPhotoReplies = SyncFaults(rawValue: 1)
    /// Say protocol version 1 in HELLO and JOIN, as a device with an older
    /// family-sync does: the peer must refuse, naming both versions.
    public static let speakPreviousVersion = SyncFaults(rawValue: 2)
    /// Send the first RECORDS batch, then nothing of records but keepalives:
    /// the peer holds one batch of a session that a signal then ends.
    public static let holdRecordsAfterFirstBatch = SyncFaults(rawValue: 4)
}

/// How one session behaves.
public struct SyncOptions: Sendable {
    public var waveTimeout: TimeSpan
    public var faults: SyncFaults
    /// A session with nothing but keepalives for this long ends (SyncLimits.defaultQuietLimit).
    public var quietLimit: TimeSpan
    /// A session running this long ends (SyncLimits.defaultSessionLimit).
    public var sessionLimit: TimeSpan
    /// The most records in one RECORDS batch (SyncLimits.recordBatchCount); tests make it small, to cut sessions between many batches.
    var recordBatchCount = SyncLimits.recordBatchCount
    public init(waveTimeout: TimeSpan = SyncLimits.defaultWaveTimeout, faults: SyncFaults = [],
                quietLimit: TimeSpan = SyncLimits.defaultQuietLimit, sessionLimit: TimeSpan = SyncLimits.defaultSessionLimit) {
        self.waveTimeout = waveTimeout
        self.faults = faults
        self.quietLimit = quietLimit
        self.sessionLimit = sessionLimit
    }
}

/// The session's idea of the current time: the tool's `now` (the system
/// clock, or `--now`) advanced by the monotonic time elapsed since, so a
/// replayed `--now` still moves forward during a long session. The
/// monotonic clock is also what the session's timers read.
public struct SyncClock: Sendable {
    public let base: Timestamp
    public let start: Deadline
    public let monotonic: MonotonicClock
    public init(base: Timestamp, monotonic: MonotonicClock = .system) {
        self.base = base
        self.monotonic = monotonic
        self.start = monotonic.now()
    }
    public func now() -> Timestamp {
        base.adding(TimeSpan(milliseconds: monotonic.now().milliseconds(since: start)))
    }
}


/// A process-wide request to stop, set from a signal handler (it only
/// stores to a lock-free atomic, which is async-signal-safe). The server stops
/// accepting, and a running session ends without moving any cursor.
public enum SyncStop {
    private static let flag = Atomic<Bool>(false)
    public static func request() { flag.store(true, ordering: .relaxed) }
    public static var isRequested: Bool { flag.load(ordering: .relaxed) }
}
