import Testing
@testable import FamilySync

/// The mDNS packet codec: round trips, name compression, and hostile packets
/// (compression loops, truncation, lying lengths) refused without a crash.
@Suite struct DNSMessageTests {
    static let instance = DNSName("abcdefghijklmnop._family-sync._tcp.local")

    static func sampleResponse() -> DNSMessage {
        var m = DNSMessage()
        m.flags = DNSMessage.responseFlags
        m.answers = [DNSRecord(name: ServiceAdvertisement.serviceType, ttl: 4500, data: .ptr(instance))]
        m.additionals = [
            DNSRecord(name: instance, ttl: 120, cacheFlush: true, data: .srv(priority: 0, weight: 0, port: 7433, target: DNSName("abcdefghijklmnop.local"))),
            DNSRecord(name: instance, ttl: 4500, cacheFlush: true, data: .txt([Array("v=1".utf8), Array("f=abcdefghij".utf8)])),
            DNSRecord(name: DNSName("abcdefghijklmnop.local"), ttl: 120, cacheFlush: true, data: .a([10, 0, 0, 1])),
            DNSRecord(name: DNSName("x.local"), ttl: 1, data: .other(type: 47, [1, 2, 3])),
        ]
        return m
    }

    @Test func aResponseRoundTripsWithNamesCompressed() throws {
        let m = Self.sampleResponse()
        let bytes = m.encoded()
        #expect(try DNSMessage(parsing: bytes) == m)
        // "_family-sync._tcp.local" is written once; later names point at it.
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(text.components(separatedBy: "_family-sync").count == 2)
        #expect(bytes.count < 200)
    }

    @Test func aQueryRoundTripsWithItsUnicastBit() throws {
        var q = DNSMessage()
        q.id = 0x1234
        q.questions = [DNSQuestion(name: ServiceAdvertisement.serviceType, type: DNSType.ptr.rawValue, unicastResponse: true)]
        let p = try DNSMessage(parsing: q.encoded())
        #expect(p == q)
        #expect(!p.isResponse)
        #expect(p.questions[0].unicastResponse)
    }

    @Test func namesCompareWithoutCase() {
        #expect(DNSName("_Family-Sync._TCP.Local") == ServiceAdvertisement.serviceType)
        #expect(DNSName("a.local") != DNSName("b.local"))
    }

    @Test func everyTruncationIsAnErrorNeverACrash() {
        let bytes = Self.sampleResponse().encoded()
        for n in 0..<bytes.count {
            #expect(throws: DNSParseError.self) { try DNSMessage(parsing: Array(bytes.prefix(n))) }
        }
    }

    @Test func trailingBytesAreRefused() {
        #expect(throws: DNSParseError.self) { try DNSMessage(parsing: Self.sampleResponse().encoded() + [0]) }
    }

    /// A header with one question and `name` as its name, type A, class IN.
    static func query(name: [UInt8]) -> [UInt8] {
        [0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0] + name + [0, 1, 0, 1]
    }

    @Test func aPointerToItselfIsALoopAndRefused() {
        // The name at offset 12 is a pointer to offset 12.
        let e = #expect(throws: DNSParseError.self) { try DNSMessage(parsing: Self.query(name: [0xC0, 12])) }
        #expect(e?.message.contains("backwards") == true)
    }

    @Test func pointersThatChaseEachOtherAreRefused() {
        // Offset 12: label "a", then a pointer to 16; offset 16: pointer back to 12.
        let bytes: [UInt8] = [0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0,
                              1, 0x61, 0xC0, 16, 0xC0, 12, 0, 1, 0, 1,
                              0xC0, 12, 0, 1, 0, 1]
        #expect(throws: DNSParseError.self) { try DNSMessage(parsing: bytes) }
    }

    @Test func aForwardPointerIsRefused() {
        #expect(throws: DNSParseError.self) { try DNSMessage(parsing: Self.query(name: [0xC0, 40]) + [UInt8](repeating: 0, count: 40)) }
    }

