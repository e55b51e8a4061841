import Foundation
import Testing
import FamilySync

/// One family per store (docs/protocol.md §9): an offer names its family and
/// owner in clear, so anyone can write one that names a household's. A store
/// of that household redeems it only with the owner whose roster key it
/// holds; a refused join leaves the store as it was.
@Suite struct OneFamilyPerStoreTests {
    /// A store that passes itself off as `owner`: the same family ID and the
    /// same owner device ID, but its own keys (it never held the real ones).
    static func impostor(of owner: String, at path: String) throws -> Store {
        let real = try #require(try Store(path: owner).family())
        let s = try Store(path: path)
        _ = try s.makeOffer(ttl: .minutes(10), address: nil, now: Timestamp.current())
        let mine = try s.deviceID
        try s.db.run("UPDATE devices SET device_id = ? WHERE device_id = ?", [.text(real.ownerDevice), .text(mine)])
        for (k, v) in [("family_id", real.id), ("device_id", real.ownerDevice), ("owner_device", real.ownerDevice)] {
            try s.db.run("UPDATE meta SET value = ? WHERE key = ?", [.text(v), .text(k)])
        }
        try s.db.run("DELETE FROM offers")
        return s
    }

    @Test func aForgedOfferDoesNotTakeOverACurrentMember() throws {
        let dir = TempDir()
        let (owner, member, server) = try PeerSyncFaultTests.pair(dir)
        defer { server.stop() }
        let fake = try Self.impostor(of: owner, at: dir.file("impostor.db"))
        let forged = try fake.makeOffer(ttl: .minutes(10), address: nil, now: Timestamp.current())
        #expect(forged.family == (try Store(path: owner).family()?.id))
        let impostorServe = try ServeProcess(db: dir.file("impostor.db"), dir: dir, name: "impostor")
        defer { impostorServe.stop() }

        let before = try Household.fingerprint(member)
        let r = try Tools.run("peer-sync", ["join", "--db", member, "--connect", impostorServe.address], input: forged.text + "\n")
        #expect(r.status == 77, "\(r.err)")
        #expect(r.err.contains("does not prove the roster key") && r.err.contains("--accept-new-owner-key"), "\(r.err)")
        #expect(try Household.fingerprint(member) == before, "a refused join changes nothing")
        // The member still belongs to its real owner.
        let again = try Tools.run("peer-sync", ["connect", "--db", member, server.address], timeout: 60)
        #expect(again.status == 0, "\(again.err)")
    }

    /// The real owner's offer still lets a member's store join again (here a
    /// revoked one), and a store of another family is refused as before.
    @Test func theRealOwnersOfferStillAdmitsAgainAndAnotherFamilysIsRefused() throws {
        let dir = TempDir()
        let (owner, member, server) = try PeerSyncFaultTests.pair(dir)
        defer { server.stop() }
        let id = try Household.device(member)
        #expect(try Tools.run("peer-sync", ["revoke", "--db", owner, id]).status == 0)
        let offer = try Store(path: owner).makeOffer(ttl: .minutes(10), address: nil, now: Timestamp.current())
        let back = try Tools.run("peer-sync", ["join", "--db", member, "--connect", server.address], input: offer.text + "\n")
        #expect(back.status == 0, "\(back.err)")

        let other = dir.file("other-owner.db")
        let otherOffer = try Store(path: other).makeOffer(ttl: .minutes(10), address: nil, now: Timestamp.current())
        let before = try Household.fingerprint(member)
        let r = try Tools.run("peer-sync", ["join", "--db", member, "--connect", server.address], input: otherOffer.text + "\n")
        #expect(r.status != 0)
        #expect(try Household.fingerprint(member) == before)
    }
}
