import Foundation
import Testing
@testable import FamilySync

/// The session's TLS over byte pipes (docs/protocol.md §2.1): two pipes
/// carry a PSK handshake and a megabyte each way as a socket does; a
/// `--via` command line splits into words as `rsync -e` splits one; the
/// store's session lock admits one holder at a time.
@Suite struct ByteStreamTests {
    /// Two pipes, as `connect --via` and `serve --stdio` see them: the client's
    /// write end is the server's read end, and back.
    static func pipePair() throws -> (client: PipeLink, server: PipeLink) {
        // As every tool does (Tool.swift): a write to a pipe whose reader left is EPIPE, not the end of the process.
        signal(SIGPIPE, SIG_IGN)
        var up: [Int32] = [-1, -1], down: [Int32] = [-1, -1]
        #expect(pipe(&up) == 0 && pipe(&down) == 0)
        let client = try PipeLink(read: down[0], write: up[1], address: "client end", owned: true)
        let server = try PipeLink(read: up[0], write: down[1], address: "server end", owned: true)
        return (client, server)
    }

    /// The payloads of frames until `count` bytes have come (a turn may read several frames: the rest wait in the stash).
    static func receive(_ count: Int, on ch: FrameChannel) throws -> [UInt8] {
        var got: [UInt8] = []
        while got.count < count, let f = try ch.receive(deadline: Deadline(after: .seconds(20))) {
            got += f.payload
            for more in ch.takeStash() { got += more.payload }
        }
        return got
    }

    @Test func tlsOverTwoPipesCarriesAnAuthenticatedSessionBothWays() throws {
        let key = try SecretBytes.random(count: 32)
        let (clientLink, serverLink) = try Self.pipePair()
        let big = (0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let serverResult = TLSTests.Box<[UInt8]?>(nil)
        let serverCtx = try TLSContext(role: .server)
        nonisolated(unsafe) let s = serverLink
        let t = Thread {
            guard let conn = try? TLSConnection(server: s, context: serverCtx, lookup: { _ in .key(key) }),
                  (try? conn.handshake(deadline: Deadline(after: .seconds(20)))) != nil, conn.isAuthenticated else { serverResult.set([]); return }
            let ch = FrameChannel(conn)
            let got = (try? Self.receive(big.count, on: ch)) ?? []
            // Back the other way, in frames the size a photo chunk is.
            var i = 0
            while i < big.count { ch.send(.photoData, Array(big[i..<min(i + (64 << 10), big.count)])); i += 64 << 10; try? ch.drain(deadline: Deadline(after: .seconds(20))) }
            _ = conn.shutdown(deadline: Deadline(after: .seconds(5)))
            serverResult.set(got)
        }
        t.start()
        let conn = try TLSConnection(client: clientLink, context: try TLSContext(role: .client), identity: Array("who".utf8), key: key)
        try conn.handshake(deadline: Deadline(after: .seconds(20)))
        #expect(conn.isAuthenticated)
        #expect(conn.protocolVersion == "TLSv1.3")
        let ch = FrameChannel(conn)
        var i = 0
        while i < big.count { ch.send(.photoData, Array(big[i..<min(i + (64 << 10), big.count)])); i += 64 << 10; try ch.drain(deadline: Deadline(after: .seconds(20))) }
        let back = try Self.receive(big.count, on: ch)
        #expect(back == big)
        #expect(conn.shutdown(deadline: Deadline(after: .seconds(5))), "both sides closed with close_notify")
        let deadline = Date().addingTimeInterval(20)
        while serverResult.get() == nil && Date() < deadline { usleep(5000) }
        #expect(serverResult.get() == big)
    }

    /// The end of a pipe before the handshake finishes is told apart from garbage.
    @Test func aPipeThatEndsIsEndOfFileAndOneThatSpeaksAnythingElseIsNot() throws {
        signal(SIGPIPE, SIG_IGN)
        for (bytes, endOfFile) in [([UInt8](), true), (Array("SSH-2.0-OpenSSH_9.2\r\n".utf8), false)] {
            var up: [Int32] = [-1, -1], down: [Int32] = [-1, -1]
            #expect(pipe(&up) == 0 && pipe(&down) == 0)
            let clientLink = try PipeLink(read: down[0], write: up[1], address: "client end", owned: true)
            // The other end writes `bytes` and closes its output, still reading what comes (as a command that printed a banner).
            _ = bytes.withUnsafeBytes { Glibc.write(down[1], $0.baseAddress, $0.count) }
            close(down[1])
            defer { close(up[0]) }
            let conn = try TLSConnection(client: clientLink, context: try TLSContext(role: .client), identity: Array("who".utf8), key: try SecretBytes.random(count: 32))
            do {
                try conn.handshake(deadline: Deadline(after: .seconds(10)))
                Issue.record("a handshake with \(bytes.count) bytes of no TLS completed")
            } catch let e as TLSError {
                #expect(e.endOfFile == endOfFile, "\(e)")
            }
        }
    }

    @Test func aPipeLinkPutsTheDescriptorFlagsBack() throws {
        var fds: [Int32] = [-1, -1]
        #expect(pipe(&fds) == 0)
        defer { close(fds[0]); close(fds[1]) }
        let before = fcntl(fds[0], F_GETFL)
        let link = try PipeLink(read: fds[0], write: fds[1], address: "borrowed", owned: false)
        #expect(fcntl(fds[0], F_GETFL) & O_NONBLOCK != 0)
        link.close()
        #expect(fcntl(fds[0], F_GETFL) == before)
        #expect(fcntl(fds[1], F_GETFD) >= 0, "a borrowed descriptor stays open")
    }

    @Test(arguments: [
        ("ssh -T home peer-sync serve --stdio", ["ssh", "-T", "home", "peer-sync", "serve", "--stdio"]),
        ("  ssh\t-p 2222  home  ", ["ssh", "-p", "2222", "home"]),
        ("sh -c 'a | b'", ["sh", "-c", "a | b"]),
        (#"ssh "my host" x\ y"#, ["ssh", "my host", "x y"]),
        (#"echo "a \"q\" b" 'it''s'"#, ["echo", #"a "q" b"#, "its"]),
        (#"a '' """#, ["a", "", ""]),
        ("", []),
    ])
    func commandLinesSplitIntoWords(text: String, words: [String]) throws {
        #expect(try CommandWords.split(text) == words)
    }

    @Test(arguments: ["ssh 'home", #"ssh "home"#, #"ssh home\"#])
    func anUnfinishedQuoteOrEscapeIsAnError(text: String) {
        #expect(throws: CommandWords.Problem.self) { try CommandWords.split(text) }
    }

    @Test func theSessionLockHasOneHolderPerStoreFileByAnyName() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("lock-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/store.db"
        _ = try Store(path: path)
        try FileManager.default.createSymbolicLink(atPath: dir + "/other-name.db", withDestinationPath: path)
        let a = try SessionLock.forStore(at: path), b = try SessionLock.forStore(at: dir + "/other-name.db")
        #expect(a === b, "one lock per file, whatever it is called")
        #expect(!a.isTaken)
        #expect(a.tryAcquire())
        #expect(a.isTaken)
        #expect(!b.tryAcquire())
        a.release()
        #expect(!a.isTaken)
        #expect(b.tryAcquire())
        b.release()
        // The store is untouched by the lock, and SQLite still writes it while the lock is held.
        #expect(a.tryAcquire())
        let s = try Store(path: path)
        try s.write { try s.setMeta("probe", "1") }
        a.release()
    }
}
