import FoundationEssentials
import Glibc

/// What the DNS-SD responder decides, without sockets or threads: when to
/// probe, announce and answer, and what to send (RFC 6762). `MDNSResponder`
/// feeds it the datagrams that arrive and calls `tick()` at `nextWake`; the
/// timers read the injected clock, so tests drive it with a `ManualClock`
/// and never sleep.
///
/// - Probing (section 8.1): before answering for its instance and host names
///   it asks three times, 250 ms apart, whether anyone holds them; an answer
///   that holds them with other data is a conflict and the names are renamed
///   ("tag (2)", host "tag-2"). Two devices probing at once compare their
///   proposed records (section 8.2: every record proposed for the name, on
///   every interface, sorted); the lexicographically earlier set waits a
///   second and probes again, and then meets the winner's answer. An
///   interface that comes up once the names are claimed is probed on before
///   anything is answered or announced there (a new link may hold them).
/// - It answers for the day's names only, never for the host's own
///   `NAME.local`: that answer would carry the same addresses as the day's
///   tag and so tie every day's tag to the host's name (docs/protocol.md
///   section 12a). The system's own responder (avahi-daemon) may answer
///   for the host's name; that is the system's choice, not this one's.
/// - Announcing (section 8.3): three times, one and then two seconds apart.
/// - Answering (section 6): records only this device holds at once, answers
///   that hold a record of a shared set (the service's PTR) after a random
///   20-120 ms so the answers of several devices do not collide; known
///   answers in the query (section 7.1) and answers another responder
///   already multicast while ours waited (section 7.4) are left out. A
///   query with the TC bit has more known answers to come in the querier's
///   next packets (section 7.2): it is answered 400-500 ms later, with the
///   known answers of every packet that came from that querier meanwhile.
/// - Rate limits (section 6, `MulticastRateLimit`): each record is
///   multicast on an interface at most once a second (an answer to a probe
///   at most once per 250 ms); an answer that comes sooner waits until it
///   may go, joining the interface's one waiting answer (a probe's is left
///   to the prober's next probe), so a query flood makes at most one copy
///   of each record a second.
/// - Conflicts after start (section 9): a response that claims our names
///   with other data sends the engine back to probing under a new name.
struct MDNSResponderEngine {
    /// RFC 6762 section 10: 120 s for records naming a host's address, 75 minutes for the rest.
    static let hostTTL: UInt32 = 120
    static let serviceTTL: UInt32 = 4500
    /// RFC 6762 section 6.7: answers to a legacy (non-5353) querier carry at most 10 s.
    static let legacyTTL: UInt32 = 10
    /// Section 8.1: three probes, 250 ms apart, the first after a random wait of up to 250 ms.
    static let probes = 3
    static let probeInterval = TimeSpan(milliseconds: 250)
    static let maxProbeDelayMs: Int64 = 250
    /// Section 8.2: the loser of a simultaneous probe waits this long and probes again.
    static let lostTiebreakWait = TimeSpan.seconds(1)
    /// How long an interface that lost its addresses still counts as there
    /// (its next address is an address change, not a new link).
    static let addresslessGrace = TimeSpan.seconds(5)
    /// Section 8.1: after this many conflicts within `conflictWindow`, probes are this far apart.
    static let conflictBurst = 15
    static let conflictWindow = TimeSpan.seconds(10)
    static let conflictBackoff = TimeSpan.seconds(5)
    /// Section 8.3: announcements at these offsets from the end of probing.
    static let announcementOffsetsMs: [Int64] = [0, 1000, 3000]
    /// Section 6: the random delay before an answer holding a shared record.
    static let sharedAnswerDelayMs: ClosedRange<Int64> = 20...120
    /// Section 7.2: how long a truncated query waits for the rest of its
    /// known answers (from its last truncated packet).
    static let truncatedWaitMs: ClosedRange<Int64> = 400...500
    /// Truncated queries waiting at once, one per querier; a query beyond
    /// these is answered with the known answers it carries. Their known
    /// answers together are held to `DNSLimits.maxEntries`, one packet's worth.
    static let maxTruncatedQueries = 32

