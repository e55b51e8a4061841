import Foundation
import Testing
import FamilySync
@testable import FamilySyncCLI

/// Progress on a terminal: one line that never wraps and leaves nothing
/// behind, in words; lines that stay only where something happened. The
/// tools run on a pseudo-terminal made by script(1), COLUMNS wide.
@Suite(.serialized) struct ProgressTests {
    /// What a terminal `width` columns wide shows after `bytes`: carriage
    /// return, newline, erase-to-end-of-line and automatic wrapping, enough
    /// to see fragments a wrapped line leaves.
    static func screen(_ bytes: String, width: Int) -> [String] {
        var lines: [[Unicode.Scalar]] = [[]]
        var col = 0
        var chars = Array(bytes.unicodeScalars)[...]
        while let c = chars.popFirst() {
            switch c {
            case "\r": col = 0
            case "\n": lines.append([]); col = 0
            case "\u{1B}":
                // CSI: ESC [ params final
                guard chars.first == "[" else { continue }
                chars.removeFirst()
                var params = ""
                while let p = chars.popFirst() {
                    if p.properties.isAlphabetic { if p == "K" { lines[lines.count - 1] = Array(lines[lines.count - 1].prefix(col)) }; break }
                    params.unicodeScalars.append(p)
                }
            default:
                if col >= width { lines.append([]); col = 0 }
                var l = lines[lines.count - 1]
                while l.count < col { l.append(" ") }
                if col < l.count { l[col] = c } else { l.append(c) }
                lines[lines.count - 1] = l
                col += 1
            }
        }
        return lines.map { String(String.UnicodeScalarView($0)) }.filter { !$0.trimmingCharacters(in: .whitespaces).isEmpty }
    }

    /// Every text drawn after a carriage return, up to the next one: what
    /// each redraw put on the line. A text with a newline is a line that
    /// stays (a warning), not a redraw.
    static func redraws(_ bytes: String) -> [String] {
        // Split by scalars: to String, "\r\n" is one character.
        bytes.replacingOccurrences(of: "\u{1B}[K", with: "").unicodeScalars.split(separator: "\r")
            .map { String(String.UnicodeScalarView($0)) }
            .filter { !$0.isEmpty && !$0.unicodeScalars.contains("\n") }
    }

    /// Runs `argv` on a pseudo-terminal COLUMNS wide; returns what it drew.
    static func onTerminal(_ argv: [String], columns: Int, dir: TempDir, name: String) throws -> (Int32, String) {
        let cmd = argv.map { "'\($0)'" }.joined(separator: " ") + " > \(dir.file(name + ".out"))"
        let r = try Tools.run("/usr/bin/script", ["-q", "-e", "-c", "stty cols \(columns) 2>/dev/null; " + cmd, dir.file(name + ".typescript")],
                              env: ["COLUMNS": String(columns), "TERM": "xterm"], timeout: 120)
        let drawn = [UInt8](FileManager.default.contents(atPath: dir.file(name + ".typescript")) ?? Data())
        return (r.status, toolOutput(typescript: drawn))
    }

    /// The tool's own bytes in a typescript: script(1)'s header line and its
    /// footer (which begins with a newline of its own: "\nScript done on …")
    /// cut off, and the terminal's CR LF for each newline turned back into
    /// the newline written. All of it on bytes: read as a String, the
    /// progress line's last "\r" and the footer's "\n" would be one
    /// Character (CR LF is one grapheme), and the last redraw would seem one
    /// column wider than it was.
    static func toolOutput(typescript: [UInt8]) -> String {
        var b = typescript[...]
        if b.starts(with: Array("Script started".utf8)), let nl = b.firstIndex(of: 0x0A) { b = b[(nl + 1)...] }
        let footer = Array("\nScript done".utf8)
        if let at = b.indices.reversed().first(where: { b[$0...].starts(with: footer) }) { b = b[..<at] }
        var out: [UInt8] = []
        out.reserveCapacity(b.count)
        for (i, c) in zip(b.indices, b) where !(c == 0x0D && b.index(after: i) < b.endIndex && b[b.index(after: i)] == 0x0A) {
            out.append(c)
        }
        return String(decoding: out, as: UTF8.self)
    }

