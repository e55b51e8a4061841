import Testing
@testable import FamilySync

/// RFC 6762 section 6: a record is multicast on an interface at most once
/// a second (a probe's answer at most once per 250 ms), so a query flood
/// costs the network one copy of each record a second; driven by a hand-moved clock.
@Suite struct MulticastRateLimitTests {
    typealias T = MDNSResponderEngineTests

    /// Every multicast record copy in `packets`, sent at `at`, with where it went.
    struct Copy { let at: Deadline; let interface: UInt32; let record: DNSRecord }
    static func copies(_ packets: [MDNSResponderEngine.Packet], at: Deadline) -> [Copy] {
        packets.flatMap { p -> [Copy] in
            guard case let .group(i) = p.destination else { return [] }
            return (p.message.answers + p.message.additionals).filter { $0.ttl > 0 }.map { Copy(at: at, interface: i, record: $0) }
        }
    }

    /// Copies of one record on one interface closer than `gap`, as text (empty when none).
    static func tooClose(_ copies: [Copy], gap: TimeSpan) -> [String] {
        var last: [(UInt32, DNSName, DNSRData, Deadline)] = []
        var bad: [String] = []
        for c in copies {
            if let k = last.firstIndex(where: { $0.0 == c.interface && $0.1 == c.record.name && $0.2 == c.record.data }) {
                let ms = c.at.milliseconds(since: last[k].3)
                if ms < gap.milliseconds { bad.append("\(c.record.name) \(c.record.data.type) twice in \(ms) ms") }
                last[k].3 = c.at
            } else {
                last.append((c.interface, c.record.name, c.record.data, c.at))
            }
        }
        return bad
    }

    static let questions = [DNSQuestion(name: T.ad.instanceName, type: DNSType.srv.rawValue),
                            DNSQuestion(name: T.ad.instanceName, type: DNSType.txt.rawValue),
                            DNSQuestion(name: T.ad.hostName, type: DNSType.a.rawValue),
                            DNSQuestion(name: T.ad.instanceName, type: DNSType.any.rawValue),
                            DNSQuestion(name: ServiceAdvertisement.serviceType, type: DNSType.ptr.rawValue)]

    /// 3,000 queries in 3 s, one a millisecond, for every record: each record
    /// goes out at most once a second, and still at least once a second.
    @Test func aQueryFloodMulticastsEachRecordAtMostOncePerSecond() {
        let clock = ManualClock()
        var e = T.announcedEngine(clock)
        var copies: [Copy] = []
        var packets = 0
        for k in 0..<3000 {
            let out = e.receive(T.datagram(T.query([Self.questions[k % Self.questions.count]]), from: [10, 0, 0, UInt8(10 + k % 200)]))
            var all = out
            while let w = e.nextWake, w <= clock.now { all += e.tick() }
            packets += all.count
            copies += Self.copies(all, at: clock.now)
            clock.advance(by: TimeSpan(milliseconds: 1))
        }
        #expect(Self.tooClose(copies, gap: MulticastRateLimit.interval).isEmpty, "\(Self.tooClose(copies, gap: MulticastRateLimit.interval))")
        // Five records of ours (PTR, SRV, TXT, A, AAAA), three seconds: a few packets, not thousands.
        #expect(packets <= 5 * 4, "\(packets) packets for 3,000 queries")
        for data in [DNSRData.srv(priority: 0, weight: 0, port: 7433, target: T.ad.hostName), .a(T.eth0.address), .ptr(T.ad.instanceName)] {
            #expect(copies.filter { $0.record.data == data }.count >= 3, "\(data) is still answered every second")
        }
    }

    /// A query that comes less than a second after the last copy is not
    /// dropped: its answer goes the moment the record may go again.
    @Test func anAnswerThatMustWaitGoesWhenItMay() throws {
        let clock = ManualClock()
        var e = T.announcedEngine(clock)
        let srvQuery = T.query([T.srvQuestion])
        let t0 = clock.now
        #expect(e.receive(T.datagram(srvQuery)).count == 1)
        clock.advance(by: TimeSpan(milliseconds: 300))
        #expect(e.receive(T.datagram(srvQuery)).isEmpty)
        #expect(e.nextWake == t0.adding(MulticastRateLimit.interval))
        clock.advance(by: TimeSpan(milliseconds: 699))
        #expect(e.tick().isEmpty)
        clock.advance(by: TimeSpan(milliseconds: 1))
        let out = e.tick()
        #expect(out.count == 1)
        #expect(out.first?.destination == .group(interface: T.eth0.index))
        #expect(out.first?.message.answers.map(\.data.type) == [DNSType.srv.rawValue])
        #expect(e.nextWake == nil)
    }

