import Foundation
import Testing
@testable import FamilySync

/// `Locked` keeps updates from several threads whole. Under `make test-tsan`
/// the same run also shows that the sanitizer sees the lock: the contended
/// insertions and removals that drew reports through Synchronization.Mutex
/// must draw none here.
@Suite struct LockedTests {
    @Test func fourThreadsInsertingAndRemovingLoseNoUpdate() {
        let set = Locked<Set<Int>>([])
        let rounds = 20_000
        DispatchQueue.concurrentPerform(iterations: 4) { t in
            for i in 0..<rounds {
                set.withLock { _ = $0.insert(t * rounds + i) }
                if i % 2 == 1 { set.withLock { _ = $0.remove(t * rounds + i) } }
            }
        }
        let left = set.withLock { $0 }
        #expect(left.count == 4 * rounds / 2)
        #expect(left == Set((0..<4).flatMap { t in (0..<rounds).filter { $0 % 2 == 0 }.map { t * rounds + $0 } }))
    }

    @Test func aThrowingBodyReleasesTheLock() {
        struct Stop: Error {}
        let n = Locked(0)
        #expect(throws: Stop.self) { try n.withLock { v in v += 1; throw Stop() } }
        // Taken again at once: a lock left held would hang here.
        #expect(n.withLock { $0 } == 1)
    }
}
