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
