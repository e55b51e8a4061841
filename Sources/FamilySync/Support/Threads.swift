import FoundationEssentials
import Glibc

// Threads, a lock and a condition on pthreads. The tools link only
// FoundationEssentials (no Thread, NSLock or NSCondition there), which keeps
// ICU's data out of the binaries; pthread primitives are also the ones
// ThreadSanitizer intercepts (see `Locked`).

/// Starting a detached thread.
public enum Threads {
    /// Runs `body` on a new detached thread with the default stack size.
    /// Failing to start a thread is a resource exhaustion the caller cannot
    /// recover from, as it was with Foundation's `Thread`.
    public static func detach(_ body: @escaping @Sendable () -> Void) {
        let box = Unmanaged.passRetained(Body(body)).toOpaque()
        var thread = pthread_t()
        let rc = pthread_create(&thread, nil, { ctx in
            // The context is the retained box passed below; pthread hands it back unchanged.
            let body = Unmanaged<Body>.fromOpaque(ctx!).takeRetainedValue()
            body.run()
            return nil
        }, box)
        precondition(rc == 0, "pthread_create: \(String(cString: strerror(rc)))")
        pthread_detach(thread)
    }

    private final class Body {
        let run: @Sendable () -> Void
        init(_ run: @escaping @Sendable () -> Void) { self.run = run }
    }
}

/// A mutex guarding code rather than one value (`Locked` guards a value).
public final class ThreadLock: @unchecked Sendable {
    // Allocated once and never moved: a pthread mutex must stay where it was initialised.
    fileprivate let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)

    public init() { pthread_mutex_init(mutex, nil) }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    public func lock() { pthread_mutex_lock(mutex) }
    public func unlock() { pthread_mutex_unlock(mutex) }

    public func withLock<R>(_ body: () throws -> R) rethrows -> R {
        lock()
        defer { unlock() }
        return try body()
    }
}

/// A mutex with a condition variable: `wait` releases the lock until a
/// `signal` or `broadcast`, and holds it again when it returns.
public final class ThreadCondition: @unchecked Sendable {
    private let mutex = ThreadLock()
    private let cond = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

    public init() {
        // Deadlines are on the monotonic clock, so a wall-clock step cannot stretch a wait.
        var attr = pthread_condattr_t()
        pthread_condattr_init(&attr)
        pthread_condattr_setclock(&attr, CLOCK_MONOTONIC)
        pthread_cond_init(cond, &attr)
        pthread_condattr_destroy(&attr)
    }

    deinit {
        pthread_cond_destroy(cond)
        cond.deallocate()
    }

    public func lock() { mutex.lock() }
    public func unlock() { mutex.unlock() }
    public func signal() { pthread_cond_signal(cond) }
    public func broadcast() { pthread_cond_broadcast(cond) }
    public func wait() { pthread_cond_wait(cond, mutex.mutex) }

    /// The monotonic time `seconds` from now, for `wait(until:)`.
    public static func deadline(after seconds: Double) -> timespec {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let nanos = Int(now.tv_nsec) + Int(max(0, seconds) * 1e9)
        var until = timespec()
        until.tv_sec = now.tv_sec + nanos / 1_000_000_000
        until.tv_nsec = nanos % 1_000_000_000
        return until
    }

    /// Waits until `deadline` at the latest; false when it passed (the lock is held again either way).
    public func wait(until deadline: timespec) -> Bool {
        var d = deadline
        return pthread_cond_timedwait(cond, mutex.mutex, &d) != ETIMEDOUT
    }
}
