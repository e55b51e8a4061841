import CSQLite
import FoundationEssentials
import Glibc

/// Photo bytes in a file of their own beside the store, `STORE-photos`: an
/// SQLite database with a rollback journal where the store has its
/// write-ahead log. A new photo's pages go past the end of the file or into
/// free pages, which a rollback journal does not copy, so its bytes reach
/// the disk once; through the log they were written twice, into the log and
/// again at checkpoint.
///
/// The store's `photos` table says which photos it holds. A row goes in there
/// only after the photo's bytes here are on disk (`Store.flushStagedPhotos`),
/// so a crash or a power cut can leave bytes that no row names (tombstone-gc
/// removes them), never a row naming bytes that are not here.
///
/// Received photos are staged in one open transaction of this file and
/// committed together (at most `flushBytes` of them, at most `stagingLimit`
/// after the first, or at a durable point): one commit's fsyncs and
/// journalled index pages for many photos, not for each. Not Sendable: one
/// per Store connection, and one for a session's writer (PhotoWriter.swift).
final class PhotoFile {
    /// The file's name is the store's with this after it.
    static let suffix = "-photos"
    /// Staged bytes after which a session commits them without waiting for
    /// the wave to end: bounds what a crash makes a session fetch again and
    /// how long the file's write lock is held.
    static let flushBytes = 32 << 20
    /// How long a session keeps photos staged, and so the file's write lock,
    /// before it commits them: another process adding a photo meanwhile
    /// waits about this long, never its whole busy timeout, however slow the
    /// link the photos come over.
    static let stagingLimit = TimeSpan(milliseconds: 1000)
    /// Each connection's page cache, in KiB: photo pages are written once
    /// and seldom read again soon, so a small cache costs nothing, and a
    /// session runs two connections to this file.
    static let cacheKiB = 512
    /// Tells a photo file from a store and from anything else ("FSPH").
    static let applicationID: Int32 = 0x4653_5048

    let path: String
    let db: Database
    /// Whether this open made the file (it was not there).
    let made: Bool

    /// Photos whose bytes are in the open transaction, not yet on disk.
    private(set) var staged: [StagedPhoto] = []
    private var stagedHashes: Set<String> = []
    private(set) var stagedBytes = 0
    /// When what is staged is due to be committed (`stagingLimit` after the first).
    private(set) var commitDue: Deadline?

    struct StagedPhoto {
        var sha256: String
        var size: Int
        var addedAt: Int64
    }

    /// Opens (or makes, 0600) the photo file of the store at `storePath`.
    /// A file there that is not a photo file is refused, untouched.
    init(storePath: String) throws {
        path = storePath + PhotoFile.suffix
        var st = stat()
        if stat(path, &st) == 0 {
            guard st.st_mode & S_IFMT == S_IFREG else { throw StoreError(.notAStore, path: path, detail: "the store's photo file is not a regular file") }
            made = false
        } else {
            guard errno == ENOENT else { throw StoreError(.cannotRead, path: path, detail: String(cString: strerror(errno))) }
            try Store.createFile(path: path)
            made = true
        }
        do {
            // A photo file this user may read but not write (a read-only store) is
            // opened for reading: what only reads works, and a write says read-only.
            let writable = access(path, W_OK) == 0 || errno != EACCES
            db = try Database(path: path, flags: (writable ? SQLITE_OPEN_READWRITE : SQLITE_OPEN_READONLY) | SQLITE_OPEN_NOMUTEX)
            let app = Int32(truncatingIfNeeded: try db.scalarInt("PRAGMA application_id") ?? 0)
            if app != PhotoFile.applicationID {
                guard app == 0, try db.scalarInt("SELECT count(*) FROM sqlite_schema") == 0 else {
                    throw StoreError(.notAStore, path: path, detail: "an SQLite database of something else where the store's photo file goes")
                }
            }
            guard writable else { return }
            // PERSIST: a commit zeroes the journal's header (synced), so no
            // unlink has to reach the disk with the folder for it to hold.
            try db.execute("""
                PRAGMA page_size = \(Store.pageSize); PRAGMA journal_mode = PERSIST;
                PRAGMA secure_delete = ON; PRAGMA synchronous = FULL; PRAGMA cache_size = -\(PhotoFile.cacheKiB);
                """)
            // Written only when missing: a session's writer may hold the file's
            // write lock while it stages photos, and opening must not wait for it.
            if try db.scalarInt("SELECT count(*) FROM sqlite_schema WHERE name = 'photo_bytes'") == 0 {
              try db.transaction {
                try db.execute("""
                    CREATE TABLE IF NOT EXISTS photo_bytes (
                        sha256 TEXT PRIMARY KEY,
                        added_at INTEGER NOT NULL,
                        bytes BLOB NOT NULL
                    );
                    PRAGMA application_id = \(PhotoFile.applicationID);
                    """)
              }
            }
        } catch let e as SQLiteError {
            if e.isNotADatabase { throw StoreError(.notAStore, path: path, detail: "the store's photo file is damaged: \(e.message)") }
            throw StoreError(.cannotOpen, path: path, detail: e.message)
        }
    }

