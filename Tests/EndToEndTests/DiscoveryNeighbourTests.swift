import Foundation
import Testing
import FamilySync

/// Discovery as a good neighbour on a simulated household network: a name
/// another device holds is given up for a new one (RFC 6762 probing and
/// conflict resolution), and a device reachable only over IPv6 is found and
/// synced with. Skipped, with the reason, where namespaces cannot be made.
@Suite(.serialized, .disabled(if: NetworkLab.unavailableReason != nil, Comment(rawValue: NetworkLab.unavailableReason ?? "")))
struct DiscoveryNeighbourTests {
    static let port = "\(SyncLimits.defaultPort)"

    static func lines(_ file: String) -> String { (try? String(contentsOfFile: file, encoding: .utf8)) ?? "" }

    /// Two serves of one store (a copied disk, say) claim the same day's
    /// name on one network: the second one's probe meets the first one's
    /// answer, it renames itself, and a member finds both.
    @Test func twoServesClaimingOneNameOneRenamesAndBothAreFound() throws {
        let lab = try NetworkLab(devices: 3)
        let dir = TempDir()
        let owner = dir.file("owner.db"), copy = dir.file("copy.db"), kid = dir.file("kid.db")
        let offer = try lab.run(0, "pair-qr", ["--db", owner, "--format", "text", "-o", dir.file("pair.txt")])
        #expect(offer.status == 0, "\(offer.err)")
        try FileManager.default.copyItem(atPath: owner, toPath: copy)
        let first = try lab.start(0, "peer-sync", ["serve", "--db", owner], dir: dir, name: "first")
        try HouseholdNetworkTests.waitFor("the first serve to advertise") { first.err.contains("advertising _family-sync._tcp on eth0") }
        let j = try lab.run(2, "peer-sync", ["join", "--db", kid], input: offer.json!["qr"]!.stringValue! + "\n")
        #expect(j.status == 0, "\(j.err)")
        // The member sees the first: its names are claimed (a serve answers only then).
        let seen = try lab.run(2, "peer-sync", ["discover", "--db", kid])
        #expect(seen.status == 0, "\(seen.err)")
        let second = try lab.start(1, "peer-sync", ["serve", "--db", copy], dir: dir, name: "second")
        do {
            try HouseholdNetworkTests.waitFor("the second serve to rename") { second.err.contains("advertising as ") }
        } catch {
            Issue.record("\(error): first: \(first.err) second: \(second.err)")
            throw error
        }
        #expect(second.err.contains("is taken on the network by another device"), "\(second.err)")

        let d = try lab.run(2, "peer-sync", ["discover", "--db", kid])
        #expect(d.status == 0, "\(d.err)")
        let found = d.json?["devices"]?.arrayValue ?? []
        let ownerID = try Household.device(owner)
        #expect(found.compactMap { $0["device"]?.stringValue } == [ownerID, ownerID], "\(d.out)")
        #expect(Set(found.compactMap { $0["address"]?.stringValue }) == ["\(lab.address(0)):\(Self.port)", "\(lab.address(1)):\(Self.port)"])

        // The first kept its name: it never saw a conflict.
        kill(first.pid, SIGTERM); kill(second.pid, SIGTERM)
        #expect(first.wait(timeout: 20) == 0)
        #expect(second.wait(timeout: 20) == 0)
        #expect(!first.err.contains("taken on the network"), "\(first.err)")
    }

    /// The owner moves to IPv6 only (no IPv4 address at all) and serves on
    /// "::": Sync Now finds it over IPv6 (a ULA, then only its link-local
    /// address with the interface as scope), and remembers where.
    @Test func anOwnerReachableOnlyOverIPv6IsFoundAndSynced() throws {
        let lab = try NetworkLab(devices: 2)
        let dir = TempDir()
        let (owner, offers, serve) = try HouseholdNetworkTests.ownerServing(lab, dir: dir, offers: 1)
        let kid = dir.file("kid.db")
        #expect(try lab.run(1, "peer-sync", ["join", "--db", kid], input: offers[0]["qr"]!.stringValue! + "\n").status == 0)
        kill(serve.pid, SIGTERM)
        #expect(serve.wait(timeout: 20) == 0)

        try lab.addIPv6(0, "fd66::1/64")
        try lab.addIPv6(1, "fd66::2/64")
        try lab.removeIPv4(0)
        try Household.addRecords(owner, prefix: "six", count: 2)
        let v6 = try lab.start(0, "peer-sync", ["serve", "--db", owner, "--listen", "[::]:\(Self.port)"], dir: dir, name: "serve6")
        try HouseholdNetworkTests.waitFor("serve to advertise over IPv6") { v6.err.contains("advertising _family-sync._tcp on eth0 (fd66::1)") }

        let d = try lab.run(1, "peer-sync", ["discover", "--db", kid])
        #expect(d.status == 0, "\(d.err)")
        #expect(d.json?["devices"]?.arrayValue?.first?["address"]?.stringValue == "[fd66::1]:\(Self.port)", "\(d.out)")

        let c = try lab.run(1, "peer-sync", ["connect", "--db", kid], timeout: 60)
        #expect(c.status == 0, "\(c.err)")
        #expect(c.json?["address"]?.stringValue == "[fd66::1]:\(Self.port)")
        #expect(c.json?.int("records", "received") == 2)
        let st = try Tools.run("peer-sync", ["status", "--db", kid])
        #expect(st.json?["devices"]?.arrayValue?.first { $0["role"]?.stringValue == "owner" }?["lastAddress"]?.stringValue == "[fd66::1]:\(Self.port)")

        // Only the link-local address left: found with its scope, synced with.
        try lab.sh(["-n", lab.devices[0], "-6", "addr", "del", "fd66::1/64", "dev", "eth0"])
        let ll = try #require(try lab.linkLocal(0))
        try HouseholdNetworkTests.waitFor("serve to advertise its link-local address") { v6.err.contains("advertising _family-sync._tcp on eth0 (\(ll))") }
        let c2 = try lab.run(1, "peer-sync", ["connect", "--db", kid], timeout: 60)
        #expect(c2.status == 0, "\(c2.err) [serve: \(v6.err)]")
        #expect(c2.json?["address"]?.stringValue == "[\(ll)%eth0]:\(Self.port)")
        kill(v6.pid, SIGTERM)
        #expect(v6.wait(timeout: 20) == 0)
    }
}
