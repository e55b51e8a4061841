import Foundation
import Testing
import FamilySync

/// The two installed binaries run the tool they are called as (the links in
/// bin), or the one named first when called by their own name.
@Suite struct MultiCallTests {
    /// The binary behind a tool's link.
    static func binary(of tool: String) -> String {
        URL(fileURLWithPath: Tools.path(tool)).resolvingSymlinksInPath().path
    }

    @Test(arguments: Array(Tools.carriers.keys).sorted())
    func eachLinkRunsItsToolAndTheBinaryRunsTheToolNamedFirst(tool: String) throws {
        let bin = Self.binary(of: tool)
        #expect(URL(fileURLWithPath: bin).lastPathComponent == Tools.carriers[tool])
        let viaLink = try Tools.run(tool, ["--version"])
        let viaName = try Tools.run(bin, [tool, "--version"])
        #expect(viaLink.status == 0 && viaName.status == 0)
        #expect(viaLink.out == "\(tool) (family-sync) \(FamilySyncInfo.version)\n")
        #expect(viaName.out == viaLink.out)
        let bad = try Tools.run(bin, [tool, "--no-such-option"])
        #expect(bad.status == 64 && bad.err.hasPrefix("\(tool): unknown option '--no-such-option'"), "\(bad.err)")
    }

    @Test func aNameTheBinaryDoesNotCarryIsAUsageError() throws {
        let core = Self.binary(of: "jws-verify")
        let r = try Tools.run(core, ["pair-qr"])
        #expect(r.status == 64)
        #expect(r.out.isEmpty)
        #expect(r.err.hasPrefix("family-sync: 'pair-qr' is not a tool this program carries\nUsage: family-sync TOOL [ARGUMENT...]\n"), "\(r.err)")
        #expect(r.err.contains("jws-verify, merge-records, peer-sync, tombstone-gc"))
        let none = try Tools.run(core)
        #expect(none.status == 64 && none.err.hasPrefix("family-sync: name a tool\n"))
        let help = try Tools.run(Self.binary(of: "pair-scan"), ["--help"])
        #expect(help.status == 0 && help.out.contains("pair-qr, pair-scan") && help.err.isEmpty)
        // A link of another name runs no tool by itself.
        let dir = TempDir()
        try FileManager.default.createSymbolicLink(atPath: dir.file("sync-everything"), withDestinationPath: core)
        let other = try Tools.run(dir.file("sync-everything"))
        #expect(other.status == 64 && other.out.isEmpty && other.err.hasPrefix("family-sync: name a tool\n"), "\(other.err)")
    }
}
