import FoundationEssentials
import Glibc

/// Multicast DNS's fixed numbers (RFC 6762).
public enum MDNS {
    public static let port: UInt16 = 5353
    public static let groupIPv4: [UInt8] = [224, 0, 0, 251]
    /// ff02::fb, the link-local IPv6 group.
    public static let groupIPv6: [UInt8] = [0xFF, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFB]
    /// RFC 6762 section 11: packets go out with IP TTL 255, so a receiver
    /// can tell they came from the local link.
    static let multicastTTL: Int32 = 255
}

/// A datagram as received: its bytes, where it came from (4 or 16 bytes),
/// and the interface it arrived on.
struct Datagram {
    var bytes: [UInt8]
    var source: [UInt8]
    var sourcePort: UInt16
    var interfaceIndex: UInt32
}

/// A UDP socket for mDNS over IPv4 or IPv6, owned (closed in deinit). The
/// responder binds port 5353 shared with any other mDNS stack on the host
/// (avahi-daemon included): SO_REUSEADDR and SO_REUSEPORT, and every
/// multicast datagram is delivered to each of them. A one-shot querier binds
/// an ephemeral port, and responders answer it by unicast (RFC 6762
/// section 6.7). The IPv6 socket is IPv6-only, so each family has its own.
final class MulticastSocket {
    enum Family { case ipv4, ipv6 }
    let fd: Int32
    let family: Family

    private init(fd: Int32, family: Family) {
        self.fd = fd
        self.family = family
    }
    deinit { close(fd) }

