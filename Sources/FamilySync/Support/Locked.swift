import FoundationEssentials
import Glibc

/// A value that threads share, behind a pthread mutex (as NSLock is, where
/// a lock guards code rather than one value). Not `Synchronization.Mutex`,
/// whose lock (Swift 6.3 on Linux) is atomics and futex(2) inside a library
/// ThreadSanitizer does not see, so once it is contended the accesses it
/// guards are reported as races: a 15-line program where four threads append
/// to and remove from a `Mutex<[Int]>` with `withLock`, and nothing else,
/// gets "Swift access race" reports between the two closures (and ends with
/// the right count). The sanitizer intercepts pthread's mutex, so
/// `make test-tsan` checks what this guards instead of needing a suppression.
public final class Locked<Value>: @unchecked Sendable {
    // Allocated once and never moved: a pthread mutex must stay where it was initialised.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private var value: Value

    public init(_ value: Value) {
        self.value = value
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` with the value, holding the lock.
    public func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
