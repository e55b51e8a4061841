import Testing
@testable import FamilySync

@Suite struct MessageTests {
    static let dev = "11111111-2222-4333-8444-555555555555"
    static let fam = "6A1C1D2E-0F3A-4B5C-8D6E-7F8091A2B3C4"

    static func hello(_ replace: (String, String)? = nil) -> Frame {
        var text = "{\"protocol\":3,\"device\":\"\(dev)\",\"family\":\"\(fam)\",\"role\":\"member\",\"clock\":\"2026-11-30T10:00:00.000Z\",\"epoch\":2,\"after\":17,\"sent\":3}"
        if let (a, b) = replace { text = text.replacingOccurrences(of: a, with: b) }
        return Frame(.hello, Array(text.utf8))
    }

    @Test func helloRoundTrips() throws {
        let h = try HelloMessage(Self.hello())
        #expect(h.device == Self.dev && h.family == Self.fam && h.role == .member && h.epoch == 2 && h.after == 17)
        let again = try HelloMessage(Frame(.hello, Array(h.json.serialized.utf8)))
        #expect(again == h)
    }

    @Test(arguments: [
        ("\"protocol\":3", "\"protocol\":1", "the peer speaks family-sync protocol version 1, this device version 3; update family-sync on the peer"),
        ("\"protocol\":3", "\"protocol\":\"1\"", "HELLO field 'protocol': not a whole number from 1 to 1048576, written without fraction or exponent"),
        ("\"device\":\"\(dev)\"", "\"device\":\"me\"", "HELLO field 'device': not an upper-case UUID"),
        ("\"role\":\"member\"", "\"role\":\"admin\"", "HELLO field 'role': not 'owner' or 'member'"),
        ("\"clock\":\"2026-11-30T10:00:00.000Z\"", "\"clock\":\"soon\"", "HELLO field 'clock': not an RFC 3339 time"),
        ("\"after\":17", "\"after\":-1", "HELLO field 'after': not a whole number from 0 to 9223372036854775807, written without fraction or exponent"),
        // An integer is digits only: a fraction or an exponent is not one, whatever its value.
        ("\"after\":17", "\"after\":17.0", "HELLO field 'after': not a whole number from 0 to 9223372036854775807, written without fraction or exponent"),
        ("\"after\":17", "\"after\":0e0", "HELLO field 'after': not a whole number from 0 to 9223372036854775807, written without fraction or exponent"),
        ("\"after\":17", "\"after\":0E+0", "HELLO field 'after': not a whole number from 0 to 9223372036854775807, written without fraction or exponent"),
        (",\"epoch\":2", "", "HELLO field 'epoch': missing"),
    ])
    func helloFieldsAreChecked(from: String, to: String, message: String) {
        do {
            _ = try HelloMessage(Self.hello((from, to)))
            Issue.record("accepted a bad HELLO")
        } catch {
            #expect(error.message == message)
        }
    }

    @Test func doneChecksItsDigest() throws {
        let d = DoneMessage(recordsSent: 1, recordsReceived: 2, recordsApplied: 3, photosSent: 4, photosReceived: 5, photosUnavailable: 6,
                            digest: String(repeating: "a", count: 64), upTo: 9)
        let back = try DoneMessage(Frame(.done, Array(d.json.serialized.utf8)))
        #expect(back.upTo == 9 && back.photosUnavailable == 6)
        let bad = d.json.serialized.replacingOccurrences(of: String(repeating: "a", count: 64), with: "zz")
        #expect(throws: ProtocolError.self) { try DoneMessage(Frame(.done, Array(bad.utf8))) }
    }

    @Test func familyRosterIsBounded() throws {
        let entry = "{\"device\":\"\(Self.dev)\",\"role\":\"member\",\"joinedAt\":\"2026-11-30T10:00:00.000Z\",\"revokedAt\":null}"
        let ok = "{\"owner\":\"\(Self.dev)\",\"epoch\":0,\"maxDevices\":4,\"devices\":[\(entry)],\"proof\":null}"
        let m = try FamilyMessage(Frame(.family, Array(ok.utf8)))
        #expect(m.devices.count == 1 && m.familyKey == nil)
        let many = Array(repeating: entry, count: FamilyMessage.maxRosterEntries + 1).joined(separator: ",")
        let tooMany = "{\"owner\":\"\(Self.dev)\",\"epoch\":0,\"maxDevices\":4,\"devices\":[\(many)],\"proof\":null}"
        #expect(throws: ProtocolError.self) { try FamilyMessage(Frame(.family, Array(tooMany.utf8))) }
        let shortKey = ok.replacingOccurrences(of: "\"proof\":null", with: "\"proof\":null,\"familyKey\":\"abcd\"")
        #expect(throws: ProtocolError.self) { try FamilyMessage(Frame(.family, Array(shortKey.utf8))) }
    }

    @Test func refusalsNeedAKnownReasonAndShowControlAndBidiCharactersEscaped() throws {
        let r = try RefusalMessage(Frame(.refused, Array("{\"reason\":\"revoked\",\"message\":\"gone\\u001b[31m\\u202e!\"}".utf8)))
        #expect(r.reason == .revoked)
        #expect(r.message == "gone\\u{1B}[31m\\u{202E}!")
        #expect(throws: ProtocolError.self) { try RefusalMessage(Frame(.refused, Array("{\"reason\":\"nope\"}".utf8))) }
    }

    @Test func offersAreReadFromJSONOrText() throws {
        let text = "FS1/\(Self.fam)/ABCDEFGHIJKLMNOPQRSTUVWXYZ234567/4102444800/127.0.0.1:7433"
        #expect(try OfferInput.parse(text + "\n", source: "x").nonce == "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")
        #expect(try OfferInput.parse("{\"qr\":\"\(text)\"}\n", source: "x").address == "127.0.0.1:7433")
        for bad in ["", "\n\n", "{\"nonce\":1}", "{not json", "FS2/x", String(repeating: "A", count: OfferInput.maxBytes + 1)] {
            #expect(throws: PairingError.self) { try OfferInput.parse(bad, source: "x") }
        }
    }
}
