import FoundationEssentials
import Glibc

/// A DNS-SD service instance seen on the network, resolved to an address.
public struct FoundService: Sendable, Equatable {
    public var instance: String
    public var txt: [[UInt8]]
    public var port: UInt16
    /// IPv4 when the instance has it, else IPv6 (a link-local one with
    /// "%interface"), as text.
    public var address: String
    /// The interface the answer came in on.
    public var interface: String
    public var hostPort: HostPort { HostPort(host: address, port: port) }
}

/// A one-shot multicast DNS querier (RFC 6762 section 5.1): it asks from an
/// ephemeral port, so every responder (this project's, avahi-daemon,
/// Bonjour) answers it directly by unicast and no daemon is needed. Queries
/// go out on each interface at 0, 0.25, 1 and 2 seconds, since a multicast
/// datagram may be lost; SRV, TXT and address records a response left out
/// are asked for by name. It asks over IPv4 and, where the interface has
/// IPv6, over IPv6 too; an instance with an IPv4 address is reported with it.
public final class MDNSBrowser {
    /// When the queries of one browse go out, from its start.
    static let querySchedule: [Int64] = [0, 250, 1000, 2000]

    public let interfaces: [NetworkInterface]
    private let sockets: [MulticastSocket]

    public init(interfaces: [NetworkInterface] = NetworkInterface.current()) throws {
        self.interfaces = interfaces
        var sockets = [try MulticastSocket.open(port: 0, family: .ipv4)]
        if interfaces.contains(where: { !$0.ipv6.isEmpty }), let v6 = try? MulticastSocket.open(port: 0, family: .ipv6) { sockets.append(v6) }
        self.sockets = sockets
    }

    private struct Cache {
        var instances: [DNSName: String] = [:]       // instance name -> interface it was seen on
        var srv: [DNSName: (port: UInt16, target: DNSName)] = [:]
        var txt: [DNSName: [[UInt8]]] = [:]
        var addresses: [DNSName: [[UInt8]]] = [:]   // A and AAAA data, by host name
        var asked: Set<String> = []
    }

    private func query(_ questions: [DNSQuestion], on ifs: [NetworkInterface]) {
        var m = DNSMessage()
        m.questions = questions
        let bytes = m.encoded()
        for i in ifs { for s in sockets where s.serves(i) { s.sendMulticast(bytes, via: i) } }
    }

    private func receive(deadline: Deadline) -> Datagram? { MulticastSocket.receive(from: sockets, deadline: deadline) }

    /// The address to reach a host at, from its A and AAAA records: IPv4
    /// first, then a routable IPv6 address, then a link-local one scoped to
    /// the interface the answer came in on.
    static func bestAddress(_ addresses: [[UInt8]], interface: String) -> String? {
        if let v4 = addresses.first(where: { $0.count == 4 }) { return NetworkInterface.text(v4) }
        if let v6 = addresses.first(where: { $0.count == 16 && !NetworkInterface.isLinkLocal($0) }) { return NetworkInterface.text(v6) }
        if let ll = addresses.first(where: { NetworkInterface.isLinkLocal($0) }), interface != "?" { return NetworkInterface.text(ll) + "%" + interface }
        return nil
    }

