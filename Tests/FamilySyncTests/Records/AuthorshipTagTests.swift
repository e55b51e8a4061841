import Testing
@testable import FamilySync

/// The authorship tag as the record grammar has it (docs/design.md §2,
/// docs/protocol.md §3.4 and §7.4 "Authorship"): one spelling, the line's
/// last field; what it covers; how a rewrite keeps, dates or drops it.
@Suite struct AuthorshipTagTests {
    static let family = "11111111-2222-4333-8444-555555555555"
    static let device = "AAAAAAAA-AAAA-4AAA-8AAA-AAAAAAAAAAAA"
    static let secret = SecretBytes((0..<32).map { UInt8($0) })
    static let body = #"{"id":"r-1","type":"note","modifiedAt":"2026-12-01T10:05:00.000Z","deviceId":"AAAAAAAA-AAAA-4AAA-8AAA-AAAAAAAAAAAA","deleted":false"#
    /// The example of docs/protocol.md §3.4, worked with Python's hmac and a textbook HKDF.
    static let tagged = body + #","authorship":"471d55aa9bbadfd3dbc1a80fd1e1eeab"}"#
    static let pulledBack = tagged.replacingOccurrences(of: "10:05:00.000Z\",\"deviceId", with: "10:00:00.000Z\",\"deviceId")
        .replacingOccurrences(of: "eeab\"}", with: "eeab/2026-12-01T10:05:00.000Z\"}")

    static func key() throws -> Authorship.Key { try Authorship.memberKey(deviceKey: secret, family: family, device: device) }

    static func scan(_ line: String) throws -> (bytes: [UInt8], scan: RecordScan) {
        let bytes = Array(line.utf8)
        let r = try bytes.withUnsafeBufferPointer { try RecordScanner.scan($0.baseAddress!, start: 0, end: $0.count) }
        return (bytes, r)
    }

    static func verifies(_ line: String, _ key: Authorship.Key) throws -> Bool {
        let (bytes, r) = try scan(line)
        return bytes.withUnsafeBufferPointer { Authorship.verifies($0.baseAddress!, r, key: key) }
    }

    @Test func theKeysAndTagOfTheProtocolsExample() throws {
        #expect(try Self.key().secret.copiedBytes == Hex.decode("b45e0108ff7816d29e94e0299913ae2d5e8bc74e2870810f520ce4b34f456ffe"))
        let owner = try Authorship.ownerKey(rosterKey: Self.secret, family: Self.family, owner: Self.device)
        #expect(owner.secret.copiedBytes == Hex.decode("9f4ec5873e093b1b19012a580a6dd4c62c51253bf82bb534ad0661543b266322"))
        // Tagging the body as a stamp does gives the example's line, byte for byte.
        var out = Array(Self.body.utf8)
        Authorship.appendTag(try Self.key(), to: &out, from: 0)
        #expect(String(decoding: out, as: UTF8.self) == Self.tagged)
        #expect(try Self.verifies(Self.tagged, Self.key()))
        #expect(try !Self.verifies(Self.tagged, owner), "another device's key does not make this tag")
    }

    /// Every byte before the tag is covered: id, time, author, deleted, content, spacing.
    @Test(arguments: [
        ("\"r-1\"", "\"r-2\""), ("10:05:00.000Z", "10:05:00.001Z"), ("AAAAAAAA-AAAA-4AAA-8AAA-AAAAAAAAAAAA", "BBBBBBBB-AAAA-4AAA-8AAA-AAAAAAAAAAAA"),
        ("false,", "true,"), ("\"note\"", "\"receipt\""), ("\"id\":", "\"id\": "),
    ])
    func anyChangeBeforeTheTagVoidsIt(_ from: String, _ to: String) throws {
        let changed = Self.tagged.replacingOccurrences(of: from, with: to)
        #expect(changed != Self.tagged)
        #expect(try !Self.verifies(changed, Self.key()), "\(from) → \(to)")
    }

