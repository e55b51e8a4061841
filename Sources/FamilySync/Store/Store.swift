import CSQLite
import FoundationEssentials
import Glibc

/// A device's store: one SQLite file in WAL mode holding records, the
/// family, peers, offers, proofs and which photos are held, and beside it
/// the photos' bytes (`PhotoPack`, STORE-photos-pack) and where each one is
/// (`PhotoFile`, STORE-photos). Every write is one
/// transaction. Not Sendable: open one Store per thread or process.
public final class Store {
    public let path: String
    public let db: Database
    /// The photos' bytes, in their own file beside the store.
    let photoFile: PhotoFile
    /// A session's writer of received photos, while one runs (PhotoWriter.swift).
    var photoWriter: PhotoWriter?

    /// The page size of a new store and of its photo file. Photos are
    /// megabyte blobs, and with 4 KiB pages each one is hundreds of overflow
    /// pages, each its own write; 64 KiB pages cut those system calls
    /// sixteenfold. Measured on loopback (photos then in the store's log), a
    /// full sync of 1,000 photos of 1 MB ran about 20% faster, and applying
    /// 1,000,000 records to a new store about 30% faster. Existing stores
    /// keep theirs.
    public static let pageSize = 65536

    /// Opens the store at `path`, creating it (0600) on first use. A file that
    /// is not a family-sync store, or a store from a newer version, is refused
    /// and left byte-for-byte as it was.
    public init(path: String, create: Bool = true) throws {
        self.path = path
        let existing = try Store.inspect(path: path, create: create)
        if !existing { try Store.createFile(path: path) } else { looserModeFixed = Store.tightenMode(path: path) }
        do {
            db = try Database(path: path)
        } catch let e as SQLiteError {
            throw StoreError(.cannotOpen, path: path, detail: e.message)
        }
        // The page size only takes on a database with nothing in it yet, and must come before WAL mode.
        // Switching a new file to WAL mode needs it to itself; when another process
        // is creating the same store, SQLite answers "busy" at once rather than wait.
        var waited = 0
        while true {
            do {
                try db.execute("PRAGMA page_size = \(Store.pageSize); PRAGMA journal_mode = WAL; PRAGMA foreign_keys = ON; \(Store.connectionPragmas)")
                break
            } catch let e as SQLiteError where e.isBusy && waited < Int(Database.busyTimeoutMilliseconds) {
                usleep(1000)
                waited += 1
            }
        }
        do { photoFile = try PhotoFile(storePath: path) } catch { try? db.close(); throw error }
        let before = try migrate()
        if photoFile.made, before >= Schema.photoFileVersion {
            // The photo file was not there (a store put back without it): the
            // photos it held are wanted again, not taken for held.
            try write { try db.run("DELETE FROM photos") }
            photosForgotten = db.changes
        }
        // A new store's first steps (the switch to WAL mode) went through a
        // rollback journal SQLite deleted; that deletion reaches the disk
        // with the folder, else a power cut brings the journal back.
        if !existing { try Store.syncFolder(of: path) }
    }

    /// A second connection to this same store, for another thread of this
    /// process, without the checks and migration `init(path:)` runs: the
    /// first connection has passed them already.
    public func anotherConnection() throws -> Store {
        do {
            let db = try Database(path: path, flags: SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX)
            try db.execute("PRAGMA foreign_keys = ON; \(Store.connectionPragmas)")
            return Store(path: path, db: db, photoFile: try PhotoFile(storePath: path))
        } catch let e as SQLiteError {
            throw StoreError(.cannotOpen, path: path, detail: e.message)
        }
    }

    /// The mode the store's file had when it was found readable or writable
    /// by others (a file touched or copied into place) and set to 0600 before
    /// anything was read or written; a tool says so on stderr.
    public private(set) var looserModeFixed: mode_t?

    /// The files a store may have beside it, each its path with this after
    /// it: SQLite's log, its index and a journal, the photo file and its
    /// journal, and the photos' pack.
    public static let companionSuffixes = ["-wal", "-shm", "-journal", PhotoFile.suffix, PhotoFile.suffix + "-journal", PhotoPack.suffix]

    /// The photo file beside the store: the index of the photos' bytes, which are in its pack.
    public var photoFilePath: String { photoFile.path }
    /// The photos' bytes, beside the photo file.
    public var photoPackPath: String { photoFile.pack.path }

    /// How many photos the store took for held when opened, whose photo file
    /// or pack was missing: they are wanted again (a tool says so on stderr).
    public private(set) var photosForgotten = 0

    private init(path: String, db: Database, photoFile: PhotoFile) {
        self.path = path
        self.db = db
        self.photoFile = photoFile
    }

