import Foundation
import Testing
import CSQLite
@testable import FamilySync

/// Store creation, permissions, and refusal of files that are not ours.
@Suite struct StoreOpeningTests {
    func mode(_ p: String) -> mode_t {
        var st = stat()
        stat(p, &st)
        return st.st_mode & 0o777
    }

    @Test func createsStoreWithIdentityAndPrivateMode() throws {
        let d = TempFolder("fs-store")
        let p = d.path + "/nested/dir/store.db"
        let s = try Store(path: p)
        let id = try s.deviceID
        #expect(id.count == 36)
        try s.write { try s.setMeta("probe", "1") }
        #expect(mode(p) == 0o600)
        #expect(mode(d.path + "/nested/dir") == 0o700)
        for side in ["-wal", "-shm"] where FileManager.default.fileExists(atPath: p + side) {
            #expect(mode(p + side) == 0o600)
        }
        #expect(try s.integrityCheck() == "ok")
        // Reopening keeps the identity.
        let again = try Store(path: p)
        #expect(try again.deviceID == id)
        #expect(try again.db.scalarText("PRAGMA journal_mode") == "wal")
    }

    func expectRefused(_ p: String, containing text: String) throws {
        let before = try Data(contentsOf: URL(fileURLWithPath: p))
        do {
            _ = try Store(path: p)
            Issue.record("store at \(p) was not refused")
        } catch let e as StoreError {
            #expect(e.kind == .notAStore || e.kind == .newerVersion)
            #expect(e.description.contains(text), "\(e)")
        }
        let after = try Data(contentsOf: URL(fileURLWithPath: p))
        #expect(before == after)
        #expect(!FileManager.default.fileExists(atPath: p + "-wal"))
    }

    @Test func refusesNonStoreFileUntouched() throws {
        let d = TempFolder("fs-store")
        let p = d.path + "/notes.txt"
        try Data("these are my notes, not a database\n".utf8).write(to: URL(fileURLWithPath: p))
        try expectRefused(p, containing: "is not a family-sync store (not an SQLite database)")
        let short = d.path + "/short"
        try Data("SQLite".utf8).write(to: URL(fileURLWithPath: short))
        try expectRefused(short, containing: "not an SQLite database")
    }

    @Test func refusesSomeoneElsesDatabaseUntouched() throws {
        let d = TempFolder("fs-store")
        let p = d.path + "/other.db"
        var h: OpaquePointer?
        sqlite3_open(p, &h)
        sqlite3_exec(h, "CREATE TABLE t(x); INSERT INTO t VALUES (1);", nil, nil, nil)
        sqlite3_close(h)
        try expectRefused(p, containing: "an SQLite database of something else")
    }

    @Test func refusesNewerStoreUntouched() throws {
        let d = TempFolder("fs-store")
        let p = d.path + "/future.db"
        do {
            let s = try Store(path: p)
            try s.db.execute("PRAGMA user_version = \(Schema.currentVersion + 5); PRAGMA journal_mode = DELETE;")
        }
        try expectRefused(p, containing: "was written by a newer family-sync (store version \(Schema.currentVersion + 5)")
    }

    @Test func refusesDirectory() throws {
        let d = TempFolder("fs-store")
        let e = #expect(throws: StoreError.self) { try Store(path: d.path) }
        #expect(e?.kind == .notAStore)
    }

    @Test func emptyFileBecomesStore() throws {
        let d = TempFolder("fs-store")
        let p = d.path + "/empty.db"
        _ = FileManager.default.createFile(atPath: p, contents: Data(), attributes: [.posixPermissions: 0o600])
        let s = try Store(path: p)
        #expect(try s.deviceID.count == 36)
    }

    @Test func defaultPathPrecedence() {
        #expect(Store.defaultPath(environment: ["FAMILY_SYNC_DB": "/x/y.db", "HOME": "/h"]) == "/x/y.db")
        #expect(Store.defaultPath(environment: ["XDG_DATA_HOME": "/data", "HOME": "/h"]) == "/data/family-sync/store.db")
        #expect(Store.defaultPath(environment: ["XDG_DATA_HOME": "relative", "HOME": "/h"]) == "/h/.local/share/family-sync/store.db")
        #expect(Store.defaultPath(environment: ["HOME": "/h"]) == "/h/.local/share/family-sync/store.db")
    }

    @Test func writesAreAllOrNothing() throws {
        let d = TempFolder("fs-store")
        let s = try Store(path: d.path + "/t.db")
        struct Boom: Error {}
        #expect(throws: Boom.self) {
            try s.write {
                try s.setMeta("half", "written")
                throw Boom()
            }
        }
        #expect(try s.meta("half") == nil)
    }

    /// Whether another process sees a POSIX read lock on the byte range SQLite
    /// takes for a shared lock (unix VFS: the 510 bytes after PENDING_BYTE + 2).
    /// Asked from a child process: F_GETLK never reports the caller's own locks.
    func sharedLockHolder(_ path: String) throws -> String {
        let script = """
        import fcntl, os, struct, sys
        fd = os.open(sys.argv[1], os.O_RDWR)
        r = fcntl.fcntl(fd, fcntl.F_GETLK, struct.pack('hhqqi', fcntl.F_WRLCK, 0, 0x40000002, 510, 0))
        t, _, _, _, pid = struct.unpack('hhqqi', r)
        print('none' if t == fcntl.F_UNLCK else pid)
        """
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["python3", "-c", script, path]
        let out = Pipe()
        p.standardOutput = out
        try p.run()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        return text.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Opening a store that this process already has open (serve's discovery
    /// thread does) must not pull the first connection's locks away: without
    /// them, another process closing the store believes it is the last one
    /// and checkpoints and removes the log under the open connection.
    @Test func openingAStoreAgainKeepsTheFirstConnectionsLocks() throws {
        let d = TempFolder("fs-store")
        let p = d.path + "/store.db"
        let first = try Store(path: p)
        try first.write { try first.setMeta("probe", "1") }
        let me = String(getpid())
        #expect(try sharedLockHolder(p) == me)
        let second = try Store(path: p, create: false)
        #expect(try second.meta("probe") == "1")
        #expect(try sharedLockHolder(p) == me, "opening the store again dropped this process's lock on it")
        _ = try? Store(path: d.path + "/missing.db", create: false)
        #expect(try sharedLockHolder(p) == me)
    }
}