    /// A version pulled back keeps its tag with the time its author gave:
    /// the tag holds over the author's line, and only while the version is no later than that time.
    @Test func aPulledBackVersionsTagHoldsOverItsAuthorsTime() throws {
        #expect(try Self.verifies(Self.pulledBack, Self.key()))
        let (_, r) = try Self.scan(Self.pulledBack)
        #expect(r.tagAuthorTime == Timestamp(rfc3339: "2026-12-01T10:05:00.000Z")!.milliseconds)
        // Made later than its author made it: no longer the author's version.
        let later = Self.pulledBack.replacingOccurrences(of: "10:00:00.000Z\",\"deviceId", with: "10:06:00.000Z\",\"deviceId")
        #expect(try !Self.verifies(later, Self.key()))
        // Another time claimed for the author: the tag does not cover it.
        let claimed = Self.pulledBack.replacingOccurrences(of: "/2026-12-01T10:05:00.000Z", with: "/2026-12-01T10:07:00.000Z")
        #expect(try !Self.verifies(claimed, Self.key()))
    }

    @Test func aRewriteKeepsDatesOrDropsTheTag() throws {
        let r = try Record(line: Self.tagged)
        // Pulled back: kept, dated with the author's time, and still the author's.
        let back = r.restamped(Timestamp(rfc3339: "2026-12-01T10:00:00.000Z")!)
        #expect(back.line == Self.pulledBack)
        // Pulled back again: the author's time stays the first one.
        let again = back.restamped(Timestamp(rfc3339: "2026-12-01T09:00:00.000Z")!)
        #expect(again.line.hasSuffix(#"eeab/2026-12-01T10:05:00.000Z"}"#))
        #expect(try Self.verifies(again.line, Self.key()))
        // The same time: nothing the tag covers changed.
        #expect(r.restamped(r.modifiedAt).line == Self.tagged)
        // A later time, or another author: the tag cannot speak for it, and goes.
        #expect(!r.restamped(Timestamp(rfc3339: "2026-12-01T11:00:00.000Z")!).line.contains("authorship"))
        #expect(!r.restamped(r.modifiedAt, deviceID: "B").line.contains("authorship"))
        // A time rewritten from a form the tag was not made over (here, it never was): no tag.
        let offset = Self.tagged.replacingOccurrences(of: "2026-12-01T10:05:00.000Z", with: "2026-12-01T11:05:00.000+01:00")
        #expect(try Record(line: offset).line == Self.body + "}")
    }

    @Test func theSameContentWithAnotherTagIsTheSameEdit() throws {
        let untagged = Array((Self.body + "}").utf8)
        #expect(Array(Self.pulledBack.utf8).withUnsafeBytes { RecordContent.same(held: untagged, incoming: $0) })
    }

    /// One spelling, as the last field: anything else is an error naming the field, in files and on the wire alike.
    @Test(arguments: [
        #","authorship":"471d55aa9bbadfd3dbc1a80fd1e1eeab","data":{}}"#,
        #","authorship":"471d55aa9bbadfd3dbc1a80fd1e1eea"}"#,
        #","authorship":"471D55AA9BBADFD3DBC1A80FD1E1EEAB"}"#,
        #", "authorship":"471d55aa9bbadfd3dbc1a80fd1e1eeab"}"#,
        #","authorship": "471d55aa9bbadfd3dbc1a80fd1e1eeab"}"#,
        #","authorship":"471d55aa9bbadfd3dbc1a80fd1e1eeab" }"#,
        #","authorship":12}"#,
        #","authorship":null}"#,
        #","auth\u006frship":"471d55aa9bbadfd3dbc1a80fd1e1eeab"}"#,
        #","authorship":"471d55aa9bbadfd3dbc1a80fd1e1eeab/2026-12-01T10:05:00Z"}"#,
        #","authorship":"471d55aa9bbadfd3dbc1a80fd1e1eeab/2026-13-01T10:05:00.000Z"}"#,
        #","authorship":"471d55aa9bbadfd3dbc1a80fd1e1eeab-2026-12-01T10:05:00.000Z"}"#,
    ])
    func aTagInAnyOtherFormIsAnError(_ tail: String) throws {
        #expect(throws: RecordError.self) { _ = try Record(line: Self.body + tail) }
        do { _ = try Record(line: Self.body + tail) } catch {
            #expect(error.field == "authorship", "\(tail): \(error)")
        }
    }
}
