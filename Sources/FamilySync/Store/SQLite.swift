import CSQLite
import FoundationEssentials
import Glibc

/// An SQLite failure: what we were doing, the result code and SQLite's message.
public struct SQLiteError: Error, CustomStringConvertible, Sendable {
    public var code: Int32
    /// What was being done, in words ("writing the store").
    public var context: String
    public var message: String
    /// The store file, named first in every message.
    public var path: String?
    /// The SQL that failed, for a debugger; never part of a message.
    public var statement: String?

    public init(code: Int32, context: String, message: String, path: String? = nil, statement: String? = nil) {
        self.code = code
        self.context = context
        self.message = message
        self.path = path
        self.statement = statement
    }

    /// `PATH: what was being done: what is wrong`, in words.
    public var description: String { "\(path ?? "store"): \(context): \(problem)" }

    /// The common failures said plainly; others in SQLite's words.
    public var problem: String {
        switch code & 0xFF {
        case SQLITE_READONLY: return "the store is read-only (its file, or the folder holding it, cannot be written)"
        case SQLITE_FULL: return "the disk is full"
        case SQLITE_BUSY, SQLITE_LOCKED: return "another process holds the store locked; try again"
        default: return message
        }
    }

    /// "reading the store", "writing the store" or "a transaction", from a
    /// statement's first word.
    static func context(of sql: String) -> String {
        switch sql.drop(while: { $0 == " " || $0 == "\n" }).prefix(while: { $0.isLetter }).uppercased() {
        case "SELECT", "WITH": return "reading the store"
        case "INSERT", "UPDATE", "DELETE", "REPLACE", "CREATE", "DROP", "ALTER": return "writing the store"
        case "BEGIN", "COMMIT", "END", "ROLLBACK", "SAVEPOINT", "RELEASE": return "a transaction"
        case "PRAGMA": return "the store's settings"
        default: return "working on the store"
        }
    }
    public var isBusy: Bool { code & 0xFF == SQLITE_BUSY || code & 0xFF == SQLITE_LOCKED }
    /// The file is not a database, or is damaged.
    public var isNotADatabase: Bool { code & 0xFF == SQLITE_NOTADB || code & 0xFF == SQLITE_CORRUPT }
}

/// One SQLite connection. Not Sendable: a connection belongs to one thread
/// at a time. Prepared statements are cached by SQL text and reset after use.
public final class Database {
    public let path: String
    let handle: OpaquePointer
    private var cache: [String: Statement] = [:]
    private var closed = false

    /// How long a writer waits for another process's lock before failing.
    public static let busyTimeoutMilliseconds: Int32 = 10_000

    public init(path: String, flags: Int32 = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX) throws {
        self.path = path
        var db: OpaquePointer?
        let rc = sqlite3_open_v2(path, &db, flags, nil)
        guard rc == SQLITE_OK, let db else {
            let msg = db.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            if let db { sqlite3_close_v2(db) }
            throw SQLiteError(code: rc, context: "opening", message: msg, path: path)
        }
        handle = db
        sqlite3_extended_result_codes(db, 1)
        sqlite3_busy_handler(db, { _, tries in
            // Poll every millisecond rather than SQLite's backoff (up to 100 ms a sleep):
            // a writer then gets in during the short pauses between tombstone-gc's batches.
            guard tries < Database.busyTimeoutMilliseconds else { return 0 }
            usleep(1000)
            return 1
        }, nil)
    }

    deinit {
        guard !closed else { return }
        cache.removeAll()
        sqlite3_close_v2(handle)
    }

    /// Closes the connection, saying so when SQLite cannot: a tool that
    /// wrote calls this before it exits 0. Nothing may use the connection after.
    public func close() throws {
        guard !closed else { return }
        closed = true
        cache.removeAll()
        let rc = sqlite3_close_v2(handle)
        guard rc == SQLITE_OK else {
            throw SQLiteError(code: rc, context: "closing the store", message: String(cString: sqlite3_errstr(rc)), path: path)
        }
    }

    /// Puts on the disk everything this connection has committed: fsyncs the
    /// write-ahead log (where a commit lives until a checkpoint copies it
    /// back) and the database file, through SQLite's own handles of them (a
    /// descriptor of our own would drop the process's locks when closed). A
    /// log SQLite has just made is synced with its folder, by SQLite. Throws
    /// when a sync fails: then nothing since the last durable point is known
    /// to be on disk.
    public func syncToDisk() throws {
        for op in [SQLITE_FCNTL_JOURNAL_POINTER, SQLITE_FCNTL_FILE_POINTER] {
            var file: UnsafeMutablePointer<sqlite3_file>?
            guard sqlite3_file_control(handle, "main", op, &file) == SQLITE_OK,
                  let file, let sync = file.pointee.pMethods?.pointee.xSync else { continue }
            let rc = sync(file, SQLITE_SYNC_NORMAL)
            guard rc == SQLITE_OK else {
                let what = op == SQLITE_FCNTL_JOURNAL_POINTER ? "syncing the write-ahead log to disk" : "syncing the store to disk"
                throw SQLiteError(code: rc, context: what, message: String(cString: sqlite3_errstr(rc)), path: path)
            }
        }
    }

