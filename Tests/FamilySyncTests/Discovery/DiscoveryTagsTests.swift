import Testing
@testable import FamilySync

/// The advertised names: members recognise them, strangers learn nothing
/// stable (no IDs in clear, a new name every day).
@Suite struct DiscoveryTagsTests {
    static let family = "6A1C1D2E-0F3A-4B5C-8D6E-7F8091A2B3C4"
    static let owner = "11111111-2222-4333-8444-555555555555"
    static let member = "99999999-8888-4777-8666-555555555555"
    static let key = SecretBytes([UInt8](repeating: 7, count: 32))
    static let now = Timestamp(milliseconds: 1_796_000_000_000)

    static func found(_ instance: String, _ txt: [String]) -> FoundService {
        FoundService(instance: instance, txt: txt.map { Array($0.utf8) }, port: 7433, address: "10.0.0.1", interface: "eth0")
    }

    @Test func membersRecogniseTheDeviceAndStrangersDoNot() throws {
        let tags = try DiscoveryTags(familyKey: Self.key, family: Self.family)
        let day = DiscoveryTags.day(Self.now)
        let f = Self.found(tags.deviceTag(Self.owner, day: day), ["v=4"])
        let member = tags.recogniser(devices: [Self.owner, Self.member], me: Self.member, now: Self.now)
        #expect(member(f) == .some(Self.owner))
        // Its own advertisement is not a peer.
        let ownerView = tags.recogniser(devices: [Self.owner, Self.member], me: Self.owner, now: Self.now)
        #expect(ownerView(f) == nil)
        // Another family's key recognises nothing.
        let other = try DiscoveryTags(familyKey: SecretBytes([UInt8](repeating: 8, count: 32)), family: Self.family)
        #expect(other.recogniser(devices: [Self.owner], me: Self.member, now: Self.now)(f) == nil)
        // A device not in the roster yet is not recognised: nothing on the network says it is the family's.
        #expect(member(Self.found("zzzzzzzzzzzzzzzz", ["v=4"])) == nil)
        // A peer whose clock is on the next day is still recognised, renamed or not.
        #expect(member(Self.found(tags.deviceTag(Self.owner, day: day + 1), ["v=4"])) == .some(Self.owner))
        #expect(member(Self.found(tags.deviceTag(Self.owner, day: day) + " (2)", ["v=4"])) == .some(Self.owner))
    }

    @Test func namesRotateDailyAndRevealNoID() throws {
        let tags = try DiscoveryTags(familyKey: Self.key, family: Self.family)
        let d = DiscoveryTags.day(Self.now)
        #expect(tags.deviceTag(Self.owner, day: d) != tags.deviceTag(Self.owner, day: d + 1))
        #expect(tags.deviceTag(Self.owner, day: d) != tags.deviceTag(Self.member, day: d))
        for t in [tags.deviceTag(Self.owner, day: d), tags.deviceTag(Self.member, day: d + 1)] {
            for id in [Self.family, Self.owner, Self.member] {
                for part in id.lowercased().split(separator: "-") where part.count >= 4 { #expect(!t.contains(part)) }
            }
        }
        #expect(tags.deviceTag(Self.owner, day: d).count == 16)
    }

    /// §12a: the TXT record is the same for every device of every family,
    /// offers open or not; only the day's device tag differs.
    @Test func theAdvertisementSaysNothingOfTheFamilyOrItsOffers() throws {
        let dir = TempFolder()
        let store = try Store(path: dir.path + "/owner.db")
        _ = try store.makeOffer(ttl: .minutes(10), address: nil, now: Self.now)
        let withOffer = try #require(try ServiceAdvertisement.current(store: store, port: 7433, now: Self.now))
        #expect(withOffer.txt == ["v=\(SyncProtocol.version)"])
        try store.closeOffers(nonce: nil, now: Self.now)
        #expect(try ServiceAdvertisement.current(store: store, port: 7433, now: Self.now) == withOffer)
        let other = try Store(path: dir.path + "/other.db")
        _ = try other.makeOffer(ttl: .minutes(10), address: nil, now: Self.now)
        #expect(try ServiceAdvertisement.current(store: other, port: 7433, now: Self.now)?.txt == withOffer.txt)
    }
}

/// A listener on loopback is announced nowhere: no responder, no socket on port 5353.
@Suite struct ResponderScopeTests {
    @Test func aLoopbackListenerGetsNoResponder() throws {
        for host in ["127.0.0.1", "127.0.0.2", "::1", "192.0.2.77"] {
            #expect(NetworkInterface.serving(host: host).isEmpty)
            #expect(try MDNSResponder(listenHost: host, log: { _ in }, advertisement: { nil }) == nil)
        }
    }
}
