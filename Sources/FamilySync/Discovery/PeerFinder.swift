import Dispatch
import FoundationEssentials
import Glibc

/// A device found to sync with: where, which device we believe it is (nil:
/// a family device we cannot name yet), and how it was found.
public struct PeerCandidate: Sendable {
    public var address: HostPort
    public var device: String?
    public var how: String
}

/// Finds a peer the way "Sync Now" must: the addresses peers were last
/// reached at and a DNS-SD browse for the family's service, all at the same
/// time, the first that accepts a TCP connection winning. The browse lasts
/// at most `browseTime`, so nobody answering is known within seconds; the
/// failure then says what was tried, on which interfaces and for how long.
public enum PeerFinder {
    /// How long a browse looks for the family's service.
    public static let browseTime = TimeSpan.seconds(3)
    /// How long a TCP connect to a last address or a discovered one may take.
    public static let probeTimeout = TimeSpan.seconds(3)

    /// Decides whether a service found on the network is one we want; nil
    /// if not, else the device it names (itself nil when not known yet).
    static func isLoopback(_ host: String) -> Bool {
        host.hasPrefix("127.") || host == "::1" || host.lowercased() == "localhost"
    }

    public typealias Recogniser = @Sendable (FoundService) -> String??

    /// The socket connected to the winner; the caller runs the session on it.
    public final class Connected: @unchecked Sendable {
        public let candidate: PeerCandidate
        public let socket: TCPSocket
        init(_ c: PeerCandidate, _ s: TCPSocket) { candidate = c; socket = s }
    }

    private final class Race: @unchecked Sendable {
        let lock = Locked<(winner: Connected?, failures: [String], known: [any Error], running: Int, others: Int, failed: Set<String>)>((nil, [], [], 0, 0, []))
        let wake = DispatchSemaphore(value: 0)

        var won: Bool { lock.withLock { $0.winner != nil } }
        func start() { lock.withLock { $0.running += 1 } }
        /// The first connection wins; a later one is closed before a byte is sent.
        func offer(_ c: PeerCandidate, _ s: TCPSocket) {
            let kept = lock.withLock { state -> Bool in
                guard state.winner == nil else { return false }
                state.winner = Connected(c, s)
                return true
            }
            if !kept { s.close() }
            wake.signal()
        }
        func fail(_ m: String) { lock.withLock { $0.failures.append(m) } }
        /// A last known address that did not answer.
        func fail(known e: any Error) { lock.withLock { $0.known.append(e) } }
        func failed(_ a: HostPort) { lock.withLock { _ = $0.failed.insert(a.description) } }
        func hasFailed(_ a: HostPort) -> Bool { lock.withLock { $0.failed.contains(a.description) } }
        func sawOther() { lock.withLock { $0.others += 1 } }
        func finish() { lock.withLock { $0.running -= 1 }; wake.signal() }
    }

