import Foundation
import Synchronization
import Testing
@testable import FamilySync

/// TLS 1.3 with an external PSK and (EC)DHE, between two threads on loopback,
/// and against the openssl command line as an independent implementation.
@Suite struct TLSTests {
    final class Box<T>: @unchecked Sendable {
        let lock = NSLock()
        var value: T
        init(_ v: T) { value = v }
        func set(_ v: T) { lock.lock(); value = v; lock.unlock() }
        func get() -> T { lock.lock(); defer { lock.unlock() }; return value }
    }

    struct ServerSide: Sendable {
        var authenticated = false
        var identity: [UInt8]? = nil
        var binderFailed = false
        var received: [UInt8] = []
        var cipher = ""
        var group: Int32 = 0
    }

    /// Runs a server thread that accepts one connection, looks keys up with
    /// `keys`, and echoes one frame back; returns the port and the result box.
    static func server(keys: @escaping @Sendable ([UInt8]) -> TLSKeyLookup) throws -> (UInt16, Box<ServerSide?>, Thread) {
        let listener = try TCPSocket.listen(on: HostPort(host: "127.0.0.1", port: 0))
        let port = listener.localAddress()!.port
        let box = Box<ServerSide?>(nil)
        let ctx = try TLSContext(role: .server)
        nonisolated(unsafe) let l = listener
        let t = Thread {
            var side = ServerSide()
            defer { box.set(side) }
            guard (try? l.wait(for: Int16(POLLIN), deadline: Deadline(after: .seconds(10)))) == true, let s = try? l.accept(),
                  let conn = try? TLSConnection(server: s, context: ctx, lookup: keys) else { return }
            do { try conn.handshake(deadline: Deadline(after: .seconds(10))) } catch let e as TLSError {
                side.binderFailed = e.binderFailed
                side.identity = conn.offeredIdentity
                return
            } catch { return }
            side.authenticated = conn.isAuthenticated
            side.identity = conn.offeredIdentity
            side.cipher = conn.cipherName
            side.group = conn.keyExchangeGroup
            let ch = FrameChannel(conn)
            if let f = try? ch.receive(deadline: Deadline(after: .seconds(10))) {
                side.received = f.payload
                ch.send(.ping, f.payload)
                try? ch.drain(deadline: Deadline(after: .seconds(5)))
            }
            _ = conn.shutdown(deadline: Deadline(after: .seconds(2)))
        }
        t.start()
        return (port, box, t)
    }

    static func waitFor(_ box: Box<ServerSide?>) -> ServerSide? {
        let deadline = Date().addingTimeInterval(20)
        while box.get() == nil && Date() < deadline { usleep(5000) }
        return box.get()
    }

    @Test func matchingKeysGiveAnAuthenticatedForwardSecretSession() throws {
        let key = try SecretBytes.random(count: 32)
        let (port, box, _) = try Self.server { id in String(decoding: id, as: UTF8.self) == "who" ? .key(key) : .noKey }
        let sock = try TCPSocket.connect(to: HostPort(host: "127.0.0.1", port: port), timeout: .seconds(5))
        let conn = try TLSConnection(client: sock, context: try TLSContext(role: .client), identity: Array("who".utf8), key: key)
        try conn.handshake(deadline: Deadline(after: .seconds(10)))
        #expect(conn.isAuthenticated)
        #expect(conn.protocolVersion == "TLSv1.3")
        #expect(conn.cipherName == "TLS_AES_128_GCM_SHA256")
        #expect(conn.keyExchangeGroup != 0, "psk_dhe_ke: an (EC)DHE group was used")
        let ch = FrameChannel(conn)
        ch.send(.ping, [1, 2, 3])
        let echo = try ch.receive(deadline: Deadline(after: .seconds(10)))
        #expect(echo?.payload == [1, 2, 3])
        let s = try #require(Self.waitFor(box))
        #expect(s.authenticated)
        #expect(s.identity == Array("who".utf8))
        #expect(s.received == [1, 2, 3])
        #expect(s.group != 0)
    }

