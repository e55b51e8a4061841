import Foundation

/// Multicast DNS's fixed numbers (RFC 6762).
public enum MDNS {
    public static let port: UInt16 = 5353
    public static let groupIPv4: [UInt8] = [224, 0, 0, 251]
    /// RFC 6762 section 11: packets go out with IP TTL 255, so a receiver
    /// can tell they came from the local link.
    static let multicastTTL: Int32 = 255
}

/// A datagram as received: its bytes, where it came from, and the interface it arrived on.
struct Datagram {
    var bytes: [UInt8]
    var source: [UInt8]
    var sourcePort: UInt16
    var interfaceIndex: UInt32
}

/// A UDP/IPv4 socket for mDNS, owned (closed in deinit). The responder binds
/// port 5353 shared with any other mDNS stack on the host (avahi-daemon
/// included): SO_REUSEADDR and SO_REUSEPORT, and every multicast datagram
/// is delivered to each of them. A one-shot querier binds an ephemeral port,
/// and responders answer it by unicast (RFC 6762 section 6.7).
final class MulticastSocket {
    let fd: Int32

    private init(fd: Int32) { self.fd = fd }
    deinit { close(fd) }

    /// `port` 5353 for a responder, 0 for a one-shot querier.
    static func open(port: UInt16) throws -> MulticastSocket {
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { throw SocketError("socket", address: "udp:\(port)") }
        let s = MulticastSocket(fd: fd)
        s.set(SOL_SOCKET, SO_REUSEADDR, 1)
        s.set(SOL_SOCKET, SO_REUSEPORT, 1)
        s.set(Int32(IPPROTO_IP), IP_PKTINFO, 1)
        s.set(Int32(IPPROTO_IP), IP_MULTICAST_TTL, MDNS.multicastTTL)
        s.set(Int32(IPPROTO_IP), IP_TTL, MDNS.multicastTTL)
        // Other mDNS software on this host (a browser, avahi) hears what we send.
        s.set(Int32(IPPROTO_IP), IP_MULTICAST_LOOP, 1)
        var a = sockaddr_in()
        a.sin_family = sa_family_t(AF_INET)
        a.sin_port = port.bigEndian
        a.sin_addr.s_addr = INADDR_ANY
        let rc = withUnsafePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard rc == 0 else { throw SocketError("bind", address: "0.0.0.0:\(port)") }
        return s
    }

    private func set(_ level: Int32, _ name: Int32, _ value: Int32) {
        var v = value
        setsockopt(fd, level, name, &v, socklen_t(MemoryLayout<Int32>.size))
    }

    /// Joins the mDNS group on one interface. Joining twice is harmless.
    func join(_ interface: NetworkInterface) {
        var m = ip_mreqn()
        m.imr_multiaddr.s_addr = MulticastSocket.inAddr(MDNS.groupIPv4)
        m.imr_ifindex = Int32(interface.index)
        setsockopt(fd, Int32(IPPROTO_IP), IP_ADD_MEMBERSHIP, &m, socklen_t(MemoryLayout<ip_mreqn>.size))
    }

    func leave(_ interface: NetworkInterface) {
        var m = ip_mreqn()
        m.imr_multiaddr.s_addr = MulticastSocket.inAddr(MDNS.groupIPv4)
        m.imr_ifindex = Int32(interface.index)
        setsockopt(fd, Int32(IPPROTO_IP), IP_DROP_MEMBERSHIP, &m, socklen_t(MemoryLayout<ip_mreqn>.size))
    }

    static func inAddr(_ b: [UInt8]) -> in_addr_t {
        b.withUnsafeBytes { $0.loadUnaligned(as: in_addr_t.self) }
    }

    /// Sends to the mDNS group out of `interface`.
    func sendMulticast(_ bytes: [UInt8], via interface: NetworkInterface) {
        var m = ip_mreqn()
        m.imr_ifindex = Int32(interface.index)
        setsockopt(fd, Int32(IPPROTO_IP), IP_MULTICAST_IF, &m, socklen_t(MemoryLayout<ip_mreqn>.size))
        send(bytes, to: MDNS.groupIPv4, port: MDNS.port)
    }

    /// Sends one datagram; a failure (no route, a full buffer) is dropped
    /// like a lost packet, which mDNS's repeats are there for.
    func send(_ bytes: [UInt8], to address: [UInt8], port: UInt16) {
        var a = sockaddr_in()
        a.sin_family = sa_family_t(AF_INET)
        a.sin_port = port.bigEndian
        a.sin_addr.s_addr = MulticastSocket.inAddr(address)
        _ = bytes.withUnsafeBytes { b in
            withUnsafePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                sendto(fd, b.baseAddress, b.count, Int32(MSG_NOSIGNAL), $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            } }
        }
    }

    /// The next datagram, or nil when none arrives by `deadline`. Datagrams
    /// over mDNS's largest packet are cut there (and then fail to parse).
    func receive(deadline: Deadline) -> Datagram? {
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        while true {
            let rc = poll(&p, 1, deadline.remainingMilliseconds)
            if rc < 0 && errno == EINTR { if deadline.hasPassed { return nil }; continue }
            guard rc > 0 else { return nil }
            if let d = receiveNow() { return d }
            if deadline.hasPassed { return nil }
        }
    }

    private func receiveNow() -> Datagram? {
        var buffer = [UInt8](repeating: 0, count: DNSLimits.maxPacketBytes)
        var control = [UInt8](repeating: 0, count: 128)
        var from = sockaddr_in()
        var controlLength = 0
        let n: Int = buffer.withUnsafeMutableBytes { b in
            control.withUnsafeMutableBytes { c in
                withUnsafeMutablePointer(to: &from) { f in
                    var iov = iovec(iov_base: b.baseAddress, iov_len: b.count)
                    return withUnsafeMutablePointer(to: &iov) { iovp in
                        var msg = msghdr()
                        msg.msg_name = UnsafeMutableRawPointer(f)
                        msg.msg_namelen = socklen_t(MemoryLayout<sockaddr_in>.size)
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
        return Datagram(bytes: Array(buffer[..<n]), source: withUnsafeBytes(of: from.sin_addr) { Array($0) },
                        sourcePort: UInt16(bigEndian: from.sin_port), interfaceIndex: MulticastSocket.arrivalInterface(control))
    }

    /// The interface index from an IP_PKTINFO control message (0 if none).
    /// A cmsghdr is a size_t length, two ints, then its data, size_t-aligned.
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
            at += (len + MemoryLayout<Int>.size - 1) & ~(MemoryLayout<Int>.size - 1)
        }
        return 0
    }
}
