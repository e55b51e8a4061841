import CSQLite
import FoundationEssentials
import Glibc

/// Photo bytes beside the store, in two files: the photos themselves, one
/// after another in the pack (`STORE-photos-pack`, PhotoPack.swift), and the
/// photo file (`STORE-photos`), a small SQLite index of where each one is and
/// how far the pack is in use. A photo's bytes are written once, into the
/// pack, straight from the buffer that gathers them to the disk.
///
/// The store's `photos` table says which photos it holds. A row goes in there
/// only after the photo's bytes are on disk and indexed here
/// (`Store.flushStagedPhotos`), so a crash or a power cut can leave bytes
/// that no row names (tombstone-gc removes them), never a row naming bytes
/// that are not here. Here, likewise, an index row commits only after the
/// pack is synced; bytes past the end in use are what a write that never
/// committed left, and the next one writes over them.
///
/// Received photos are staged in one open transaction of the index (its
/// write lock is also the pack's: one writer appends at a time) and
/// committed together (at most `flushBytes` of them, at most `stagingLimit`
/// after the first, or at a durable point): one commit's syncs for many
/// photos, not for each. Not Sendable: one per Store connection, and one for
/// a session's writer (PhotoWriter.swift).
final class PhotoFile {
    /// The index's name is the store's with this after it.
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
    /// Each connection's page cache for the index, in KiB: it holds a row per
    /// photo, and a session runs two connections to it.
    static let cacheKiB = 64
    /// Tells a photo file from a store and from anything else ("FSPH").
    static let applicationID: Int32 = 0x4653_5048
    /// The index's format (its `user_version`): the bytes are in the pack. A
    /// photo file at 0 holds them in a table of its own (`photo_bytes`), as
    /// store version 9 wrote it; they move to the pack when it is opened for
    /// writing (`moveBytesToPack`).
    static let packFormat: Int32 = 1
    /// The index: where in the pack each photo's bytes are, and where the pack ends.
    static let indexTables = """
        CREATE TABLE IF NOT EXISTS photo_pack (
            sha256 TEXT PRIMARY KEY,
            added_at INTEGER NOT NULL,
            offset INTEGER NOT NULL,
            size INTEGER NOT NULL
        ) WITHOUT ROWID;
        CREATE TABLE IF NOT EXISTS pack_state (only INTEGER PRIMARY KEY CHECK (only = 1), end_offset INTEGER NOT NULL);

        """

    let path: String
    let db: Database
    let pack: PhotoPack
    /// Whether this open found no photos where the store's may be: the index
    /// was not there, or its pack was not (the photos it named are forgotten).
    private(set) var made = false

    /// Photos staged in the open transaction, not yet on disk.
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

