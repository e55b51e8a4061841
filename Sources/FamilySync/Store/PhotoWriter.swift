import FoundationEssentials
import Glibc

/// Writes a session's received photos into the photo file on a thread of
/// its own, with a connection of its own, so the copy into the file and the
/// fsyncs that put one group on disk overlap the arrival of the next instead
/// of stopping the session for them.
///
/// The session hands each verified photo over (`submit`), waiting only
/// while `queueBytes` are handed over and not yet staged; takes back, each
/// turn, what is on disk (`takeWritten`) to record as held; and at its
/// durable points waits until everything handed over is on disk (`drain`).
/// The thread commits what it has staged under PhotoFile's rules
/// (`PhotoFile.commitIsDue`), and at once when drained or stopped. Driven
/// from the session's thread; the writer thread only touches its own
/// connection and the state under `condition`.
final class PhotoWriter: @unchecked Sendable {
    /// Photo bytes handed over and not yet in the writer's transaction after
    /// which `submit` waits: bounds what the queue adds to memory.
    static let queueBytes = 1 << 20

    /// A photo as the frames brought it: the chunks are slices of their
    /// payloads, copied once, into the pack's buffer.
    private struct Item {
        var sha256: String
        var chunks: [ArraySlice<UInt8>]
        var size: Int
        var addedAt: Int64
    }

    /// The writer thread's connection to the photo file.
    private let file: PhotoFile
    private let condition = ThreadCondition()
    // Shared state, under `condition`.
    private var queue: [Item] = []
    private var queuedBytes = 0
    private var written: [PhotoFile.StagedPhoto] = []
    /// A drain waits for this to go back to false: set by `drain`, cleared
    /// by the thread once the queue is empty and nothing is staged.
    private var draining = false
    private var stopping = false
    private var finished = false
    private var failure: (any Error)?

    /// Session side: handed over and not yet taken back as written.
    private(set) var pending: Set<String> = []

    private init(file: PhotoFile) {
        self.file = file
    }

    /// Opens a second connection to the photo file of the store at
    /// `storePath` and starts the thread that writes through it.
    static func start(storePath: String) throws -> PhotoWriter {
        let w = PhotoWriter(file: try PhotoFile(storePath: storePath))
        Threads.detach { w.loop() }
        return w
    }

    /// Hands a verified photo over, waiting while the queue is full. Throws
    /// the writer's failure, if it had one.
    func submit(_ chunks: [ArraySlice<UInt8>], size: Int, sha256: String, addedAt: Int64) throws {
        guard !pending.contains(sha256) else { return }
        condition.lock()
        defer { condition.unlock() }
        while queuedBytes > 0 && queuedBytes + size > PhotoWriter.queueBytes && failure == nil { condition.wait() }
        if let failure { throw failure }
        queue.append(Item(sha256: sha256, chunks: chunks, size: size, addedAt: addedAt))
        queuedBytes += size
        pending.insert(sha256)
        condition.broadcast()
    }

    /// What the thread has put on disk since the last call, without waiting.
    func takeWritten() throws -> [PhotoFile.StagedPhoto] {
        condition.lock()
        defer { condition.unlock() }
        if let failure { throw failure }
        return takeLocked()
    }

    /// Waits until everything handed over is on disk, and returns what was
    /// written since the last take.
    func drain() throws -> [PhotoFile.StagedPhoto] {
        condition.lock()
        defer { condition.unlock() }
        guard !pending.isEmpty || !written.isEmpty else { return [] }
        draining = true
        condition.broadcast()
        while draining && failure == nil && !finished { condition.wait() }
        if let failure { throw failure }
        return takeLocked()
    }

    private func takeLocked() -> [PhotoFile.StagedPhoto] {
        let out = written
        written = []
        for p in out { pending.remove(p.sha256) }
        return out
    }

    /// Commits what is staged, ends the thread and returns what was written
    /// since the last take (nothing when the writer failed).
    func stop() -> [PhotoFile.StagedPhoto] {
        condition.lock()
        stopping = true
        condition.broadcast()
        while !finished { condition.wait() }
        let out = failure == nil ? takeLocked() : []
        condition.unlock()
        return out
    }

    private func loop() {
        condition.lock()
        while true {
            if failure == nil, !queue.isEmpty {
                let item = queue.removeFirst()
                condition.unlock()
                var error: (any Error)?
                do {
                    try file.stage(item.chunks, size: item.size, sha256: item.sha256, addedAt: item.addedAt)
                } catch let e { error = e }
                condition.lock()
                queuedBytes -= item.size
                if let error { failure = error }
                condition.broadcast()
                if failure == nil, file.commitIsDue { commitLocked() }
                continue
            }
            if failure == nil, file.hasStaged, draining || stopping || file.commitIsDue {
                commitLocked()
                continue
            }
            if draining && (queue.isEmpty || failure != nil) && !file.hasStaged {
                draining = false
                condition.broadcast()
            }
            if stopping { break }
            if file.hasStaged {
                _ = condition.wait(until: ThreadCondition.deadline(after: 0.02))
            } else {
                condition.wait()
            }
        }
        if failure != nil { file.discardStaged() }
        try? file.close()
        finished = true
        condition.broadcast()
        condition.unlock()
    }

    /// Commits what is staged, with the lock released while it writes.
    private func commitLocked() {
        condition.unlock()
        var done: [PhotoFile.StagedPhoto] = []
        var error: (any Error)?
        do { done = try file.commitStaged() } catch let e { error = e }
        condition.lock()
        if let error { failure = error } else { written += done }
        condition.broadcast()
    }
}
