import Foundation

/// An IPv4 interface that multicast DNS can use: up, multicast-capable, not loopback.
public struct NetworkInterface: Sendable, Equatable, CustomStringConvertible {
    public var name: String
    public var index: UInt32
    /// The interface's IPv4 address, in network order.
    public var address: [UInt8]
    public var addressText: String { address.map(String.init).joined(separator: ".") }
    public var description: String { "\(name) (\(addressText))" }

    /// Every such interface now, read with getifaddrs(3): no packet is sent.
    /// An interface with several addresses appears once, with its first.
    public static func current() -> [NetworkInterface] {
        var head: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&head) == 0, let first = head else { return [] }
        defer { freeifaddrs(head) }
        var out: [NetworkInterface] = []
        var p: UnsafeMutablePointer<ifaddrs>? = first
        while let a = p {
            p = a.pointee.ifa_next
            let flags = Int32(a.pointee.ifa_flags)
            guard let sa = a.pointee.ifa_addr, sa.pointee.sa_family == sa_family_t(AF_INET),
                  flags & Int32(IFF_UP) != 0, flags & Int32(IFF_MULTICAST) != 0, flags & Int32(IFF_LOOPBACK) == 0 else { continue }
            let name = String(cString: a.pointee.ifa_name)
            guard !out.contains(where: { $0.name == name }) else { continue }
            let addr = sa.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { withUnsafeBytes(of: $0.pointee.sin_addr) { Array($0) } }
            out.append(NetworkInterface(name: name, index: if_nametoindex(a.pointee.ifa_name), address: addr))
        }
        return out
    }

    /// The interfaces a listener on `host` is reachable through: all of them
    /// for a wildcard address, the one holding a specific address, none for
    /// loopback (nobody else can reach it, so nothing is announced) or another IPv6 address.
    public static func serving(host: String) -> [NetworkInterface] {
        let all = current()
        if isWildcard(host) { return all }
        var a = in_addr()
        guard inet_pton(AF_INET, host, &a) == 1 else { return [] }
        let bytes = withUnsafeBytes(of: a) { Array($0) }
        if bytes[0] == 127 { return [] }
        return all.filter { $0.address == bytes }
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
        return current().first?.addressText
    }
}
