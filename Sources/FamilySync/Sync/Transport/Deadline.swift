import FoundationEssentials
import Glibc

/// A point on the monotonic clock by which something must have happened.
public struct Deadline: Sendable, Comparable {
    /// Nanoseconds on CLOCK_MONOTONIC.
    public var nanoseconds: UInt64

    public static func now() -> Deadline {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Deadline(nanoseconds: UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec))
    }
    public init(nanoseconds: UInt64) { self.nanoseconds = nanoseconds }
    public init(after span: TimeSpan) {
        self = Deadline.now().adding(span)
    }
    public func adding(_ span: TimeSpan) -> Deadline {
        // Saturating: a very long span is "never", not a wrapped moment in the past.
        let (ns, overMul) = UInt64(max(0, span.milliseconds)).multipliedReportingOverflow(by: 1_000_000)
        let (sum, overAdd) = nanoseconds.addingReportingOverflow(ns)
        return Deadline(nanoseconds: overMul || overAdd ? .max : sum)
    }
    public static func < (a: Deadline, b: Deadline) -> Bool { a.nanoseconds < b.nanoseconds }
    /// On the system clock; timers that tests drive ask their `MonotonicClock` instead.
    public var hasPassed: Bool { MonotonicClock.system.hasPassed(self) }
    /// Milliseconds left on the system clock, rounded up, for poll(2); 0 once passed.
    public var remainingMilliseconds: Int32 { MonotonicClock.system.remainingMilliseconds(until: self) }
    /// Milliseconds since `earlier`.
    public func milliseconds(since earlier: Deadline) -> Int64 {
        nanoseconds >= earlier.nanoseconds ? Int64((nanoseconds - earlier.nanoseconds) / 1_000_000) : -Int64((earlier.nanoseconds - nanoseconds) / 1_000_000)
    }
}
