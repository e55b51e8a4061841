import Foundation
import FamilySync

/// A peer driven frame by frame from a test, over a real TLS connection to a
/// running `peer-sync serve`: it sends exactly the bytes a script gives and
/// reports every frame and how the connection ended, so tests can check the
/// wire itself (keepalives, ERROR then close_notify, strict record batches).
final class RawPeer {
    let socket: TCPSocket
    let conn: TLSConnection
    private var buffer: [UInt8] = []
    /// Set once the server closed: true for a clean TLS close (close_notify).
    private(set) var closedCleanly: Bool?

    init(port: UInt16, identity: [UInt8], key: SecretBytes) throws {
        socket = try TCPSocket.connect(to: HostPort(host: "127.0.0.1", port: port), timeout: .seconds(5))
        conn = try TLSConnection(client: socket, context: try TLSContext(role: .client), identity: identity, key: key)
        try conn.handshake(deadline: Deadline(after: .seconds(10)))
    }

    /// An authenticated session as `member` (a store paired with the owner) with the owner's device.
    static func member(_ member: String, ofOwner owner: String, port: UInt16) throws -> RawPeer {
        let fam = try Store(path: owner).family()!
        let (identity, key) = try Store(path: member).sessionCredentials(server: fam.ownerDevice)
        return try RawPeer(port: port, identity: identity, key: key)
    }

    /// The member's HELLO and an empty FAMILY, as a well-behaved member opens.
    static func opening(_ member: String, ofOwner owner: String) throws -> (hello: [UInt8], family: [UInt8]) {
        let fam = try Store(path: owner).family()!
        let me = try Store(path: member).deviceID
        let hello = "{\"protocol\":\(SyncProtocol.version),\"device\":\"\(me)\",\"family\":\"\(fam.id)\",\"role\":\"member\",\"clock\":\"\(Timestamp.current().rfc3339)\",\"epoch\":0,\"after\":0,\"sent\":0,\"software\":\"raw\"}"
        let family = "{\"owner\":\"\(fam.ownerDevice)\",\"epoch\":0,\"maxDevices\":4,\"devices\":[],\"proof\":null,\"policy\":null}"
        return (frame(0x01, Array(hello.utf8)), frame(0x02, Array(family.utf8)))
    }

    static func frame(_ type: UInt8, _ payload: [UInt8]) -> [UInt8] {
        let n = UInt32(payload.count)
        return [UInt8(n >> 24), UInt8(n >> 16 & 0xFF), UInt8(n >> 8 & 0xFF), UInt8(n & 0xFF), type] + payload
    }

    func send(_ bytes: [UInt8]) throws {
        var off = 0
        while off < bytes.count {
            let r = try bytes.withUnsafeBytes { try conn.write(UnsafeRawBufferPointer(rebasing: $0[off...])) }
            switch r {
            case let .bytes(n): off += n
            case .closed: throw HarnessError("the server closed while we were writing")
            default: _ = try socket.wait(for: Int16(POLLOUT) | Int16(POLLIN), deadline: Deadline(after: .seconds(5)))
            }
        }
    }

    /// The next whole frame (type, payload), or nil once the server closed (see `closedCleanly`).
    /// Throws when nothing complete arrives within `timeout` seconds.
    func readFrame(timeout: TimeInterval) throws -> (type: UInt8, payload: [UInt8])? {
        let deadline = Deadline(after: TimeSpan(milliseconds: Int64(timeout * 1000)))
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            if buffer.count >= 5 {
                let n = Int(buffer[0]) << 24 | Int(buffer[1]) << 16 | Int(buffer[2]) << 8 | Int(buffer[3])
                if buffer.count >= 5 + n {
                    let f = (buffer[4], Array(buffer[5..<(5 + n)]))
                    buffer.removeFirst(5 + n)
                    return f
                }
            }
            if closedCleanly != nil { return nil }
            let r = try chunk.withUnsafeMutableBytes { try conn.read(into: $0) }
            switch r {
            case let .bytes(n): buffer += chunk[0..<n]
            case let .closed(clean): closedCleanly = clean
            case .wantRead, .wantWrite:
                guard try socket.wait(for: Int16(POLLIN), deadline: deadline) else {
                    throw HarnessError("no whole frame within \(timeout) s")
                }
            }
        }
    }

    /// Reads frames until one of `type` arrives (skipping others); nil if the connection closed first.
    func readUntil(_ type: UInt8, timeout: TimeInterval) throws -> [UInt8]? {
        while let f = try readFrame(timeout: timeout) {
            if f.type == type { return f.payload }
        }
        return nil
    }

    /// Sends close_notify (a clean end) and closes the socket.
    func close() {
        _ = conn.shutdown(deadline: Deadline(after: .seconds(2)))
        socket.close()
    }

    /// Closes the TCP connection without a TLS close: to the server, a lost connection.
    func drop() { socket.close() }
}