    /// The first `count` bytes of the main database file, read through
    /// SQLite's own handle of it; nil when the file is shorter. A descriptor
    /// of our own would have to be closed, and closing any descriptor of a
    /// file drops every POSIX lock the process holds on it, which SQLite's
    /// other connections to the same file rely on.
    func fileHeader(count: Int) -> [UInt8]? {
        var file: UnsafeMutablePointer<sqlite3_file>?
        guard sqlite3_file_control(handle, "main", SQLITE_FCNTL_FILE_POINTER, &file) == SQLITE_OK,
              let file, let read = file.pointee.pMethods?.pointee.xRead else { return nil }
        var out = [UInt8](repeating: 0, count: count)
        let rc = out.withUnsafeMutableBytes { read(file, $0.baseAddress, Int32($0.count), 0) }
        return rc == SQLITE_OK ? out : nil
    }

    /// Turns a result code into a thrown error naming what we were doing.
    @discardableResult
    public func check(_ rc: Int32, _ context: @autoclosure () -> String) throws -> Int32 {
        switch rc {
        case SQLITE_OK, SQLITE_ROW, SQLITE_DONE: return rc
        default: throw SQLiteError(code: rc, context: context(), message: String(cString: sqlite3_errmsg(handle)), path: path)
        }
    }

    /// Runs one or more statements with no parameters and no results.
    public func execute(_ sql: String) throws {
        var err: UnsafeMutablePointer<CChar>?
        let rc = sqlite3_exec(handle, sql, nil, nil, &err)
        if rc != SQLITE_OK {
            let msg = err.map { String(cString: $0) } ?? String(cString: sqlite3_errmsg(handle))
            sqlite3_free(err)
            throw SQLiteError(code: rc, context: SQLiteError.context(of: sql), message: msg, path: path, statement: sql)
        }
    }

    /// A cached prepared statement, reset and unbound, ready for binding.
    public func prepare(_ sql: String) throws -> Statement {
        if let s = cache[sql] {
            s.reset()
            return s
        }
        let s = try Statement(db: self, sql: sql)
        cache[sql] = s
        return s
    }

    /// Runs `body` inside one write transaction (BEGIN IMMEDIATE, so the
    /// write lock is taken up front and waits on the busy timeout rather
    /// than failing mid-way). Rolls back on any thrown error.
    public func transaction<T>(_ body: () throws -> T) throws -> T {
        try execute("BEGIN IMMEDIATE")
        do {
            let v = try body()
            try execute("COMMIT")
            return v
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
    }

    /// Runs `body` inside one read transaction: every query sees the same snapshot.
    public func readTransaction<T>(_ body: () throws -> T) throws -> T {
        try execute("BEGIN")
        defer { try? execute("COMMIT") }
        return try body()
    }

    public var changes: Int { Int(sqlite3_changes(handle)) }
    /// Whether this connection has changed any row since it opened.
    public var hasWritten: Bool { sqlite3_total_changes64(handle) > 0 }
    public var lastInsertRowID: Int64 { sqlite3_last_insert_rowid(handle) }

    /// A single integer from a query, or nil when there is no row.
    public func scalarInt(_ sql: String, _ args: [SQLValue] = []) throws -> Int64? {
        let s = try prepare(sql)
        try s.bind(args)
        defer { s.reset() }
        return try s.step() ? s.int64(0) : nil
    }

    public func scalarText(_ sql: String, _ args: [SQLValue] = []) throws -> String? {
        let s = try prepare(sql)
        try s.bind(args)
        defer { s.reset() }
        return try s.step() ? s.text(0) : nil
    }

    /// Runs one statement with parameters, ignoring any rows.
    public func run(_ sql: String, _ args: [SQLValue] = []) throws {
        let s = try prepare(sql)
        try s.bind(args)
        defer { s.reset() }
        while try s.step() {}
    }
}

/// A value bound to a statement parameter.
public enum SQLValue: Sendable {
    case null
    case int(Int64)
    case text(String)
    case blob([UInt8])
    /// Key material, bound without an intermediate copy (SQLite takes its own).
    case secret(SecretBytes)
    case double(Double)
}

/// A prepared statement owned by its Database's cache.
public final class Statement {
    let stmt: OpaquePointer
    unowned let db: Database
    let sql: String

