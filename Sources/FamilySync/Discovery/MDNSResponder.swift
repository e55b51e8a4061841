import Foundation
import Synchronization

/// The DNS-SD responder `peer-sync serve` runs beside its listener, on a
/// thread of its own: it announces the service on the interfaces the listener
/// is reachable through (RFC 6762 section 8.3: twice or more, a second apart),
/// answers queries for it, re-announces when an address or the day's name
/// changes, and says goodbye (TTL 0) when stopped. It also answers queries
/// for this host's own `NAME.local` address, so `owner.local` works where no
/// avahi-daemon runs. Nothing is sent on an interface it was not given, and a
/// listener on loopback gets no responder at all (see `NetworkInterface.serving`).
public final class MDNSResponder: @unchecked Sendable {
    /// RFC 6762 section 10: 120 s for records naming a host's address, 75 minutes for the rest.
    static let hostTTL: UInt32 = 120
    static let serviceTTL: UInt32 = 4500
    /// RFC 6762 section 6.7: answers to a legacy (non-5353) querier carry at most 10 s.
    static let legacyTTL: UInt32 = 10
    /// How often the advertisement and the interfaces' addresses are looked at again.
    static let refreshInterval = TimeSpan.seconds(1)
    /// Announcements at start and after a change: this many, a second apart.
    static let announcements = 3

    private let listenHost: String
    private let advertisement: @Sendable () -> ServiceAdvertisement?
    private let log: @Sendable (String) -> Void
    private let socket: MulticastSocket
    private let stopping = Atomic<Bool>(false)
    private let finished = DispatchSemaphore(value: 0)
    /// The interfaces the service was first announced on (for the start-up log line).
    public let initialInterfaces: [NetworkInterface]

    /// Opens the mDNS socket now, so a failure is reported at start. Returns
    /// nil, and binds nothing, when the listener is reachable through no
    /// interface (loopback, or an address no interface holds now); a
    /// wildcard listener gets one even before any interface is up.
    /// `advertisement` is asked again at every refresh (its day, open offers).
    public init?(listenHost: String, log: @escaping @Sendable (String) -> Void,
                 advertisement: @escaping @Sendable () -> ServiceAdvertisement?) throws {
        let ifs = NetworkInterface.serving(host: listenHost)
        // A wildcard listener is announced on interfaces as they come up; any other needs one now.
        if ifs.isEmpty && !NetworkInterface.isWildcard(listenHost) { return nil }
        self.listenHost = listenHost
        self.advertisement = advertisement
        self.log = log
        socket = try MulticastSocket.open(port: MDNS.port)
        initialInterfaces = ifs
    }

    public func start() {
        Thread.detachNewThread { [self] in
            run()
            finished.signal()
        }
    }

    /// Says goodbye on every interface and waits for the thread to end.
    public func stop() {
        stopping.store(true, ordering: .relaxed)
        finished.wait()
    }

    // MARK: The thread

    private struct State {
        var interfaces: [NetworkInterface] = []
        var ad: ServiceAdvertisement?
        var announcementsLeft = 0
        var nextAnnouncement = Deadline.now()
    }

    private func run() {
        var st = State()
        var nextRefresh = Deadline.now()
        while !stopping.load(ordering: .relaxed) {
            if !(nextRefresh > Deadline.now()) {
                refresh(&st)
                nextRefresh = Deadline(after: MDNSResponder.refreshInterval)
            }
            if st.announcementsLeft > 0, !(st.nextAnnouncement > Deadline.now()), let ad = st.ad {
                for i in st.interfaces { socket.sendMulticast(response(ad, interface: i, answers: allRecords(ad, i), ttlScale: 1).encoded(), via: i) }
                st.announcementsLeft -= 1
                st.nextAnnouncement = Deadline(after: .seconds(1))
            }
            let wake = min(nextRefresh, st.announcementsLeft > 0 ? st.nextAnnouncement : nextRefresh, Deadline(after: TimeSpan(milliseconds: 200)))
            guard let d = socket.receive(deadline: wake) else { continue }
            answer(d, st)
        }
        if let ad = st.ad { goodbye(ad, on: st.interfaces) }
        for i in st.interfaces { socket.leave(i) }
    }

    /// Looks at the interfaces and the advertisement again: a new address or
    /// a new name is announced, an old name gets its goodbye.
    private func refresh(_ st: inout State) {
        let ifs = NetworkInterface.serving(host: listenHost)
        let ad = advertisement()
        if let old = st.ad, old.instance != ad?.instance || old.port != ad?.port {
            goodbye(old, on: st.interfaces)
        }
        for i in ifs where !st.interfaces.contains(where: { $0.index == i.index }) { socket.join(i) }
        for i in st.interfaces where !ifs.contains(where: { $0.index == i.index }) { socket.leave(i) }
        if ad != st.ad || ifs != st.interfaces {
            if ad != nil, !ifs.isEmpty, ifs != st.interfaces {
                log("advertising _family-sync._tcp on " + ifs.map(\.description).joined(separator: ", "))
            }
            st.announcementsLeft = MDNSResponder.announcements
            st.nextAnnouncement = Deadline.now()
        }
        st.interfaces = ifs
        st.ad = ad
    }

    private func goodbye(_ ad: ServiceAdvertisement, on interfaces: [NetworkInterface]) {
        for i in interfaces { socket.sendMulticast(response(ad, interface: i, answers: allRecords(ad, i), ttlScale: 0).encoded(), via: i) }
    }