    /// Opens (or makes, 0600) the photo file and pack of the store at
    /// `storePath`. A file there that is not a photo file is refused, untouched.
    init(storePath: String) throws {
        path = storePath + PhotoFile.suffix
        pack = PhotoPack(path: storePath + PhotoPack.suffix)
        var st = stat()
        var madeIndex = false
        if lstat(path, &st) == 0 {
            guard st.st_mode & S_IFMT == S_IFREG else { throw StoreError(.notAStore, path: path, detail: "the store's photo file is not a regular file") }
        } else {
            guard errno == ENOENT else { throw StoreError(.cannotRead, path: path, detail: String(cString: strerror(errno))) }
            try Store.createFile(path: path)
            madeIndex = true
        }
        var packLost = false
        do {
            // A photo file this user may read but not write (a read-only store) is
            // opened for reading: what only reads works, and a write says read-only.
            let writable = access(path, W_OK) == 0 || errno != EACCES
            db = try Database(path: path, flags: (writable ? SQLITE_OPEN_READWRITE : SQLITE_OPEN_READONLY) | SQLITE_OPEN_NOMUTEX)
            // An index of small rows, read and written a row at a time: a session
            // holds two connections to it, which need no memory of their own for that.
            _ = fs_sqlite_no_lookaside(db.handle)
            let app = Int32(truncatingIfNeeded: try db.scalarInt("PRAGMA application_id") ?? 0)
            if app != PhotoFile.applicationID {
                guard app == 0, try db.scalarInt("SELECT count(*) FROM sqlite_schema") == 0 else {
                    throw StoreError(.notAStore, path: path, detail: "an SQLite database of something else where the store's photo file goes")
                }
            }
            let format = Int32(truncatingIfNeeded: try db.scalarInt("PRAGMA user_version") ?? 0)
            if format > PhotoFile.packFormat {
                throw StoreError(.newerVersion, path: path, version: Int(format))
            }
            guard writable else {
                guard format == PhotoFile.packFormat else {
                    throw StoreError(.cannotOpen, path: path, detail: "its photos are in an older form; open the store once as a user who may write it")
                }
                made = madeIndex
                return
            }
            // PERSIST: a commit zeroes the journal's header (synced), so no
            // unlink has to reach the disk with the folder for it to hold.
            try db.execute("""
                PRAGMA journal_mode = PERSIST; PRAGMA secure_delete = ON; PRAGMA synchronous = FULL;
                PRAGMA cache_size = -\(PhotoFile.cacheKiB);
                """)
            // Written only when missing: a session's writer may hold the file's
            // write lock while it stages photos, and opening must not wait for it.
            if format < PhotoFile.packFormat || pack.fileSize() == nil {
                try db.transaction {
                    try db.execute(PhotoFile.indexTables + """
                        INSERT OR IGNORE INTO pack_state (only, end_offset) VALUES (1, 0);
                        PRAGMA application_id = \(PhotoFile.applicationID);
                        """)
                    if self.pack.fileSize() == nil {
                        // A pack that is gone takes its photos with it: the index
                        // names none, and the store wants them again.
                        if try db.scalarInt("SELECT 1 FROM photo_pack LIMIT 1") != nil {
                            try db.execute("DELETE FROM photo_pack; UPDATE pack_state SET end_offset = 0")
                            packLost = true
                        }
                        try Store.createFile(path: pack.path)
                    }
                }
                if format < PhotoFile.packFormat { try moveBytesToPack() }
            }
        } catch let e as SQLiteError {
            if e.isNotADatabase { throw StoreError(.notAStore, path: path, detail: "the store's photo file is damaged: \(e.message)") }
            throw StoreError(.cannotOpen, path: path, detail: e.message)
        }
        made = madeIndex || packLost
    }

    /// Store version 9 kept photo bytes in the index itself: moves them to
    /// the pack a batch to a commit, each commit on disk before the next (run
    /// again after a crash, it goes on), then drops the table and gives its
    /// pages back to the disk.
    private func moveBytesToPack() throws {
        if try db.scalarInt("SELECT 1 FROM sqlite_schema WHERE name = 'photo_bytes'") != nil {
            while true {
                var moved = 0
                let s = try db.prepare("SELECT sha256, added_at, bytes FROM photo_bytes LIMIT 64")
                var rows: [(String, Int64, [UInt8])] = []
                var bytes = 0
                while bytes < PhotoFile.flushBytes, try s.step() {
                    let b = s.blob(2)
                    rows.append((s.text(0), s.int64(1), b))
                    bytes += b.count
                }
                s.reset()
                for (h, added, b) in rows {
                    try stage([b[...]], size: b.count, sha256: h, addedAt: added)
                    try db.run("DELETE FROM photo_bytes WHERE sha256 = ?", [.text(h)])
                    moved += 1
                }
                guard moved > 0 else { break }
                _ = try commitStaged()
            }
            try db.execute("DROP TABLE IF EXISTS photo_bytes")
        }
        try db.execute("PRAGMA user_version = \(PhotoFile.packFormat)")
        if let free = try db.scalarInt("PRAGMA freelist_count"), free > 0 {
            // The index is small; its pages of photo bytes go back to the disk
            // once (another process reading it now makes this wait for a later open).
            try? db.execute("PRAGMA page_size = 4096; VACUUM")
        }
    }

    var hasStaged: Bool { !staged.isEmpty }
    /// Whether staged photos have waited `stagingLimit` or `flushBytes` are staged.
    var commitIsDue: Bool { stagedBytes >= PhotoFile.flushBytes || (commitDue?.hasPassed ?? false) }
    func isStaged(_ sha256: String) -> Bool { stagedHashes.contains(sha256) }