    /// `port` 5353 for a responder, 0 for a one-shot querier.
    static func open(port: UInt16, family: Family = .ipv4) throws -> MulticastSocket {
        let domain = family == .ipv4 ? AF_INET : AF_INET6
        let fd = socket(domain, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        let label = family == .ipv4 ? "0.0.0.0:\(port)" : "[::]:\(port)"
        guard fd >= 0 else { throw SocketError("socket", address: "udp \(label)") }
        let s = MulticastSocket(fd: fd, family: family)
        s.set(SOL_SOCKET, SO_REUSEADDR, 1)
        s.set(SOL_SOCKET, SO_REUSEPORT, 1)
        let rc: Int32
        switch family {
        case .ipv4:
            s.set(Int32(IPPROTO_IP), IP_PKTINFO, 1)
            s.set(Int32(IPPROTO_IP), IP_MULTICAST_TTL, MDNS.multicastTTL)
            s.set(Int32(IPPROTO_IP), IP_TTL, MDNS.multicastTTL)
            // Other mDNS software on this host (a browser, avahi) hears what we send.
            s.set(Int32(IPPROTO_IP), IP_MULTICAST_LOOP, 1)
            var a = sockaddr_in()
            a.sin_family = sa_family_t(AF_INET)
            a.sin_port = port.bigEndian
            a.sin_addr.s_addr = INADDR_ANY
            rc = withUnsafePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        case .ipv6:
            s.set(Int32(IPPROTO_IPV6), IPV6_V6ONLY, 1)
            s.set(Int32(IPPROTO_IPV6), IPV6_RECVPKTINFO, 1)
            s.set(Int32(IPPROTO_IPV6), IPV6_MULTICAST_HOPS, MDNS.multicastTTL)
            s.set(Int32(IPPROTO_IPV6), IPV6_UNICAST_HOPS, MDNS.multicastTTL)
            s.set(Int32(IPPROTO_IPV6), IPV6_MULTICAST_LOOP, 1)
            var a = sockaddr_in6()
            a.sin6_family = sa_family_t(AF_INET6)
            a.sin6_port = port.bigEndian
            rc = withUnsafePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) } }
        }
        guard rc == 0 else { throw SocketError("bind", address: "udp \(label)") }
        return s
    }

    private func set(_ level: Int32, _ name: Int32, _ value: Int32) {
        var v = value
        setsockopt(fd, level, name, &v, socklen_t(MemoryLayout<Int32>.size))
    }

    /// Joins the mDNS group on one interface. Joining again is harmless,
    /// and is how a membership the kernel dropped (the interface went away
    /// and came back) is renewed.
    func join(_ interface: NetworkInterface) { membership(interface, join: true) }
    func leave(_ interface: NetworkInterface) { membership(interface, join: false) }

    private func membership(_ interface: NetworkInterface, join: Bool) {
        switch family {
        case .ipv4:
            var m = ip_mreqn()
            m.imr_multiaddr.s_addr = MulticastSocket.inAddr(MDNS.groupIPv4)
            m.imr_ifindex = Int32(interface.index)
            setsockopt(fd, Int32(IPPROTO_IP), join ? IP_ADD_MEMBERSHIP : IP_DROP_MEMBERSHIP, &m, socklen_t(MemoryLayout<ip_mreqn>.size))
        case .ipv6:
            var m = ipv6_mreq()
            m.ipv6mr_multiaddr = MulticastSocket.in6Addr(MDNS.groupIPv6)
            m.ipv6mr_interface = interface.index
            setsockopt(fd, Int32(IPPROTO_IPV6), join ? IPV6_ADD_MEMBERSHIP : IPV6_DROP_MEMBERSHIP, &m, socklen_t(MemoryLayout<ipv6_mreq>.size))
        }
    }

    static func inAddr(_ b: [UInt8]) -> in_addr_t {
        b.withUnsafeBytes { $0.loadUnaligned(as: in_addr_t.self) }
    }

    static func in6Addr(_ b: [UInt8]) -> in6_addr {
        var a = in6_addr()
        withUnsafeMutableBytes(of: &a) { dst in b.withUnsafeBytes { dst.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0.prefix(16))) } }
        return a
    }

    /// Whether this socket can send out of `interface`: it has an address of the family.
    func serves(_ interface: NetworkInterface) -> Bool {
        family == .ipv4 ? interface.address.count == 4 : !interface.ipv6.isEmpty
    }

    /// Sends to the mDNS group out of `interface`.
    func sendMulticast(_ bytes: [UInt8], via interface: NetworkInterface) {
        switch family {
        case .ipv4:
            var m = ip_mreqn()
            m.imr_ifindex = Int32(interface.index)
            setsockopt(fd, Int32(IPPROTO_IP), IP_MULTICAST_IF, &m, socklen_t(MemoryLayout<ip_mreqn>.size))
            send(bytes, to: MDNS.groupIPv4, port: MDNS.port, interface: interface.index)
        case .ipv6:
            var index = Int32(bitPattern: interface.index)
            setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_MULTICAST_IF, &index, socklen_t(MemoryLayout<Int32>.size))
            send(bytes, to: MDNS.groupIPv6, port: MDNS.port, interface: interface.index)
        }
    }

    /// Sends one datagram (to a 4- or 16-byte address of this socket's
    /// family; `interface` is the scope of a link-local IPv6 address); a
    /// failure (no route, a full buffer) is dropped like a lost packet,
    /// which mDNS's repeats are there for.
    func send(_ bytes: [UInt8], to address: [UInt8], port: UInt16, interface: UInt32) {
        switch (family, address.count) {
        case (.ipv4, 4):
            var a = sockaddr_in()
            a.sin_family = sa_family_t(AF_INET)
            a.sin_port = port.bigEndian
            a.sin_addr.s_addr = MulticastSocket.inAddr(address)
            _ = bytes.withUnsafeBytes { b in
                withUnsafePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(fd, b.baseAddress, b.count, Int32(MSG_NOSIGNAL), $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                } }
            }
        case (.ipv6, 16):
            var a = sockaddr_in6()
            a.sin6_family = sa_family_t(AF_INET6)
            a.sin6_port = port.bigEndian
            a.sin6_addr = MulticastSocket.in6Addr(address)
            a.sin6_scope_id = interface
            _ = bytes.withUnsafeBytes { b in
                withUnsafePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(fd, b.baseAddress, b.count, Int32(MSG_NOSIGNAL), $0, socklen_t(MemoryLayout<sockaddr_in6>.size))
                } }
            }
        default:
            break
        }
    }

    /// The next datagram, or nil when none arrives by `deadline`. Datagrams
    /// over mDNS's largest packet are cut there (and then fail to parse).
    func receive(deadline: Deadline) -> Datagram? { MulticastSocket.receive(from: [self], deadline: deadline) }

    /// The next datagram on any of `sockets`, or nil when none arrives by `deadline`.
    static func receive(from sockets: [MulticastSocket], deadline: Deadline, clock: MonotonicClock = .system) -> Datagram? {
        var fds = sockets.map { pollfd(fd: $0.fd, events: Int16(POLLIN), revents: 0) }
        while true {
            let rc = poll(&fds, nfds_t(fds.count), clock.remainingMilliseconds(until: deadline))
            if rc < 0 && errno == EINTR { if clock.hasPassed(deadline) { return nil }; continue }
            guard rc > 0 else { return nil }
            for (k, s) in sockets.enumerated() where fds[k].revents & Int16(POLLIN) != 0 {
                if let d = s.receiveNow() { return d }
            }
            if clock.hasPassed(deadline) { return nil }
        }
    }

    /// A datagram already waiting, or nil (never blocks).
    func receiveNow() -> Datagram? {
        var buffer = [UInt8](repeating: 0, count: DNSLimits.maxPacketBytes)
        var control = [UInt8](repeating: 0, count: 128)
        var from = sockaddr_in6()
        var controlLength = 0
        let n: Int = buffer.withUnsafeMutableBytes { b in
            control.withUnsafeMutableBytes { c in
                withUnsafeMutablePointer(to: &from) { f in
                    var iov = iovec(iov_base: b.baseAddress, iov_len: b.count)
                    return withUnsafeMutablePointer(to: &iov) { iovp in
                        var msg = msghdr()
                        msg.msg_name = UnsafeMutableRawPointer(f)
                        msg.msg_namelen = socklen_t(MemoryLayout<sockaddr_in6>.size)
                        msg.msg_iov = iovp
                        msg.msg_iovlen = 1
                        msg.msg_control = c.baseAddress
                        msg.msg_controllen = c.count
                        let n = recvmsg(fd, &msg, Int32(MSG_DONTWAIT))
                        controlLength = Int(msg.msg_controllen)
                        return n
                    }
                }
            }
        }
        guard n >= 0 else { return nil }
        control.removeSubrange(min(max(0, controlLength), control.count)...)
        let source: [UInt8]
        let port: UInt16
        if family == .ipv4 {
            let v4 = withUnsafeBytes(of: from) { $0.loadUnaligned(as: sockaddr_in.self) }
            source = withUnsafeBytes(of: v4.sin_addr) { Array($0) }
            port = UInt16(bigEndian: v4.sin_port)
        } else {
            source = withUnsafeBytes(of: from.sin6_addr) { Array($0) }
            port = UInt16(bigEndian: from.sin6_port)
        }
        return Datagram(bytes: Array(buffer[..<n]), source: source, sourcePort: port,
                        interfaceIndex: MulticastSocket.arrivalInterface(control))
    }

    /// The interface index from an IP_PKTINFO or IPV6_PKTINFO control message
    /// (0 if none). A cmsghdr is a size_t length, two ints, then its data,
    /// size_t-aligned; in_pktinfo starts with the index, in6_pktinfo has it after the 16-byte address.
    static func arrivalInterface(_ control: [UInt8]) -> UInt32 {
        let header = MemoryLayout<Int>.size + 8
        var at = 0
        while at + header <= control.count {
            let len = control.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: at, as: Int.self) }
            let level = control.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: at + MemoryLayout<Int>.size, as: Int32.self) }
            let type = control.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: at + MemoryLayout<Int>.size + 4, as: Int32.self) }
            guard len >= header, at + len <= control.count else { return 0 }
            if level == Int32(IPPROTO_IP), type == IP_PKTINFO, len >= header + 4 {
                return UInt32(bitPattern: control.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: at + header, as: Int32.self) })
            }
            if level == Int32(IPPROTO_IPV6), type == IPV6_PKTINFO, len >= header + 20 {
                return control.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: at + header + 16, as: UInt32.self) }
            }
            at += (len + MemoryLayout<Int>.size - 1) & ~(MemoryLayout<Int>.size - 1)
        }
        return 0
    }
}