    // MARK: Records

    private func ptr(_ ad: ServiceAdvertisement) -> DNSRecord {
        DNSRecord(name: ServiceAdvertisement.serviceType, ttl: MDNSResponder.serviceTTL, data: .ptr(ad.instanceName))
    }
    private func srv(_ ad: ServiceAdvertisement) -> DNSRecord {
        DNSRecord(name: ad.instanceName, ttl: MDNSResponder.hostTTL, cacheFlush: true, data: .srv(priority: 0, weight: 0, port: ad.port, target: ad.hostName))
    }
    private func txt(_ ad: ServiceAdvertisement) -> DNSRecord {
        DNSRecord(name: ad.instanceName, ttl: MDNSResponder.serviceTTL, cacheFlush: true, data: .txt(ad.txt.map { Array($0.utf8) }))
    }
    private func address(_ name: DNSName, _ i: NetworkInterface) -> DNSRecord {
        DNSRecord(name: name, ttl: MDNSResponder.hostTTL, cacheFlush: true, data: .a(i.address))
    }
    private func allRecords(_ ad: ServiceAdvertisement, _ i: NetworkInterface) -> [DNSRecord] {
        [ptr(ad), srv(ad), txt(ad), address(ad.hostName, i)]
    }

    /// This host's own name in `.local`, from gethostname(2).
    private static let ownHostName: DNSName? = {
        var buf = [CChar](repeating: 0, count: 256)
        guard gethostname(&buf, buf.count - 1) == 0 else { return nil }
        let name = String(decoding: buf.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let first = name.split(separator: ".").first.map(String.init) ?? ""
        guard !first.isEmpty, first != "localhost", first.utf8.count <= DNSLimits.maxLabelBytes else { return nil }
        return ServiceAdvertisement.local.prepending(first)
    }()

    private func response(_ ad: ServiceAdvertisement?, interface: NetworkInterface, answers: [DNSRecord], additionals: [DNSRecord] = [], ttlScale: UInt32) -> DNSMessage {
        var m = DNSMessage()
        m.flags = DNSMessage.responseFlags
        m.answers = answers.map { var r = $0; r.ttl *= ttlScale; return r }
        m.additionals = additionals.map { var r = $0; r.ttl *= ttlScale; return r }
        return m
    }

    // MARK: Answering

    /// Answers one datagram if it is a query for something this device holds.
    private func answer(_ d: Datagram, _ st: State) {
        // The arrival interface as it is now: an address that changed since
        // the last refresh is answered with already.
        guard st.interfaces.contains(where: { $0.index == d.interfaceIndex }),
              let i = NetworkInterface.serving(host: listenHost).first(where: { $0.index == d.interfaceIndex }) else { return }
        guard let q = try? DNSMessage(parsing: d.bytes), !q.isResponse, q.flags & 0x7800 == 0 else { return }
        let ad = st.ad
        var answers: [DNSRecord] = []
        var extra: [DNSRecord] = []
        var unicast = d.sourcePort != MDNS.port
        let known = Set(q.answers.filter { $0.ttl >= MDNSResponder.serviceTTL / 2 }.map { "\($0.name.key) \($0.data)" })
        func add(_ r: DNSRecord, _ list: inout [DNSRecord]) {
            if known.contains("\(r.name.key) \(r.data)") { return }
            if !list.contains(r) { list.append(r) }
        }
        for question in q.questions {
            if question.unicastResponse { unicast = true }
            if let ad {
                if question.name == ServiceAdvertisement.serviceType, question.matches(.ptr) {
                    add(ptr(ad), &answers)
                    add(srv(ad), &extra); add(txt(ad), &extra); add(address(ad.hostName, i), &extra)
                } else if question.name == ServiceAdvertisement.serviceTypes, question.matches(.ptr) {
                    add(DNSRecord(name: ServiceAdvertisement.serviceTypes, ttl: MDNSResponder.serviceTTL, data: .ptr(ServiceAdvertisement.serviceType)), &answers)
                } else if question.name == ad.instanceName {
                    if question.matches(.srv) { add(srv(ad), &answers); add(address(ad.hostName, i), &extra) }
                    if question.matches(.txt) { add(txt(ad), &answers) }
                } else if question.name == ad.hostName, question.matches(.a) {
                    add(address(ad.hostName, i), &answers)
                }
            }
            if let own = MDNSResponder.ownHostName, question.name == own, question.matches(.a) {
                add(address(own, i), &answers)
            }
        }
        guard !answers.isEmpty else { return }
        extra.removeAll { answers.contains($0) }
        var m = response(ad, interface: i, answers: answers, additionals: extra, ttlScale: 1)
        if d.sourcePort != MDNS.port {
            // A legacy querier: its ID and question back, short TTLs, no cache-flush bits.
            m.id = q.id
            m.questions = q.questions
            func legacy(_ r: DNSRecord) -> DNSRecord { var r = r; r.ttl = min(r.ttl, MDNSResponder.legacyTTL); r.cacheFlush = false; return r }
            m.answers = m.answers.map(legacy)
            m.additionals = m.additionals.map(legacy)
            socket.send(m.encoded(), to: d.source, port: d.sourcePort)
        } else if unicast {
            socket.send(m.encoded(), to: d.source, port: d.sourcePort)
        } else {
            socket.sendMulticast(m.encoded(), via: i)
        }
    }
}
