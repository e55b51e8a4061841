import Testing
import Glibc
@testable import FamilySync

/// The responder's RFC 6762 behaviour, driven by a hand-moved clock: probing
/// before claiming the names, the simultaneous-probe tiebreak, renaming on
/// conflict (during probing and after), announcements, the random delay
/// before shared answers, known-answer and duplicate-answer suppression.
@Suite struct MDNSResponderEngineTests {
    static let eth0 = NetworkInterface(name: "eth0", index: 2, address: [10, 0, 0, 5],
                                       ipv6: [[0xFD, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5]])
    static let ad = ServiceAdvertisement(instance: "abcdefghijklmnop", port: 7433, txt: ["v=4"])
    static let other: [UInt8] = [10, 0, 0, 9]

    /// Records what the engine logs and which ranges it drew random numbers from.
    final class Probe: Sendable {
        let ranges = Locked<[ClosedRange<Int64>]>([])
        let lines = Locked<[String]>([])
    }

    /// An engine on `eth0` advertising `ad`; random draws return `pick` within the range asked.
    static func engine(_ clock: ManualClock, _ probe: Probe = Probe(),
                       pick: @escaping (ClosedRange<Int64>) -> Int64 = { $0.lowerBound }) -> MDNSResponderEngine {
        MDNSResponderEngine(clock: clock.clock, random: { r in probe.ranges.withLock { $0.append(r) }; return pick(r) },
                            log: { l in probe.lines.withLock { $0.append(l) } })
    }

    static func datagram(_ m: DNSMessage, from source: [UInt8] = other, port: UInt16 = MDNS.port) -> Datagram {
        Datagram(bytes: m.encoded(), source: source, sourcePort: port, interfaceIndex: eth0.index)
    }

    static func query(_ qs: [DNSQuestion], known: [DNSRecord] = []) -> DNSMessage {
        var m = DNSMessage()
        m.questions = qs
        m.answers = known
        return m
    }

    static func response(_ records: [DNSRecord]) -> DNSMessage {
        var m = DNSMessage()
        m.flags = DNSMessage.responseFlags
        m.answers = records
        return m
    }

    /// Moves the engine through its three probes to the first announcement.
    static func claim(_ e: inout MDNSResponderEngine, _ clock: ManualClock, _ advertisement: ServiceAdvertisement = ad) {
        _ = e.update(advertisement: advertisement, interfaces: [eth0])
        for _ in 0..<4 { _ = e.tick(); clock.advance(by: MDNSResponderEngine.probeInterval) }
        #expect(e.isClaimed)
    }

    /// Runs every timer that is due by now (the announcements, after a jump of the clock).
    static func settle(_ e: inout MDNSResponderEngine, _ clock: ManualClock) {
        while let w = e.nextWake, w <= clock.now { _ = e.tick() }
    }

    /// An engine that has claimed its names on eth0 and sent its
    /// announcements a second ago (so each record may be multicast again): nothing is due.
    static func announcedEngine(_ clock: ManualClock, _ probe: Probe = Probe(),
                                pick: @escaping (ClosedRange<Int64>) -> Int64 = { $0.lowerBound }) -> MDNSResponderEngine {
        var e = engine(clock, probe, pick: pick)
        claim(&e, clock)
        clock.advance(by: .seconds(5))
        settle(&e, clock)
        clock.advance(by: MulticastRateLimit.interval)
        return e
    }

