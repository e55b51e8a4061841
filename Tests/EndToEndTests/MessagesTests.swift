import Foundation
import Testing
import FamilySync

/// Messages that name what is wrong, in words: the file, the address, the
/// option; never SQL, never OpenSSL's codes, never the same thing twice.
@Suite struct MessagesTests {
    static let sqlWords = ["SELECT", "INSERT", "UPDATE", "DELETE", "FROM", "WHERE", "PRAGMA", "BEGIN", "COMMIT"]

    /// Runs `tool args` as a user who can read the store `db` but not write
    /// it (its folder stays writable, for the write-ahead log): as root,
    /// through setpriv(1) as nobody on root-owned 0644 files (the store, its
    /// photo file, that file's journal and the pack); otherwise after chmod 0444.
    static func runReadOnly(_ dir: TempDir, _ db: String, _ tool: String, _ args: [String], input: String = "") throws -> ToolResult {
        if getuid() == 0 {
            chmod(dir.path, 0o777)
            chmod(db, 0o644)
            for f in [db + "-photos", db + "-photos-journal", db + "-photos-pack"] { chmod(f, 0o644) }
            // nobody runs a copy in the test's folder: the checkout may be in a
            // folder only root can enter (/root/src, a mktemp folder).
            let copy = dir.file(tool)
            try? FileManager.default.removeItem(atPath: copy)
            // The binary itself under the tool's name (the tools are links to a multi-call binary that reads its name).
            try FileManager.default.copyItem(atPath: URL(fileURLWithPath: Tools.path(tool)).resolvingSymlinksInPath().path, toPath: copy)
            chmod(copy, 0o755)
            return try Tools.run("/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", copy] + args,
                                 stdin: Data(input.utf8))
        }
        chmod(db, 0o444)
        for f in [db + "-photos", db + "-photos-journal", db + "-photos-pack"] { chmod(f, 0o444) }
        defer { for f in [db, db + "-photos", db + "-photos-journal", db + "-photos-pack"] { chmod(f, 0o600) } }
        return try Tools.run(tool, args, stdin: Data(input.utf8))
    }

    /// A store this user can read but not write, with one record in it.
    static func readOnlyStore(_ dir: TempDir) throws -> String {
        let db = dir.file("kid.db")
        let r = try Tools.run("merge-records", ["--db", db, "--stamp"], input: "{\"id\":\"r-1\",\"type\":\"receipt\"}\n")
        #expect(r.status == 0, "\(r.err)")
        // Folded back into the main file, so reading needs no write-ahead log.
        try Store(path: db).db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return db
    }

    @Test(arguments: [
        ("merge-records", ["--stamp"], "{\"id\":\"r-2\",\"type\":\"receipt\"}\n"),
        ("tombstone-gc", [], ""),
        ("pair-qr", ["-o", "PAIR"], ""),
    ])
    func aReadOnlyStoreIsNamedAndSaidInWords(tool: String, args: [String], input: String) throws {
        let dir = TempDir()
        let db = try Self.readOnlyStore(dir)
        let before = try Household.fingerprint(db)
        let r = try Self.runReadOnly(dir, db, tool, ["--db", db] + args.map { $0 == "PAIR" ? dir.file("pair.png") : $0 }, input: input)
        #expect(r.status == 74, "\(r.err)")
        #expect(r.err.hasPrefix("\(tool): \(db)"), "the message names the store first: \(r.err)")
        #expect(r.err.contains("read-only"), "\(r.err)")
        #expect(!Self.sqlWords.contains { r.err.contains($0) }, "SQL in a message: \(r.err)")
        #expect(!r.err.contains("attempt to write"), "\(r.err)")
        #expect(r.err.split(separator: "\n").count == 1, "\(r.err)")
        #expect(try Household.fingerprint(db) == before)
    }

    /// A listener that answers a TLS hello with an HTTP error, as a web
    /// server on the wrong port would.
    final class NotAPeer: @unchecked Sendable {
        let fd: Int32
        let port: UInt16
        init() throws {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            self.fd = fd
            var a = sockaddr_in()
            a.sin_family = sa_family_t(AF_INET)
            a.sin_addr.s_addr = inet_addr("127.0.0.1")
            var len = socklen_t(MemoryLayout<sockaddr_in>.size)
            let ok = withUnsafeMutablePointer(to: &a) { p in
                p.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) == 0 && listen(fd, 4) == 0 && getsockname(fd, $0, &len) == 0 }
            }
            guard ok else { throw HarnessError("cannot listen on loopback") }
            port = UInt16(bigEndian: a.sin_port)
            Thread.detachNewThread {
                let c = accept(fd, nil, nil)
                guard c >= 0 else { return }
                var buf = [UInt8](repeating: 0, count: 4096)
                _ = read(c, &buf, buf.count)
                let reply = Array("HTTP/1.0 400 Bad Request\r\nContent-Length: 0\r\n\r\n".utf8)
                _ = write(c, reply, reply.count)
                close(c)
            }
        }
        deinit { close(fd) }
    }

    @Test func aTLSFailureIsSaidOnceInWords() throws {
        let dir = TempDir()
        let owner = dir.file("owner.db"), kid = dir.file("kid.db")
        _ = try Household.owner(owner)
        // A member store of that family, so connect gets as far as the handshake.
        let server = try ServeProcess(db: owner, dir: dir)
        let j = try Household.join(kid, server: server, offer: try Household.offer(owner))
        #expect(j.status == 0, "\(j.err)")
        _ = server.stop()
        let web = try NotAPeer()
        let r = try Tools.run("peer-sync", ["connect", "--db", kid, "--quiet", "127.0.0.1:\(web.port)"])
        #expect(r.status == 69)
        let lines = r.err.split(separator: "\n")
        #expect(lines.count == 1, "\(r.err)")
        #expect(r.err.hasPrefix("peer-sync: TLS handshake with 127.0.0.1:\(web.port) failed: "), "\(r.err)")
        #expect(r.err.components(separatedBy: "TLS handshake").count == 2, "said twice: \(r.err)")
        #expect(!r.err.contains("error:0A"), "OpenSSL's codes: \(r.err)")
    }

    @Test func binaryInputToJoinIsNotAnOffer() throws {
        let dir = TempDir()
        var bytes = Household.photo(7, size: 600)
        bytes[10] = 0
        let r = try Tools.run("peer-sync", ["join", "--db", dir.file("kid.db")], stdin: Data(bytes))
        #expect(r.status == 65)
        #expect(r.err.hasPrefix("peer-sync: <stdin>: not a pairing offer (binary data)"), "\(r.err)")
        #expect(!r.err.contains("field 'text'"))
        let f = dir.file("photo.jpg")
        _ = FileManager.default.createFile(atPath: f, contents: Data(bytes))
        let r2 = try Tools.run("peer-sync", ["join", "--db", dir.file("kid.db"), f])
        #expect(r2.status == 65)
        #expect(r2.err.hasPrefix("peer-sync: \(f): not a pairing offer"), "\(r2.err)")
    }

    @Test(arguments: [
        ("merge-records", ["--db", "", "--export"]),
        ("peer-sync", ["status", "--db", ""]),
        ("tombstone-gc", ["--db", ""]),
        ("jws-verify", ["--db="]),
        ("pair-qr", ["--db", "", "--list"]),
    ])
    func anEmptyDBPathIsSaidToBeEmpty(tool: String, args: [String]) throws {
        let r = try Tools.run(tool, args)
        #expect(r.status == 64)
        #expect(r.err.hasPrefix("\(tool): --db: the path is empty"), "\(r.err)")
    }

    @Test(arguments: [["connect", "127.0.0.1:0"], ["join", "--connect", "127.0.0.1:0", "-"]])
    func portZeroIsAUsageErrorForAPeer(args: [String]) throws {
        let dir = TempDir()
        let r = try Tools.run("peer-sync", [args[0], "--db", dir.file("kid.db")] + args.dropFirst(),
                              input: "FS1/6A1C1D2E-0F3A-4B5C-8D6E-7F8091A2B3C4/ABCDEFGHIJKLMNOPQRSTUVWXYZ234567/4102444800/\n")
        #expect(r.status == 64, "\(r.err)")
        #expect(r.err.contains("port 0 is not a port a peer listens on"), "\(r.err)")
        let family = FileManager.default.fileExists(atPath: dir.file("kid.db")) ? try Store(path: dir.file("kid.db")).family() : nil
        #expect(family == nil)
    }

    /// 192.0.2.1 (TEST-NET-1, RFC 5737) is never an address of this machine;
    /// bind(2) refuses it before any packet could be sent.
    @Test func listeningOnAnAddressNotOnThisMachineSaysSo() throws {
        let dir = TempDir()
        let owner = dir.file("owner.db")
        _ = try Household.owner(owner)
        let r = try Tools.run("peer-sync", ["serve", "--db", owner, "--listen", "192.0.2.1:7433", "--once"], timeout: 30)
        #expect(r.status == 64, "\(r.err)")
        #expect(r.err.hasPrefix("peer-sync: --listen: 192.0.2.1 is not an address of this machine"), "\(r.err)")
    }
}