    var hasStaged: Bool { !staged.isEmpty }
    /// Whether staged photos have waited `stagingLimit` or `flushBytes` are staged.
    var commitIsDue: Bool { stagedBytes >= PhotoFile.flushBytes || (commitDue?.hasPassed ?? false) }
    func isStaged(_ sha256: String) -> Bool { stagedHashes.contains(sha256) }

    /// Puts a photo's bytes (`size` of them, as `chunks`) into the open
    /// transaction, opening one when none is: joined into one buffer first.
    func stage(_ chunks: [ArraySlice<UInt8>], size: Int, sha256: String, addedAt: Int64) throws {
        guard !stagedHashes.contains(sha256) else { return }
        try stage(PhotoFile.joined(chunks, size: size), sha256: sha256, addedAt: addedAt)
    }

    static func joined(_ chunks: [ArraySlice<UInt8>], size: Int) -> [UInt8] {
        precondition(chunks.reduce(0) { $0 + $1.count } == size, "photo chunks do not add up to its size")
        var bytes = [UInt8]()
        bytes.reserveCapacity(size)
        for c in chunks { bytes.append(contentsOf: c) }
        return bytes
    }

    /// The same, for bytes already in one buffer, which SQLite reads where
    /// they are (bound without a copy of its own): each page is filled
    /// before it is written, and written once.
    func stage(_ bytes: [UInt8], sha256: String, addedAt: Int64) throws {
        guard !stagedHashes.contains(sha256) else { return }
        if sqlite3_get_autocommit(db.handle) != 0 {
            try db.execute("BEGIN IMMEDIATE")
            commitDue = Deadline(after: PhotoFile.stagingLimit)
        }
        let s = try db.prepare("INSERT OR IGNORE INTO photo_bytes (sha256, added_at, bytes) VALUES (?, ?, ?)")
        try s.bind([.text(sha256), .int(addedAt)])
        defer { sqlite3_clear_bindings(s.stmt); s.reset() }
        // SQLITE_STATIC (nil): the pointer is good only inside the closure, so the step runs there too.
        try bytes.withUnsafeBytes { buf in
            let rc = sqlite3_bind_blob64(s.stmt, 3, buf.baseAddress ?? UnsafeRawPointer(bitPattern: 1), sqlite3_uint64(buf.count), nil)
            _ = try db.check(rc, "binding a photo's bytes")
            while try s.step() {}
        }
        staged.append(StagedPhoto(sha256: sha256, size: bytes.count, addedAt: addedAt))
        stagedHashes.insert(sha256)
        stagedBytes += bytes.count
    }

    /// Commits what is staged (on disk when this returns: `synchronous =
    /// FULL`) and returns it, for the store to record as held.
    func commitStaged() throws -> [StagedPhoto] {
        guard !staged.isEmpty else { return [] }
        try db.execute("COMMIT")
        defer { clearStaged() }
        return staged
    }

    /// Drops what is staged (a bundle part that is refused keeps nothing).
    func discardStaged() {
        if sqlite3_get_autocommit(db.handle) == 0 { try? db.execute("ROLLBACK") }
        clearStaged()
    }

    private func clearStaged() {
        staged = []
        stagedHashes = []
        stagedBytes = 0
        commitDue = nil
    }

    /// The row and size of a photo's bytes, for reading them in chunks.
    func location(_ sha256: String) throws -> (rowid: Int64, size: Int)? {
        let s = try db.prepare("SELECT rowid, length(bytes) FROM photo_bytes WHERE sha256 = ?")
        try s.bind([.text(sha256)])
        defer { s.reset() }
        return try s.step() ? (s.int64(0), Int(s.int64(1))) : nil
    }

    func bytes(_ sha256: String) throws -> [UInt8]? {
        let s = try db.prepare("SELECT bytes FROM photo_bytes WHERE sha256 = ?")
        try s.bind([.text(sha256)])
        defer { s.reset() }
        return try s.step() ? s.blob(0) : nil
    }

    /// Removes the bytes of these photos, in one transaction, on disk when it returns.
    func remove(_ hashes: [String]) throws {
        guard !hashes.isEmpty else { return }
        try db.transaction {
            for h in hashes { try db.run("DELETE FROM photo_bytes WHERE sha256 = ?", [.text(h)]) }
        }
    }

    /// Up to `limit` photos here whose hash sorts after `after`, with when they came.
    func page(after: String, limit: Int) throws -> [(sha256: String, addedAt: Int64)] {
        let s = try db.prepare("SELECT sha256, added_at FROM photo_bytes WHERE sha256 > ? ORDER BY sha256 LIMIT ?")
        try s.bind([.text(after), .int(Int64(limit))])
        defer { s.reset() }
        var out: [(String, Int64)] = []
        while try s.step() { out.append((s.text(0), s.int64(1))) }
        return out
    }

    func has(_ sha256: String) throws -> Bool {
        try db.scalarInt("SELECT 1 FROM photo_bytes WHERE sha256 = ?", [.text(sha256)]) != nil
    }

    func close() throws {
        discardStaged()
        try db.close()
    }
}
