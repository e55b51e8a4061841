import Foundation

/// A DNS-SD service instance seen on the network, resolved to an address.
public struct FoundService: Sendable, Equatable {
    public var instance: String
    public var txt: [[UInt8]]
    public var port: UInt16
    /// IPv4, as text.
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
/// are asked for by name.
public final class MDNSBrowser {
    /// When the queries of one browse go out, from its start.
    static let querySchedule: [Int64] = [0, 250, 1000, 2000]

    public let interfaces: [NetworkInterface]
    private let socket: MulticastSocket

    public init(interfaces: [NetworkInterface] = NetworkInterface.current()) throws {
        self.interfaces = interfaces
        socket = try MulticastSocket.open(port: 0)
    }

    private struct Cache {
        var instances: [DNSName: String] = [:]       // instance name -> interface it was seen on
        var srv: [DNSName: (port: UInt16, target: DNSName)] = [:]
        var txt: [DNSName: [[UInt8]]] = [:]
        var addresses: [DNSName: [UInt8]] = [:]
        var asked: Set<String> = []
    }

    private func query(_ questions: [DNSQuestion], on ifs: [NetworkInterface]) {
        var m = DNSMessage()
        m.questions = questions
        let bytes = m.encoded()
        for i in ifs { socket.sendMulticast(bytes, via: i) }
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
            guard let d = socket.receive(deadline: wake) else { continue }
            guard let m = try? DNSMessage(parsing: d.bytes), m.isResponse else { continue }
            let via = interfaces.first { $0.index == d.interfaceIndex }?.name ?? interfaces.first { $0.address == d.source }?.name ?? "?"
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
                guard let a = cache.addresses[s.target] else {
                    askOnce("a \(s.target.key)", &cache, [DNSQuestion(name: s.target, type: DNSType.a.rawValue)])
                    continue
                }
                // Never nil: the guard above asked for the TXT record when it was missing.
                let f = FoundService(instance: name.first, txt: cache.txt[name]!, port: s.port,
                                     address: a.map(String.init).joined(separator: "."), interface: ifName)
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
            case let .a(bytes):
                c.addresses[r.name] = r.ttl == 0 ? nil : bytes
            default:
                break
            }
        }
    }

    /// The IPv4 address of `host` (a `NAME.local` name), asked on every
    /// interface; nil when nobody answers within `timeout`.
    public func resolve(_ host: DNSName, timeout: TimeSpan) -> String? {
        guard !interfaces.isEmpty else { return nil }
        let start = Deadline.now()
        let end = start.adding(timeout)
        var schedule = MDNSBrowser.querySchedule.filter { $0 < timeout.milliseconds }[...]
        while Deadline.now() < end {
            if let next = schedule.first, start.adding(TimeSpan(milliseconds: next)) <= Deadline.now() {
                schedule.removeFirst()
                query([DNSQuestion(name: host, type: DNSType.a.rawValue)], on: interfaces)
            }
            let wake = schedule.first.map { min(end, start.adding(TimeSpan(milliseconds: $0))) } ?? end
            guard let d = socket.receive(deadline: wake), let m = try? DNSMessage(parsing: d.bytes), m.isResponse else { continue }
            for r in m.allRecords where r.name == host && r.ttl > 0 {
                if case let .a(b) = r.data { return b.map(String.init).joined(separator: ".") }
            }
        }
        return nil
    }
}
