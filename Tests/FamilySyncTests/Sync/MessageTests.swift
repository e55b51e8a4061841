import Testing
@testable import FamilySync

/// A protocol error with exactly `message`.
func expectProtocolError(_ message: String, sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void) {
    do {
        try body()
        Issue.record("accepted; expected: \(message)", sourceLocation: sourceLocation)
    } catch let e as ProtocolError {
        #expect(e.message == message, sourceLocation: sourceLocation)
    } catch {
        Issue.record("\(error)", sourceLocation: sourceLocation)
    }
}

@Suite struct MessageTests {
    static let dev = "11111111-2222-4333-8444-555555555555"
    static let fam = "6A1C1D2E-0F3A-4B5C-8D6E-7F8091A2B3C4"

    static func hello(_ replace: (String, String)? = nil) -> Frame {
        var text = "{\"protocol\":\(SyncProtocol.version),\"device\":\"\(dev)\",\"family\":\"\(fam)\",\"role\":\"member\",\"clock\":\"2026-11-30T10:00:00.000Z\",\"epoch\":2,\"after\":17,\"sent\":3}"
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
        ("\"protocol\":\(SyncProtocol.version)", "\"protocol\":1", "the peer speaks family-sync protocol version 1, this device version \(SyncProtocol.version); update family-sync on the peer"),
        ("\"protocol\":\(SyncProtocol.version)", "\"protocol\":\"1\"", "HELLO field 'protocol': not a whole number from 1 to 1048576, written without fraction or exponent"),
        ("\"device\":\"\(dev)\"", "\"device\":\"me\"", "HELLO field 'device': not an upper-case UUID"),
        ("\"role\":\"member\"", "\"role\":\"admin\"", "HELLO field 'role': not 'owner' or 'member'"),
        ("\"clock\":\"2026-11-30T10:00:00.000Z\"", "\"clock\":\"soon\"", "HELLO field 'clock': not an RFC 3339 time"),
        ("\"after\":17", "\"after\":-1", "HELLO field 'after': not a whole number from 0 to 9223372036854775807, written without fraction or exponent"),
        // An integer is digits only: a fraction or an exponent is not one, whatever its value.
        ("\"after\":17", "\"after\":17.0", "HELLO field 'after': not a whole number from 0 to 9223372036854775807, written without fraction or exponent"),
        ("\"after\":17", "\"after\":0e0", "HELLO field 'after': not a whole number from 0 to 9223372036854775807, written without fraction or exponent"),
        ("\"after\":17", "\"after\":0E+0", "HELLO field 'after': not a whole number from 0 to 9223372036854775807, written without fraction or exponent"),
        (",\"epoch\":2", "", "HELLO field 'epoch': missing"),
        // The same for every integer of HELLO (§7): after, sent, epoch.
        ("\"after\":17", "\"after\":0.0", "HELLO field 'after': not a whole number from 0 to 9223372036854775807, written without fraction or exponent"),
        ("\"after\":17", "\"after\":-0", "HELLO field 'after': not a whole number from 0 to 9223372036854775807, written without fraction or exponent"),
        ("\"sent\":3", "\"sent\":2.0", "HELLO field 'sent': not a whole number from 0 to 9223372036854775807, written without fraction or exponent"),
        ("\"sent\":3", "\"sent\":0e0", "HELLO field 'sent': not a whole number from 0 to 9223372036854775807, written without fraction or exponent"),
        ("\"epoch\":2", "\"epoch\":2.0", "HELLO field 'epoch': not a whole number from 0 to 2147483647, written without fraction or exponent"),
        ("\"epoch\":2", "\"epoch\":0E+0", "HELLO field 'epoch': not a whole number from 0 to 2147483647, written without fraction or exponent"),
        // §7.1: `software` is at most 64 bytes; longer is a protocol error naming it.
        ("\"sent\":3", "\"sent\":3,\"software\":\"\(String(repeating: "s", count: 65))\"", "HELLO field 'software': longer than 64 bytes"),
    ])
    func helloFieldsAreChecked(from: String, to: String, message: String) {
        do {
            _ = try HelloMessage(Self.hello((from, to)))
            Issue.record("accepted a bad HELLO")
        } catch {
            #expect(error.message == message)
        }
    }

    /// §7.4: RECORDS-END `count` is read by the same integer rule as HELLO's.
    @Test(arguments: ["0.0", "2.0", "0e0", "0E+0", "-0", "1e2"])
    func recordsEndCountIsDigitsOnly(_ written: String) throws {
        let f = Frame(.recordsEnd, Array("{\"count\":\(written),\"after\":0}".utf8))
        expectProtocolError("RECORDS-END field 'count': not a whole number from 0 to 9223372036854775807, written without fraction or exponent") {
            _ = try FieldReader(f).int("count")
        }
        #expect(try FieldReader(Frame(.recordsEnd, Array("{\"count\":2,\"after\":0}".utf8))).int("count") == 2)
    }

    /// §6, §7.9: C1 controls (U+0080–U+009F, U+009B being a one-byte CSI) in
    /// a peer's words are escaped like C0, DEL and bidi characters, whether
    /// written raw (UTF-8 C2 9B) or as a JSON escape.
    @Test func c1ControlsInPeerWordsAreEscaped() throws {
        let raw = "{\"reason\":\"revoked\",\"message\":\"a\u{9B}31mb\u{85}c\u{80}\"}"
        #expect(try RefusalMessage(Frame(.refused, Array(raw.utf8))).message == "a\\u{9B}31mb\\u{85}c\\u{80}")
        let escaped = "{\"reason\":\"unknown-device\",\"message\":\"x\\u009b2J\\u009f\"}"
        #expect(try RefusalMessage(Frame(.refused, Array(escaped.utf8))).message == "x\\u{9B}2J\\u{9F}")
        // ERROR's message goes through the same escaping; nothing of U+0080–U+009F survives.
        for v in UInt32(0x80)...0x9F {
            let shown = DisplayText.escaped("m" + String(Character(Unicode.Scalar(v)!)))
            #expect(!shown.unicodeScalars.contains { $0.value >= 0x80 && $0.value <= 0x9F })
            #expect(shown == "m\\u{" + String(v, radix: 16, uppercase: true) + "}")
        }
        #expect(DisplayText.escaped("Anna\u{200D}s 👩‍👧") == "Anna\u{200D}s 👩‍👧")
    }

    /// §7.3: FAMILY needs `owner`, `epoch`, `maxDevices` and `devices`; every
    /// other field is optional (absent and null alike), and a missing
    /// required one is a protocol error naming it.
    @Test func familyOptionalAndRequiredFields() throws {
        let minimal = "{\"owner\":\"\(Self.dev)\",\"epoch\":0,\"maxDevices\":4,\"devices\":[]}"
        let m = try FamilyMessage(Frame(.family, Array(minimal.utf8)))
        #expect(m.proof == nil && m.policy == nil && m.roster == nil && m.rosterKey == nil && m.familyKey == nil && m.acked == nil && m.waitingFor.isEmpty)
        let nulls = minimal.dropLast() + ",\"proof\":null,\"policy\":null,\"roster\":null,\"rosterKey\":null,\"familyKey\":null,\"acked\":null,\"purgeFloor\":\"9999-12-31T00:00:00.000Z\"}"
        #expect(try FamilyMessage(Frame(.family, Array(nulls.utf8))).roster == nil)
        for field in ["owner", "epoch", "maxDevices", "devices"] {
            let o = try #require(JSONParser.parse(minimal).objectValue).filter { $0.0 != field }
            expectProtocolError("FAMILY field '\(field)': missing") { _ = try FamilyMessage(Frame(.family, Array(JSONValue.object(o).serialized.utf8))) }
        }
        // `waitingFor` comes with `acked`: one without the other is a protocol error.
        let ackedAlone = minimal.dropLast() + ",\"acked\":3}"
        expectProtocolError("FAMILY field 'waitingFor': missing") { _ = try FamilyMessage(Frame(.family, Array(ackedAlone.utf8))) }
        // §7.3 limits: a proof over 64 KiB and more than 64 products are protocol errors naming the field.
        let bigProof = minimal.dropLast() + ",\"proof\":\"\(String(repeating: "a", count: EntitlementExchange.maxProofBytes + 1))\"}"
        expectProtocolError("FAMILY field 'proof': longer than 65536 bytes") { _ = try FamilyMessage(Frame(.family, Array(bigProof.utf8))) }
        let products = (0...FamilyMessage.maxPolicyProducts).map { "\"p\($0)\"" }.joined(separator: ",")
        let many = minimal.dropLast() + ",\"policy\":{\"bundleId\":\"b\",\"products\":[\(products)],\"allowSandbox\":false}}"
        expectProtocolError("FAMILY.policy field 'products': more than 64 entries") { _ = try FamilyMessage(Frame(.family, Array(many.utf8))) }
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
        #expect(throws: ProtocolError.self) { _ = try FamilyMessage(Frame(.family, Array(tooMany.utf8))) }
        let shortKey = ok.replacingOccurrences(of: "\"proof\":null", with: "\"proof\":null,\"familyKey\":\"abcd\"")
        #expect(throws: ProtocolError.self) { _ = try FamilyMessage(Frame(.family, Array(shortKey.utf8))) }
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