    /// Section 6's exception: a probe for our name is answered a quarter
    /// second after the last copy, not a second; sooner, it is left to the
    /// prober's next probe (250 ms later). An ordinary query is not.
    @Test func aProbeIsAnsweredAQuarterSecondAfterTheLastCopy() throws {
        let clock = ManualClock()
        var e = T.announcedEngine(clock)
        #expect(e.receive(T.datagram(T.query([DNSQuestion(name: T.ad.hostName, type: DNSType.any.rawValue)]))).count == 1)
        var probe = T.query([DNSQuestion(name: T.ad.hostName, type: DNSType.any.rawValue)])
        probe.authorities = [DNSRecord(name: T.ad.hostName, ttl: 120, cacheFlush: true, data: .a(T.other))]
        clock.advance(by: TimeSpan(milliseconds: 100))
        #expect(e.receive(T.datagram(probe)).isEmpty)
        #expect(e.nextWake == nil)
        clock.advance(by: MDNSResponderEngine.probeInterval)
        let defence = e.receive(T.datagram(probe))
        #expect(defence.count == 1)
        #expect(defence.first?.message.answers.map(\.data).contains(.a(T.eth0.address)) == true)
        let t1 = clock.now
        // A plain query right after: its A must wait a second from the defence.
        clock.advance(by: TimeSpan(milliseconds: 50))
        #expect(e.receive(T.datagram(T.query([DNSQuestion(name: T.ad.hostName, type: DNSType.a.rawValue)]))).isEmpty)
        #expect(e.nextWake == t1.adding(MulticastRateLimit.interval))
    }

    /// Goodbyes go whatever was sent just before; a legacy querier's
    /// answers are unicast to it, not multicast, and not limited.
    @Test func goodbyesAndUnicastAnswersAreNotLimited() throws {
        let clock = ManualClock()
        var e = T.announcedEngine(clock)
        for _ in 0..<5 {
            let out = e.receive(T.datagram(T.query([T.srvQuestion]), port: 40_000))
            #expect(out.count == 1)
            #expect(out.first?.destination == .unicast(address: T.other, port: 40_000, interface: T.eth0.index))
        }
        #expect(e.receive(T.datagram(T.query([T.srvQuestion]))).count == 1)
        let bye = e.stop()
        #expect(bye.count == 1)
        #expect(bye.first?.message.answers.count == 5)
        #expect(bye.first?.message.answers.allSatisfy { $0.ttl == 0 } == true)
    }

    /// Seeded schedules of records asked for on two interfaces, probe
    /// answers among them: a record never goes twice on one interface within
    /// a second (250 ms for a probe's answer), one that must wait is told a
    /// moment within that span, and goodbyes always go.
    @Test(arguments: [UInt64(11), 12, 13, 14, 15, 16])
    func noRecordGoesTwiceWithinItsSpan(seed: UInt64) {
        var rng = SplitMix64(seed: seed)
        var limit = MulticastRateLimit()
        let records = (0..<4).map { DNSRecord(name: T.ad.hostName, ttl: 120, data: .a([10, 0, 0, UInt8($0)])) }
        var now = Deadline(nanoseconds: 1_000_000_000)
        var last: [String: Deadline] = [:]
        for _ in 0..<3000 {
            now = now.adding(TimeSpan(milliseconds: Int64.random(in: 0...400, using: &rng)))
            let interface = UInt32.random(in: 1...2, using: &rng)
            let probe = Int.random(in: 0..<5, using: &rng) == 0
            var asked = records.filter { _ in Bool.random(using: &rng) }
            let goodbye = Int.random(in: 0..<10, using: &rng) == 0
            if goodbye { asked.append(DNSRecord(name: T.ad.hostName, ttl: 0, data: .a([10, 0, 0, 0]))) }
            let a = limit.admit(asked, on: interface, at: now, probeDefence: probe)
            #expect(a.now.count + a.later.count == asked.count, "seed \(seed)")
            if goodbye { #expect(a.now.contains { $0.ttl == 0 }, "seed \(seed): a goodbye always goes") }
            let gap = probe ? MulticastRateLimit.probeDefenceInterval : MulticastRateLimit.interval
            for r in a.now where r.ttl > 0 {
                let key = "\(interface) \(r.data)"
                if let t = last[key] { #expect(now.milliseconds(since: t) >= gap.milliseconds, "seed \(seed): \(key)") }
                last[key] = now
            }
            if let next = a.next {
                #expect(!a.later.isEmpty && next > now && next <= now.adding(gap), "seed \(seed)")
            } else {
                #expect(a.later.isEmpty, "seed \(seed)")
            }
        }
    }
}
