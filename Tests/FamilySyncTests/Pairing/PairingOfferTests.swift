import Testing
@testable import FamilySync
@testable import FamilySyncImaging

@Suite struct PairingOfferTests {
    static let now = Timestamp(rfc3339: "2026-11-30T10:00:00Z")!
    static let family = "0F6B8E52-8B0C-4B5E-9D59-2B7D1B0E7E11"
    static let nonce = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
    static let good = "FS1/\(family)/\(nonce)/1796032800/192.168.1.20:7433"

    @Test func madeOffersAreShortAlphanumericAndParseBack() throws {
        for addr in [nil, "192.168.1.20:7433", "owner-ipad.local:7433", "fe80::1:7433"] {
            let o = try PairingOffer.make(family: PairingOfferTests.family, ttl: .minutes(10), address: addr, now: PairingOfferTests.now)
            #expect(o.text.utf8.count <= PairingOffer.maxTextLength)
            #expect(o.text.utf8.count >= 80)
            #expect(QRCode.isAlphanumeric(o.text))
            #expect(o.text == o.text.uppercased())
            #expect(Base32.decode(o.nonce)?.count == PairingOffer.nonceBits / 8)
            #expect(o.expiresAt == PairingOfferTests.now.adding(.minutes(10)))
            let back = try PairingOffer(text: o.text, now: PairingOfferTests.now)
            #expect(back == o)
        }
    }

    /// Device and family IDs: 36 characters, upper-case hex with dashes at 8, 13, 18 and 23, nothing else.
    @Test func uuidsAreUpperCaseHexWithFourDashes() {
        #expect(PairingOffer.isUUID("7F3A0000-ABCD-4EF0-8123-456789ABCDEF"))
        for bad in ["7f3a0000-abcd-4ef0-8123-456789abcdef", "7F3A0000-ABCD-4EF0-8123-456789ABCDE", "7F3A0000-ABCD-4EF0-8123-456789ABCDEF0",
                    "7F3A0000ABCD-4EF0-8123-456789ABCDEF-", "7F3A0000-ABCD-4EF0-8123-456789ABCDEG", "7F3A0000-ABCD-4EF0-8123-456789ABCDÉ", ""] {
            #expect(!PairingOffer.isUUID(bad), "\(bad)")
        }
    }

    @Test func noncesAreFreshEveryTime() throws {
        var seen = Set<String>()
        for _ in 0..<500 {
            let o = try PairingOffer.make(family: PairingOfferTests.family, ttl: .minutes(10), address: nil, now: PairingOfferTests.now)
            #expect(seen.insert(o.nonce).inserted)
        }
        // 160 random bits: every base32 character should show up across 500 nonces.
        #expect(Set(seen.joined()).count == 32)
    }

    @Test(arguments: [
        ("", "version"),
        ("HELLO WORLD", "version"),
        ("FS2/\(family)/\(nonce)/1796032800/", "version"),
        ("FS1/\(family)/\(nonce)/1796032800", "text"),
        ("FS1/\(family)/\(nonce)/1796032800//", "text"),
        ("FS1/\(family.lowercased())/\(nonce)/1796032800/", "family"),
        ("FS1/\(family.dropLast())/\(nonce)/1796032800/", "family"),
        ("FS1/\(family)/\(nonce.dropLast())/1796032800/", "nonce"),
        ("FS1/\(family)/\(nonce)A/1796032800/", "nonce"),
        ("FS1/\(family)/ABCDEFGHIJKLMNOPQRSTUVWXYZ234561/1796032800/", "nonce"),
        ("FS1/\(family)/abcdefghijklmnopqrstuvwxyz234567/1796032800/", "nonce"),
        ("FS1/\(family)/\(nonce)/-5/", "expiresAt"),
        ("FS1/\(family)/\(nonce)/17960328OO/", "expiresAt"),
        ("FS1/\(family)/\(nonce)/1796032800/HOST", "addr"),
        ("FS1/\(family)/\(nonce)/1796032800/HOST:99999", "addr"),
        ("FS1/\(family)/\(nonce)/1796032800/HO ST:80", "addr"),
        ("FS1/\(family)/\(nonce)/1796032800/" + String(repeating: "A", count: 40) + ":1", "text"),
    ] as [(String, String)])
    func invalidOffersNameTheField(text: String, field: String) {
        #expect(throws: PairingOffer.Invalid.self) { try PairingOffer(text: text) }
        do { _ = try PairingOffer(text: text) } catch { #expect(error.field == field, "\(text): \(error)") }
    }

    @Test func truncatedOffersAreInvalid() {
        for n in stride(from: 0, to: PairingOfferTests.good.count, by: 3) {
            let t = String(PairingOfferTests.good.prefix(n))
            // Cutting the address's port can leave a valid shorter port; anything else fails.
            if let o = try? PairingOffer(text: t) { #expect(o.address != nil && t.hasPrefix(PairingOfferTests.good.prefix(n))) }
        }
        #expect(throws: PairingOffer.Invalid.self) { try PairingOffer(text: String(PairingOfferTests.good.prefix(60))) }
    }

    @Test func expiryIsCheckedWhenAClockIsGiven() throws {
        let o = try PairingOffer(text: PairingOfferTests.good)
        #expect(o.expiresAt == Timestamp(milliseconds: 1_796_032_800_000))
        #expect(throws: PairingOffer.Invalid.self) { try PairingOffer(text: PairingOfferTests.good, now: o.expiresAt) }
        #expect((try? PairingOffer(text: PairingOfferTests.good, now: o.expiresAt.subtracting(.seconds(1)))) != nil)
    }

    @Test func jsonCarriesTheFieldsPeerSyncReads() throws {
        let o = try PairingOffer(text: PairingOfferTests.good)
        let j = o.json
        #expect(j["family"]?.stringValue == PairingOfferTests.family)
        #expect(j["nonce"]?.stringValue == PairingOfferTests.nonce)
        #expect(j["expiresAt"]?.stringValue == "2026-11-30T10:00:00.000Z")
        #expect(j["addr"]?.stringValue == "192.168.1.20:7433")
        #expect(j["qr"]?.stringValue == PairingOfferTests.good)
    }

    @Test func badAddressesAreRefusedWhenMaking() {
        for a in ["nohost", ":80", "host:0", "host:65536", "hö st:80", "a/b:80"] {
            #expect(throws: PairingError.self) { try PairingOffer.make(family: PairingOfferTests.family, ttl: .minutes(1), address: a, now: PairingOfferTests.now) }
        }
        let long = #expect(throws: PairingError.self) {
            try PairingOffer.make(family: PairingOfferTests.family, ttl: .minutes(1), address: String(repeating: "a", count: 30) + ".example:1", now: PairingOfferTests.now)
        }
        #expect(long?.kind == .addressTooLong)
    }
}