    /// Where a packet goes: the mDNS group out of one interface, or straight
    /// back to a querier that asked from a port other than 5353.
    enum Destination: Hashable {
        case group(interface: UInt32)
        case unicast(address: [UInt8], port: UInt16, interface: UInt32)
    }

    struct Packet: Equatable {
        var message: DNSMessage
        var destination: Destination
    }

    enum Phase: Equatable {
        /// Nothing to advertise, or no interface to advertise on.
        case idle
        /// `sent` probes are out; the next (or the end of probing) is at `next`.
        case probing(sent: Int, next: Deadline)
        /// The names are ours; `left` announcements remain, the next at `next`.
        case claimed(announced: Int, next: Deadline?)
    }

    private let clock: MonotonicClock
    private let random: (ClosedRange<Int64>) -> Int64
    private let log: (String) -> Void
    private(set) var phase: Phase = .idle
    /// The advertisement as the store gives it (its unrenamed names).
    private(set) var advertisement: ServiceAdvertisement?
    /// 1 for the names as given, 2 and up after conflicts.
    private(set) var renameCount = 1
    private(set) var interfaces: [NetworkInterface] = []
    private var claimedAt: Deadline?
    private var conflictTimes: [Deadline] = []
    /// Every address this host's interfaces have held while advertising:
    /// a packet from one of them is this host's own (looped back, or sent
    /// before an address went away) and is never a conflict.
    private var ownAddresses: Set<[UInt8]> = []
    /// `ownAddresses` stops growing here (a host renumbered this often is broken anyway).
    static let maxOwnAddresses = 64
    /// Interfaces that came up after the names were claimed, still probing
    /// there (section 8.1): nothing is answered or announced on them yet.
    private var probingOn: [UInt32: (sent: Int, next: Deadline)] = [:]
    /// When each interface that vanished from the list was last seen (see `withAddresslessGrace`).
    private var addresslessSince: [UInt32: Deadline] = [:]
    private var pending: [(due: Deadline, interface: UInt32, answers: [DNSRecord], additionals: [DNSRecord])] = []
    /// What was multicast where in the last second (section 6).
    private var rateLimit = MulticastRateLimit()
    /// Truncated queries collecting known answers (section 7.2), by querier address and interface.
    private var truncated: [(source: [UInt8], interface: UInt32, due: Deadline, query: DNSMessage)] = []

    init(clock: MonotonicClock = .system, random: @escaping (ClosedRange<Int64>) -> Int64 = { Int64.random(in: $0) },
         log: @escaping (String) -> Void = { _ in }) {
        self.clock = clock
        self.random = random
        self.log = log
    }

    /// The advertisement under the names in use now (renamed after conflicts).
    var current: ServiceAdvertisement? { advertisement.map { $0.renamed(renameCount) } }
    /// The names are ours and answered for.
    var isClaimed: Bool { if case .claimed = phase { return true } else { return false } }
    /// The interfaces the names are claimed on: all but those still probing.
    var claimedInterfaces: [NetworkInterface] { isClaimed ? interfaces.filter { probingOn[$0.index] == nil } : [] }

    // MARK: Input

