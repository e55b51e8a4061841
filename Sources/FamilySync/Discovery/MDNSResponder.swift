import Dispatch
import FoundationEssentials
import Glibc
import Synchronization

/// The DNS-SD responder `peer-sync serve` runs beside its listener, on a
/// thread of its own, over IPv4 (224.0.0.251) and IPv6 (ff02::fb): it
/// probes for its names, announces them on the interfaces the listener is
/// reachable through, answers queries, renames on a conflict and says
/// goodbye (TTL 0) when stopped; what to send and when is decided by
/// `MDNSResponderEngine`, this class moves the packets. It answers for the
/// day's names only, never for this host's own `NAME.local` (that would tie
/// the day's tags to the host). Nothing is sent on an interface it was not given, and a
/// listener on loopback gets no responder at all (see `NetworkInterface.serving`).
public final class MDNSResponder: @unchecked Sendable {
    /// How often the advertisement and the interfaces' addresses are looked
    /// at again (and the group memberships renewed).
    static let refreshInterval = TimeSpan.seconds(1)
    /// The longest the thread sleeps before looking at `stop()`.
    static let stopCheckInterval = TimeSpan(milliseconds: 200)

    private let listenHost: String
    private let advertisement: @Sendable () -> ServiceAdvertisement?
    private let log: @Sendable (String) -> Void
    private let sockets: [MulticastSocket]
    private let clock: MonotonicClock
    private let stopping = Atomic<Bool>(false)
    private let finished = DispatchSemaphore(value: 0)
    /// The interfaces the service was first announced on (for the start-up log line).
    public let initialInterfaces: [NetworkInterface]

    /// Opens the mDNS sockets now, so a failure is reported at start (IPv6's
    /// only when the host has IPv6 at all). Returns nil, and binds nothing,
    /// when the listener is reachable through no interface (loopback, or an
    /// address no interface holds now); a wildcard listener gets one even
    /// before any interface is up. `advertisement` is asked again at every
    /// refresh (its day).
    public init?(listenHost: String, log: @escaping @Sendable (String) -> Void, clock: MonotonicClock = .system,
                 advertisement: @escaping @Sendable () -> ServiceAdvertisement?) throws {
        let ifs = NetworkInterface.serving(host: listenHost)
        // A wildcard listener is announced on interfaces as they come up; any other needs one now.
        if ifs.isEmpty && !NetworkInterface.isWildcard(listenHost) { return nil }
        self.listenHost = listenHost
        self.advertisement = advertisement
        self.log = log
        self.clock = clock
        var sockets = [try MulticastSocket.open(port: MDNS.port, family: .ipv4)]
        if let v6 = try? MulticastSocket.open(port: MDNS.port, family: .ipv6) { sockets.append(v6) }
        self.sockets = sockets
        initialInterfaces = ifs
    }

    public func start() {
        Threads.detach { [self] in
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

    private func run() {
        var engine = MDNSResponderEngine(clock: clock, log: log)
        var ad: ServiceAdvertisement?
        var logged: [NetworkInterface] = []
        var nextRefresh = clock.now()
        while !stopping.load(ordering: .relaxed) {
            if clock.hasPassed(nextRefresh) {
                let ifs = NetworkInterface.serving(host: listenHost)
                ad = advertisement()
                if ad != nil, !ifs.isEmpty, ifs != logged {
                    log("advertising _family-sync._tcp on " + ifs.map(\.description).joined(separator: ", "))
                    logged = ifs
                }
                update(&engine, ad: ad, interfaces: ifs, renew: true)
                nextRefresh = clock.deadline(after: MDNSResponder.refreshInterval)
            }
            send(engine.tick(), engine.interfaces)
            let wake = min(nextRefresh, engine.nextWake ?? nextRefresh, clock.deadline(after: MDNSResponder.stopCheckInterval))
            if let d = MulticastSocket.receive(from: sockets, deadline: wake, clock: clock) {
                // The arrival interface as it is now: an address that changed
                // since the last refresh is answered with already.
                update(&engine, ad: ad, interfaces: NetworkInterface.serving(host: listenHost), renew: false)
                send(engine.receive(d), engine.interfaces)
            }
        }
        send(engine.stop(), engine.interfaces)
        for s in sockets { for i in engine.interfaces where s.serves(i) { s.leave(i) } }
    }

    /// Gives the engine the interfaces and advertisement; memberships follow
    /// the interfaces, and are renewed every time (the kernel drops them when
    /// an interface goes away; joining again is harmless).
    private func update(_ engine: inout MDNSResponderEngine, ad: ServiceAdvertisement?, interfaces ifs: [NetworkInterface], renew: Bool) {
        for s in sockets {
            for i in engine.interfaces where !ifs.contains(where: { $0.index == i.index && s.serves($0) }) && s.serves(i) { s.leave(i) }
            for i in ifs where s.serves(i) && (renew || !engine.interfaces.contains(where: { $0.index == i.index && s.serves($0) })) { s.join(i) }
        }
        send(engine.update(advertisement: ad, interfaces: ifs), engine.interfaces)
    }

    private func send(_ packets: [MDNSResponderEngine.Packet], _ ifs: [NetworkInterface]) {
        for p in packets {
            let bytes = p.message.encoded()
            switch p.destination {
            case let .group(index):
                guard let i = ifs.first(where: { $0.index == index }) else { continue }
                for s in sockets where s.serves(i) { s.sendMulticast(bytes, via: i) }
            case let .unicast(address, port, index):
                for s in sockets where (s.family == .ipv4) == (address.count == 4) { s.send(bytes, to: address, port: port, interface: index) }
            }
        }
    }
}