    /// Appends a photo's bytes (`size` of them, as `chunks`) to the pack and
    /// indexes them in the open transaction, opening one when none is. Bytes
    /// already indexed are not written again.
    func stage(_ chunks: [ArraySlice<UInt8>], size: Int, sha256: String, addedAt: Int64) throws {
        guard !stagedHashes.contains(sha256) else { return }
        if sqlite3_get_autocommit(db.handle) != 0 {
            try db.execute("BEGIN IMMEDIATE")
            do {
                try pack.startAppending(at: try db.scalarInt("SELECT end_offset FROM pack_state") ?? 0)
            } catch {
                try? db.execute("ROLLBACK")
                throw error
            }
            commitDue = Deadline(after: PhotoFile.stagingLimit)
        }
        if try location(sha256) == nil {
            let offset = try pack.append(chunks, size: size)
            try db.run("INSERT INTO photo_pack (sha256, added_at, offset, size) VALUES (?, ?, ?, ?)",
                       [.text(sha256), .int(addedAt), .int(offset), .int(Int64(size))])
        }
        staged.append(StagedPhoto(sha256: sha256, size: size, addedAt: addedAt))
        stagedHashes.insert(sha256)
        stagedBytes += size
    }

    /// The same, for bytes in one buffer.
    func stage(_ bytes: [UInt8], sha256: String, addedAt: Int64) throws {
        try stage([bytes[...]], size: bytes.count, sha256: sha256, addedAt: addedAt)
    }

    /// Commits what is staged, the pack synced first (on disk when this
    /// returns: `synchronous = FULL`), and returns it, for the store to record as held.
    func commitStaged() throws -> [StagedPhoto] {
        guard !staged.isEmpty else { return [] }
        try pack.sync()
        try db.run("UPDATE pack_state SET end_offset = ?", [.int(pack.appendPosition)])
        try db.execute("COMMIT")
        defer { clearStaged() }
        return staged
    }

    /// Drops what is staged (a bundle part that is refused keeps nothing).
    func discardStaged() {
        if sqlite3_get_autocommit(db.handle) == 0 { try? db.execute("ROLLBACK") }
        pack.abandonAppends()
        clearStaged()
    }

    private func clearStaged() {
        staged = []
        stagedHashes = []
        stagedBytes = 0
        commitDue = nil
    }

    /// Where a photo's bytes are in the pack, and how many, as the index says.
    func location(_ sha256: String) throws -> (offset: Int64, size: Int)? {
        let s = try db.prepare("SELECT offset, size FROM photo_pack WHERE sha256 = ?")
        try s.bind([.text(sha256)])
        defer { s.reset() }
        return try s.step() ? (s.int64(0), Int(s.int64(1))) : nil
    }

    /// The same, only when the pack reaches to the photo's last byte: a
    /// photo whose bytes are not all there is not read, or sent, at all.
    func readableLocation(_ sha256: String) throws -> (offset: Int64, size: Int)? {
        guard let loc = try location(sha256), try pack.reaches(loc.offset + Int64(loc.size)) else { return nil }
        return loc
    }

    func bytes(_ sha256: String) throws -> [UInt8]? {
        guard let (offset, size) = try readableLocation(sha256) else { return nil }
        var out = [UInt8](repeating: 0, count: size)
        try out.withUnsafeMutableBytes { try pack.read(into: $0, count: size, at: offset) }
        return out
    }

    /// Removes these photos from the index, in one transaction, then gives
    /// their bytes back; on disk when it returns.
    func remove(_ hashes: [String]) throws {
        guard !hashes.isEmpty else { return }
        var ranges: [(offset: Int64, length: Int64)] = []
        try db.transaction {
            for h in hashes {
                guard let (offset, size) = try location(h) else { continue }
                try db.run("DELETE FROM photo_pack WHERE sha256 = ?", [.text(h)])
                ranges.append((offset, PhotoPack.aligned(Int64(size))))
            }
        }
        // After the commit: a reader that found a row finds its bytes until then.
        try pack.free(ranges)
    }

