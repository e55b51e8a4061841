import CSQLite
import FoundationEssentials
import Glibc

/// A consistent copy of a store taken while other processes write to it:
/// three files, FILE (the store), FILE-photos (its photo file) and
/// FILE-photos-pack (the photos' bytes). Most recent changes live in the
/// write-ahead log until a checkpoint, so copying the file alone can miss
/// them; VACUUM INTO writes the database as one read transaction sees it,
/// log included, into a new compact file, and the photos it holds are
/// copied as one read transaction of the photo file sees them.
extension Store {
    public struct BackupSummary: Sendable {
        public var bytes: Int64
        public var records: Int64
        public var changeSeq: Int64
        /// The copy's photo file and pack, and the photos the copy holds.
        public var photoFile: String
        public var photoPack: String
        public var photos: Int64
    }

    /// Writes the store to `target` and its photos to `target-photos` and
    /// `target-photos-pack`, which must not exist yet (each is made 0600
    /// first: the copy holds the same secrets and photos as the store). The
    /// store is copied first, then the photos it holds; a photo whose bytes
    /// went between the two (tombstone-gc) is taken out of the copy's store,
    /// so the copy holds exactly the photos whose bytes it has. A failed copy
    /// is removed, every file.
    public func backup(to target: String) throws -> BackupSummary {
        let photoTarget = target + PhotoFile.suffix
        let packTarget = target + PhotoPack.suffix
        var made: [String] = []
        func remove() { for f in made { for suffix in ["", "-journal", "-wal", "-shm"] { unlink(f + suffix) } } }
        for f in [target, photoTarget, packTarget] {
            let fd = open(f, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
            guard fd >= 0 else {
                let why = errno == EEXIST ? "it exists already; a backup goes to a new file" : String(cString: strerror(errno))
                remove()
                throw StoreError(.backupCannotCreate, path: f, detail: why)
            }
            made.append(f)
            fchmod(fd, 0o600)
            Glibc.close(fd)
        }
        var summary = BackupSummary(bytes: 0, records: 0, changeSeq: 0, photoFile: photoTarget, photoPack: packTarget, photos: 0)
        do {
            // VACUUM INTO reads in one transaction of its own; the counts come
            // from the copy, so they describe exactly what was copied.
            try db.run("VACUUM INTO ?", [.text(target)])
            let copy = try Database(path: target)
            try copy.execute("PRAGMA secure_delete = ON; PRAGMA synchronous = FULL")
            var held: Set<String> = []
            let s = try copy.prepare("SELECT sha256 FROM photos")
            while try s.step() { held.insert(s.text(0)) }
            s.reset()
            let copied = try photoFile.copy(held, to: photoTarget, pack: packTarget)
            try copy.transaction {
                for h in held.subtracting(copied) { try copy.run("DELETE FROM photos WHERE sha256 = ?", [.text(h)]) }
            }
            summary.records = try copy.scalarInt("SELECT count(*) FROM records") ?? 0
            summary.photos = try copy.scalarInt("SELECT count(*) FROM photos") ?? 0
            summary.changeSeq = Int64(try copy.scalarText("SELECT value FROM meta WHERE key = 'change_seq'") ?? "0") ?? 0
            try copy.close()
        } catch {
            remove()
            if let e = error as? SQLiteError { throw StoreError(.backupCannotWrite, path: target, detail: e.message) }
            throw error
        }
        // The copies and their names in the folder are on disk before the backup is reported.
        var synced: Int32 = 0
        for f in made where synced == 0 {
            let out = open(f, O_RDONLY | O_CLOEXEC)
            synced = out >= 0 && fsync(out) == 0 ? 0 : errno
            if out >= 0 { Glibc.close(out) }
        }
        if synced == 0 { synced = FileIO.syncFolder(of: target) }
        if synced != 0 {
            remove()
            throw StoreError(.backupCannotWrite, path: target, detail: "syncing it to disk: \(FileIO.describe(synced))")
        }
        var st = stat()
        for f in made where stat(f, &st) == 0 { summary.bytes += Int64(st.st_size) }
        return summary
    }
}