    /// The channel's times of last traffic come from the clock it is given,
    /// so the session's keepalive and idle timers can be driven by a test.
    @Test func theChannelStampsTrafficWithItsClock() throws {
        let key = try SecretBytes.random(count: 32)
        let (port, box, _) = try Self.server { _ in .key(key) }
        let sock = try TCPSocket.connect(to: HostPort(host: "127.0.0.1", port: port), timeout: .seconds(5))
        let conn = try TLSConnection(client: sock, context: try TLSContext(role: .client), identity: Array("who".utf8), key: key)
        try conn.handshake(deadline: Deadline(after: .seconds(10)))
        let t = ManualClock()
        let start = t.now
        let ch = FrameChannel(conn, clock: t.clock)
        #expect(ch.lastSent == start && ch.lastReceived == start)
        t.advance(by: .seconds(40))
        ch.send(.ping, [7])
        try ch.drain(deadline: Deadline(after: .seconds(10)))
        #expect(ch.lastSent == start.adding(.seconds(40)))
        #expect(ch.lastReceived == start)
        t.advance(by: .seconds(5))
        #expect(try ch.receive(deadline: Deadline(after: .seconds(10)))?.payload == [7])
        #expect(ch.lastReceived == start.adding(.seconds(45)))
        _ = try #require(Self.waitFor(box))
    }

    @Test func aDifferentKeyFailsTheHandshakeOnBothSides() throws {
        let (port, box, _) = try Self.server { _ in .key(SecretBytes([UInt8](repeating: 1, count: 32))) }
        let sock = try TCPSocket.connect(to: HostPort(host: "127.0.0.1", port: port), timeout: .seconds(5))
        let conn = try TLSConnection(client: sock, context: try TLSContext(role: .client), identity: Array("who".utf8), key: SecretBytes([UInt8](repeating: 2, count: 32)))
        do {
            try conn.handshake(deadline: Deadline(after: .seconds(10)))
            Issue.record("handshake succeeded with the wrong key")
        } catch let e as TLSError {
            #expect(e.peerRejectedKey, "\(e)")
        }
        let s = try #require(Self.waitFor(box))
        #expect(s.binderFailed)
        #expect(!s.authenticated)
    }

    @Test func noKeyGivesAnUnauthenticatedSessionForNoticesOnly() throws {
        let (port, box, _) = try Self.server { _ in .noKey }
        let sock = try TCPSocket.connect(to: HostPort(host: "127.0.0.1", port: port), timeout: .seconds(5))
        let conn = try TLSConnection(client: sock, context: try TLSContext(role: .client), identity: Array("stranger".utf8), key: try SecretBytes.random(count: 32))
        try conn.handshake(deadline: Deadline(after: .seconds(10)))
        #expect(!conn.isAuthenticated)
        let ch = FrameChannel(conn)
        ch.send(.ping, [9])
        #expect(try ch.receive(deadline: Deadline(after: .seconds(10)))?.payload == [9])
        let s = try #require(Self.waitFor(box))
        #expect(!s.authenticated)
    }

    @Test func nobodyListeningIsAConnectionRefusal() throws {
        let l = try TCPSocket.listen(on: HostPort(host: "127.0.0.1", port: 0))
        let port = l.localAddress()!.port
        l.close()
        do {
            _ = try TCPSocket.connect(to: HostPort(host: "127.0.0.1", port: port), timeout: .seconds(5))
            Issue.record("connected to a closed port")
        } catch let e as SocketError {
            #expect(e.isNoPeer)
        }
    }

    /// `openssl s_client -psk` speaks to our server: the wire format is plain TLS 1.3 external PSK.
    @Test func opensslClientInteroperates() throws {
        let key = try SecretBytes.random(count: 32)
        let (port, box, _) = try Self.server { id in String(decoding: id, as: UTF8.self) == "FS1 test" ? .key(key) : .noKey }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["openssl", "s_client", "-connect", "127.0.0.1:\(port)", "-tls1_3", "-ciphersuites", "TLS_AES_128_GCM_SHA256",
                       "-psk", key.withUnsafeBytes { Hex.encode($0) }, "-psk_identity", "FS1 test", "-quiet", "-no_ign_eof"]
        let input = Pipe(), output = Pipe()
        p.standardInput = input
        p.standardOutput = output
        p.standardError = FileHandle.nullDevice
        do { try p.run() } catch { Issue.record("openssl is installed by 'make test'"); return }
        input.fileHandleForWriting.write(Data(Frame.encode(.ping, Array("hi".utf8))))
        let s = try #require(Self.waitFor(box))
        try? input.fileHandleForWriting.close()
        let echoed = output.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        #expect(s.authenticated)
        #expect(s.received == Array("hi".utf8))
        #expect(Array(echoed) == Frame.encode(.ping, Array("hi".utf8)))
    }
}