    /// The advertisement and the interfaces as they are now. New names (a
    /// new day, another port) are probed for after a goodbye for the old
    /// ones; a new address or TXT is announced; the first interface starts probing.
    mutating func update(advertisement ad: ServiceAdvertisement?, interfaces given: [NetworkInterface]) -> [Packet] {
        var out: [Packet] = []
        let ifs = withAddresslessGrace(given)
        let namesChanged = ad?.instance != advertisement?.instance || ad?.port != advertisement?.port
        if namesChanged || ad == nil || ifs.isEmpty {
            // A goodbye replaces the copies caches hold: what follows may go at once.
            if isClaimed, let old = current { out += goodbye(old, on: claimedInterfaces); rateLimit.reset() }
        }
        let hadInterfaces = !interfaces.isEmpty
        let known = Set(interfaces.map(\.index))
        let arrived = ifs.filter { !known.contains($0.index) }
        // What changed on interfaces that stay (an address, a new TXT) is
        // announced again; interfaces that arrive are probed on first.
        let kept = Dictionary(ifs.filter { known.contains($0.index) }.map { ($0.index, $0) }, uniquingKeysWith: { a, _ in a })
        let before = Dictionary(interfaces.filter { kept[$0.index] != nil }.map { ($0.index, $0) }, uniquingKeysWith: { a, _ in a })
        let changed = ad != advertisement || kept != before
        if namesChanged { renameCount = 1 }
        probingOn = probingOn.filter { k, _ in ifs.contains { $0.index == k } }
        advertisement = ad
        interfaces = ifs
        for i in ifs {
            for a in [i.address] + i.ipv6 where a.count >= 4 && ownAddresses.count < MDNSResponderEngine.maxOwnAddresses { ownAddresses.insert(a) }
        }
        if ad == nil || ifs.isEmpty {
            phase = .idle
            pending.removeAll()
            truncated.removeAll()
            probingOn.removeAll()
        } else if namesChanged || !hadInterfaces || phase == .idle {
            startProbing(after: TimeSpan(milliseconds: random(0...MDNSResponderEngine.maxProbeDelayMs)))
        } else {
            if isClaimed {
                // Section 8.1: a new link may hold the names; probe there first.
                for i in arrived { probingOn[i.index] = (0, clock.now().adding(TimeSpan(milliseconds: random(0...MDNSResponderEngine.maxProbeDelayMs)))) }
            } else if case let .probing(sent, _) = phase, sent > 0, !arrived.isEmpty {
                // Probes already sent missed the new link: all three again, on every interface.
                startProbing(after: TimeSpan(milliseconds: random(0...MDNSResponderEngine.maxProbeDelayMs)))
            }
            if changed, isClaimed { announceAgain() }
        }
        return out
    }

    /// `given` plus each interface that lost its addresses less than
    /// `addresslessGrace` ago, kept without addresses (nothing is sent on
    /// it): a new lease often removes the old address a moment before it
    /// adds the new one, and that is an address change on the same link (an
    /// announcement), not the link going away (goodbyes, then probing again).
    private mutating func withAddresslessGrace(_ given: [NetworkInterface]) -> [NetworkInterface] {
        let now = clock.now()
        let present = Set(given.map(\.index))
        for i in interfaces where !present.contains(i.index) && addresslessSince[i.index] == nil { addresslessSince[i.index] = now }
        addresslessSince = addresslessSince.filter { k, since in !present.contains(k) && now < since.adding(MDNSResponderEngine.addresslessGrace) }
        return given + interfaces.filter { addresslessSince[$0.index] != nil }.map { NetworkInterface(name: $0.name, index: $0.index, address: []) }
    }

    /// Timers that are due: probes, the end of probing, announcements, delayed answers.
    mutating func tick() -> [Packet] {
        let now = clock.now()
        var out: [Packet] = []
        switch phase {
        case .idle:
            break
        case let .probing(sent, next) where next <= now:
            if sent < MDNSResponderEngine.probes {
                out += interfaces.compactMap { probe(on: $0, first: sent == 0) }
                phase = .probing(sent: sent + 1, next: now.adding(MDNSResponderEngine.probeInterval))
            } else {
                claimedAt = now
                phase = .claimed(announced: 0, next: now)
                if renameCount > 1, let ad = current { log("advertising as \"\(ad.instance)\" (\(ad.hostName)): the day's name was taken on the network") }
                return out + tick()
            }
        case let .claimed(announced, next?) where next <= now:
            if let ad = current {
                // A record multicast less than a second ago is left out (section 6): caches have it.
                for i in claimedInterfaces {
                    let allowed = rateLimit.admit(allRecords(ad, i), on: i.index, at: now).now
                    if !allowed.isEmpty { out.append(Packet(message: response(allowed), destination: .group(interface: i.index))) }
                }
            }
            let offsets = MDNSResponderEngine.announcementOffsetsMs
            let n = announced + 1
            phase = .claimed(announced: n, next: n < offsets.count ? (claimedAt ?? now).adding(TimeSpan(milliseconds: offsets[n])) : nil)
        default:
            break
        }
        if isClaimed {
            for (index, p) in probingOn.sorted(by: { $0.key < $1.key }) where p.next <= now {
                guard let i = interfaces.first(where: { $0.index == index }) else { continue }
                if p.sent < MDNSResponderEngine.probes {
                    if let packet = probe(on: i, first: p.sent == 0) { out.append(packet) }
                    probingOn[index] = (p.sent + 1, now.adding(MDNSResponderEngine.probeInterval))
                } else {
                    // Claimed there too: announced (on every interface, from the start of the schedule).
                    probingOn[index] = nil
                    announceAgain()
                    return out + tick()
                }
            }
        }
        let due = pending.filter { $0.due <= now }
        pending.removeAll { $0.due <= now }
        for p in due where !p.answers.isEmpty {
            if let m = limited(p.answers, additionals: p.additionals, on: p.interface, probeDefence: false) {
                out.append(Packet(message: m, destination: .group(interface: p.interface)))
            }
        }
        let complete = truncated.filter { $0.due <= now }
        truncated.removeAll { $0.due <= now }
        for t in complete {
            guard let i = interfaces.first(where: { $0.index == t.interface }) else { continue }
            out += answer(t.query, from: t.source, port: MDNS.port, on: i, waited: true)
        }
        return out
    }