    @Test func aLongBackwardChainStaysBounded() throws {
        // Question i's name is a 63-byte label and a pointer to question i-1's name:
        // every pointer goes backwards, but the fourth name is 257 bytes long.
        func packet(questions n: Int) -> [UInt8] {
            var bytes: [UInt8] = [0, 0, 0, 0, 0, UInt8(n), 0, 0, 0, 0, 0, 0]
            var prev = 0
            for i in 0..<n {
                let start = bytes.count
                bytes += [63] + [UInt8](repeating: 0x61 + UInt8(i), count: 63)
                bytes += i == 0 ? [0] : [0xC0 | UInt8(prev >> 8), UInt8(prev & 0xFF)]
                bytes += [0, 1, 0, 1]
                prev = start
            }
            return bytes
        }
        #expect(try DNSMessage(parsing: packet(questions: 3)).questions[2].name.labels.count == 3)
        let e = #expect(throws: DNSParseError.self) { try DNSMessage(parsing: packet(questions: 4)) }
        #expect(e?.message.contains("longer than 255") == true)
    }

    @Test func lyingLengthsAndCountsAreRefused() {
        var m = DNSMessage()
        m.flags = DNSMessage.responseFlags
        m.answers = [DNSRecord(name: DNSName("h.local"), ttl: 120, data: .a([1, 2, 3, 4]))]
        var bytes = m.encoded()
        // RDLENGTH of the A record says 5.
        bytes[bytes.count - 5] = 5
        #expect(throws: DNSParseError.self) { try DNSMessage(parsing: bytes) }
        // Sixty thousand answers declared.
        var counted = m.encoded()
        counted[6] = 0xEA; counted[7] = 0x60
        #expect(throws: DNSParseError.self) { try DNSMessage(parsing: counted) }
        // A TXT string longer than its record.
        var t = DNSMessage()
        t.answers = [DNSRecord(name: DNSName("t.local"), ttl: 1, data: .txt([Array("abc".utf8)]))]
        var tb = t.encoded()
        tb[tb.count - 4] = 9
        #expect(throws: DNSParseError.self) { try DNSMessage(parsing: tb) }
        // An SRV record whose target runs past its RDLENGTH.
        var s = DNSMessage()
        s.answers = [DNSRecord(name: DNSName("s.local"), ttl: 1, data: .srv(priority: 0, weight: 0, port: 1, target: DNSName("target.local")))]
        var sb = s.encoded()
        // Header 12, "s.local" 9, type, class and TTL 8: RDLENGTH at 29.
        #expect(sb[30] > 7)
        sb[30] = 7
        #expect(throws: DNSParseError.self) { try DNSMessage(parsing: sb) }
    }

    @Test func reservedLabelTypesAndOverlongNamesAreRefused() {
        #expect(throws: DNSParseError.self) { try DNSMessage(parsing: Self.query(name: [0x40, 0])) }
        #expect(throws: DNSParseError.self) { try DNSMessage(parsing: Self.query(name: [0x80, 0])) }
        var long: [UInt8] = []
        for _ in 0..<5 { long += [63] + [UInt8](repeating: 0x61, count: 63) }
        #expect(throws: DNSParseError.self) { try DNSMessage(parsing: Self.query(name: long + [0])) }
        #expect(throws: DNSParseError.self) { try DNSMessage(parsing: [UInt8](repeating: 0, count: DNSLimits.maxPacketBytes + 1)) }
    }

    /// Random bytes and random mutations of a good packet: always a clean
    /// parse or a DNSParseError (a crash fails the whole test run).
    @Test func randomMutationsNeverCrash() {
        var rng = SplitMix64(seed: 0x6D646E73)
        let good = Self.sampleResponse().encoded()
        for i in 0..<20_000 {
            var b = good
            if i % 4 == 0 {
                b = (0..<Int(rng.next() % 300)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            } else {
                for _ in 0...(rng.next() % 6) { b[Int(rng.next() % UInt64(b.count))] = UInt8(truncatingIfNeeded: rng.next()) }
            }
            _ = try? DNSMessage(parsing: b)
        }
    }
}

