@testable import FamilySync
import Foundation
import Testing

/// A member applying the owner's signed roster (docs/protocol.md §4.1, §4.6):
/// only statements under the key the owner gave, and revocations that only a
/// later admission lifts.
@Suite final class MemberRosterTests {
    let dir = TempFolder("member-roster-test")
    let family = FamilyInfo(id: "0F0E0D0C-0B0A-4908-8706-050403020100", role: .member, ownerDevice: "AAAAAAAA-0000-4000-8000-000000000001")
    let revokedDevice = "CCCCCCCC-0000-4000-8000-000000000003"
    let t0 = Timestamp(milliseconds: 1_800_000_000_000)

    func member() throws -> Store {
        let s = try Store(path: dir.path + "/m-\(UUID().uuidString).db")
        try s.write { try s.joinFamily(id: family.id, ownerDevice: family.ownerDevice, secret: try SecretBytes.random(count: 32), now: t0) }
        return s
    }

    func statement(_ version: Int64, key: SecretBytes, revokedDevice joined: Timestamp, revokedAt: Timestamp?, member me: String) throws -> SignedRoster {
        try SignedRoster.sign(RosterStatement(family: family.id, version: version, maxDevices: 4, devices: [
            RosterEntry(device: family.ownerDevice, role: .owner, joinedAt: t0, revokedAt: nil, name: nil),
            RosterEntry(device: me, role: .member, joinedAt: t0, revokedAt: nil, name: nil),
            RosterEntry(device: revokedDevice, role: .member, joinedAt: joined, revokedAt: revokedAt, name: nil),
        ]), privateKey: key)
    }

    @Test func aNewRosterKeyFromTheOwnerStartsTheCountAgainAndKeepsRevocations() throws {
        let s = try member()
        let me = try s.deviceID
        let k1 = try Ed25519.generatePrivateKey(), k2 = try Ed25519.generatePrivateKey()
        let revokedAt = t0.adding(.days(2))
        try s.write {
            try s.setOwnerRosterKey(try Ed25519.publicKey(privateKey: k1))
            #expect(try s.applyOwnerRoster(try statement(7, key: k1, revokedDevice: t0, revokedAt: revokedAt, member: me), family: family)
                    == .applied(version: 7, selfRevokedAt: nil))
            // The owner's store now holds another key (restored from a copy older than roster keys).
            try s.setOwnerRosterKey(try Ed25519.publicKey(privateKey: k2))
            // An old statement under the old key no longer verifies.
            guard case .rejected = try s.applyOwnerRoster(try statement(8, key: k1, revokedDevice: t0, revokedAt: revokedAt, member: me), family: family) else {
                Issue.record("a statement under the old key was applied")
                return
            }
            // The owner's first statement under the new key applies, though its version is lower;
            // it states the revoked device current with its old admission: the revocation stays.
            #expect(try s.applyOwnerRoster(try statement(1, key: k2, revokedDevice: t0, revokedAt: nil, member: me), family: family)
                    == .applied(version: 1, selfRevokedAt: nil))
            #expect(try s.device(revokedDevice)?.revokedAt == revokedAt)
            #expect(try s.heldRosterVersion == 1)
            // Admitted again after its revocation: then it is current.
            #expect(try s.applyOwnerRoster(try statement(2, key: k2, revokedDevice: t0.adding(.days(3)), revokedAt: nil, member: me), family: family)
                    == .applied(version: 2, selfRevokedAt: nil))
            #expect(try s.device(revokedDevice)?.revokedAt == nil)
        }
    }

    /// §4.1: two statements with one version under one key (the owner never
    /// signs two; only a forged store could hold both): the first applied
    /// stands, the second is not newer and is ignored, whatever it says.
    @Test func aSecondStatementWithTheSameVersionIsIgnored() throws {
        let s = try member()
        let me = try s.deviceID
        let k = try Ed25519.generatePrivateKey()
        try s.write {
            try s.setOwnerRosterKey(try Ed25519.publicKey(privateKey: k))
            #expect(try s.applyOwnerRoster(try statement(3, key: k, revokedDevice: t0, revokedAt: nil, member: me), family: family)
                    == .applied(version: 3, selfRevokedAt: nil))
            #expect(try s.applyOwnerRoster(try statement(3, key: k, revokedDevice: t0, revokedAt: t0.adding(.days(1)), member: me), family: family) == .old)
        }
        #expect(try s.device(revokedDevice)?.revokedAt == nil)
        #expect(try s.heldRosterVersion == 3)
    }

    @Test func theSameKeyAgainKeepsTheHeldStatement() throws {
        let s = try member()
        let me = try s.deviceID
        let k1 = try Ed25519.generatePrivateKey()
        try s.write {
            try s.setOwnerRosterKey(try Ed25519.publicKey(privateKey: k1))
            _ = try s.applyOwnerRoster(try statement(7, key: k1, revokedDevice: t0, revokedAt: nil, member: me), family: family)
            try s.setOwnerRosterKey(try Ed25519.publicKey(privateKey: k1))
            #expect(try s.heldRosterVersion == 7)
            #expect(try s.applyOwnerRoster(try statement(3, key: k1, revokedDevice: t0, revokedAt: nil, member: me), family: family) == .old)
        }
    }
}