    /// Every connection overwrites what it deletes or replaces with zeros
    /// (`secure_delete`), so an old key's bytes do not linger in free space
    /// of the file.
    /// Every commit is on disk when it returns (`synchronous = FULL`: the
    /// write-ahead log is fsynced at each commit), so a tool that wrote and
    /// exits 0 has its write durable even beside a `serve` that keeps the
    /// store open, where no close-time checkpoint runs. A sync session relaxes
    /// this between its durable points (`Store.deferringSyncs`).
    static let connectionPragmas = "PRAGMA secure_delete = ON; PRAGMA synchronous = FULL;"

    /// After a secret was replaced: copies the log into the file and truncates
    /// it, so the old versions of the pages (the old key among them) are
    /// overwritten in the file and gone from the log. Returns false when a
    /// reader elsewhere still holds an older snapshot (the next checkpoint
    /// then does it).
    @discardableResult
    public func scrubReplacedSecrets() throws -> Bool {
        try db.scalarInt("PRAGMA wal_checkpoint(TRUNCATE)") == 0
    }

    /// The store path from `--db`, else `$FAMILY_SYNC_DB`, else the per-user
    /// data directory (`$XDG_DATA_HOME/family-sync/store.db`).
    public static func defaultPath(environment env: [String: String] = ProcessInfo.processInfo.environment) -> String {
        if let p = env["FAMILY_SYNC_DB"], !p.isEmpty { return p }
        let base: String
        if let x = env["XDG_DATA_HOME"], x.hasPrefix("/") { base = x }
        else { base = (env["HOME"] ?? homeFromPasswd()) + "/.local/share" }
        return base + "/family-sync/store.db"
    }

    /// The home folder from the password database, for a process without $HOME.
    private static func homeFromPasswd() -> String {
        guard let pw = getpwuid(getuid()), let dir = pw.pointee.pw_dir else { return "/" }
        return String(cString: dir)
    }

    /// Checks an existing file without writing to it. Returns whether it exists.
    private static func inspect(path: String, create: Bool) throws -> Bool {
        var st = stat()
        if stat(path, &st) != 0 {
            guard errno == ENOENT else { throw StoreError(.cannotRead, path: path, detail: String(cString: strerror(errno))) }
            guard create else { throw StoreError(.missing, path: path) }
            return false
        }
        guard st.st_mode & S_IFMT == S_IFREG else { throw StoreError(.notAStore, path: path, detail: "not a regular file") }
        if st.st_size == 0 { return true }
        // Read the header through SQLite's own file handle on a read-only
        // connection, so nothing (not even a WAL switch) touches a file we refuse.
        // Not through a descriptor of our own: closing it would drop every POSIX
        // lock this process holds on the file, other connections' included.
        let db: Database
        do { db = try Database(path: path, flags: SQLITE_OPEN_READONLY) } catch let e as SQLiteError {
            throw StoreError(.cannotRead, path: path, detail: e.problem)
        }
        let magic = Array("SQLite format 3\0".utf8)
        guard let header = db.fileHeader(count: 100), Array(header[0..<16]) == magic else {
            throw StoreError(.notAStore, path: path, detail: "not an SQLite database")
        }
        // The header's own copies of user_version and application_id lag behind in WAL mode,
        // so ask SQLite, on a read-only connection that cannot change the file.
        let userVersion: Int32, appID: Int32, tables: Int64
        do {
            // One read transaction, so all three come from the same snapshot even
            // while another process is creating the store.
            try db.execute("BEGIN")
            defer { try? db.execute("COMMIT") }
            userVersion = Int32(truncatingIfNeeded: try db.scalarInt("PRAGMA user_version") ?? 0)
            appID = Int32(truncatingIfNeeded: try db.scalarInt("PRAGMA application_id") ?? 0)
            tables = try db.scalarInt("SELECT count(*) FROM sqlite_schema") ?? 0
        } catch let e as SQLiteError {
            if e.isNotADatabase { throw StoreError(.notAStore, path: path, detail: "a damaged SQLite database: \(e.message)") }
            throw StoreError(.cannotRead, path: path, detail: e.problem)
        }
        if appID == 0 && userVersion == 0 {
            // An SQLite file with no schema of ours yet: only an empty one may become a store.
            guard tables == 0 else { throw StoreError(.notAStore, path: path, detail: "an SQLite database of something else") }
            return true
        }
        guard appID == Schema.applicationID else {
            throw StoreError(.notAStore, path: path, detail: "an SQLite database of something else")
        }
        guard userVersion <= Schema.currentVersion else {
            throw StoreError(.newerVersion, path: path, version: Int(userVersion))
        }
        return true
    }

