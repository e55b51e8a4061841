import FoundationEssentials
import Glibc

/// Photo bytes, content-addressed by SHA-256, kept inside the store so a
/// photo and the records naming it commit together (a crash never leaves a
/// half-written file or a dangling path).
extension Store {
    /// The largest photo accepted, in bytes.
    public static let maxPhotoBytes = 64 << 20

    /// Keeps `bytes` and returns their lowercase SHA-256 hex. Idempotent.
    @discardableResult
    public func addPhoto(_ bytes: [UInt8], now: Timestamp) throws -> String {
        guard bytes.count <= Store.maxPhotoBytes else {
            throw StoreError(.photoTooLarge, limit: Store.maxPhotoBytes, size: bytes.count)
        }
        let hash = Hex.encode(SHA256.hash(bytes))
        try db.run("INSERT OR IGNORE INTO photos (sha256, size, added_at, bytes) VALUES (?, ?, ?, ?)",
                   [.text(hash), .int(Int64(bytes.count)), .int(now.milliseconds), .blob(bytes)])
        return hash
    }

    /// Keeps a photo received from a peer only if its bytes hash to `sha256`.
    /// Returns false (and keeps nothing) on a mismatch.
    public func addVerifiedPhoto(_ bytes: [UInt8], sha256: String, now: Timestamp) throws -> Bool {
        guard Hex.encode(SHA256.hash(bytes)) == sha256 else { return false }
        try addPhoto(bytes, now: now)
        return true
    }

    /// Reads the file at `path` and keeps its bytes; returns the hash and size.
    /// A missing file is `noInput`; a file over `maxPhotoBytes` is bad data.
    public func addPhotoFile(_ path: String, now: Timestamp) throws -> (sha256: String, size: Int) {
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
        guard bytes.count <= Store.maxPhotoBytes else {
            throw StoreError(.photoTooLarge, path: path, limit: Store.maxPhotoBytes, size: bytes.count)
        }
        return (try addPhoto(bytes, now: now), bytes.count)
    }

    public func photo(_ sha256: String) throws -> [UInt8]? {
        let s = try db.prepare("SELECT bytes FROM photos WHERE sha256 = ?")
        try s.bind([.text(sha256)])
        defer { s.reset() }
        return try s.step() ? s.blob(0) : nil
    }

    /// How many photos the store holds.
    public func photoCount() throws -> Int {
        Int(try db.scalarInt("SELECT count(*) FROM photos") ?? 0)
    }

    public func hasPhoto(_ sha256: String) throws -> Bool {
        try db.scalarInt("SELECT 1 FROM photos WHERE sha256 = ?", [.text(sha256)]) != nil
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
