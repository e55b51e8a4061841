import Foundation
import Testing
import FamilySync

/// Output for people and for pipes: a reader that closes the pipe ends a
/// tool quietly, and a byte-order mark an editor put at the start of the
/// input is no part of it.
@Suite struct OutputForPeopleTests {
    /// `tool ... | head -1`: the tool stops quietly with 141 (documented), as cat does.
    @Test func aClosedPipeEndsQuietlyWith141() throws {
        let dir = TempDir()
        let db = dir.file("s.db")
        var edits = ""
        for i in 0..<5000 { edits += "{\"id\":\"r-\(i)\",\"type\":\"note\",\"data\":{\"text\":\"a line long enough to fill a pipe quickly \(i)\"}}\n" }
        #expect(try Tools.run("merge-records", ["--db", db, "--stamp"], input: edits).status == 0)
        let script = "\"$0\" --db \"$1\" --export 2>\"$2\" | head -1 >/dev/null; echo \"${PIPESTATUS[0]}\""
        let r = try Tools.run("/bin/bash", ["-c", script, Tools.path("merge-records"), db, dir.file("err")])
        #expect(r.out == "141\n", "\(r.out) \(r.err)")
        #expect((try String(contentsOfFile: dir.file("err"), encoding: .utf8)).isEmpty)
        // The exit-status table says so.
        let man = try Tools.run("merge-records", ["--generate-manpage"]).out
        #expect(man.contains("141"))
    }

    static let bom = "\u{FEFF}"

    /// A UTF-8 byte-order mark at the start of input is skipped, in every reader.
    @Test func aByteOrderMarkAtTheStartIsSkipped() throws {
        let dir = TempDir()
        let line = "{\"id\":\"a\",\"type\":\"note\",\"modifiedAt\":\"2026-01-01T00:00:00.000Z\",\"deviceId\":\"D\",\"deleted\":false,\"data\":{}}\n"
        // Store mode (a line reader) and pure mode (the whole input in memory).
        let applied = try Tools.run("merge-records", ["--db", dir.file("s.db")], input: Self.bom + line)
        #expect(applied.status == 0, "\(applied.err)")
        #expect(applied.json?.int("applied") == 1)
        let local = dir.write("local.ndjson", Self.bom + line)
        let pure = try Tools.run("merge-records", [local, dir.write("remote.ndjson", "")])
        #expect(pure.status == 0, "\(pure.err)")
        #expect(pure.out == line)
        // jws-verify reads the token after the mark.
        let pki = OpenSSLPKI.shared
        let t = try pki.token(payload: pki.transaction().json)
        let v = try Tools.run("jws-verify", ["--root", pki.rootPEM, "--bundle-id", "com.example.family", "--now", pki.madeAt.adding(.days(1)).rfc3339],
                              input: Self.bom + t + "\n")
        #expect(v.status == 0, "\(v.out) \(v.err)")
        // A mark anywhere else is no mark: it is named as the bad byte it is.
        let later = try Tools.run("merge-records", ["--db", dir.file("s.db")], input: line + Self.bom + line)
        #expect(later.status == 65, "\(later.err)")
        #expect(later.err.contains("<stdin>:2"), "\(later.err)")
    }

