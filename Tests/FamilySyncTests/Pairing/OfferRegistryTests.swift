import Foundation
import Testing
@testable import FamilySync
@testable import FamilySyncImaging

/// The owner's nonce registry: fresh nonces, each redeemed at most once,
/// closed and expired offers refused, members make none.
@Suite struct OfferRegistryTests {
    static let now = Timestamp(rfc3339: "2026-11-30T10:00:00Z")!

    final class TempStore {
        let dir = TempFolder("fs-offers")
        let store: Store
        init() throws { store = try Store(path: dir.path + "/s.db") }
    }

    @Test func firstOfferCreatesTheFamilyWithThisDeviceAsOwner() throws {
        let t = try TempStore()
        #expect(try t.store.family() == nil)
        let o = try t.store.makeOffer(ttl: .minutes(10), address: nil, now: OfferRegistryTests.now)
        let f = try #require(try t.store.family())
        #expect(f.role == .owner)
        #expect(f.id == o.family)
        #expect(f.ownerDevice == (try t.store.deviceID))
        let again = try t.store.makeOffer(ttl: .minutes(10), address: nil, now: OfferRegistryTests.now)
        #expect(again.family == o.family)
        #expect(again.nonce != o.nonce)
    }

    @Test func aNonceIsRedeemedOnce() throws {
        let t = try TempStore()
        let o = try t.store.makeOffer(ttl: .minutes(10), address: nil, now: OfferRegistryTests.now)
        let at = OfferRegistryTests.now.adding(.minutes(1))
        #expect(try t.store.write { try t.store.redeemOfferInTransaction(nonce: o.nonce, by: "DEV-A", now: at) } == .accepted)
        #expect(try t.store.write { try t.store.redeemOfferInTransaction(nonce: o.nonce, by: "DEV-B", now: at) } == .alreadyUsed)
        #expect(try t.store.write { try t.store.redeemOfferInTransaction(nonce: o.nonce, by: "DEV-A", now: at) } == .alreadyUsed)
        #expect(try t.store.openOffers(now: at).isEmpty)
    }

    @Test func expiredClosedAndUnknownOffersAreRefused() throws {
        let t = try TempStore()
        let a = try t.store.makeOffer(ttl: .minutes(10), address: "192.168.1.2:7433", now: OfferRegistryTests.now)
        let b = try t.store.makeOffer(ttl: .minutes(10), address: nil, now: OfferRegistryTests.now)
        let c = try t.store.makeOffer(ttl: .minutes(30), address: nil, now: OfferRegistryTests.now)
        #expect(try t.store.openOffers(now: OfferRegistryTests.now).map(\.nonce).sorted() == [a.nonce, b.nonce, c.nonce].sorted())
        #expect(try t.store.openOffers(now: OfferRegistryTests.now).first { $0.nonce == a.nonce }?.address == "192.168.1.2:7433")
        #expect(try t.store.closeOffers(nonce: b.nonce, now: OfferRegistryTests.now) == 1)
        #expect(try t.store.closeOffers(nonce: b.nonce, now: OfferRegistryTests.now) == 0)
        let late = a.expiresAt
        #expect(try t.store.openOffers(now: late).map(\.nonce) == [c.nonce])
        #expect(try t.store.write { try t.store.redeemOfferInTransaction(nonce: a.nonce, by: "D", now: late) } == .expired)
        #expect(try t.store.write { try t.store.redeemOfferInTransaction(nonce: b.nonce, by: "D", now: OfferRegistryTests.now) } == .closed)
        #expect(try t.store.write { try t.store.redeemOfferInTransaction(nonce: "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", by: "D", now: OfferRegistryTests.now) } == .unknown)
        #expect(try t.store.closeOffers(nonce: nil, now: OfferRegistryTests.now) == 2)
        #expect(try t.store.openOffers(now: OfferRegistryTests.now).isEmpty)
    }

    @Test func aMembersStoreMakesNoOffers() throws {
        let t = try TempStore()
        try t.store.write { try t.store.joinFamily(id: "0F6B8E52-8B0C-4B5E-9D59-2B7D1B0E7E11", ownerDevice: "OWNER", secret: SecretBytes([UInt8](repeating: 1, count: 32)), now: OfferRegistryTests.now) }
        do {
            _ = try t.store.makeOffer(ttl: .minutes(10), address: nil, now: OfferRegistryTests.now)
            Issue.record("a member made an offer")
        } catch let e as PairingError {
            #expect(e.kind == .notOwner)
            #expect(e.description.contains("member"))
        }
        #expect(try t.store.db.scalarInt("SELECT count(*) FROM offers") == 0)
    }

    @Test func concurrentRedemptionsAdmitOneDevice() throws {
        let t = try TempStore()
        let path = t.dir.path + "/shared.db"
        // Made and closed first, so the other connections find a finished store.
        let o = try { let s = try Store(path: path); return try s.makeOffer(ttl: .minutes(10), address: nil, now: OfferRegistryTests.now) }()
        nonisolated(unsafe) let results = UnsafeMutableBufferPointer<Int>.allocate(capacity: 8)
        defer { results.deallocate() }
        DispatchQueue.concurrentPerform(iterations: 8) { i in
            let s = try! Store(path: path)
            let r = try! s.write { try s.redeemOfferInTransaction(nonce: o.nonce, by: "DEV-\(i)", now: OfferRegistryTests.now) }
            results[i] = r == .accepted ? 1 : 0
        }
        #expect(results.reduce(0, +) == 1)
    }
}