    /// When `tick()` has something to do next; nil when nothing is scheduled.
    var nextWake: Deadline? {
        var times = pending.map(\.due) + truncated.map(\.due) + (isClaimed ? probingOn.values.map(\.next) : [])
        switch phase {
        case let .probing(_, next): times.append(next)
        case let .claimed(_, next?): times.append(next)
        default: break
        }
        return times.min()
    }

    /// Goodbyes (TTL 0) for everything announced; the engine goes idle.
    mutating func stop() -> [Packet] {
        defer { phase = .idle; pending.removeAll(); truncated.removeAll(); probingOn.removeAll() }
        guard isClaimed, let ad = current else { return [] }
        rateLimit.reset()
        return goodbye(ad, on: claimedInterfaces)
    }

    /// One datagram from the network (or our own, looped back).
    mutating func receive(_ d: Datagram) -> [Packet] {
        guard let i = interfaces.first(where: { $0.index == d.interfaceIndex }) else { return [] }
        guard let m = try? DNSMessage(parsing: d.bytes), m.flags & 0x7800 == 0 else { return [] }
        let fromThisHost = ownAddresses.contains(d.source)
        if m.isResponse {
            suppressDuplicates(m)
            guard !fromThisHost else { return [] }
            if conflicts(m.answers + m.additionals) { renameAfterConflict() }
            return []
        }
        // Section 8.2: the other device's records win; probe again in a
        // second, when it will answer if it has taken the names. (This
        // host's own probes, looped back, are no contest.)
        if !fromThisHost, !m.authorities.isEmpty {
            if case .probing = phase, lostTiebreak(m.authorities) {
                phase = .probing(sent: 0, next: clock.now().adding(MDNSResponderEngine.lostTiebreakWait))
                return []
            }
            if probingOn[i.index] != nil, lostTiebreak(m.authorities) {
                probingOn[i.index] = (0, clock.now().adding(MDNSResponderEngine.lostTiebreakWait))
                return []
            }
        }
        if d.sourcePort == MDNS.port, collectKnownAnswers(m, from: d.source, on: i) { return [] }
        return answer(m, from: d.source, port: d.sourcePort, on: i, waited: false, probe: !m.authorities.isEmpty)
    }

    /// Section 7.2: a truncated query is held for the known answers that
    /// follow from the same querier; a packet from a querier with a query
    /// held adds its known answers (and any questions) to it, and a truncated
    /// one waits again. True when the packet was taken so.
    private mutating func collectKnownAnswers(_ m: DNSMessage, from source: [UInt8], on i: NetworkInterface) -> Bool {
        let room = max(0, DNSLimits.maxEntries - truncated.reduce(0) { $0 + $1.query.answers.count })
        func wait() -> Deadline { clock.now().adding(TimeSpan(milliseconds: random(MDNSResponderEngine.truncatedWaitMs))) }
        if let k = truncated.firstIndex(where: { $0.source == source && $0.interface == i.index }) {
            truncated[k].query.answers += m.answers.prefix(room)
            for q in m.questions where !truncated[k].query.questions.contains(q) { truncated[k].query.questions.append(q) }
            if m.isTruncated { truncated[k].due = wait() }
            return true
        }
        guard m.isTruncated, !m.questions.isEmpty, truncated.count < MDNSResponderEngine.maxTruncatedQueries else { return false }
        var held = m
        held.answers = Array(m.answers.prefix(room))
        truncated.append((source, i.index, wait(), held))
        return true
    }