    /// peer-sync status and pair-qr --list: readable on a terminal, JSON when piped or with --json.
    @Test func statusAndOfferListAreReadableOnATerminalAndJSONOtherwise() throws {
        let dir = TempDir()
        let owner = dir.file("owner.db"), kid = dir.file("kid.db")
        let offer = try Household.owner(owner)
        let server = try ServeProcess(db: owner, dir: dir)
        defer { server.stop() }
        #expect(try Household.join(kid, server: server, offer: offer, extra: ["--name", "Ben's tablet"]).status == 0)
        let kidID = try Household.device(kid)

        let (st, shown) = try Self.stdoutOnTerminal([Tools.path("peer-sync"), "status", "--db", owner], dir: dir, name: "status")
        #expect(st == 0)
        #expect(!shown.hasPrefix("{"), "\(shown)")
        #expect(shown.contains("this device is the owner"), "\(shown)")
        #expect(shown.contains("devices: 2 of 4"), "\(shown)")
        #expect(shown.contains("\(kidID)  Ben's tablet"), "\(shown)")
        #expect(shown.contains("last synced 20"), "\(shown)")
        #expect(shown.contains("proof: free (no-proof)"), "\(shown)")

        let piped = try Tools.run("peer-sync", ["status", "--db", owner])
        let pipedJSON = try JSONParser.parse(piped.lines.first ?? "")
        #expect(piped.lines.count == 1 && pipedJSON["family"] != nil)
        let (js, jsShown) = try Self.stdoutOnTerminal([Tools.path("peer-sync"), "status", "--json", "--db", owner], dir: dir, name: "json")
        #expect(js == 0)
        #expect(jsShown.hasPrefix("{"), "\(jsShown)")

        let open = try Store(path: owner).openOffers(now: Timestamp.current())
        let (ls, listed) = try Self.stdoutOnTerminal([Tools.path("pair-qr"), "--list", "--db", owner], dir: dir, name: "list")
        #expect(ls == 0)
        #expect(open.isEmpty ? listed.contains("no open offers") : listed.contains("\(open[0].nonce)  until "), "\(listed)")
        let listJSON = try Tools.run("pair-qr", ["--list", "--db", owner])
        #expect(listJSON.lines.count == open.count)
        #expect(listJSON.lines.allSatisfy { $0.hasPrefix("{") })
    }

    /// Runs `argv` with standard output (and error) on a pseudo-terminal made by script(1); returns what it drew.
    static func stdoutOnTerminal(_ argv: [String], dir: TempDir, name: String) throws -> (Int32, String) {
        let typescript = dir.file(name + ".typescript")
        let r = try Tools.run("/usr/bin/script", ["-q", "-e", "-c", argv.map { "'\($0)'" }.joined(separator: " "), typescript],
                              env: ["COLUMNS": "120", "TERM": "xterm"], timeout: 120)
        return (r.status, ProgressTests.toolOutput(typescript: [UInt8](FileManager.default.contents(atPath: typescript) ?? Data())))
    }

    /// A mistyped option of a subcommand shows that subcommand's usage.
    @Test func aSubcommandsUsageErrorShowsItsOwnUsage() throws {
        let r = try Tools.run("peer-sync", ["serve", "--listn", "127.0.0.1:0"])
        #expect(r.status == 64)
        #expect(r.err.contains("unknown option '--listn' (did you mean '--listen'?)"), "\(r.err)")
        #expect(r.err.contains("Usage: peer-sync serve "), "\(r.err)")
    }

    /// A zero duration where one must pass is said as such.
    @Test func aZeroDurationIsSaidToBeNoTime() throws {
        let r = try Tools.run("pair-qr", ["--db", TempDir().file("o.db"), "--ttl", "0s"])
        #expect(r.status == 64)
        #expect(r.err.hasPrefix("pair-qr: --ttl: '0s' is no time at all; it must be more than 0"), "\(r.err)")
    }

