import CSQLite
import FoundationEssentials
import Glibc

/// Copies a store's write-ahead log back into the database file on a thread
/// of its own, with its own connection, while one connection keeps writing:
/// a library streaming in then does not stop for each checkpoint's copy and
/// fsyncs. The writer's own automatic checkpoints are off while it runs.
///
/// The log stays bounded: once it holds `hardLimitBytes`, the writer waits
/// after its commit until the checkpointer has caught up, so its next write
/// starts the log over from the beginning. Checkpoints are SQLite's own
/// (passive), so a crash at any point leaves a sound store.
///
/// Driven from the writer's thread (`stop` from that thread too); the
/// checkpointer thread only touches its own connection and the shared state
/// under `condition`.
extension Store {
    /// Starts checkpointing this store's write-ahead log beside a session's
    /// writes; nil where that cannot run (the session's connection then
    /// checkpoints itself).
    func startBackgroundCheckpointer() -> BackgroundCheckpointer? {
        BackgroundCheckpointer.start(for: db)
    }
}

final class BackgroundCheckpointer: @unchecked Sendable {
    /// Un-checkpointed log after which the checkpointer is woken: large
    /// enough that each checkpoint's fsyncs are spread over many photos.
    static let stepBytes: Int64 = 16 << 20
    /// The most log the writer lets build up before waiting for the
    /// checkpointer: the log file never grows much past this.
    static let hardLimitBytes: Int64 = 128 << 20

    /// The writer's connection, not retained: the thread's closure may outlive
    /// the session, and must not keep the store open past its owner.
    private let writer: OpaquePointer
    private let autocheckpointBefore: Int32
    private let stepFrames: Int64
    private let hardFrames: Int64

    private let condition = ThreadCondition()
    // Shared state, under `condition`.
    private var opened: Bool?
    private var wanted = false
    private var running = false
    private var stopping = false
    private var finished = false
    /// Log frames known to be copied back, in the current log.
    private var checkpointed: Int64 = 0
    /// Runs completed, so a waiter can tell a fresh result from an old one.
    private var runs: Int64 = 0

    // Writer-side state.
    private var frames: Int64 = 0

    /// Starts a checkpointer for `db`'s store, or returns nil (leaving the
    /// store's automatic checkpoints as they are) when a second connection
    /// cannot be opened.
    static func start(for db: Database, stepBytes: Int64 = BackgroundCheckpointer.stepBytes,
                      hardLimitBytes: Int64 = BackgroundCheckpointer.hardLimitBytes) -> BackgroundCheckpointer? {
        let pageSize = max(512, (try? db.scalarInt("PRAGMA page_size")) ?? 4096)
        let before = Int32(truncatingIfNeeded: (try? db.scalarInt("PRAGMA wal_autocheckpoint")) ?? 1000)
        let path = db.path
        let c = BackgroundCheckpointer(db: db, autocheckpointBefore: before, pageSize: pageSize,
                                       stepBytes: stepBytes, hardLimitBytes: hardLimitBytes)
        Threads.detach {
            // A first read opens the log: until then the connection does not know the store is in WAL mode.
            var conn = try? Database(path: path, flags: SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX)
            if (try? conn?.scalarText("PRAGMA journal_mode")) != "wal" { conn = nil }
            c.condition.lock()
            c.opened = conn != nil
            c.condition.broadcast()
            c.condition.unlock()
            if let open = conn { c.loop(open) }
            // Closed before `stop` returns, so the session's end sees one connection again.
            conn = nil
            c.condition.lock()
            c.finished = true
            c.condition.broadcast()
            c.condition.unlock()
        }
        c.condition.lock()
        while c.opened == nil { c.condition.wait() }
        let started = c.opened == true
        c.condition.unlock()
        guard started else { return nil }
        sqlite3_wal_hook(db.handle, { ctx, _, _, nFrame in
            // The context is the checkpointer passed below; SQLite hands it back unchanged.
            Unmanaged<BackgroundCheckpointer>.fromOpaque(ctx!).takeUnretainedValue().committed(frames: Int64(nFrame))
            return SQLITE_OK
        }, Unmanaged.passUnretained(c).toOpaque())
        return c
    }

    private init(db: Database, autocheckpointBefore: Int32, pageSize: Int64, stepBytes: Int64, hardLimitBytes: Int64) {
        writer = db.handle
        self.autocheckpointBefore = autocheckpointBefore
        stepFrames = max(1, stepBytes / pageSize)
        hardFrames = max(2, hardLimitBytes / pageSize)
    }

    /// The writer committed; the log now holds `frames` frames.
    private func committed(frames n: Int64) {
        condition.lock()
        defer { condition.unlock() }
        if n < frames { checkpointed = 0 }  // the log started over
        frames = n
        if n - checkpointed >= stepFrames, !running { wanted = true; condition.broadcast() }
        guard n >= hardFrames else { return }
        // Too much log: wait until a run that started after this commit is done.
        while running { condition.wait() }
        guard checkpointed < n else { return }
        wanted = true
        condition.broadcast()
        let target = runs + 1
        while runs < target && !finished { condition.wait() }
    }

    private func loop(_ conn: Database) {
        while true {
            condition.lock()
            while !wanted && !stopping { condition.wait() }
            if stopping { condition.unlock(); return }
            wanted = false
            running = true
            condition.unlock()
            var log: Int32 = 0, done: Int32 = 0
            let rc = sqlite3_wal_checkpoint_v2(conn.handle, "main", SQLITE_CHECKPOINT_PASSIVE, &log, &done)
            condition.lock()
            running = false
            runs += 1
            // A result for a log that has since started over is stale.
            if rc == SQLITE_OK, done >= 0, Int64(log) <= frames { checkpointed = max(checkpointed, Int64(done)) }
            condition.broadcast()
            condition.unlock()
        }
    }

    /// Ends the thread and puts the writer's automatic checkpoints back.
    func stop() {
        condition.lock()
        stopping = true
        condition.broadcast()
        while !finished { condition.wait() }
        condition.unlock()
        sqlite3_wal_autocheckpoint(writer, autocheckpointBefore)
    }
}
