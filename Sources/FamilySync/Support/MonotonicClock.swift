/// Where the sync machinery's timers read the time: the system's monotonic
/// clock in the tools, a clock a test moves by hand (`ManualClock`), so wave
/// timeouts, keepalives and idle checks are tested without sleeping.
/// Waits on a socket are still bounded by the system clock: that is what
/// poll(2) counts.
public struct MonotonicClock: Sendable {
    private let read: @Sendable () -> Deadline
    public init(_ read: @escaping @Sendable () -> Deadline) { self.read = read }

    public static let system = MonotonicClock { Deadline.now() }

    public func now() -> Deadline { read() }
    public func deadline(after span: TimeSpan) -> Deadline { now().adding(span) }
    public func hasPassed(_ d: Deadline) -> Bool { now() >= d }
    /// Milliseconds from now until `d`, rounded up, for poll(2); 0 once passed.
    public func remainingMilliseconds(until d: Deadline) -> Int32 {
        let n = now().nanoseconds
        guard d.nanoseconds > n else { return 0 }
        return Int32(min(UInt64(Int32.max), (d.nanoseconds - n + 999_999) / 1_000_000))
    }
}

/// A monotonic clock that moves only when told to; for tests.
public final class ManualClock: Sendable {
    private let nanoseconds: Locked<UInt64>
    public init(start: Deadline = Deadline(nanoseconds: 1_000_000_000)) { nanoseconds = Locked(start.nanoseconds) }
    public func advance(by span: TimeSpan) { nanoseconds.withLock { $0 &+= UInt64(max(0, span.milliseconds)) &* 1_000_000 } }
    public var now: Deadline { Deadline(nanoseconds: nanoseconds.withLock { $0 }) }
    public var clock: MonotonicClock { MonotonicClock { [self] in self.now } }
}