    /// Browses for instances of `type` for at most `duration`, or until
    /// `enough` says so. Each resolved instance is reported once per address,
    /// in the order they resolved (an instance that moved is reported again).
    public func browse(_ type: DNSName = ServiceAdvertisement.serviceType, for duration: TimeSpan,
                       enough: (FoundService) -> Bool = { _ in false }) -> [FoundService] {
        guard !interfaces.isEmpty else { return [] }
        let start = Deadline.now()
        let end = start.adding(duration)
        var schedule = MDNSBrowser.querySchedule.filter { $0 < duration.milliseconds }[...]
        var cache = Cache()
        var found: [FoundService] = []
        while Deadline.now() < end {
            if let next = schedule.first, start.adding(TimeSpan(milliseconds: next)) <= Deadline.now() {
                schedule.removeFirst()
                query([DNSQuestion(name: type, type: DNSType.ptr.rawValue)], on: interfaces)
            }
            let wake = schedule.first.map { min(end, start.adding(TimeSpan(milliseconds: $0))) } ?? end
            guard let d = receive(deadline: wake) else { continue }
            guard let m = try? DNSMessage(parsing: d.bytes), m.isResponse else { continue }
            let via = interfaces.first { $0.index == d.interfaceIndex }?.name ?? interfaces.first { $0.address == d.source || $0.ipv6.contains(d.source) }?.name ?? "?"
            absorb(m, type: type, via: via, into: &cache)
            for (name, ifName) in cache.instances.sorted(by: { $0.key.key < $1.key.key }) {
                guard let s = cache.srv[name] else {
                    askOnce("srv \(name.key)", &cache, [DNSQuestion(name: name, type: DNSType.srv.rawValue), DNSQuestion(name: name, type: DNSType.txt.rawValue)])
                    continue
                }
                guard cache.txt[name] != nil else {
                    askOnce("txt \(name.key)", &cache, [DNSQuestion(name: name, type: DNSType.txt.rawValue)])
                    continue
                }
                guard let a = cache.addresses[s.target].flatMap({ MDNSBrowser.bestAddress($0, interface: ifName) }) else {
                    askOnce("a \(s.target.key)", &cache, [DNSQuestion(name: s.target, type: DNSType.a.rawValue), DNSQuestion(name: s.target, type: DNSType.aaaa.rawValue)])
                    continue
                }
                // Never nil: the guard above asked for the TXT record when it was missing.
                let f = FoundService(instance: name.first, txt: cache.txt[name]!, port: s.port, address: a, interface: ifName)
                if found.contains(where: { $0.instance == f.instance && $0.hostPort == f.hostPort }) { continue }
                found.append(f)
                if enough(f) { return found }
            }
        }
        return found
    }

    private func askOnce(_ key: String, _ cache: inout Cache, _ qs: [DNSQuestion]) {
        guard cache.asked.insert(key).inserted else { return }
        query(qs, on: interfaces)
    }

    /// Takes what a response says about `type`'s instances (goodbyes remove).
    private func absorb(_ m: DNSMessage, type: DNSName, via: String, into c: inout Cache) {
        for r in m.allRecords {
            switch r.data {
            case let .ptr(target) where r.name == type:
                if r.ttl == 0 { c.instances[target] = nil } else if target.droppingFirst == type, c.instances[target] == nil { c.instances[target] = via }
            case let .srv(_, _, port, target):
                c.srv[r.name] = r.ttl == 0 ? nil : (port, target)
            case let .txt(strings):
                c.txt[r.name] = strings
            case let .a(bytes), let .aaaa(bytes):
                // A cache-flush record replaces the set (an address that moved); a goodbye removes one.
                var set = r.cacheFlush ? (c.addresses[r.name] ?? []).filter { $0.count != bytes.count } : (c.addresses[r.name] ?? [])
                if r.ttl == 0 { set.removeAll { $0 == bytes } } else if !set.contains(bytes) { set.append(bytes) }
                c.addresses[r.name] = set.isEmpty ? nil : set
            default:
                break
            }
        }
    }

    /// The address of `host` (a `NAME.local` name), asked on every
    /// interface, IPv4 preferred; nil when nobody answers within `timeout`.
    public func resolve(_ host: DNSName, timeout: TimeSpan) -> String? {
        guard !interfaces.isEmpty else { return nil }
        let start = Deadline.now()
        let end = start.adding(timeout)
        var schedule = MDNSBrowser.querySchedule.filter { $0 < timeout.milliseconds }[...]
        var v6: String?
        while Deadline.now() < end {
            if let next = schedule.first, start.adding(TimeSpan(milliseconds: next)) <= Deadline.now() {
                schedule.removeFirst()
                query([DNSQuestion(name: host, type: DNSType.a.rawValue), DNSQuestion(name: host, type: DNSType.aaaa.rawValue)], on: interfaces)
            }
            // An IPv6-only answer is waited on for one more query round, in case an A record follows.
            let wake = schedule.first.map { min(end, start.adding(TimeSpan(milliseconds: $0))) } ?? end
            guard let d = receive(deadline: wake) else { if let v6 { return v6 }; continue }
            guard let m = try? DNSMessage(parsing: d.bytes), m.isResponse else { continue }
            let via = interfaces.first { $0.index == d.interfaceIndex }?.name ?? "?"
            var addresses: [[UInt8]] = []
            for r in m.allRecords where r.name == host && r.ttl > 0 {
                switch r.data {
                case let .a(b), let .aaaa(b): addresses.append(b)
                default: break
                }
            }
            if addresses.contains(where: { $0.count == 4 }) { return MDNSBrowser.bestAddress(addresses, interface: via) }
            if v6 == nil { v6 = MDNSBrowser.bestAddress(addresses, interface: via) }
        }
        return v6
    }
}
