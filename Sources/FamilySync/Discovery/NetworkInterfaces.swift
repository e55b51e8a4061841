import FoundationEssentials
import Glibc

/// An interface that multicast DNS can use: up, multicast-capable, not loopback.
public struct NetworkInterface: Sendable, Equatable, CustomStringConvertible {
    public var name: String
    public var index: UInt32
    /// The interface's first IPv4 address, in network order; empty when it has none.
    public var address: [UInt8]
    /// Its IPv6 addresses (link-local included), 16 bytes each, in the order the kernel lists them.
    public var ipv6: [[UInt8]] = []
    /// The IPv4 address as text, or for an interface without IPv4 its first
    /// routable IPv6 one, else its link-local one.
    public var addressText: String {
        if address.count == 4 { return address.map(String.init).joined(separator: ".") }
        return (ipv6.first { !NetworkInterface.isLinkLocal($0) } ?? ipv6.first).map(NetworkInterface.text) ?? "no address"
    }
    public var description: String { "\(name) (\(addressText))" }

    public init(name: String, index: UInt32, address: [UInt8], ipv6: [[UInt8]] = []) {
        self.name = name
        self.index = index
        self.address = address
        self.ipv6 = ipv6
    }

    /// An address of 4 or 16 bytes as text (inet_ntop(3)).
    public static func text(_ bytes: [UInt8]) -> String {
        var buf = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        let family = bytes.count == 16 ? AF_INET6 : AF_INET
        guard bytes.count == 4 || bytes.count == 16, bytes.withUnsafeBytes({ inet_ntop(family, $0.baseAddress, &buf, socklen_t(buf.count)) }) != nil else { return "?" }
        return String(decoding: buf.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// fe80::/10: reachable only together with the interface it is on (a scope ID).
    public static func isLinkLocal(_ bytes: [UInt8]) -> Bool { bytes.count == 16 && bytes[0] == 0xFE && bytes[1] & 0xC0 == 0x80 }

    /// Every such interface now, read with getifaddrs(3): no packet is sent.
    /// An interface with several IPv4 addresses appears once, with its first.
    public static func current() -> [NetworkInterface] {
        var head: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&head) == 0, let first = head else { return [] }
        defer { freeifaddrs(head) }
        var out: [NetworkInterface] = []
        var p: UnsafeMutablePointer<ifaddrs>? = first
        while let a = p {
            p = a.pointee.ifa_next
            let flags = Int32(a.pointee.ifa_flags)
            guard let sa = a.pointee.ifa_addr, sa.pointee.sa_family == sa_family_t(AF_INET) || sa.pointee.sa_family == sa_family_t(AF_INET6),
                  flags & Int32(IFF_UP) != 0, flags & Int32(IFF_MULTICAST) != 0, flags & Int32(IFF_LOOPBACK) == 0 else { continue }
            let name = String(cString: a.pointee.ifa_name)
            let k: Int
            if let seen = out.firstIndex(where: { $0.name == name }) {
                k = seen
            } else {
                out.append(NetworkInterface(name: name, index: if_nametoindex(a.pointee.ifa_name), address: []))
                k = out.count - 1
            }
            if sa.pointee.sa_family == sa_family_t(AF_INET) {
                if out[k].address.isEmpty {
                    out[k].address = sa.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { withUnsafeBytes(of: $0.pointee.sin_addr) { Array($0) } }
                }
            } else {
                out[k].ipv6.append(sa.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { withUnsafeBytes(of: $0.pointee.sin6_addr) { Array($0) } })
            }
        }
        return out
    }

    /// The interfaces a listener on `host` is reachable through: all of them
    /// for a wildcard address, the one holding a specific address, none for
    /// loopback (nobody else can reach it, so nothing is announced).
    public static func serving(host: String) -> [NetworkInterface] {
        let all = current()
        // "::" takes both families (a dual-stack socket); "0.0.0.0" IPv4 only.
        if host == "::" { return all }
        if isWildcard(host) { return all.filter { $0.address.count == 4 }.map { var i = $0; i.ipv6 = []; return i } }
        var a = in_addr()
        if inet_pton(AF_INET, host, &a) == 1 {
            let bytes = withUnsafeBytes(of: a) { Array($0) }
            if bytes[0] == 127 { return [] }
            return all.filter { $0.address == bytes }.map { var i = $0; i.ipv6 = []; return i }
        }
        var a6 = in6_addr()
        let bare = host.split(separator: "%", maxSplits: 1).first.map(String.init) ?? host
        guard inet_pton(AF_INET6, bare, &a6) == 1 else { return [] }
        let bytes = withUnsafeBytes(of: a6) { Array($0) }
        return all.filter { $0.ipv6.contains(bytes) }.map { var i = $0; i.address = []; i.ipv6 = [bytes]; return i }
    }

    /// Every address of the host; a dual-stack "::" listener takes IPv4 connections too.
    public static func isWildcard(_ host: String) -> Bool {
        host == "0.0.0.0" || host == "::" || host == "*" || host.isEmpty
    }

    /// The address of the interface the default route leaves by, found with a
    /// UDP connect(2) that sends nothing; else the first usable interface's.
    public static func primaryAddress() -> String? {
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        if fd >= 0 {
            defer { close(fd) }
            var to = sockaddr_in()
            to.sin_family = sa_family_t(AF_INET)
            to.sin_port = UInt16(9).bigEndian
            // 192.0.2.1 (TEST-NET-1, RFC 5737): only the route to it matters; nothing is sent.
            inet_pton(AF_INET, "192.0.2.1", &to.sin_addr)
            let rc = withUnsafePointer(to: &to) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
            if rc == 0 {
                var local = sockaddr_in()
                var len = socklen_t(MemoryLayout<sockaddr_in>.size)
                let ok = withUnsafeMutablePointer(to: &local) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) } }
                let bytes = withUnsafeBytes(of: local.sin_addr) { Array($0) }
                if ok == 0, bytes != [0, 0, 0, 0], bytes[0] != 127 { return bytes.map(String.init).joined(separator: ".") }
            }
        }
        return current().first { $0.address.count == 4 }?.addressText
    }
}
