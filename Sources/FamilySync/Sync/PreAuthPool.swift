import FoundationEssentials
import Glibc
import Synchronization

/// The connections a server holds before they are authenticated: accepted,
/// in their TLS handshake, or getting their one notice. Each runs on its own
/// thread, so a stalled one holds up nobody, and the pool bounds how many
/// there are (OpenSSH's MaxStartups) and how long each may take (its
/// LoginGraceTime, `SyncLimits.preAuthGrace`).
///
/// When the pool is full a newcomer is still admitted: the connection that
/// has stalled longest goes instead. "Stalled" is measured, not guessed: each
/// connection records when bytes last moved. A peer whose PSK identity named
/// a key this server holds is dropped only when no stranger is left to drop,
/// so a flood of junk connections cannot push a real peer out, and nothing is
/// chosen at random.
final class PreAuthPool: Sendable {
    /// One pre-authentication connection, shared between its thread and the acceptor.
    final class Entry: Sendable {
        /// The socket's descriptor. The acceptor only ever shuts it down, and
        /// only while the entry is in the pool; the owning thread leaves the
        /// pool before it closes the socket, so the number cannot be reused under us.
        let fd: Int32
        /// Monotonic nanoseconds when bytes last moved (the accept counts).
        private let lastProgress: Atomic<UInt64>
        /// Set once the client's identity named a key this server holds.
        private let vetted = Atomic<Bool>(false)

        init(fd: Int32) {
            self.fd = fd
            lastProgress = Atomic(Deadline.now().nanoseconds)
        }

        func progressed() { lastProgress.store(Deadline.now().nanoseconds, ordering: .relaxed) }
        func markVetted() { vetted.store(true, ordering: .relaxed) }
        var lastProgressNanoseconds: UInt64 { lastProgress.load(ordering: .relaxed) }
        var isVetted: Bool { vetted.load(ordering: .relaxed) }
    }

    let limit: Int
    private let entries = Locked<[Entry]>([])

    init(limit: Int = SyncLimits.preAuthLimit) {
        precondition(limit > 0)
        self.limit = limit
    }

    var count: Int { entries.withLock { $0.count } }

    /// Takes in a newly accepted connection. When the pool is full, the most
    /// stalled stranger (else the most stalled vetted peer) is shut down and
    /// removed; its thread then fails at once. Returns the new entry and
    /// whether someone was dropped for it.
    func admit(fd: Int32) -> (Entry, dropped: Bool) {
        let e = Entry(fd: fd)
        let dropped: Bool = entries.withLock { list in
            var dropped = false
            if list.count >= limit, let i = PreAuthPool.victim(in: list) {
                let victim = list.remove(at: i)
                // shutdown(2), not close(2): the owning thread still holds the descriptor.
                _ = Glibc.shutdown(victim.fd, Int32(SHUT_RDWR))
                dropped = true
            }
            list.append(e)
            return dropped
        }
        return (e, dropped)
    }

    /// Called by the owning thread before it closes the socket or hands it on.
    func leave(_ e: Entry) {
        entries.withLock { list in list.removeAll { $0 === e } }
    }

    /// The entry to drop: the one whose bytes last moved longest ago, strangers first.
    static func victim(in list: [Entry]) -> Int? {
        func oldest(_ vetted: Bool) -> Int? {
            var best: Int?
            for (i, e) in list.enumerated() where e.isVetted == vetted {
                // Read only when best is not nil.
                if best == nil || e.lastProgressNanoseconds < list[best!].lastProgressNanoseconds { best = i }
            }
            return best
        }
        return oldest(false) ?? oldest(true)
    }
}

/// Hands authenticated connections from their handshake threads to the
/// thread that runs sessions (the one that owns the store).
final class SessionHandoff<Item>: @unchecked Sendable {
    private let lock = ThreadCondition()
    private var items: [Item] = []

    func put(_ item: Item) {
        lock.lock()
        items.append(item)
        lock.signal()
        lock.unlock()
    }

    /// The next item, or nil when none came within `timeout`.
    func take(timeout: TimeSpan) -> Item? {
        lock.lock()
        defer { lock.unlock() }
        let until = ThreadCondition.deadline(after: timeout.seconds)
        while items.isEmpty {
            if !lock.wait(until: until) { break }
        }
        return items.isEmpty ? nil : items.removeFirst()
    }
}