    // MARK: Probing and conflicts

    private mutating func startProbing(after delay: TimeSpan) {
        pending.removeAll()
        probingOn.removeAll()
        phase = .probing(sent: 0, next: clock.now().adding(delay))
    }

    private mutating func announceAgain() {
        claimedAt = clock.now()
        phase = .claimed(announced: 0, next: clock.now())
    }

    /// Section 8.1: questions of type ANY for the names, the first asking for
    /// a unicast answer, and the records we propose in the authority section.
    private func probe(on i: NetworkInterface, first: Bool) -> Packet? {
        guard let ad = current else { return nil }
        var m = DNSMessage()
        m.questions = probedNames(ad).map { DNSQuestion(name: $0, type: DNSType.any.rawValue, unicastResponse: first) }
        m.authorities = [srv(ad), txt(ad)] + addressRecords(ad.hostName, i)
        return Packet(message: m, destination: .group(interface: i.index))
    }

    /// The unique names probed for: the instance and its host.
    private func probedNames(_ ad: ServiceAdvertisement) -> [DNSName] {
        [ad.instanceName, ad.hostName]
    }

    /// The records this device holds under the unique names it claims, on any interface.
    private func ownUnique(_ ad: ServiceAdvertisement) -> [DNSName: [DNSRData]] {
        [ad.instanceName: [srv(ad).data, txt(ad).data],
         ad.hostName: interfaces.flatMap { addressRecords(ad.hostName, $0).map(\.data) }]
    }

    /// A record under one of our unique names with data we do not hold: someone else has the name.
    private func conflicts(_ records: [DNSRecord]) -> Bool {
        guard phase != .idle, let ad = current else { return false }
        let own = ownUnique(ad)
        return records.contains { r in
            guard r.ttl > 0, let mine = own[r.name] else { return false }
            return !mine.contains(r.data)
        }
    }

    private mutating func renameAfterConflict() {
        let now = clock.now()
        conflictTimes = conflictTimes.filter { now < $0.adding(MDNSResponderEngine.conflictWindow) } + [now]
        if let ad = current { log("\"\(ad.instance)\" is taken on the network by another device; probing for a new name") }
        renameCount += 1
        let backoff = conflictTimes.count >= MDNSResponderEngine.conflictBurst
        startProbing(after: backoff ? MDNSResponderEngine.conflictBackoff : TimeSpan(milliseconds: random(0...MDNSResponderEngine.maxProbeDelayMs)))
    }

    /// Section 8.2: for each of our names in the other probe, the records it
    /// proposes and all we propose for the name (on every interface, each
    /// record once), sorted, are compared as (class, type, rdata) bytes; the
    /// earlier set loses. Identical sets are no contest.
    private func lostTiebreak(_ theirs: [DNSRecord]) -> Bool {
        guard let ad = current else { return false }
        var ours: [DNSRecord] = []
        for i in interfaces {
            for r in probe(on: i, first: false)?.message.authorities ?? [] where !ours.contains(r) { ours.append(r) }
        }
        for name in probedNames(ad) {
            let a = MDNSResponderEngine.tiebreakKeys(ours.filter { $0.name == name })
            let b = MDNSResponderEngine.tiebreakKeys(theirs.filter { $0.name == name })
            guard !b.isEmpty, a != b else { continue }
            if MDNSResponderEngine.isEarlier(a, than: b) { return true }
        }
        return false
    }

    /// Each record as the bytes section 8.2 compares: class, type, uncompressed rdata.
    static func tiebreakKeys(_ records: [DNSRecord]) -> [[UInt8]] {
        records.map { r in
            var w = DNSWriter()
            w.u16(DNSMessage.classIN)
            w.u16(r.data.type)
            w.rdata(r.data)
            return w.bytes
        }.sorted { $0.lexicographicallyPrecedes($1) }
    }