    init(db: Database, sql: String) throws {
        self.db = db
        self.sql = sql
        var s: OpaquePointer?
        let rc = sqlite3_prepare_v3(db.handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &s, nil)
        guard rc == SQLITE_OK, let s else {
            throw SQLiteError(code: rc, context: SQLiteError.context(of: sql), message: String(cString: sqlite3_errmsg(db.handle)), path: db.path, statement: sql)
        }
        stmt = s
    }
    deinit { sqlite3_finalize(stmt) }

    public func reset() {
        sqlite3_reset(stmt)
        sqlite3_clear_bindings(stmt)
    }

    public func bind(_ values: [SQLValue]) throws {
        for (i, v) in values.enumerated() { try bind(v, at: Int32(i + 1)) }
    }

    public func bind(_ v: SQLValue, at i: Int32) throws {
        let rc: Int32
        switch v {
        case .null: rc = sqlite3_bind_null(stmt, i)
        case let .int(x): rc = sqlite3_bind_int64(stmt, i, x)
        case let .double(x): rc = sqlite3_bind_double(stmt, i, x)
        case let .text(s):
            // By its length, never up to a NUL: an id may hold U+0000 and is a whole string here too.
            var s = s
            try s.withUTF8 { try bindText(UnsafeRawBufferPointer($0), at: i) }
            return
        case let .blob(b): rc = b.withUnsafeBytes { sqlite3_bind_blob64(stmt, i, $0.baseAddress ?? UnsafeRawPointer(bitPattern: 1), sqlite3_uint64(b.count), fs_sqlite_transient()) }
        case let .secret(k): rc = k.withUnsafeBytes { sqlite3_bind_blob64(stmt, i, $0.baseAddress ?? UnsafeRawPointer(bitPattern: 1), sqlite3_uint64($0.count), fs_sqlite_transient()) }
        }
        try db.check(rc, "binding parameter \(i)")
    }

    /// Binds text straight from UTF-8 bytes without making a String.
    public func bindText(_ bytes: UnsafeRawBufferPointer, at i: Int32) throws {
        let empty: StaticString = ""
        let p = bytes.baseAddress?.assumingMemoryBound(to: CChar.self)
            ?? UnsafeRawPointer(empty.utf8Start).assumingMemoryBound(to: CChar.self)
        let rc = sqlite3_bind_text64(stmt, i, p, sqlite3_uint64(bytes.count), fs_sqlite_transient(), UInt8(SQLITE_UTF8))
        try db.check(rc, "binding parameter \(i)")
    }

    /// Steps once: true when a row is available, false when done.
    public func step() throws -> Bool {
        let rc = sqlite3_step(stmt)
        if rc == SQLITE_ROW { return true }
        if rc == SQLITE_DONE { return false }
        let err = SQLiteError(code: rc, context: SQLiteError.context(of: sql), message: String(cString: sqlite3_errmsg(db.handle)), path: db.path, statement: sql)
        sqlite3_reset(stmt)
        throw err
    }

    public func isNull(_ col: Int32) -> Bool { sqlite3_column_type(stmt, col) == SQLITE_NULL }
    public func int64(_ col: Int32) -> Int64 { sqlite3_column_int64(stmt, col) }
    public func double(_ col: Int32) -> Double { sqlite3_column_double(stmt, col) }
    public func text(_ col: Int32) -> String {
        // By the column's length, never up to a NUL (see bind).
        guard let p = sqlite3_column_text(stmt, col) else { return "" }
        return String(decoding: UnsafeRawBufferPointer(start: p, count: Int(sqlite3_column_bytes(stmt, col))), as: UTF8.self)
    }
    public func optionalText(_ col: Int32) -> String? { isNull(col) ? nil : text(col) }
    public func optionalInt64(_ col: Int32) -> Int64? { isNull(col) ? nil : int64(col) }
    /// The column's bytes, valid until the next step or reset.
    public func withBytes<T>(_ col: Int32, _ body: (UnsafeRawBufferPointer) throws -> T) rethrows -> T {
        let n = Int(sqlite3_column_bytes(stmt, col))
        let p = sqlite3_column_blob(stmt, col)
        return try body(UnsafeRawBufferPointer(start: p, count: p == nil ? 0 : n))
    }
    public func blob(_ col: Int32) -> [UInt8] { withBytes(col) { Array($0) } }
}