    /// Gives back what no index row names: past the end in use (a write
    /// that never committed), and between rows (a removal cut short before
    /// it freed the bytes). Holds the write lock, so no append is under way.
    func reclaimUnnamed() throws {
        var gaps: [(offset: Int64, length: Int64)] = []
        var end: Int64 = 0
        try db.transaction {
            end = try db.scalarInt("SELECT end_offset FROM pack_state") ?? 0
            let s = try db.prepare("SELECT offset, size FROM photo_pack ORDER BY offset")
            defer { s.reset() }
            var at: Int64 = 0
            while try s.step() {
                let (offset, size) = (s.int64(0), s.int64(1))
                if offset > at { gaps.append((at, offset - at)) }
                at = max(at, offset + PhotoPack.aligned(size))
            }
            if end > at { gaps.append((at, end - at)) }
            try pack.truncate(to: end)
            try pack.free(gaps, zeroFill: false)
        }
    }

    /// Up to `limit` photos here whose hash sorts after `after`, with when they came.
    func page(after: String, limit: Int) throws -> [(sha256: String, addedAt: Int64)] {
        let s = try db.prepare("SELECT sha256, added_at FROM photo_pack WHERE sha256 > ? ORDER BY sha256 LIMIT ?")
        try s.bind([.text(after), .int(Int64(limit))])
        defer { s.reset() }
        var out: [(String, Int64)] = []
        while try s.step() { out.append((s.text(0), s.int64(1))) }
        return out
    }

    /// Whether the photo is indexed and the pack reaches to its last byte.
    func has(_ sha256: String) throws -> Bool { try readableLocation(sha256) != nil }

    /// What is wrong with the pack as the index names it, or nil when nothing is.
    func packCheck() throws -> String? {
        let size = pack.fileSize() ?? 0
        let beyond = try db.scalarInt("SELECT count(*) FROM photo_pack WHERE offset + size > ?", [.int(size)]) ?? 0
        let misplaced = try db.scalarInt("SELECT count(*) FROM photo_pack WHERE offset % \(PhotoPack.alignment) != 0 OR offset < 0 OR size < 0") ?? 0
        if beyond == 0 && misplaced == 0 { return nil }
        return "\(beyond) photos end past the pack's \(size) bytes, \(misplaced) are at offsets the pack does not use"
    }

    /// Copies the photos among `wanted` into a new photo file at `target` and
    /// its pack at `packTarget` (both made empty, 0600, by the caller),
    /// compacted, as one read transaction sees them; returns the hashes
    /// copied. Both are on disk when it returns.
    func copy(_ wanted: Set<String>, to target: String, pack packTarget: String) throws -> Set<String> {
        let copy = try Database(path: target)
        defer { try? copy.close() }
        try copy.execute("PRAGMA journal_mode = PERSIST; PRAGMA synchronous = FULL;" + PhotoFile.indexTables + """
            PRAGMA application_id = \(PhotoFile.applicationID); PRAGMA user_version = \(PhotoFile.packFormat);
            """)
        let out = PhotoPack(path: packTarget)
        defer { out.close() }
        var copied: Set<String> = []
        var buffer: [UInt8] = []
        let packSize = pack.fileSize() ?? 0
        try copy.transaction {
            try out.startAppending(at: 0)
            try db.readTransaction {
                let s = try db.prepare("SELECT sha256, added_at, offset, size FROM photo_pack ORDER BY offset")
                defer { s.reset() }
                while try s.step() {
                    let h = s.text(0)
                    guard wanted.contains(h) else { continue }
                    let (offset, size) = (s.int64(2), Int(s.int64(3)))
                    // Bytes the pack does not reach are not copied; the copy wants that photo again.
                    guard offset + Int64(size) <= packSize else { continue }
                    // One photo at a time, through one buffer as large as the largest.
                    if buffer.count < size { buffer = [UInt8](repeating: 0, count: size) }
                    try buffer.withUnsafeMutableBytes { try pack.read(into: $0, count: size, at: offset) }
                    let at = try out.append([buffer[0..<size]], size: size)
                    try copy.run("INSERT INTO photo_pack (sha256, added_at, offset, size) VALUES (?, ?, ?, ?)",
                                 [.text(h), .int(s.int64(1)), .int(at), .int(Int64(size))])
                    copied.insert(h)
                }
            }
            try out.sync()
            try copy.run("INSERT INTO pack_state (only, end_offset) VALUES (1, ?)", [.int(out.appendPosition)])
        }
        return copied
    }

    func close() throws {
        discardStaged()
        pack.close()
        try db.close()
    }
}
