import CSQLite
import FoundationEssentials
import Glibc

/// A consistent copy of a store taken while other processes write to it.
/// Most recent changes live in the write-ahead log until a checkpoint, so
/// copying the file alone can miss them; VACUUM INTO writes the database as
/// one read transaction sees it, log included, into a new compact file.
extension Store {
    public struct BackupSummary: Sendable {
        public var bytes: Int64
        public var records: Int64
        public var changeSeq: Int64
    }

    /// Writes the store to `target`, which must not exist yet (it is made
    /// 0600 first: it holds the same secrets as the store). A failed copy is removed.
    public func backup(to target: String) throws -> BackupSummary {
        let fd = open(target, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            let why = errno == EEXIST ? "it exists already; a backup goes to a new file" : String(cString: strerror(errno))
            throw StoreError(.backupCannotCreate, path: target, detail: why)
        }
        fchmod(fd, 0o600)
        Glibc.close(fd)
        var summary = BackupSummary(bytes: 0, records: 0, changeSeq: 0)
        do {
            // VACUUM INTO reads in one transaction of its own; the counts come
            // from the copy, so they describe exactly what was copied.
            try db.run("VACUUM INTO ?", [.text(target)])
            let copy = try Database(path: target, flags: SQLITE_OPEN_READONLY)
            summary.records = try copy.scalarInt("SELECT count(*) FROM records") ?? 0
            summary.changeSeq = Int64(try copy.scalarText("SELECT value FROM meta WHERE key = 'change_seq'") ?? "0") ?? 0
        } catch {
            unlink(target)
            if let e = error as? SQLiteError { throw StoreError(.backupCannotWrite, path: target, detail: e.message) }
            throw error
        }
        // The copy and its name in the folder are on disk before the backup is reported.
        let out = open(target, O_RDONLY | O_CLOEXEC)
        var synced = out >= 0 && fsync(out) == 0 ? 0 : errno
        if out >= 0 { Glibc.close(out) }
        if synced == 0 { synced = FileIO.syncFolder(of: target) }
        if synced != 0 {
            unlink(target)
            throw StoreError(.backupCannotWrite, path: target, detail: "syncing it to disk: \(FileIO.describe(synced))")
        }
        var st = stat()
        if stat(target, &st) == 0 { summary.bytes = Int64(st.st_size) }
        return summary
    }
}
