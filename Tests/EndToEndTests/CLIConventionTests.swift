import Foundation
import Testing
import FamilySync
import FamilySyncCLI

/// The conventions all six tools share, checked on the built binaries.
@Suite struct CLIConventionTests {
    static let tools = ["jws-verify", "pair-qr", "pair-scan", "merge-records", "peer-sync", "tombstone-gc"]

    @Test(arguments: tools)
    func helpAndVersionOnStdout(tool: String) throws {
        let h = try Tools.run(tool, ["--help"])
        #expect(h.status == 0)
        #expect(h.out.hasPrefix("OVERVIEW: "))
        #expect(h.out.contains("USAGE: \(tool)"))
        #expect(h.out.contains("OPTIONS:"))
        #expect(h.err.isEmpty)
        let short = try Tools.run(tool, ["-h"])
        #expect(short.status == 0 && short.out == h.out)
        let v = try Tools.run(tool, ["--version"])
        #expect(v.status == 0)
        #expect(v.out == "\(tool) (family-sync) \(FamilySyncInfo.version)\n")
    }

    @Test(arguments: tools)
    func unknownOptionIsUsageError(tool: String) throws {
        let r = try Tools.run(tool, ["--no-such-option"])
        #expect(r.status == 64)
        #expect(r.out.isEmpty)
        #expect(r.err.hasPrefix("\(tool): unknown option '--no-such-option'"))
        #expect(r.err.contains("See '\(tool)"))
    }

    @Test(arguments: tools)
    func failedStdoutWriteExits74(tool: String) throws {
        let fd = open("/dev/full", O_WRONLY)
        guard fd >= 0 else { return }  // no /dev/full here
        close(fd)
        let r = try Tools.run(tool, ["--help"], stdoutPath: "/dev/full")
        #expect(r.status == 74)
        #expect(r.err.contains("\(tool): write error on standard output"))
    }

    /// Every duration option, given a length whose milliseconds overflow Int64
    /// (or exceed the whole range of times), is a usage error, not a wrapped horizon.
    @Test(arguments: [
        ("tombstone-gc", ["--older-than"]), ("tombstone-gc", ["--photo-grace"]),
        ("pair-qr", ["--ttl"]), ("peer-sync", ["connect", "--wait"]), ("peer-sync", ["serve", "--wave-timeout"]),
    ])
    func overflowingDurationIsUsageError(tool: String, option: [String]) throws {
        let tmp = TempDir()
        for value in ["30500568905w", "99999999999999999999s", "600000w"] {
            var args = option
            let name = args.removeLast()
            args += ["--db", tmp.file("s.db"), name, value]
            if option.first == "connect" { args.append("127.0.0.1:9") }
            let r = try Tools.run(tool, args)
            #expect(r.status == 64, "\(tool) \(name) \(value): \(r.err)")
            #expect(r.err.contains("\(tool): \(name): '\(value)' is longer than"), "\(r.err)")
            #expect(r.out.isEmpty)
        }
        #expect(!FileManager.default.fileExists(atPath: tmp.file("s.db")))
    }

    @Test(arguments: tools)
    func badNowIsUsageError(tool: String) throws {
        let spec = try #require(AllTools.specs.first { $0.name == tool })
        let target = spec.subcommands.first.map { [$0.name] } ?? []
        let s = target.isEmpty ? spec : spec.subcommands[0]
        guard s.option(named: "now") != nil else { return }
        let r = try Tools.run(tool, target + ["--now", "yesterday"])
        #expect(r.status == 64)
        #expect(r.err.contains("\(tool): --now: 'yesterday' is not an RFC 3339 time"))
    }
}

/// Standard streams that are closed or full: no crash, the documented
/// status, nothing on standard output that does not belong there.
@Suite struct StandardStreamEdgeTests {
    static let tools = CLIConventionTests.tools

    /// An error to report with standard error closed, or full: the usage
    /// status (64) still comes out, and standard output stays empty.
    @Test(arguments: tools, ["2>&-", "2>/dev/full"])
    func errorWithUnwritableStderrKeepsItsStatus(tool: String, redirect: String) throws {
        if redirect.contains("/dev/full"), access("/dev/full", W_OK) != 0 { return }
        let r = try Tools.run(tool, ["--no-such-option"], redirecting: redirect)
        #expect(r.status == 64, "\(tool) \(redirect): \(r.status)")
        #expect(r.out.isEmpty, "\(r.out)")
    }

    /// Data errors too: a missing store for a read-only command (66) with standard error closed.
    @Test(arguments: ["2>&-", "2>/dev/full"])
    func missingStoreWithUnwritableStderr(redirect: String) throws {
        if redirect.contains("/dev/full"), access("/dev/full", W_OK) != 0 { return }
        let tmp = TempDir()
        let db = tmp.file("none.db")
        let r = try Tools.run("tombstone-gc", ["--db", db], redirecting: redirect)
        #expect(r.status == 66)
        #expect(r.out.isEmpty)
        #expect(!FileManager.default.fileExists(atPath: db))
    }

    /// With standard error closed, a file the tool opens must not become
    /// descriptor 2: the diagnostics would be written into the store.
    @Test func closedStderrNeverLandsInTheStore() throws {
        let tmp = TempDir()
        let db = tmp.file("s.db")
        let line = #"{"id":"a","type":"t","modifiedAt":"2026-06-01T00:00:00.000Z","deviceId":"D","deleted":false}"#
        let input = tmp.write("in.ndjson", line + "\n" + "not json\n")
        let r = try Tools.run("merge-records", ["--db", db, input], redirecting: "2>&-")
        #expect(r.status == 65)
        let check = try Tools.run("merge-records", ["--db", db, "--export"])
        #expect(check.status == 0, "\(check.err)")
        #expect(try Store(path: db).integrityCheck() == "ok")
    }

    /// `peer-sync join` with standard input closed: no input (66, as every
    /// tool says it), no crash, and no store made.
    @Test func joinWithClosedStdinMakesNoStore() throws {
        let tmp = TempDir()
        let db = tmp.file("kid.db")
        let r = try Tools.run("peer-sync", ["join", "--db", db, "--connect", "127.0.0.1:9"], redirecting: "<&-")
        #expect(r.status == 66, "\(r.err)")
        #expect(r.err.contains("standard input is closed"))
        #expect(r.out.isEmpty)
        #expect(!FileManager.default.fileExists(atPath: db))
    }

    /// A QR code drawn on standard error is the output itself: full stderr is 74.
    @Test func pairQRTerminalOnFullStderrIsAnIOError() throws {
        if access("/dev/full", W_OK) != 0 { return }
        let tmp = TempDir()
        let r = try Tools.run("pair-qr", ["--db", tmp.file("o.db"), "--format", "terminal"], redirecting: "2>/dev/full")
        #expect(r.status == 74)
        #expect(r.out.isEmpty)
    }
}
