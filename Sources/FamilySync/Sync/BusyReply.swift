
/// The busy reply (docs/protocol.md §5.2, §7.10): a server runs one session
/// at a time; a device that would start another while it runs gets no key,
/// only a BUSY notice saying when to try again, and the connecting side
/// waits out its backoff and retries until its `--wait` runs out. The three
/// parts live here: the slot that decides busy, the notice, and the backoff.
enum BusyReply {
    /// The notice a busy server sends, then closes: a retry hint and a message.
    static func json(retryAfter: TimeSpan = SyncLimits.busyRetryHint) -> JSONValue {
        .object([("retryAfterMs", .int(retryAfter.milliseconds)),
                 ("message", .string("this device is syncing with another one"))])
    }

    /// The retry hint a BUSY frame carries. A missing or unreadable hint
    /// counts as none: the client's own backoff decides.
    static func retryAfter(_ frame: Frame) -> TimeSpan {
        TimeSpan(milliseconds: (try? FieldReader(frame).int("retryAfterMs", max: Int64.max)) ?? 0)
    }
}

/// The server's one session at a time. A connection whose identity would
/// start a session reserves the slot while its handshake completes; anyone
/// who finds it taken gets BUSY instead of a key. The slot is the store's
/// `SessionLock`, so it holds across processes too: a TCP serve and the
/// `serve --stdio` sessions on one store take turns the same way.
final class SessionSlot: Sendable {
    private let lock: SessionLock
    init(_ lock: SessionLock) { self.lock = lock }
    var isTaken: Bool { lock.isTaken }
    func reserve() -> Bool { lock.tryAcquire() }
    func release() { lock.release() }
}

/// The slot as one session holds it: released once, by whichever comes
/// first (the DONEs crossing, or the session's end), so a later session's
/// reservation is never released by an earlier one. One thread.
final class SlotHold {
    private let slot: SessionSlot
    private var held = true
    init(_ slot: SessionSlot) { self.slot = slot }
    func release() {
        guard held else { return }
        held = false
        slot.release()
    }
}

/// How long a client waits before trying a busy peer again: the longer of
/// its own backoff (0.5 s, doubling to 8 s) and the server's `retryAfterMs`
/// (heeded up to 60 s), never past the deadline.
struct BusyBackoff {
    private(set) var backoff = SyncLimits.busyRetryFirst

    mutating func pause(retryAfter: TimeSpan, until giveUp: Deadline) -> TimeSpan {
        let hint = min(max(retryAfter.milliseconds, 0), SyncLimits.busyRetryAfterCap.milliseconds)
        let wait = max(backoff.milliseconds, hint)
        backoff = TimeSpan(milliseconds: min(backoff.milliseconds * 2, SyncLimits.busyRetryCap.milliseconds))
        return TimeSpan(milliseconds: min(wait, Int64(giveUp.remainingMilliseconds) + 1))
    }
}