    @Test func syncProgressFitsTheTerminalIsInWordsAndLeavesNothing() throws {
        let dir = TempDir()
        let owner = dir.file("owner.db"), kid = dir.file("kid.db")
        let offer = try Household.owner(owner)
        try Household.addRecords(owner, prefix: "r", count: 3000, photos: (0..<30).map { Household.photo($0, size: 200_000) })
        let server = try ServeProcess(db: owner, dir: dir)
        defer { server.stop() }
        let input = dir.write("offer.txt", offer + "\n")
        let width = 50
        // A store made beforehand, so the terminal shows the sync alone (no "created a new store" line).
        _ = try Store(path: kid)
        let (status, drawn) = try Self.onTerminal([Tools.path("peer-sync"), "join", "--db", kid, "--connect", server.address, input],
                                                  columns: width, dir: dir, name: "join")
        #expect(status == 0, "\(drawn)")
        let redraws = Self.redraws(drawn)
        #expect(!redraws.isEmpty)
        for r in redraws { #expect(r.count < width, "a redraw wider than the terminal: '\(r)'") }
        // Phases in words, not event dumps.
        #expect(redraws.contains { $0.contains(": records") }, "\(redraws) \(drawn.debugDescription)")
        #expect(!redraws.contains { $0.contains("phase, phase") || $0.contains("wave, wave") }, "\(redraws)")
        // Cleared: nothing is left on the screen but warnings (a slow machine may time a wave out).
        let left = Self.screen(drawn, width: width).filter { l in
            l.contains(" · ") || l.contains("connecting to") || l.contains("joined family") || l.contains("starting the session")
                || (try? Regex("^peer-sync: [0-9A-F]{8}: ")).map { l.firstMatch(of: $0) != nil } == true || !l.hasPrefix("peer-sync: ")
        }
        #expect(left.isEmpty, "left on the terminal: \(left)\n\(drawn.debugDescription)")
        // Without a terminal, nothing of it is written.
        let r2 = try Tools.run("peer-sync", ["connect", "--db", kid, server.address])
        #expect(r2.status == 0 && r2.err.isEmpty, "\(r2.err)")
    }

    @Test func serveListeningAndEachSessionAreLinesThatStay() throws {
        let dir = TempDir()
        let owner = dir.file("owner.db"), kid = dir.file("kid.db")
        let offer = try Household.owner(owner)
        try Household.addRecords(owner, prefix: "r", count: 500)
        let port = try PeerSyncTests.closedPort()
        let width = 60
        nonisolated(unsafe) var drawn = ""
        nonisolated(unsafe) var status: Int32 = -1
        let served = DispatchSemaphore(value: 0)
        nonisolated(unsafe) let serveDir = dir
        Thread.detachNewThread {
            if let r = try? Self.onTerminal([Tools.path("peer-sync"), "serve", "--db", owner, "--listen", "127.0.0.1:\(port)", "--once"],
                                            columns: width, dir: serveDir, name: "serve") { (status, drawn) = r }
            served.signal()
        }
        var joined: ToolResult?
        for _ in 0..<200 {
            let j = try Tools.run("peer-sync", ["join", "--db", kid, "--connect", "127.0.0.1:\(port)", "--wait", "0"], input: offer + "\n")
            if j.status != 69 { joined = j; break }
            usleep(50_000)
        }
        #expect(joined?.status == 0, "\(joined?.err ?? "never joined")")
        #expect(served.wait(timeout: .now() + 60) == .success)
        #expect(status == 0, "\(drawn)")
        // Lines that stay may wrap (they are never redrawn); joined, the screen is exactly them.
        let screen = Self.screen(drawn, width: width).joined()
        let family = try #require(try Store(path: owner).family()).id.prefix(8)
        let listening = "peer-sync: listening on 127.0.0.1:\(port) (owner of family \(family))"
        #expect(screen.hasPrefix(listening), "\(screen)")
        #expect(screen.dropFirst(listening.count).hasPrefix("peer-sync: "), "\(screen)")
        #expect(screen.contains("synced: records 500 out, 0 in"), "\(screen)")
        #expect(screen.components(separatedBy: "peer-sync: ").count == 3, "only the two lines stay: \(screen)")
        for r in Self.redraws(drawn) where !r.contains("listening on") && !r.contains("synced:") {
            #expect(r.count < width, "a redraw wider than the terminal: '\(r)'")
        }
    }
}

/// The cutting itself, on wide characters and names.
@Suite struct ProgressLineTests {
    /// The harness counts what a redraw drew, scalar by scalar: a cut
    /// redraw (49 columns at width 50), cleared, then script(1)'s footer.
    @Test func aClearedRedrawBeforeTheFooterCountsItsOwnColumns() {
        let redraw = "peer-sync: 1A2B3C4D: photos 12/40 · 4 s left · 2…"
        #expect(redraw.count == 49)
        let typescript = "Script started on 2026-12-01 [COMMAND=\"x\"]\n\r" + redraw + "\u{1B}[K\r\u{1B}[K\nScript done on 2026-12-01 [COMMAND_EXIT_CODE=\"0\"]\n"
        let out = ProgressTests.toolOutput(typescript: Array(typescript.utf8))
        #expect(out == "\r" + redraw + "\u{1B}[K\r\u{1B}[K")
        #expect(ProgressTests.redraws(out) == [redraw])
        #expect(ProgressTests.screen(out, width: 50).isEmpty)
        // A line that stays keeps its newline (the terminal's CR LF turned back).
        #expect(ProgressTests.toolOutput(typescript: Array("\rpeer-sync: done\r\n".utf8)) == "\rpeer-sync: done\n")
    }

    @Test func fitCutsToTheWidthCountingWideCharacters() {
        #expect(ProgressLine.fit("short", width: 80) == "short")
        let cut = ProgressLine.fit(String(repeating: "a", count: 100), width: 20)
        #expect(cut.count == 19 && cut.hasSuffix("…"))
        let wide = ProgressLine.fit("東京ストア東京ストア東京ストア", width: 11)
        #expect(wide.reduce(0) { $0 + ProgressLine.displayWidth($1) } <= 10, "\(wide)")
    }
}
