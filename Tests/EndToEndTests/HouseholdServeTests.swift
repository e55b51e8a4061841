import Foundation
import Testing
import FamilySync

/// One serve per store, and a peer of the previous protocol version refused
/// by name, through the built tools on loopback.
@Suite(.serialized) struct HouseholdServeTests {
    @Test func aSecondServeOnOneStoreIsRefusedAndTheLockDiesWithTheProcess() throws {
        let dir = TempDir()
        let owner = dir.file("owner.db"), kid = dir.file("kid.db")
        let offer = try Household.owner(owner)
        let first = try ServeProcess(db: owner, dir: dir, name: "first")
        defer { first.stop() }

        let second = try Tools.run("peer-sync", ["serve", "--db", owner, "--listen", "127.0.0.1:0"], timeout: 30)
        #expect(second.status == 75, "\(second.err)")
        #expect(second.err.contains("already serving the store"), "\(second.err)")
        #expect(second.stdout.isEmpty)

        // The first keeps serving: a join through it works.
        let j = try Household.join(kid, server: first, offer: offer)
        #expect(j.status == 0, "\(j.err)")

        // kill -9: the kernel drops the lock, and a new serve starts.
        kill(first.pid, SIGKILL)
        first.process.waitUntilExit()
        let third = try ServeProcess(db: owner, dir: dir, name: "third")
        defer { third.stop() }
        let c = try Tools.run("peer-sync", ["connect", "--db", kid, third.address])
        #expect(c.status == 0, "\(c.err)")
    }

    @Test func aPeerOfThePreviousProtocolIsRefusedNamingBothVersions() throws {
        let (previous, current) = (SyncProtocol.version - 1, SyncProtocol.version)
        let dir = TempDir()
        let owner = dir.file("owner.db"), kid = dir.file("kid.db")
        let offer = try Household.owner(owner)
        try Household.addRecords(owner, prefix: "o", count: 5)
        let server = try ServeProcess(db: owner, dir: dir)
        defer { server.stop() }

        // A joining device of the old version gets a refusal, and nothing is stored.
        let old = try Household.join(kid, server: server, offer: offer, extra: ["--fault-inject-previous-protocol"])
        #expect(old.status == 65, "\(old.err)")
        #expect(old.err.contains("version \(previous)") && old.err.contains("version \(current)"), "\(old.err)")
        #expect(try Store(path: kid).family() == nil)

        let j = try Household.join(kid, server: server, offer: try Household.offer(owner))
        #expect(j.status == 0, "\(j.err)")
        let before = try Household.fingerprint(kid)
        let sessions = server.summaries.count
        let c = try Tools.run("peer-sync", ["connect", "--db", kid, "--fault-inject-previous-protocol", server.address], timeout: 60)
        #expect(c.status == 65, "\(c.err)")
        #expect(c.err.contains("protocol version \(previous), this device version \(current)"), "\(c.err)")
        #expect(try Household.fingerprint(kid) == before, "an old-version session moved nothing")
        // The server says the same, and keeps serving.
        let deadline = Date().addingTimeInterval(20)
        while !server.err.contains("version \(previous),") && Date() < deadline { usleep(20_000) }
        #expect(server.err.contains("protocol version \(previous), this device version \(current)"), "\(server.err)")
        #expect(server.summaries.count == sessions)
        let ok = try Tools.run("peer-sync", ["connect", "--db", kid, server.address])
        #expect(ok.status == 0, "\(ok.err)")
    }
}
