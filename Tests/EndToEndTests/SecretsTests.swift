import Foundation
import Testing
import FamilySync

/// Secrets leave no trace: after a revocation the old family key's bytes are
/// nowhere in the owner's store file or its write-ahead log, nor in a
/// member's once it has synced the new key.
@Suite(.serialized) struct SecretsTests {
    static func contains(_ path: String, _ needle: [UInt8]) -> Bool {
        guard let d = FileManager.default.contents(atPath: path), !needle.isEmpty else { return false }
        let hay = [UInt8](d)
        guard hay.count >= needle.count else { return false }
        var i = 0
        while i <= hay.count - needle.count {
            if hay[i] == needle[0] && Array(hay[i..<(i + needle.count)]) == needle { return true }
            i += 1
        }
        return false
    }

    static func anywhere(_ db: String, _ key: [UInt8]) -> [String] {
        [db, db + "-wal", db + "-journal"].filter { contains($0, key) }.map { ($0 as NSString).lastPathComponent }
    }

    @Test func revokedFamilyKeyIsNowhereInTheStoreOrItsLog() throws {
        let dir = TempDir()
        let owner = dir.file("owner.db"), kid = dir.file("kid.db"), other = dir.file("other.db")
        _ = try Household.owner(owner)
        let server = try ServeProcess(db: owner, dir: dir)
        defer { server.stop() }
        #expect(try Household.join(kid, server: server, offer: try Household.offer(owner)).status == 0)
        #expect(try Household.join(other, server: server, offer: try Household.offer(owner)).status == 0)
        let old = try #require(try Store(path: owner).familySecret()).copiedBytes
        // The key is really there before: the search can find it.
        #expect(!Self.anywhere(owner, old).isEmpty)
        #expect(!Self.anywhere(kid, old).isEmpty)

        let r = try Tools.run("peer-sync", ["revoke", "--db", owner, try Household.device(other)])
        #expect(r.status == 0, "\(r.err)")
        // The one line says which device was revoked, and nothing of any key.
        #expect(r.err == "peer-sync: revoked \(try Household.device(other))\n", "\(r.err)")
        let new = try #require(try Store(path: owner).familySecret()).copiedBytes
        #expect(new != old)
        #expect(Self.anywhere(owner, old).isEmpty, "old key found in \(Self.anywhere(owner, old))")
        #expect(!Self.anywhere(owner, new).isEmpty)

        // The member learns the new key from the owner and drops the old one as well.
        let c = try Tools.run("peer-sync", ["connect", "--db", kid, server.address])
        #expect(c.status == 0, "\(c.err)")
        #expect(try Store(path: kid).familySecret()?.copiedBytes == new)
        #expect(Self.anywhere(kid, old).isEmpty, "old key found in \(Self.anywhere(kid, old))")
    }

    /// The owning type zeroes the storage it owns: a derivation writes into
    /// it directly, and equal keys compare equal without exposing bytes.
    @Test func secretBytesOwnsAndComparesItsStorage() throws {
        let a = try SecretBytes.random(count: 32), b = SecretBytes(a.copiedBytes)
        #expect(a == b)
        #expect(a.count == 32)
        let psk1 = try SessionKeys.pairingPSK(nonce: "ABC", family: "F"), psk2 = try SessionKeys.pairingPSK(nonce: "ABD", family: "F")
        #expect(psk1 != psk2)
        #expect(psk1 == (try SessionKeys.pairingPSK(nonce: "ABC", family: "F")))
    }
}