    /// Renewal info or a notification checked as a transaction: the verdict says which --type it looks like.
    @Test func anotherSignedTypeIsNamedWithItsType() throws {
        let pki = OpenSSLPKI.shared
        let signed = pki.madeAt.adding(.minutes(1)).milliseconds
        let renewal = try pki.token(payload: #"{"originalTransactionId":"1","autoRenewProductId":"family.monthly","autoRenewStatus":1,"signedDate":\#(signed),"environment":"Production"}"#)
        let r = try Tools.run("jws-verify", ["--root", pki.rootPEM, "--bundle-id", "com.example.family", "--now", pki.madeAt.adding(.days(1)).rfc3339], input: renewal)
        #expect(r.status == 1)
        let v = try JSONParser.parse(r.lines[0])
        #expect(v["reason"]?.stringValue == "wrong-bundle")
        #expect(v["detail"]?.stringValue?.contains("give --type renewal-info") == true, "\(r.out)")
    }

    /// revoke names the device a prefix picked, and --dry-run changes nothing.
    @Test func revokeNamesTheDeviceAndDryRunChangesNothing() throws {
        let dir = TempDir()
        let owner = dir.file("owner.db"), kid = dir.file("kid.db")
        let offer = try Household.owner(owner)
        let server = try ServeProcess(db: owner, dir: dir)
        defer { server.stop() }
        #expect(try Household.join(kid, server: server, offer: offer, extra: ["--name", "Lost phone"]).status == 0)
        let kidID = try Household.device(kid)
        let prefix = String(kidID.prefix(4))
        let before = try Household.fingerprint(owner)
        let dry = try Tools.run("peer-sync", ["revoke", "--dry-run", "--db", owner, prefix])
        #expect(dry.status == 0, "\(dry.err)")
        #expect(dry.err == "peer-sync: would revoke \(kidID) (Lost phone); nothing was changed\n", "\(dry.err)")
        #expect(dry.json?["name"]?.stringValue == "Lost phone")
        #expect(try Household.fingerprint(owner) == before)
        let real = try Tools.run("peer-sync", ["revoke", "--db", owner, prefix])
        #expect(real.status == 0)
        #expect(real.err == "peer-sync: revoked \(kidID) (Lost phone)\n", "\(real.err)")
        #expect(real.json?["name"]?.stringValue == "Lost phone")
    }

    /// merge-records on a terminal: percent of the file, the count, the time
    /// left and the rate when the size is known; --diff shows its progress too.
    @Test func mergeRecordsProgressSaysPercentAndTimeLeft() throws {
        let dir = TempDir()
        var text = ""
        for i in 0..<70_000 { text += "{\"id\":\"r\(i)\",\"type\":\"note\",\"modifiedAt\":\"2026-02-01T00:00:00.000Z\",\"deviceId\":\"D\",\"deleted\":false,\"data\":{\"i\":\(i)}}\n" }
        let input = dir.write("in.ndjson", text)
        let (st, drawn) = try ProgressTests.onTerminal([Tools.path("merge-records"), "--db", dir.file("s.db"), input], columns: 200, dir: dir, name: "apply")
        #expect(st == 0, "\(drawn)")
        #expect(drawn.contains("merge-records: "), "\(drawn)")
        #expect(drawn.range(of: #"[0-9]+% of [0-9.]+ MB · [0-9,]+ records"#, options: .regularExpression) != nil, "\(drawn)")
        #expect(drawn.contains(" left") || drawn.contains("almost done"), "\(drawn)")
        #expect(drawn.contains("/s"), "\(drawn)")

        let other = dir.write("other.ndjson", "")
        let (ds, diffDrawn) = try ProgressTests.onTerminal([Tools.path("merge-records"), "--diff", input, other], columns: 200, dir: dir, name: "diff")
        #expect(ds == 1)
        #expect(diffDrawn.contains("reading A (\(input))"), "\(diffDrawn)")
        let (ss, storeDrawn) = try ProgressTests.onTerminal([Tools.path("merge-records"), "--diff", dir.file("s.db"), other], columns: 200, dir: dir, name: "sdiff")
        #expect(ss == 1)
        #expect(storeDrawn.contains("of 70,000 records"), "\(storeDrawn)")
    }

    /// The man page's crontab line works under cron's PATH (/usr/bin:/bin): it names the installed path.
    @Test func theCrontabLineNamesTheInstalledPath() throws {
        let man = try Tools.run("tombstone-gc", ["--generate-manpage"]).out
        let line = try #require(man.split(separator: "\n").first { $0.hasPrefix("17 3 * * * ") }.map(String.init), "\(man)")
        let command = String(line.dropFirst("17 3 * * * ".count))
        #expect(command.hasPrefix("/usr/local/bin/tombstone-gc "), "\(line)")
        // Run as cron would, with the installed path standing for where the tools were built.
        let home = TempDir()
        try FileManager.default.createDirectory(atPath: home.file(".local/state"), withIntermediateDirectories: true)
        let db = home.file(".local/share/family-sync/store.db")
        try FileManager.default.createDirectory(atPath: home.file(".local/share/family-sync"), withIntermediateDirectories: true)
        #expect(try Tools.run("merge-records", ["--db", db], input: "").status == 0)
        let asCron = command.replacingOccurrences(of: "/usr/local/bin/tombstone-gc", with: Tools.path("tombstone-gc")).replacingOccurrences(of: "\\", with: "")
        let r = try Tools.run("/usr/bin/env", ["-i", "PATH=/usr/bin:/bin", "HOME=\(home.path)", "SHELL=/bin/sh", "/bin/sh", "-c", asCron])
        #expect(r.status == 0, "\(asCron): \(r.err)")
        let log = try String(contentsOfFile: home.file(".local/state/tombstone-gc.log"), encoding: .utf8)
        #expect(log.hasPrefix("{\"purged\":0"), "\(log)")
    }
}
