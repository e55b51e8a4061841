import CSQLite
import FoundationEssentials
import Glibc

/// Photos, content-addressed by SHA-256: their bytes in the pack beside the
/// store, indexed by the photo file (PhotoPack.swift, PhotoFile.swift), and
/// in the store which of them it holds, a row made only once the bytes are
/// on disk.
extension Store {
    /// The largest photo accepted, in bytes.
    public static let maxPhotoBytes = 64 << 20

    /// Keeps `bytes` and returns their lowercase SHA-256 hex. Idempotent. The
    /// bytes are on disk before the store's row is written (inside the
    /// caller's transaction when there is one).
    @discardableResult
    public func addPhoto(_ bytes: [UInt8], now: Timestamp) throws -> String {
        let hash = try stagePhoto(bytes, now: now)
        try flushStagedPhotos()
        return hash
    }

    /// Stages `bytes` in the photo file unless the store holds them already;
    /// returns their lowercase SHA-256 hex.
    private func stagePhoto(_ bytes: [UInt8], now: Timestamp, path: String = "") throws -> String {
        guard bytes.count <= Store.maxPhotoBytes else {
            throw StoreError(.photoTooLarge, path: path, limit: Store.maxPhotoBytes, size: bytes.count)
        }
        let hash = Hex.encode(SHA256.hash(bytes))
        if try !hasPhoto(hash) { try photoFile.stage(bytes, sha256: hash, addedAt: now.milliseconds) }
        return hash
    }

    /// Keeps a photo received from a peer only if its bytes hash to `sha256`.
    /// Returns false (and keeps nothing) on a mismatch.
    public func addVerifiedPhoto(_ bytes: [UInt8], sha256: String, now: Timestamp) throws -> Bool {
        guard Hex.encode(SHA256.hash(bytes)) == sha256 else { return false }
        try addPhoto(bytes, now: now)
        return true
    }

    /// Puts on disk every photo staged or handed to the session's writer,
    /// then records them as held: in the caller's transaction when one is
    /// open, else in one of their own.
    func flushStagedPhotos() throws {
        if let w = photoWriter { try recordHeld(try w.drain()) }
        try recordHeld(try photoFile.commitStaged())
    }

    /// Records as held the photos whose bytes are on disk now: all of the
    /// writer's so far without waiting for it, and what is staged here once
    /// it is due (PhotoFile.commitIsDue).
    func flushStagedPhotosIfDue() throws {
        if let w = photoWriter { try recordHeld(try w.takeWritten()) }
        if photoFile.commitIsDue { try recordHeld(try photoFile.commitStaged()) }
    }

    /// Starts a session's writer of received photos (PhotoWriter.swift).
    func startPhotoWriter() throws {
        guard photoWriter == nil else { return }
        photoWriter = try PhotoWriter.start(storePath: path)
    }

    /// Ends the session's writer, recording as held what it put on disk.
    func stopPhotoWriter() throws {
        guard let w = photoWriter else { return }
        photoWriter = nil
        try recordHeld(w.stop())
    }

    /// Rows for photos whose bytes are on disk in the photo file.
    private func recordHeld(_ done: [PhotoFile.StagedPhoto]) throws {
        guard !done.isEmpty else { return }
        let insert = {
            for p in done {
                try self.db.run("INSERT OR IGNORE INTO photos (sha256, size, added_at) VALUES (?, ?, ?)",
                                [.text(p.sha256), .int(Int64(p.size)), .int(p.addedAt)])
            }
        }
        if sqlite3_get_autocommit(db.handle) == 0 { try insert() } else { try write(insert) }
    }

    /// Drops the photos staged here and not yet committed.
    func discardStagedPhotos() {
        photoFile.discardStaged()
    }

    /// Keeps the photos in the files at `paths`, all or none: each file's
    /// bytes are staged, then all go to disk together and count as held in
    /// one transaction. A missing file is `noInput`; a file over
    /// `maxPhotoBytes` is bad data; either keeps none of them.
    public func addPhotoFiles(_ paths: [String], now: Timestamp) throws -> [(sha256: String, size: Int)] {
        do {
            let added = try paths.map { try stagePhotoFile($0, now: now) }
            try write { try flushStagedPhotos() }
            return added
        } catch {
            discardStagedPhotos()
            throw error
        }
    }

    /// Reads the file at `path` and stages its bytes; returns the hash and size.
    private func stagePhotoFile(_ path: String, now: Timestamp) throws -> (sha256: String, size: Int) {
        var st = stat()
        guard stat(path, &st) == 0 else {
            let e = errno
            throw FileError(.cannotOpen, path: path, code: e)
        }
        guard st.st_mode & S_IFMT == S_IFREG else { throw FileError(.notRegularFile, path: path) }
        guard Int(st.st_size) <= Store.maxPhotoBytes else {
            throw StoreError(.photoTooLarge, path: path, limit: Store.maxPhotoBytes, size: Int(st.st_size))
        }
        guard let data = FileManager.default.contents(atPath: path) else { throw FileError(.unreadable, path: path) }
        let bytes = [UInt8](data)
        return (try stagePhoto(bytes, now: now, path: path), bytes.count)
    }

    public func photo(_ sha256: String) throws -> [UInt8]? {
        try hasPhoto(sha256) ? photoFile.bytes(sha256) : nil
    }

    /// How many photos the store holds.
    public func photoCount() throws -> Int {
        Int(try db.scalarInt("SELECT count(*) FROM photos") ?? 0)
    }

    /// Whether the store holds the photo, or has it on its way to be held
    /// (staged, or handed to the session's writer).
    public func hasPhoto(_ sha256: String) throws -> Bool {
        if photoFile.isStaged(sha256) || photoWriter?.pending.contains(sha256) == true { return true }
        return try db.scalarInt("SELECT 1 FROM photos WHERE sha256 = ?", [.text(sha256)]) != nil
    }

    /// Photos that live records name but this store does not hold yet.
    public func wantedPhotos(limit: Int = Int.max) throws -> [String] {
        let s = try db.prepare("""
            SELECT DISTINCT rp.sha256 FROM record_photos rp
            WHERE NOT EXISTS (SELECT 1 FROM photos p WHERE p.sha256 = rp.sha256)
            ORDER BY rp.sha256 LIMIT ?
            """)
        try s.bind([.int(Int64(min(limit, Int(Int64.max))))])
        defer { s.reset() }
        var out: [String] = []
        while try s.step() { out.append(s.text(0)) }
        return out
    }
}