    /// Creates the store file (or its photo file) with mode 0600 (and its
    /// folder with 0700) before SQLite opens it; SQLite gives its -wal, -shm
    /// and -journal files the same mode.
    static func createFile(path: String) throws {
        let dir = PathText.directory(path)
        if !dir.isEmpty, !FileManager.default.fileExists(atPath: dir) {
            // The folders made here, outermost first: each is synced into its parent below.
            var made: [String] = []
            var d = dir
            while !d.isEmpty, d != "/", !FileManager.default.fileExists(atPath: d) {
                made.insert(d, at: 0)
                d = PathText.directory(d)
            }
            do {
                try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            } catch {
                throw StoreError(.cannotCreateFolder, path: path, detail: "\(error)", other: dir)
            }
            for folder in made {
                let e = FileIO.syncFolder(of: folder)
                if e != 0 { throw StoreError(.cannotCreateFolder, path: path, detail: "syncing it to disk: \(FileIO.describe(e))", other: folder) }
            }
        }
        // O_NOFOLLOW with O_EXCL: a link at the path (one pointing nowhere,
        // which stat took for no file) is refused, never followed to make the
        // store, secrets and all, wherever it points.
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        if fd < 0 {
            if errno == EEXIST {
                var st = stat()
                if lstat(path, &st) == 0, st.st_mode & S_IFMT == S_IFLNK {
                    throw StoreError(.cannotCreate, path: path, detail: "it is a symbolic link to a file that does not exist; a new store is made only at a path that is not a link")
                }
                return  // another process created it first
            }
            throw StoreError(.cannotCreate, path: path, detail: String(cString: strerror(errno)))
        }
        fchmod(fd, 0o600)
        let synced = fsync(fd) == 0 ? 0 : errno
        Glibc.close(fd)
        if synced != 0 { throw StoreError(.cannotCreate, path: path, detail: FileIO.describe(synced)) }
        try syncFolder(of: path)
    }

    /// fsyncs the folder holding `path`, so a file made, renamed or removed
    /// there survives a power cut.
    static func syncFolder(of path: String) throws {
        let e = FileIO.syncFolder(of: path)
        if e != 0 { throw StoreError(.cannotCreate, path: path, detail: "syncing its folder to disk: \(FileIO.describe(e))") }
    }

    /// Sets the store's file, SQLite's -wal and -shm beside it and the photo
    /// file and its journal to 0600 when others may read or write them (a
    /// store holds the family's keys). Returns the mode found, when it was looser.
    private static func tightenMode(path: String) -> mode_t? {
        var found: mode_t?
        for suffix in [""] + Store.companionSuffixes {
            var st = stat()
            guard stat(path + suffix, &st) == 0, st.st_mode & S_IFMT == S_IFREG, st.st_mode & 0o077 != 0 else { continue }
            if chmod(path + suffix, 0o600) == 0, suffix.isEmpty { found = st.st_mode & 0o7777 }
        }
        return found
    }

    /// Brings the store to the current schema; returns the version it found.
    private func migrate() throws -> Int32 {
        let version = Int32(try db.scalarInt("PRAGMA user_version") ?? 0)
        if version == Schema.currentVersion { return version }
        if version > 0, version < Schema.photoFileVersion { try copyPhotoBytesOut() }
        try db.transaction {
            // Re-read inside the write lock: another process may have migrated meanwhile.
            let v = Int32(try db.scalarInt("PRAGMA user_version") ?? 0)
            guard v < Schema.currentVersion else { return }
            let linesWithCR = v > 0 && v < Schema.noCRVersion
                ? try db.scalarInt("SELECT count(*) FROM records WHERE instr(line, char(13)) > 0") ?? 0 : 0
            for i in Int(v)..<Schema.migrations.count { try db.execute(Schema.migrations[i]) }
            if v < Schema.keptDigestVersion || linesWithCR > 0 { try setStoredRecordDigest(try computeRecordDigest()) }
            if v > 0 && v < Schema.evidenceVersion {
                // Tombstones held until now came with no time of holding: their delete
                // times still judge their age (Tombstones.swift). Revision 2's purge
                // floor goes: a time cannot tell a purged record from one made while a
                // device was away, and a record that comes back can be deleted again,
                // while one refused is lost (docs/design.md §4).
                try setMeta("evidence_since_seq", try meta("change_seq") ?? "0")
                try setMeta("purge_floor", nil)
            }
            if v == 0 {
                try db.run("INSERT INTO meta (key, value) VALUES ('device_id', ?), ('created_at', ?), ('change_seq', '0')",
                           [.text(try randomUUID()), .text(Timestamp.current().rfc3339)])
            }
            try db.execute("PRAGMA application_id = \(Schema.applicationID); PRAGMA user_version = \(Schema.currentVersion)")
        }
        // The bytes that left a store for its photo file leave free pages
        // behind; a large store gives them back to the disk once.
        if version > 0, version < Schema.photoFileVersion,
           let free = try db.scalarInt("PRAGMA freelist_count"), let page = try db.scalarInt("PRAGMA page_size"), free * page > 64 << 20 {
            try? db.execute("VACUUM")
        }
        return version
    }

