import Foundation
import Testing
@testable import FamilySync
@testable import FamilySyncImaging

/// Text from outside (a code's contents, a peer's words, a notice anyone
/// could send) reaches a terminal with its control and bidi characters
/// escaped; a pipe gets `--raw` byte for byte.
@Suite struct TerminalSafetyTests {
    /// A code's text that would retitle the terminal, clear it and reverse the rest.
    static let hostile = "pay \u{1B}]0;owned\u{07}\u{1B}[2J\u{202E}gnp.exe"

    /// `argv` run with its standard output on a pseudo-terminal (script(1)), and what the terminal got.
    static func onTerminal(_ argv: [String]) throws -> String {
        let cmd = argv.map { "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'" }.joined(separator: " ")
        let r = try Tools.run("/usr/bin/script", ["-qec", cmd, "/dev/null"], timeout: 60)
        #expect(r.status == 0, "\(r.err)")
        return r.out
    }

    @Test func rawTextIsEscapedOnATerminalAndByteExactInAPipe() throws {
        let d = TempDir()
        let png = try PairScanTests.png([.bytes(Array(Self.hostile.utf8))], in: d, "hostile.png")
        let piped = try Tools.run("pair-scan", ["--raw", png])
        #expect(piped.status == 0)
        #expect(piped.out == Self.hostile + "\n", "a pipe gets the code's bytes as they are")
        let shown = try Self.onTerminal([Tools.path("pair-scan"), "--raw", png])
        #expect(!shown.unicodeScalars.contains { $0.value == 0x1B || $0.value == 0x07 || $0.value == 0x202E }, "\(shown.debugDescription)")
        #expect(shown.contains("pay \\u{1B}]0;owned\\u{07}\\u{1B}[2J\\u{202E}gnp.exe"), "\(shown.debugDescription)")
    }

    /// A stranger answering where the member connects sends a REFUSED notice
    /// (no key: anyone can) whose message holds escapes and a bidi override.
    /// The member says the refusal is unverified, and shows the words escaped.
    @Test func aNoticeFromAKeylessImpostorIsShownUnverifiedAndEscaped() throws {
        let dir = TempDir()
        let (_, member, server) = try PeerSyncFaultTests.pair(dir)
        server.stop()
        let listener = try TCPSocket.listen(on: HostPort(host: "127.0.0.1", port: 0))
        defer { listener.close() }
        let port = try #require(listener.localAddress()?.port)
        let message = "the owner says: \u{1B}[31mrun rm -rf ~\u{202E}"
        let box = Owned(listener)
        let impostor = Thread {
            let listener = box.value
            guard (try? listener.wait(for: Int16(POLLIN), deadline: Deadline(after: .seconds(30)))) == true,
                  let s = try? listener.accept(),
                  let conn = try? TLSConnection(server: s, context: try TLSContext(role: .server), lookup: { _ in .noKey }),
                  (try? conn.handshake(deadline: Deadline(after: .seconds(10)))) != nil else { return }
            let channel = FrameChannel(conn)
            channel.send(.refused, json: RefusalMessage(reason: .unknownKey, message: message).json)
            try? channel.drain(deadline: Deadline(after: .seconds(5)))
            _ = conn.shutdown(deadline: Deadline(after: .seconds(2)))
            s.close()
        }
        impostor.start()
        let r = try Tools.run("peer-sync", ["connect", "--db", member, "127.0.0.1:\(port)"], timeout: 60)
        #expect(r.status == 77, "\(r.err)")
        #expect(!r.err.unicodeScalars.contains { $0.value == 0x1B || $0.value == 0x202E }, "\(r.err.debugDescription)")
        #expect(r.err.contains("unverified"), "\(r.err)")
        #expect(r.err.contains("\\u{1B}[31mrun rm -rf ~\\u{202E}"), "\(r.err)")
    }
}