    /// `a` sorts before `b`: at the first record that differs, or by being shorter.
    static func isEarlier(_ a: [[UInt8]], than b: [[UInt8]]) -> Bool {
        for (x, y) in zip(a, b) where x != y { return x.lexicographicallyPrecedes(y) }
        return a.count < b.count
    }

    // MARK: Answering

    /// Section 7.4: an answer another responder has just multicast, with at
    /// least half our TTL, is not sent again by us.
    private mutating func suppressDuplicates(_ m: DNSMessage) {
        guard !pending.isEmpty else { return }
        for k in pending.indices {
            pending[k].answers.removeAll { r in m.answers.contains { $0.name == r.name && $0.data == r.data && $0.ttl >= r.ttl / 2 } }
        }
    }

    /// `waited`: the query already waited (section 7.2's collection of known
    /// answers), so shared answers go at once rather than after another delay.
    /// `probe`: the query is a probe (section 8.1), whose answer section 6 lets go sooner.
    private mutating func answer(_ q: DNSMessage, from source: [UInt8], port: UInt16, on i: NetworkInterface, waited: Bool, probe: Bool = false) -> [Packet] {
        var answers: [DNSRecord] = []
        var extra: [DNSRecord] = []
        var shared = false
        let known = q.answers.filter { $0.ttl > 0 }
        func add(_ r: DNSRecord, _ list: inout [DNSRecord]) {
            // Section 7.1: the querier already holds it, with at least half its TTL.
            if known.contains(where: { $0.name == r.name && $0.data == r.data && $0.ttl >= r.ttl / 2 }) { return }
            if !list.contains(r) { list.append(r) }
        }
        // Nothing is ours on an interface still probing.
        let answering = isClaimed && probingOn[i.index] == nil
        let ad = answering ? current : nil
        for question in q.questions {
            if let ad {
                if question.name == ServiceAdvertisement.serviceType, question.matches(.ptr) {
                    add(ptr(ad), &answers)
                    shared = true
                    add(srv(ad), &extra); add(txt(ad), &extra); addressRecords(ad.hostName, i).forEach { add($0, &extra) }
                } else if question.name == ServiceAdvertisement.serviceTypes, question.matches(.ptr) {
                    add(DNSRecord(name: ServiceAdvertisement.serviceTypes, ttl: MDNSResponderEngine.serviceTTL, data: .ptr(ServiceAdvertisement.serviceType)), &answers)
                    shared = true
                } else if question.name == ad.instanceName {
                    if question.matches(.srv) { add(srv(ad), &answers); addressRecords(ad.hostName, i).forEach { add($0, &extra) } }
                    if question.matches(.txt) { add(txt(ad), &answers) }
                } else if question.name == ad.hostName {
                    addressRecords(ad.hostName, i).filter { question.type == DNSType.any.rawValue || question.type == $0.data.type }.forEach { add($0, &answers) }
                }
            }
        }
        guard !answers.isEmpty else { return [] }
        extra.removeAll { answers.contains($0) }
        if port != MDNS.port {
            // A legacy querier: its ID and question back, short TTLs, no cache-flush bits, at once.
            var m = response(answers)
            m.additionals = extra
            m.id = q.id
            m.questions = q.questions
            func legacy(_ r: DNSRecord) -> DNSRecord { var r = r; r.ttl = min(r.ttl, MDNSResponderEngine.legacyTTL); r.cacheFlush = false; return r }
            m.answers = m.answers.map(legacy)
            m.additionals = m.additionals.map(legacy)
            return [Packet(message: m, destination: .unicast(address: source, port: port, interface: i.index))]
        }
        // Answers to a querier on 5353 are multicast, QU or not (section 5.4
        // allows it): several stacks may share the port on its host (avahi,
        // a browser), and a unicast datagram reaches only one of them.
        guard shared, !waited else {
            guard let m = limited(answers, additionals: extra, on: i.index, probeDefence: probe) else { return [] }
            return [Packet(message: m, destination: .group(interface: i.index))]
        }
        // One waiting answer per interface: a query that came over both
        // families, or again before the first was answered, joins it.
        let delay = TimeSpan(milliseconds: random(MDNSResponderEngine.sharedAnswerDelayMs))
        if let k = pending.firstIndex(where: { $0.interface == i.index }) {
            for r in answers where !pending[k].answers.contains(r) { pending[k].answers.append(r) }
            for r in extra where !pending[k].additionals.contains(r) { pending[k].additionals.append(r) }
            // The waiting answer may hold records that must wait out section
            // 6's second; this one's records need not wait that long.
            pending[k].due = min(pending[k].due, clock.now().adding(delay))
            return []
        }
        pending.append((clock.now().adding(delay), i.index, answers, extra))
        return []
    }