    /// Before version 9 drops the bytes from `photos`: copies them into the
    /// photo file, a few photos to a commit, each commit on disk before the
    /// next. Run again after a crash, it copies again what is not there yet.
    private func copyPhotoBytesOut() throws {
        guard try db.scalarInt("SELECT 1 FROM pragma_table_info('photos') WHERE name = 'bytes'") != nil else { return }
        var after: Int64 = 0
        while true {
            var last: Int64?
            let s = try db.prepare("SELECT rowid, sha256, added_at, bytes FROM photos WHERE rowid > ? ORDER BY rowid LIMIT 16")
            try s.bind([.int(after)])
            while try s.step() {
                last = s.int64(0)
                let h = s.text(1)
                if try photoFile.has(h) { continue }
                let bytes = s.blob(3)
                try photoFile.stage(bytes, sha256: h, addedAt: s.int64(2))
            }
            s.reset()
            _ = try photoFile.commitStaged()
            guard let l = last else { break }
            after = l
        }
    }

    // MARK: Identity and small values

    /// This device's identity, a random UUID made when the store was created.
    public var deviceID: String {
        get throws {
            guard let id = try meta("device_id") else { throw StoreError(.noDeviceIdentity, path: path) }
            return id
        }
    }

    /// A small value from the `meta` (facts about this store) or `settings`
    /// (what the user set) table; both are key/value tables of one shape.
    private enum KeyValueTable: String { case meta, settings }

    private func value(_ table: KeyValueTable, _ key: String) throws -> String? {
        try db.scalarText("SELECT value FROM \(table.rawValue) WHERE key = ?", [.text(key)])
    }
    /// Sets (or, with nil, removes) a value. Call inside `write` when it must commit with other changes.
    private func setValue(_ table: KeyValueTable, _ key: String, _ value: String?) throws {
        if let value {
            try db.run("INSERT INTO \(table.rawValue) (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                       [.text(key), .text(value)])
        } else {
            try db.run("DELETE FROM \(table.rawValue) WHERE key = ?", [.text(key)])
        }
    }

    public func meta(_ key: String) throws -> String? { try value(.meta, key) }
    public func setMeta(_ key: String, _ value: String?) throws { try setValue(.meta, key, value) }
    public func setting(_ key: String) throws -> String? { try value(.settings, key) }
    public func setSetting(_ key: String, _ value: String?) throws { try setValue(.settings, key, value) }

    /// SQLite's `data_version` on this connection: it changes whenever
    /// another connection commits, so a reader knows when what it derived
    /// from the store (the keys a server tries) must be read again.
    var dataVersion: Int64 {
        get throws { try db.scalarInt("PRAGMA data_version") ?? 0 }
    }

    /// Secret material, read straight from SQLite into its owner; callers must never print or log it.
    public func secret(_ name: String) throws -> SecretBytes? {
        let s = try db.prepare("SELECT value FROM secrets WHERE name = ?")
        try s.bind([.text(name)])
        defer { s.reset() }
        return try s.step() ? s.withBytes(0) { SecretBytes($0) } : nil
    }
    public func setSecret(_ name: String, _ value: SecretBytes) throws {
        try db.run("INSERT INTO secrets (name, value) VALUES (?, ?) ON CONFLICT(name) DO UPDATE SET value = excluded.value", [.text(name), .secret(value)])
    }

    /// Runs `body` as one write transaction.
    public func write<T>(_ body: () throws -> T) throws -> T {
        try db.transaction(body)
    }

    /// Runs `body` as one read transaction, so what it reads is one consistent
    /// state (an export and the cursor it leaves agree exactly).
    public func read<T>(_ body: () throws -> T) throws -> T {
        try db.readTransaction(body)
    }

    /// `PRAGMA integrity_check` of the store and of its photo file, and
    /// whether the pack holds every photo the photo file names: "ok" when
    /// all are sound, else what each said.
    public func integrityCheck() throws -> String {
        let store = try db.scalarText("PRAGMA integrity_check") ?? "no answer"
        var photos = try photoFile.db.scalarText("PRAGMA integrity_check") ?? "no answer"
        if photos == "ok", let wrong = try photoFile.packCheck() { photos = wrong }
        return store == "ok" && photos == "ok" ? "ok" : "store: \(store); photo file: \(photos)"
    }
}
