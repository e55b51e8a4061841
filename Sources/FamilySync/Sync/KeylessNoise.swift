import Dispatch
import FoundationEssentials
import Synchronization

/// What `serve` reports about connections that never proved a key: one
/// `keyless` event per `SyncLimits.keylessSummaryInterval` at most (counts
/// per reason, distinct source addresses, the first and last time), instead
/// of one event per connection. A stranger can open hundreds of those a
/// second; a line each would fill the journal and the --events file.
/// Everything else (sessions, authenticated refusals, BUSY to a device whose
/// identity named a key this device holds) passes through as it comes, in order.
///
/// The interval runs on the injected `SyncClock` (its monotonic clock
/// decides when an interval is over, its `now()` stamps first and last), so
/// tests move it by hand. An interval starts at its first keyless connection
/// and is reported once it is over: on the next event, on `tick()`, or at
/// `finish()`, which reports what is still pending when serve stops.
/// Thread-safe: the server calls it from every thread, one event at a time.
public final class KeylessNoise: @unchecked Sendable {
    private let clock: SyncClock
    private let interval: TimeSpan
    private let forward: SyncObserver
    private let lock = ThreadLock()
    private var pending: Pending?
    private let stopTicker = DispatchSemaphore(value: 0)
    private let tickerEnded = DispatchSemaphore(value: 0)
    private var ticking = false

    /// One interval's keyless connections.
    struct Pending {
        var started: Deadline
        var first: Timestamp
        var last: Timestamp
        var count = 0
        var reasons: [String: Int] = [:]
        var addresses: Set<String> = []
        var addressesCapped = false
    }

    public init(clock: SyncClock, interval: TimeSpan = SyncLimits.keylessSummaryInterval, forward: @escaping SyncObserver) {
        self.clock = clock
        self.interval = interval
        self.forward = forward
    }

    /// A connection that never authenticated: a failed handshake, a
    /// refusal sent as an unauthenticated notice, BUSY to an identity that
    /// named no key this device holds. Nil for every other event; else the reason it is counted under.
    public static func keylessReason(_ e: SyncEvent) -> String? {
        func field(_ k: String) -> JSONValue? { e.fields.first { $0.0 == k }?.1 }
        guard field("from") != nil else { return nil }
        switch e.name {
        case "rejected":
            return field("reason")?.stringValue ?? "handshake"
        case "refused" where field("authenticated")?.boolValue == false:
            return field("reason")?.stringValue ?? "refused"
        case "busy" where field("known")?.boolValue == false:
            return "busy"
        default:
            return nil
        }
    }

    /// Takes one event from the server.
    public func send(_ e: SyncEvent) {
        lock.lock()
        defer { lock.unlock() }
        reportIfOver()
        guard let reason = KeylessNoise.keylessReason(e) else {
            forward(e)
            return
        }
        let now = clock.now()
        var p = pending ?? Pending(started: clock.monotonic.now(), first: now, last: now)
        p.last = now
        p.count += 1
        // Reasons are the server's own words (a fixed set), never a peer's.
        p.reasons[reason, default: 0] += 1
        let from = e.fields.first { $0.0 == "from" }?.1.stringValue ?? ""
        let host = HostPort(parsing: from)?.host ?? from
        if p.addresses.count < SyncLimits.keylessAddressLimit { p.addresses.insert(host) } else if !p.addresses.contains(host) { p.addressesCapped = true }
        pending = p
    }

    /// Reports the interval if it is over (the ticker calls this every second).
    public func tick() {
        lock.lock()
        defer { lock.unlock() }
        reportIfOver()
    }

    /// Reports what is pending, over or not, and stops the ticker: serve is stopping.
    public func finish() {
        lock.lock()
        let wasTicking = ticking
        ticking = false
        lock.unlock()
        if wasTicking {
            stopTicker.signal()
            tickerEnded.wait()
        }
        lock.lock()
        defer { lock.unlock() }
        report()
    }

    /// Starts a thread that calls `tick()` every second, so an interval is
    /// reported when it ends even if nothing else happens. Call once; `finish()` stops it.
    public func startTicking() {
        lock.lock()
        ticking = true
        lock.unlock()
        Threads.detach { [self] in
            while stopTicker.wait(timeout: .now() + .seconds(1)) == .timedOut { tick() }
            tickerEnded.signal()
        }
    }

    private func reportIfOver() {
        guard let p = pending, clock.monotonic.now() >= p.started.adding(interval) else { return }
        report()
    }

    private func report() {
        guard let p = pending else { return }
        pending = nil
        forward(KeylessNoise.summary(p))
    }

    static func summary(_ p: Pending) -> SyncEvent {
        var fields: [(String, JSONValue)] = [
            ("connections", .int(Int64(p.count))),
            ("reasons", .object(p.reasons.sorted { $0.key < $1.key }.map { ($0.key, .int(Int64($0.value))) })),
            ("addresses", .int(Int64(p.addresses.count))),
        ]
        if p.addressesCapped { fields.append(("addressesCapped", .bool(true))) }
        fields += [("first", .string(p.first.rfc3339)), ("last", .string(p.last.rfc3339))]
        return SyncEvent("keyless", fields)
    }
}