    /// Section 6: the response of the answers that may be multicast on
    /// `interface` now, nil when none may. Answers that must wait join the
    /// interface's waiting answer, due when the first of them may go; a
    /// probe's that must wait is dropped instead (the prober asks again in
    /// 250 ms, section 8.1, and is answered then). Additional records that
    /// may not go now are left out (the querier asks for them if it still
    /// needs them).
    private mutating func limited(_ answers: [DNSRecord], additionals: [DNSRecord], on interface: UInt32, probeDefence: Bool) -> DNSMessage? {
        let now = clock.now()
        let a = rateLimit.admit(answers, on: interface, at: now, probeDefence: probeDefence)
        if let next = a.next, !probeDefence {
            if let k = pending.firstIndex(where: { $0.interface == interface }) {
                for r in a.later where !pending[k].answers.contains(r) { pending[k].answers.append(r) }
                for r in additionals where !pending[k].additionals.contains(r) { pending[k].additionals.append(r) }
                pending[k].due = min(pending[k].due, next)
            } else {
                pending.append((next, interface, a.later, additionals))
            }
        }
        guard !a.now.isEmpty else { return nil }
        var m = response(a.now)
        m.additionals = rateLimit.admit(additionals.filter { !answers.contains($0) }, on: interface, at: now).now
        return m
    }

    // MARK: Records

    private func ptr(_ ad: ServiceAdvertisement) -> DNSRecord {
        DNSRecord(name: ServiceAdvertisement.serviceType, ttl: MDNSResponderEngine.serviceTTL, data: .ptr(ad.instanceName))
    }
    private func srv(_ ad: ServiceAdvertisement) -> DNSRecord {
        DNSRecord(name: ad.instanceName, ttl: MDNSResponderEngine.hostTTL, cacheFlush: true, data: .srv(priority: 0, weight: 0, port: ad.port, target: ad.hostName))
    }
    private func txt(_ ad: ServiceAdvertisement) -> DNSRecord {
        DNSRecord(name: ad.instanceName, ttl: MDNSResponderEngine.serviceTTL, cacheFlush: true, data: .txt(ad.txt.map { Array($0.utf8) }))
    }
    /// The host's addresses on interface `i` under `name`: A, and AAAA for each IPv6 address.
    func addressRecords(_ name: DNSName, _ i: NetworkInterface) -> [DNSRecord] {
        (i.address.count == 4 ? [DNSRecord(name: name, ttl: MDNSResponderEngine.hostTTL, cacheFlush: true, data: .a(i.address))] : [])
            + i.ipv6.map { DNSRecord(name: name, ttl: MDNSResponderEngine.hostTTL, cacheFlush: true, data: .aaaa($0)) }
    }
    private func allRecords(_ ad: ServiceAdvertisement, _ i: NetworkInterface) -> [DNSRecord] {
        [ptr(ad), srv(ad), txt(ad)] + addressRecords(ad.hostName, i)
    }

    private func response(_ answers: [DNSRecord]) -> DNSMessage {
        var m = DNSMessage()
        m.flags = DNSMessage.responseFlags
        m.answers = answers
        return m
    }

    private func goodbye(_ ad: ServiceAdvertisement, on ifs: [NetworkInterface]) -> [Packet] {
        ifs.map { i in Packet(message: response(allRecords(ad, i).map { var r = $0; r.ttl = 0; return r }), destination: .group(interface: i.index)) }
    }
}