    @Test func probesThreeTimes250msApartBeforeAnnouncing() throws {
        let clock = ManualClock()
        let probe = Probe()
        var e = Self.engine(clock, probe, pick: { $0.upperBound == MDNSResponderEngine.maxProbeDelayMs ? 120 : $0.lowerBound })
        #expect(e.update(advertisement: Self.ad, interfaces: [Self.eth0]).isEmpty)
        // The first probe waits a random 0-250 ms.
        #expect(probe.ranges.withLock { $0 } == [0...250])
        #expect(e.tick().isEmpty)
        clock.advance(by: TimeSpan(milliseconds: 119))
        #expect(e.tick().isEmpty)
        // A query while probing is not answered: the names are not ours yet.
        #expect(e.receive(Self.datagram(Self.query([DNSQuestion(name: ServiceAdvertisement.serviceType, type: DNSType.ptr.rawValue)]))).isEmpty)
        clock.advance(by: TimeSpan(milliseconds: 1))
        var probes: [DNSMessage] = []
        for n in 0..<3 {
            let out = e.tick()
            #expect(out.count == 1, "probe \(n + 1)")
            let m = try #require(out.first).message
            #expect(!m.isResponse)
            probes.append(m)
            #expect(e.nextWake == clock.now.adding(MDNSResponderEngine.probeInterval))
            clock.advance(by: TimeSpan(milliseconds: 249))
            #expect(e.tick().isEmpty)
            clock.advance(by: TimeSpan(milliseconds: 1))
        }
        // Each probe asks ANY for both names; only the first asks for a unicast answer.
        for (n, m) in probes.enumerated() {
            #expect(m.questions.map(\.name) == [Self.ad.instanceName, Self.ad.hostName])
            #expect(m.questions.allSatisfy { $0.type == DNSType.any.rawValue })
            #expect(m.questions.allSatisfy { $0.unicastResponse == (n == 0) })
            #expect(m.authorities.map(\.data.type) == [DNSType.srv.rawValue, DNSType.txt.rawValue, DNSType.a.rawValue, DNSType.aaaa.rawValue])
        }
        // 250 ms after the third probe: claimed, announced at once, then 1 s and 2 s later.
        let first = e.tick()
        #expect(e.isClaimed)
        #expect(first.count == 1)
        let announced = try #require(first.first).message
        #expect(announced.isResponse)
        #expect(announced.answers.map(\.data) == [.ptr(Self.ad.instanceName), .srv(priority: 0, weight: 0, port: 7433, target: Self.ad.hostName),
                                                  .txt(Self.ad.txt.map { Array($0.utf8) }), .a(Self.eth0.address), .aaaa(Self.eth0.ipv6[0])])
        #expect(e.nextWake == clock.now.adding(.seconds(1)))
        clock.advance(by: .seconds(1))
        #expect(e.tick().count == 1)
        #expect(e.nextWake == clock.now.adding(.seconds(2)))
        clock.advance(by: .seconds(2))
        #expect(e.tick().count == 1)
        #expect(e.nextWake == nil)
        #expect(probe.lines.withLock { $0 }.isEmpty)
    }

    @Test func anAnswerHoldingTheNameWhileProbingRenames() throws {
        let clock = ManualClock()
        let probe = Probe()
        var e = Self.engine(clock, probe)
        _ = e.update(advertisement: Self.ad, interfaces: [Self.eth0])
        #expect(e.tick().count == 1)
        // Another device holds the host name, at another address.
        _ = e.receive(Self.datagram(Self.response([DNSRecord(name: Self.ad.hostName, ttl: 120, cacheFlush: true, data: .a(Self.other))])))
        #expect(e.current?.instance == "abcdefghijklmnop (2)")
        #expect(e.current?.hostName == DNSName("abcdefghijklmnop-2.local"))
        #expect(!e.isClaimed)
        // Probing starts over under the new names.
        let m = try #require(e.tick().first).message
        #expect(m.questions.map(\.name) == [DNSName("abcdefghijklmnop (2)._family-sync._tcp.local"), DNSName("abcdefghijklmnop-2.local")])
        for _ in 0..<3 { clock.advance(by: MDNSResponderEngine.probeInterval); _ = e.tick() }
        #expect(e.isClaimed)
        #expect(probe.lines.withLock { $0 }.contains { $0.contains("advertising as \"abcdefghijklmnop (2)\"") })
    }

    @Test func ourOwnProbeAndAnnouncementLoopedBackAreNoConflict() throws {
        let clock = ManualClock()
        var e = Self.engine(clock)
        _ = e.update(advertisement: Self.ad, interfaces: [Self.eth0])
        let ownProbe = try #require(e.tick().first).message
        _ = e.receive(Self.datagram(ownProbe, from: Self.eth0.address))
        #expect(e.nextWake == clock.now.adding(MDNSResponderEngine.probeInterval))
        for _ in 0..<3 { clock.advance(by: MDNSResponderEngine.probeInterval); _ = e.tick() }
        #expect(e.isClaimed)
        clock.advance(by: .seconds(1))
        let announcement = try #require(e.tick().first).message
        _ = e.receive(Self.datagram(announcement, from: Self.eth0.address))
        #expect(e.isClaimed)
        #expect(e.current?.instance == Self.ad.instance)
    }

    /// Section 8.2: a device probing for the same names at the same time;
    /// the lexicographically earlier proposal waits a second and probes again.
    @Test func aSimultaneousProbeIsDecidedByComparingTheRecords() throws {
        func theirProbe(_ address: [UInt8]) -> DNSMessage {
            var m = Self.query([DNSQuestion(name: Self.ad.hostName, type: DNSType.any.rawValue)])
            m.authorities = [DNSRecord(name: Self.ad.hostName, ttl: 120, data: .a(address))]
            return m
        }
        let clock = ManualClock()
        // Theirs is 10.0.0.9 against our 10.0.0.5 (and our AAAA sorts after an A: type 28 > 1, but class and type come first).
        var loser = Self.engine(clock)
        _ = loser.update(advertisement: Self.ad, interfaces: [NetworkInterface(name: "eth0", index: 2, address: [10, 0, 0, 5])])
        #expect(loser.tick().count == 1)
        _ = loser.receive(Self.datagram(theirProbe([10, 0, 0, 9])))
        #expect(loser.nextWake == clock.now.adding(MDNSResponderEngine.lostTiebreakWait))
        clock.advance(by: TimeSpan(milliseconds: 999))
        #expect(loser.tick().isEmpty)
        clock.advance(by: TimeSpan(milliseconds: 1))
        let again = try #require(loser.tick().first).message
        #expect(again.questions.first?.unicastResponse == true)
        #expect(loser.current?.instance == Self.ad.instance)

        // Against an earlier proposal (10.0.0.1) ours wins and probing goes on.
        let clock2 = ManualClock()
        var winner = Self.engine(clock2)
        _ = winner.update(advertisement: Self.ad, interfaces: [NetworkInterface(name: "eth0", index: 2, address: [10, 0, 0, 5])])
        #expect(winner.tick().count == 1)
        _ = winner.receive(Self.datagram(theirProbe([10, 0, 0, 1])))
        #expect(winner.nextWake == clock2.now.adding(MDNSResponderEngine.probeInterval))
        for _ in 0..<3 { clock2.advance(by: MDNSResponderEngine.probeInterval); _ = winner.tick() }
        #expect(winner.isClaimed)
        // Claimed, it defends the name: the other device's next probe is
        // answered at once, by multicast, though its announcement went out
        // only a quarter second ago (section 6's exception for probes).
        clock2.advance(by: MulticastRateLimit.probeDefenceInterval)
        let defence = winner.receive(Self.datagram(theirProbe([10, 0, 0, 1])))
        #expect(defence.count == 1)
        #expect(defence.first?.destination == .group(interface: 2))
        #expect(defence.first?.message.answers.map(\.data) == [.a([10, 0, 0, 5])])
    }

    @Test func tiebreakOrderIsClassTypeThenRData() {
        let a = MDNSResponderEngineTests.records([10, 0, 0, 1])
        let b = MDNSResponderEngineTests.records([10, 0, 0, 2])
        #expect(MDNSResponderEngine.isEarlier(MDNSResponderEngine.tiebreakKeys(a), than: MDNSResponderEngine.tiebreakKeys(b)))
        #expect(!MDNSResponderEngine.isEarlier(MDNSResponderEngine.tiebreakKeys(b), than: MDNSResponderEngine.tiebreakKeys(a)))
        // More records after an equal prefix sort later.
        let more = a + [DNSRecord(name: Self.ad.hostName, ttl: 120, data: .aaaa([UInt8](repeating: 0, count: 16)))]
        #expect(MDNSResponderEngine.isEarlier(MDNSResponderEngine.tiebreakKeys(a), than: MDNSResponderEngine.tiebreakKeys(more)))
    }

    static func records(_ address: [UInt8]) -> [DNSRecord] { [DNSRecord(name: ad.hostName, ttl: 120, data: .a(address))] }

    @Test func aConflictAfterStartRenamesWithoutAGoodbye() throws {
        let clock = ManualClock()
        let probe = Probe()
        var e = Self.engine(clock, probe)
        Self.claim(&e, clock)
        // Someone else announces our instance name with another port.
        let out = e.receive(Self.datagram(Self.response([DNSRecord(name: Self.ad.instanceName, ttl: 120, cacheFlush: true,
                                                                   data: .srv(priority: 0, weight: 0, port: 9999, target: DNSName("x.local")))])))
        // No goodbye: the PTR's data is the other device's too, a TTL 0 would remove it from every cache.
        #expect(out.isEmpty)
        #expect(!e.isClaimed)
        #expect(e.current?.instance == "abcdefghijklmnop (2)")
        #expect(probe.lines.withLock { $0 }.contains { $0.contains("taken on the network") })
        // A goodbye from the other device (TTL 0) is no conflict.
        var e2 = Self.engine(clock)
        Self.claim(&e2, clock)
        _ = e2.receive(Self.datagram(Self.response([DNSRecord(name: Self.ad.hostName, ttl: 0, data: .a(Self.other))])))
        #expect(e2.isClaimed)
    }

    /// An announcement of ours still in flight when an address went away
    /// comes back holding the old address: from our own address, no conflict.
    @Test func aPacketFromAnAddressThisHostHeldIsNoConflict() {
        let clock = ManualClock()
        var e = Self.engine(clock)
        Self.claim(&e, clock)
        var moved = Self.eth0
        moved.address = [10, 0, 0, 6]
        _ = e.update(advertisement: Self.ad, interfaces: [moved])
        let stale = Self.response([DNSRecord(name: Self.ad.hostName, ttl: 120, cacheFlush: true, data: .a(Self.eth0.address))])
        _ = e.receive(Self.datagram(stale, from: Self.eth0.address))
        #expect(e.isClaimed)
        #expect(e.current?.instance == Self.ad.instance)
        // The same records from another device are one.
        _ = e.receive(Self.datagram(stale, from: Self.other))
        #expect(!e.isClaimed)
    }

    @Test func manyConflictsInARowSlowProbingDown() {
        let clock = ManualClock()
        var e = Self.engine(clock)
        _ = e.update(advertisement: Self.ad, interfaces: [Self.eth0])
        for n in 1...MDNSResponderEngine.conflictBurst {
            _ = e.tick()
            let name = e.current!.hostName
            _ = e.receive(Self.datagram(Self.response([DNSRecord(name: name, ttl: 120, data: .a(Self.other))])))
            #expect(e.current?.instance == "abcdefghijklmnop (\(n + 1))")
            let wait = e.nextWake.map { $0.milliseconds(since: clock.now) }
            #expect(wait == (n == MDNSResponderEngine.conflictBurst ? MDNSResponderEngine.conflictBackoff.milliseconds : 0), "conflict \(n)")
            clock.advance(by: TimeSpan(milliseconds: 100))
        }
    }

    @Test func sharedAnswersWaitARandom20To120msUniqueOnesDoNot() throws {
        let clock = ManualClock()
        let probe = Probe()
        var e = Self.announcedEngine(clock, probe, pick: { $0 == MDNSResponderEngine.sharedAnswerDelayMs ? 77 : $0.lowerBound })
        #expect(e.nextWake == nil)
        let ptrQuery = Self.query([DNSQuestion(name: ServiceAdvertisement.serviceType, type: DNSType.ptr.rawValue)])
        #expect(e.receive(Self.datagram(ptrQuery)).isEmpty)
        #expect(probe.ranges.withLock { $0 }.last == 20...120)
        #expect(e.nextWake == clock.now.adding(TimeSpan(milliseconds: 77)))
        // The same question again (over the other family, say) joins the waiting answer.
        #expect(e.receive(Self.datagram(ptrQuery)).isEmpty)
        clock.advance(by: TimeSpan(milliseconds: 76))
        #expect(e.tick().isEmpty)
        clock.advance(by: TimeSpan(milliseconds: 1))
        let out = e.tick()
        #expect(out.count == 1)
        let m = try #require(out.first).message
        #expect(m.answers.map(\.data) == [.ptr(Self.ad.instanceName)])
        #expect(m.additionals.count == 4)   // SRV, TXT, A, AAAA
        // A question for a record only this device holds is answered at
        // once (a second after it went out as an additional record).
        clock.advance(by: MulticastRateLimit.interval)
        let srv = e.receive(Self.datagram(Self.query([DNSQuestion(name: Self.ad.instanceName, type: DNSType.srv.rawValue)])))
        #expect(srv.count == 1)
        #expect(srv.first?.message.answers.map(\.data.type) == [DNSType.srv.rawValue])
    }

    @Test func knownAndDuplicateAnswersAreNotSentAgain() throws {
        let clock = ManualClock()
        var e = Self.announcedEngine(clock)
        let ptr = DNSRecord(name: ServiceAdvertisement.serviceType, ttl: MDNSResponderEngine.serviceTTL, data: .ptr(Self.ad.instanceName))
        // Known answer with more than half the TTL left: nothing to say.
        _ = e.receive(Self.datagram(Self.query([DNSQuestion(name: ServiceAdvertisement.serviceType, type: DNSType.ptr.rawValue)], known: [ptr])))
        #expect(e.nextWake == nil)
        // With less than half left, it is answered.
        var stale = ptr
        stale.ttl = MDNSResponderEngine.serviceTTL / 2 - 1
        _ = e.receive(Self.datagram(Self.query([DNSQuestion(name: ServiceAdvertisement.serviceType, type: DNSType.ptr.rawValue)], known: [stale])))
        #expect(e.nextWake != nil)
        // Another responder multicasts the same answer while ours waits: ours is dropped.
        _ = e.receive(Self.datagram(Self.response([ptr])))
        clock.advance(by: TimeSpan(milliseconds: 200))
        #expect(e.tick().isEmpty)
    }

    /// Section 7.2: a query with TC waits 400-500 ms for the known answers
    /// that follow from the same querier; our answer among them is not sent.
    @Test func aTruncatedQueryIsAnsweredAfterTheKnownAnswersThatFollowIt() throws {
        let clock = ManualClock()
        let probe = Probe()
        var e = Self.announcedEngine(clock, probe)
        let question = DNSQuestion(name: ServiceAdvertisement.serviceType, type: DNSType.ptr.rawValue)
        let ptr = DNSRecord(name: ServiceAdvertisement.serviceType, ttl: MDNSResponderEngine.serviceTTL, data: .ptr(Self.ad.instanceName))
        let someoneElse = DNSRecord(name: ServiceAdvertisement.serviceType, ttl: MDNSResponderEngine.serviceTTL,
                                    data: .ptr(ServiceAdvertisement.serviceType.prepending("another")))
        var truncated = Self.query([question], known: [someoneElse])
        truncated.flags = DNSMessage.truncatedFlag
        let knownAnswers = Self.query([], known: [ptr])

        // Our PTR is in the second packet: nothing is sent.
        #expect(e.receive(Self.datagram(truncated)).isEmpty)
        #expect(probe.ranges.withLock { $0.last } == MDNSResponderEngine.truncatedWaitMs)
        #expect(e.nextWake == clock.now.adding(TimeSpan(milliseconds: 400)))
        clock.advance(by: TimeSpan(milliseconds: 150))
        #expect(e.receive(Self.datagram(knownAnswers)).isEmpty)
        clock.advance(by: TimeSpan(milliseconds: 250))
        #expect(e.tick().isEmpty)
        #expect(e.nextWake == nil)

        // The second packet does not hold our PTR: answered when the wait
        // ends, at once (it already waited longer than the shared-answer delay).
        #expect(e.receive(Self.datagram(truncated)).isEmpty)
        clock.advance(by: TimeSpan(milliseconds: 100))
        #expect(e.receive(Self.datagram(Self.query([], known: [someoneElse]))).isEmpty)
        clock.advance(by: TimeSpan(milliseconds: 299))
        #expect(e.tick().isEmpty)
        clock.advance(by: TimeSpan(milliseconds: 1))
        let out = e.tick()
        #expect(out.count == 1)
        #expect(out.first?.destination == .group(interface: Self.eth0.index))
        #expect(out.first?.message.answers == [ptr])

        // A continuation that is truncated too waits again, from its arrival
        // (a second later, when the PTR may be multicast again).
        clock.advance(by: MulticastRateLimit.interval)
        #expect(e.receive(Self.datagram(truncated)).isEmpty)
        clock.advance(by: TimeSpan(milliseconds: 300))
        #expect(e.receive(Self.datagram(truncated)).isEmpty)
        #expect(e.nextWake == clock.now.adding(TimeSpan(milliseconds: 400)))
        clock.advance(by: TimeSpan(milliseconds: 100))
        #expect(e.tick().isEmpty)
        clock.advance(by: TimeSpan(milliseconds: 300))
        #expect(e.tick().first?.message.answers == [ptr])
    }

    /// Known answers collected for one querier are not another's: a query
    /// from elsewhere meanwhile is answered as usual, with its own.
    @Test func knownAnswersCollectedForOneQuerierAreNotAnothers() throws {
        let clock = ManualClock()
        var e = Self.announcedEngine(clock)
        let question = DNSQuestion(name: ServiceAdvertisement.serviceType, type: DNSType.ptr.rawValue)
        let ptr = DNSRecord(name: ServiceAdvertisement.serviceType, ttl: MDNSResponderEngine.serviceTTL, data: .ptr(Self.ad.instanceName))
        var truncated = Self.query([question])
        truncated.flags = DNSMessage.truncatedFlag
        #expect(e.receive(Self.datagram(truncated)).isEmpty)
        // Querier .9 says it knows our PTR; .7 asks without knowing it.
        #expect(e.receive(Self.datagram(Self.query([], known: [ptr]))).isEmpty)
        #expect(e.receive(Self.datagram(Self.query([question]), from: [10, 0, 0, 7])).isEmpty)
        // .7's answer goes after the usual 20 ms; .9's query ends with nothing to send.
        clock.advance(by: TimeSpan(milliseconds: 20))
        #expect(e.tick().first?.message.answers == [ptr])
        clock.advance(by: TimeSpan(milliseconds: 380))
        #expect(e.tick().isEmpty)
        #expect(e.nextWake == nil)
    }

    /// At most `maxTruncatedQueries` wait at once; the next is answered as an
    /// untruncated one would be, so a flood of TC queries holds no more.
    @Test func truncatedQueriesBeyondTheLimitAreAnsweredWithoutWaiting() throws {
        let clock = ManualClock()
        var e = Self.announcedEngine(clock)
        var truncated = Self.query([DNSQuestion(name: ServiceAdvertisement.serviceType, type: DNSType.ptr.rawValue)])
        truncated.flags = DNSMessage.truncatedFlag
        for n in 0..<MDNSResponderEngine.maxTruncatedQueries {
            #expect(e.receive(Self.datagram(truncated, from: [10, 0, 1, UInt8(n)])).isEmpty)
        }
        #expect(e.nextWake == clock.now.adding(TimeSpan(milliseconds: 400)))
        _ = e.receive(Self.datagram(truncated, from: [10, 0, 2, 1]))
        #expect(e.nextWake == clock.now.adding(TimeSpan(milliseconds: 20)))
    }

    static let wlan0 = NetworkInterface(name: "wlan0", index: 3, address: [192, 168, 7, 5])
    static let srvQuestion = DNSQuestion(name: ad.instanceName, type: DNSType.srv.rawValue)

    /// Section 8.1: an interface that comes up once the names are claimed
    /// may be a link where someone holds them: it is probed on first, and
    /// nothing is answered or announced there until then.
    @Test func anInterfaceThatComesUpAfterTheClaimIsProbedOnBeforeAnsweringThere() throws {
        let clock = ManualClock()
        var e = Self.announcedEngine(clock)
        #expect(e.update(advertisement: Self.ad, interfaces: [Self.eth0, Self.wlan0]).isEmpty)
        #expect(e.isClaimed)
        #expect(e.claimedInterfaces == [Self.eth0])
        func asked(on i: NetworkInterface) -> [MDNSResponderEngine.Packet] {
            e.receive(Datagram(bytes: Self.query([Self.srvQuestion]).encoded(), source: Self.other, sourcePort: MDNS.port, interfaceIndex: i.index))
        }
        // eth0 still answers; wlan0 does not yet.
        #expect(asked(on: Self.eth0).first?.destination == .group(interface: Self.eth0.index))
        #expect(asked(on: Self.wlan0).isEmpty)
        for n in 0..<MDNSResponderEngine.probes {
            let out = e.tick()
            #expect(out.count == 1, "probe \(n + 1)")
            #expect(out.first?.destination == .group(interface: Self.wlan0.index))
            #expect(out.first?.message.isResponse == false)
            #expect(out.first?.message.questions.map(\.name) == [Self.ad.instanceName, Self.ad.hostName])
            #expect(out.first?.message.authorities.contains { $0.data == .a(Self.wlan0.address) } == true)
            #expect(asked(on: Self.wlan0).isEmpty)
            clock.advance(by: MDNSResponderEngine.probeInterval)
        }
        // Claimed on wlan0 too: announced on both, answered on both.
        let announced = e.tick()
        #expect(Set(announced.map(\.destination)) == [.group(interface: Self.eth0.index), .group(interface: Self.wlan0.index)])
        #expect(announced.allSatisfy { $0.message.isResponse })
        #expect(e.claimedInterfaces == [Self.eth0, Self.wlan0])
        clock.advance(by: MulticastRateLimit.interval)
        #expect(asked(on: Self.wlan0).first?.destination == .group(interface: Self.wlan0.index))
    }

    /// A new lease that removes the old address a moment before adding the
    /// new one is an address change on the same link: no goodbye, no probing
    /// again, the new address announced. Gone for longer than the grace, the
    /// interface is gone: goodbyes, and probing when it comes back.
    @Test func anAddressGapShorterThanTheGraceIsAnAddressChange() throws {
        let clock = ManualClock()
        var e = Self.announcedEngine(clock)
        // Between `ip addr flush` and `ip addr add`: eth0 has no address.
        #expect(e.update(advertisement: Self.ad, interfaces: []).isEmpty)
        #expect(e.isClaimed)
        clock.advance(by: TimeSpan(milliseconds: 30))
        var moved = Self.eth0
        moved.address = [10, 0, 0, 77]
        #expect(e.update(advertisement: Self.ad, interfaces: [moved]).isEmpty)
        #expect(e.isClaimed)
        let announced = e.tick()
        #expect(announced.count == 1)
        #expect(announced.first?.message.isResponse == true)
        #expect(announced.first?.message.answers.contains { $0.data == .a([10, 0, 0, 77]) } == true)

        // Gone for longer than the grace: the engine lets it go, and probes when it returns.
        _ = e.update(advertisement: Self.ad, interfaces: [])
        clock.advance(by: MDNSResponderEngine.addresslessGrace)
        _ = e.update(advertisement: Self.ad, interfaces: [])
        #expect(e.phase == .idle)
        _ = e.update(advertisement: Self.ad, interfaces: [moved])
        #expect(!e.isClaimed)
        #expect(e.tick().first?.message.isResponse == false)
    }

    /// The new interface's link holds the host name: renamed, and probing
    /// starts over on every interface.
    @Test func aConflictOnANewInterfaceRenamesEverywhere() throws {
        let clock = ManualClock()
        let probe = Probe()
        var e = Self.engine(clock, probe)
        Self.claim(&e, clock)
        _ = e.update(advertisement: Self.ad, interfaces: [Self.eth0, Self.wlan0])
        #expect(e.tick().first?.destination == .group(interface: Self.wlan0.index))
        let holder = Self.response([DNSRecord(name: Self.ad.hostName, ttl: 120, cacheFlush: true, data: .a([192, 168, 7, 9]))])
        _ = e.receive(Datagram(bytes: holder.encoded(), source: [192, 168, 7, 9], sourcePort: MDNS.port, interfaceIndex: Self.wlan0.index))
        #expect(!e.isClaimed)
        #expect(e.current?.instance == "abcdefghijklmnop (2)")
        let probes = e.tick()
        #expect(Set(probes.map(\.destination)) == [.group(interface: Self.eth0.index), .group(interface: Self.wlan0.index)])
    }

    /// Section 8.2 compares the whole set proposed for a name: with two
    /// interfaces, both addresses. A probe holding only the first is not
    /// the same set (the old first-interface-only comparison called it a
    /// tie), and ours, with an A record where theirs has its AAAA, sorts earlier.
    @Test func theTiebreakComparesEveryRecordProposedOnEveryInterface() throws {
        let clock = ManualClock()
        var e = Self.engine(clock)
        _ = e.update(advertisement: Self.ad, interfaces: [Self.eth0, Self.wlan0])
        #expect(e.tick().count == 2)
        var theirs = Self.query([DNSQuestion(name: Self.ad.hostName, type: DNSType.any.rawValue)])
        theirs.authorities = [DNSRecord(name: Self.ad.hostName, ttl: 120, data: .a(Self.eth0.address)),
                              DNSRecord(name: Self.ad.hostName, ttl: 120, data: .aaaa(Self.eth0.ipv6[0]))]
        _ = e.receive(Self.datagram(theirs))
        #expect(e.phase == .probing(sent: 0, next: clock.now.adding(MDNSResponderEngine.lostTiebreakWait)))
        // Theirs holding an earlier address where ours has wlan0's: theirs sorts first and loses, ours probes on.
        var f = Self.engine(clock)
        _ = f.update(advertisement: Self.ad, interfaces: [Self.eth0, Self.wlan0])
        _ = f.tick()
        theirs.authorities[1] = DNSRecord(name: Self.ad.hostName, ttl: 120, data: .a([192, 168, 7, 4]))
        _ = f.receive(Self.datagram(theirs))
        #expect(f.phase == .probing(sent: 1, next: clock.now.adding(MDNSResponderEngine.probeInterval)))
        // Our own probe on one interface, looped back, is no contest.
        var g = Self.engine(clock)
        _ = g.update(advertisement: Self.ad, interfaces: [Self.eth0, Self.wlan0])
        let own = try #require(g.tick().first).message
        _ = g.receive(Self.datagram(own, from: Self.eth0.address))
        #expect(g.phase == .probing(sent: 1, next: clock.now.adding(MDNSResponderEngine.probeInterval)))
    }

    /// §12a: the host's own NAME.local is neither probed for nor answered:
    /// its addresses are the day's tag's, so an answer would tie every
    /// day's tag to the host's name. Only the day's names go out.
    @Test func theHostsOwnNameIsNeitherProbedNorAnswered() throws {
        let clock = ManualClock()
        var e = Self.engine(clock)
        _ = e.update(advertisement: Self.ad, interfaces: [Self.eth0])
        let first = try #require(e.tick().first).message
        #expect(first.questions.map(\.name) == [Self.ad.instanceName, Self.ad.hostName])
        #expect(Set(first.authorities.map(\.name)) == [Self.ad.instanceName, Self.ad.hostName])
        // Claimed, announced, and free to answer again.
        e = Self.announcedEngine(clock)
        var hostName = [UInt8](repeating: 0, count: 256)
        gethostname(&hostName, 255)
        let system = String(decoding: hostName.prefix { $0 != 0 }, as: UTF8.self).split(separator: ".").first.map(String.init) ?? "owner"
        for name in [DNSName("owner.local"), DNSName(system + ".local")] {
            #expect(e.receive(Self.datagram(Self.query([DNSQuestion(name: name, type: DNSType.any.rawValue)]))).isEmpty, "\(name)")
        }
        // The day's host name is answered, with the address.
        let ask = Self.query([DNSQuestion(name: Self.ad.hostName, type: DNSType.a.rawValue)])
        #expect(e.receive(Self.datagram(ask)).first?.message.answers.map(\.data) == [.a(Self.eth0.address)])
    }

    @Test func aLegacyQuerierGetsItsIDBackShortTTLsAtOnce() throws {
        let clock = ManualClock()
        var e = Self.engine(clock)
        Self.claim(&e, clock)
        var q = Self.query([DNSQuestion(name: ServiceAdvertisement.serviceType, type: DNSType.ptr.rawValue)])
        q.id = 0x4242
        let out = e.receive(Self.datagram(q, port: 40000))
        #expect(out.count == 1)
        let p = try #require(out.first)
        #expect(p.destination == .unicast(address: Self.other, port: 40000, interface: 2))
        #expect(p.message.id == 0x4242)
        #expect(p.message.questions == q.questions)
        #expect((p.message.answers + p.message.additionals).allSatisfy { $0.ttl <= MDNSResponderEngine.legacyTTL && !$0.cacheFlush })
    }

    @Test func stopSaysGoodbyeOnlyForClaimedNames() throws {
        let clock = ManualClock()
        var probing = Self.engine(clock)
        _ = probing.update(advertisement: Self.ad, interfaces: [Self.eth0])
        _ = probing.tick()
        #expect(probing.stop().isEmpty)
        var e = Self.engine(clock)
        Self.claim(&e, clock)
        let bye = e.stop()
        #expect(bye.count == 1)
        #expect(try #require(bye.first).message.answers.allSatisfy { $0.ttl == 0 })
        #expect(e.nextWake == nil)
    }

    @Test func aNewDayProbesTheNewNameAfterAGoodbyeForTheOld() throws {
        let clock = ManualClock()
        var e = Self.engine(clock)
        Self.claim(&e, clock)
        let tomorrow = ServiceAdvertisement(instance: "zyxwvutsrqponmlk", port: 7433, txt: Self.ad.txt)
        let out = e.update(advertisement: tomorrow, interfaces: [Self.eth0])
        #expect(out.count == 1)
        #expect(out.first?.message.answers.contains { $0.data == .ptr(Self.ad.instanceName) && $0.ttl == 0 } == true)
        #expect(!e.isClaimed)
        let probe = try #require(e.tick().first).message
        #expect(probe.questions.first?.name == tomorrow.instanceName)
        // A new TXT (a serve updated to another protocol version while it
        // runs on the same store) is announced again without probing.
        Self.claim(&e, clock, tomorrow)
        clock.advance(by: .seconds(5))
        Self.settle(&e, clock)
        var changed = tomorrow
        changed.txt = ["v=5"]
        _ = e.update(advertisement: changed, interfaces: [Self.eth0])
        #expect(e.isClaimed)
        #expect(try #require(e.tick().first).message.answers.contains { $0.data == .txt(changed.txt.map { Array($0.utf8) }) })
    }

    @Test func renamedInstancesAreStillRecognised() {
        #expect(ServiceAdvertisement.baseTag("abc (2)") == "abc")
        #expect(ServiceAdvertisement.baseTag("abc (17)") == "abc")
        #expect(ServiceAdvertisement.baseTag("abc") == "abc")
        #expect(ServiceAdvertisement.baseTag("abc (1)") == "abc (1)")
        #expect(ServiceAdvertisement.baseTag("abc(2)") == "abc(2)")
        #expect(ServiceAdvertisement.baseTag("(2)") == "(2)")
        #expect(ServiceAdvertisement.baseTag("abc (x)") == "abc (x)")
        #expect(ServiceAdvertisement.baseHostLabel("abc-2") == "abc")
        #expect(ServiceAdvertisement.baseHostLabel("abc-1") == "abc-1")
        #expect(ServiceAdvertisement.baseHostLabel("my-host") == "my-host")
        #expect(ServiceAdvertisement.baseHostLabel("-2") == "-2")
        let tags = try! DiscoveryTags(familyKey: DiscoveryTagsTests.key, family: DiscoveryTagsTests.family)
        let day = DiscoveryTags.day(DiscoveryTagsTests.now)
        let rec = tags.recogniser(devices: [DiscoveryTagsTests.owner], me: DiscoveryTagsTests.member, now: DiscoveryTagsTests.now)
        let f = FoundService(instance: tags.deviceTag(DiscoveryTagsTests.owner, day: day) + " (2)", txt: [Array("v=4".utf8)],
                             port: 7433, address: "10.0.0.1", interface: "eth0")
        #expect(rec(f) == .some(DiscoveryTagsTests.owner))
    }
}
