import Foundation
import Testing
import FamilySync

/// A flood of connections that never prove a key costs serve's journal and
/// --events one summary an interval, not a line each; a device that proved
/// its key is still told of, and reported, one line each.
@Suite(.serialized) struct BoundedNoiseTests {
    /// Connects, sends bytes that are not TLS, and waits until serve closes
    /// the connection (by then it has judged the handshake failed).
    static func garbage(port: UInt16) throws {
        let s = try TCPSocket.connect(to: HostPort(host: "127.0.0.1", port: port), timeout: .seconds(5))
        defer { s.close() }
        let junk = [UInt8](repeating: 0x47, count: 64)
        _ = junk.withUnsafeBytes { Glibc.write(s.fd, $0.baseAddress, $0.count) }
        var buf = [UInt8](repeating: 0, count: 4096)
        let deadline = Deadline(after: .seconds(20))
        while try s.wait(for: Int16(POLLIN), deadline: deadline) {
            let n = buf.withUnsafeMutableBytes { Glibc.read(s.fd, $0.baseAddress, $0.count) }
            if n <= 0 { return }
        }
        throw HarnessError("serve did not close a connection that sent garbage")
    }

    @Test func aFloodOfKeylessConnectionsIsOneSummaryNotALineEach() throws {
        let dir = TempDir()
        let (_, member, server) = try PeerSyncFaultTests.pair(dir)
        defer { server.stop() }
        let flood = 300
        for _ in 0..<flood { try Self.garbage(port: server.port) }
        // Two devices the owner never admitted: refused, unauthenticated.
        let clone = dir.file("clone.db")
        try FileManager.default.copyItem(atPath: member, toPath: clone)
        try Store(path: clone).db.run("UPDATE meta SET value = ? WHERE key = 'device_id'", [.text(try randomUUID())])
        for _ in 0..<2 { #expect(try Tools.run("peer-sync", ["connect", "--db", clone, "--wait", "0s", server.address]).status == 77) }
        // The member's own sync is reported as ever.
        let r = try Tools.run("peer-sync", ["connect", "--db", member, server.address], timeout: 60)
        #expect(r.status == 0, "\(r.err)")
        #expect(server.stop() == 0)

        let events = server.eventLines()
        #expect(!events.contains { ["rejected", "refused", "busy"].contains($0["event"]?.stringValue ?? "") }, "no event per keyless connection")
        #expect(events.filter { $0["event"]?.stringValue == "session" }.count == 2, "the join's session and the sync's")
        let keyless = events.filter { $0["event"]?.stringValue == "keyless" }
        // The whole flood fits in one interval, so one summary, written when serve stopped.
        #expect(keyless.count == 1, "\(keyless)")
        let s = try #require(keyless.first)
        #expect(s["connections"]?.int64Value == Int64(flood + 2))
        #expect(s.at("reasons", "handshake")?.int64Value == Int64(flood))
        #expect(s.at("reasons", "unknown-device")?.int64Value == 2)
        #expect(s["addresses"]?.int64Value == 1)
        let first = try #require(s["first"]?.stringValue.flatMap { Timestamp(rfc3339: $0) })
        let last = try #require(s["last"]?.stringValue.flatMap { Timestamp(rfc3339: $0) })
        #expect(first <= last)

        // The journal: the listening line, the two sessions, the summary; nothing per connection.
        let lines = server.err.split(separator: "\n").map(String.init)
        #expect(!lines.contains { $0.contains("refused") }, "\(server.err)")
        let summary = lines.filter { $0.contains("without a key of this family") }
        #expect(summary == ["peer-sync: \(flood + 2) connections without a key of this family from 1 address (\(first.rfc3339) to \(last.rfc3339)): handshake \(flood), unknown-device 2"],
                "\(server.err)")
        #expect(lines.count <= 8, "\(server.err)")
    }
}