    /// Races `known` (address and the device last there) against a browse
    /// that keeps what `recognise` accepts (no browse when it is nil).
    /// `excluding`: addresses that answered without proving the family's key
    /// this pass, passed over even when they advertise a device's tag (a
    /// tag seen on the network can be repeated by anyone).
    /// Throws `SyncError.nobodyAnswered` with what was tried when nothing answers.
    public static func find(known: [(HostPort, String?)], recognise: Recogniser?, what: String,
                            observer: SyncObserver? = nil, excluding: Set<String> = []) throws -> Connected {
        let started = Deadline.now()
        let race = Race()
        for (address, device) in known {
            race.start()
            Threads.detach {
                defer { race.finish() }
                do {
                    let target = try LocalNames.resolve(address)
                    let s = try TCPSocket.connect(to: target, timeout: probeTimeout)
                    race.offer(PeerCandidate(address: address, device: device, how: "last address"), s)
                } catch is SocketError {
                    race.failed(address)
                    race.fail(known: SyncError(.noPeer, peer: address.description))
                } catch {
                    race.failed(address)
                    race.fail(known: error)
                }
            }
        }
        var interfaces: [NetworkInterface] = []
        // Peers known only on loopback share this host: DNS-SD does not run
        // over loopback, so there is nothing to browse for (and nothing is sent).
        let loopbackOnly = !known.isEmpty && known.allSatisfy { isLoopback($0.0.host) }
        let recognise = loopbackOnly ? nil : recognise
        if let recognise {
            interfaces = NetworkInterface.current()
            let ifs = interfaces
            race.start()
            Threads.detach {
                defer { race.finish() }
                guard let browser = try? MDNSBrowser(interfaces: ifs) else { race.fail("mDNS: cannot open a socket"); return }
                _ = browser.browse(for: browseTime) { f in
                    if race.won { return true }
                    guard let device = recognise(f), !excluding.contains(f.hostPort.description) else { race.sawOther(); return false }
                    // A last address already being tried is not connected to
                    // twice: its try is waited for. But the answer shows the
                    // device is there now, so a try that failed is made again.
                    // Just after a cable is plugged back in, the first try
                    // queues behind a neighbour (ARP) lookup begun while the
                    // cable was out, which runs out of probes and fails it
                    // ("no route to host"); a new try starts a fresh lookup.
                    if known.contains(where: { $0.0 == f.hostPort }) {
                        let until = Deadline(after: probeTimeout)
                        while !race.won, !race.hasFailed(f.hostPort), !until.hasPassed { usleep(10_000) }
                        if race.won { return true }
                    }
                    do {
                        let s = try TCPSocket.connect(to: f.hostPort, timeout: probeTimeout)
                        race.offer(PeerCandidate(address: f.hostPort, device: device, how: "discovered on \(f.interface)"), s)
                        return true
                    } catch {
                        race.fail("\(f.hostPort) (discovered on \(f.interface)): not answering")
                        return false
                    }
                }
            }
        }
        while true {
            let (winner, running) = race.lock.withLock { ($0.winner, $0.running) }
            if let winner {
                observer?(SyncEvent("found", [("address", .string(winner.candidate.address.description)), ("how", .string(winner.candidate.how)),
                                             ("device", winner.candidate.device.map { .string($0) } ?? .null),
                                             ("ms", .int(Deadline.now().milliseconds(since: started)))]))
                return winner
            }
            if running == 0 { break }
            race.wake.wait()
        }
        let (failures, knownFailures, seen) = race.lock.withLock { ($0.failures, $0.known, $0.others) }
        let ms = Deadline.now().milliseconds(since: started)
        var tried: [String] = []
        tried += failures.filter { !$0.contains("discovered") }
        if loopbackOnly { tried.append("no browse: every known peer is on this host's loopback") }
        if recognise != nil {
            if interfaces.isEmpty {
                tried.append("no browse: this device has no network interface up besides loopback")
            } else {
                let others = seen > 0 ? "; \(seen) other _family-sync._tcp service\(seen == 1 ? "" : "s") answered, none of this family's" : ""
                let foundButSilent = failures.filter { $0.contains("discovered") }
                tried.append("browsed for _family-sync._tcp on \(interfaces.map(\.description).joined(separator: ", ")) for \(browseTime.milliseconds / 1000) s\(others)"
                             + (foundButSilent.isEmpty ? "" : "; found \(foundButSilent.joined(separator: "; "))"))
            }
        }
        throw SyncError(.nobodyAnswered, peer: what, detail: String(cFormat: "%.1f", Double(ms) / 1000), causes: knownFailures, notes: tried)
    }
}

/// `NAME.local` host names, resolved by multicast DNS through `MDNSBrowser`,
/// so they work without avahi-daemon or nss-mdns; other names are left to the resolver.
public enum LocalNames {
    public static let resolveTime = TimeSpan.seconds(3)

    public static func isLocal(_ host: String) -> Bool {
        host.lowercased().hasSuffix(".local") || host.lowercased().hasSuffix(".local.")
    }

    /// `address` with a `.local` host replaced by its address (IPv4 preferred).
    public static func resolve(_ address: HostPort) throws -> HostPort {
        guard isLocal(address.host) else { return address }
        let ifs = NetworkInterface.current()
        guard let browser = try? MDNSBrowser(interfaces: ifs), let ip = browser.resolve(DNSName(address.host), timeout: resolveTime) else {
            throw SyncError(.localNameUnanswered, peer: address.host,
                            detail: "on \(ifs.isEmpty ? "any interface (none is up besides loopback)" : ifs.map(\.description).joined(separator: ", ")) within \(resolveTime.milliseconds / 1000) s")
        }
        return HostPort(host: ip, port: address.port)
    }
}
