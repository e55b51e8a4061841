import Foundation
import Testing
import FamilySync

/// The README's household, extracted from README.md and run verbatim, so it
/// cannot drift from the tools. It serves on peer-sync's default address and
/// announces itself with multicast DNS, so it runs inside a network namespace
/// made for it and removed after: loopback, and one veth pair whose both ends
/// are in the namespace (fs0 with an address, as a home network's interface;
/// every packet, multicast included, stays inside). Without root (needed
/// for `ip netns`) it is skipped, saying so.
@Suite struct ReadmeTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path

    /// The indented block between the household markers, unindented.
    static func householdBlock() throws -> String {
        let readme = try String(contentsOfFile: root + "/README.md", encoding: .utf8)
        let begin = try #require(readme.range(of: "<!-- household:begin"))
        let end = try #require(readme.range(of: "<!-- household:end -->"))
        let body = readme[begin.upperBound..<end.lowerBound].split(separator: "\n", omittingEmptySubsequences: false).dropFirst()
        let lines = body.filter { !$0.trimmingCharacters(in: .whitespaces).isEmpty }
        #expect(lines.allSatisfy { $0.hasPrefix("    ") }, "the block is one indented code block")
        return lines.map { String($0.dropFirst(4)) }.joined(separator: "\n") + "\n"
    }

    static func sh(_ args: [String]) throws -> ToolResult { try Tools.run("/usr/sbin/ip", args, timeout: 30) }

    @Test func theHouseholdRunsAsWritten() throws {
        let block = try Self.householdBlock()
        #expect(block.contains("peer-sync serve --db owner.db"))
        #expect(!block.contains("127.0.0.1") && !block.contains("sleep 2"), "the block is typed as on a home network")
        #expect(block.contains("pair-scan pair.png | peer-sync join"))
        guard getuid() == 0, FileManager.default.isExecutableFile(atPath: "/usr/sbin/ip") else {
            print("ReadmeTests: skipped: running the README's household needs root and ip(8) for a network namespace of its own")
            return
        }
        let dir = TempDir()
        // The block starts in a checkout (it uses scripts/) and works in a mktemp folder, made here under work/.
        let checkout = dir.file("checkout"), work = dir.file("work")
        try FileManager.default.createDirectory(atPath: checkout + "/scripts", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: Self.root + "/scripts/demo-pki.sh", toPath: checkout + "/scripts/demo-pki.sh")
        let ns = "fs-readme-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let add = try Self.sh(["netns", "add", ns])
        guard add.status == 0 else {
            print("ReadmeTests: skipped: cannot make a network namespace: \(add.err)")
            return
        }
        defer { _ = try? Self.sh(["netns", "delete", ns]) }
        let address = "10.77.0.1"
        for step in [["link", "set", "lo", "up"], ["link", "add", "fs0", "type", "veth", "peer", "name", "fs1"], ["link", "set", "fs0", "up"],
                     ["link", "set", "fs1", "up"], ["addr", "add", "\(address)/24", "dev", "fs0"]] {
            let r = try Self.sh(["-n", ns] + step)
            #expect(r.status == 0, "ip -n \(ns) \(step.joined(separator: " ")): \(r.err)")
        }
        // The block as written; the wrapper only stops a serve left behind if the block fails half way.
        let script = "cd '\(checkout)'\nexport TMPDIR='\(work)'\nexport PATH='\(Tools.binDir)':$PATH\nunset FAMILY_SYNC_DB\ntrap 'kill $(jobs -p) 2>/dev/null || true' EXIT\n" + block
        let r = try Tools.run("/usr/sbin/ip", ["netns", "exec", ns, "/bin/bash", "-e", "-o", "pipefail", "-c", script], timeout: 180)
        #expect(r.status == 0, "the README's household stopped: \(r.err)")
        // Nothing was left in the checkout, and serve's lines stayed out of the terminal.
        #expect(try FileManager.default.contentsOfDirectory(atPath: checkout) == ["scripts"])
        #expect(!r.out.contains("\"side\":\"server\""), "serve's summaries went to its file: \(r.out)")
        let made = try FileManager.default.contentsOfDirectory(atPath: work)
        #expect(made.count == 1, "\(made)")
        let home = work + "/" + (made.first ?? "")
        // It did what it says: joined, synced both ways, premium at launch.
        let kid = try Store(path: home + "/kid.db")
        let owner = try Store(path: home + "/owner.db")
        #expect(try kid.family()?.id == owner.family()?.id)
        #expect(try owner.db.scalarInt("SELECT count(*) FROM records WHERE id = 'r-1'") == 1, "the member's edit reached the owner")
        #expect(r.out.contains(#"{"entitled":true"#), "\(r.out)")
        // As on a home network: the offer carried the interface's address,
        // discovery found the owner there, and Sync Now synced with it there.
        #expect(r.out.contains(#""addr":"\#(address):7433""#), "\(r.out)")
        #expect(r.out.contains(#""role":"owner","address":"\#(address):7433","interface":"fs0""#), "\(r.out)")
        #expect(r.out.components(separatedBy: #""address":"\#(address):7433","side":"client""#).count - 1 == 2, "the join and Sync Now: \(r.out)")
        #expect(try owner.devices().first { $0.deviceID == (try kid.deviceID) }?.name == "Kid's tablet")
        #expect(try kid.setting(Store.trustRootsSetting) != nil)
    }
}
