import Testing
@testable import FamilySync

/// docs/protocol.md §7.10: between tries at a busy peer a client waits the
/// longer of its own backoff (0.5 s doubling to 8 s) and the server's
/// `retryAfterMs` (heeded up to 60 s), never past its deadline.
@Suite struct BusyBackoffTests {
    @Test func ownBackoffDoublesToItsCap() {
        var b = BusyBackoff()
        let far = Deadline(after: .minutes(10))
        let waits = (0..<7).map { _ in b.pause(retryAfter: TimeSpan(milliseconds: 0), until: far).milliseconds }
        #expect(waits == [500, 1000, 2000, 4000, 8000, 8000, 8000])
    }

    @Test func theServersHintWinsWhenLongerAndIsCapped() {
        var b = BusyBackoff()
        let far = Deadline(after: .minutes(10))
        #expect(b.pause(retryAfter: .seconds(3), until: far).milliseconds == 3000)
        #expect(b.pause(retryAfter: TimeSpan(milliseconds: 200), until: far).milliseconds == 1000)  // own backoff went on doubling
        #expect(b.pause(retryAfter: .minutes(30), until: far).milliseconds == 60_000)
        #expect(b.pause(retryAfter: TimeSpan(milliseconds: -5), until: far).milliseconds == 4000)
    }

    @Test func neverPastTheDeadline() {
        var b = BusyBackoff()
        #expect(b.pause(retryAfter: .seconds(30), until: Deadline(after: .seconds(2))).milliseconds <= 2001)
    }
}
