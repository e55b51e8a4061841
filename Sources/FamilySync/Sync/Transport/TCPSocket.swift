import FoundationEssentials
import Glibc

/// A failed socket call: the call, the address it concerned and errno, read
/// at once so nothing in between can overwrite it.
public struct SocketError: Error, CustomStringConvertible, Sendable {
    public var call: String
    public var address: String
    public var code: Int32
    public init(_ call: String, address: String, code: Int32 = errno) {
        self.call = call
        self.address = address
        self.code = code
    }
    public var description: String { "\(call) \(address): \(String(cString: strerror(code)))" }
    /// Nobody is listening, or nothing answers at that address.
    public var isNoPeer: Bool {
        [ECONNREFUSED, ETIMEDOUT, EHOSTUNREACH, ENETUNREACH, EHOSTDOWN, ECONNRESET].contains(code)
    }
}

/// A TCP socket, owned: closed in deinit. Not Sendable: one thread uses it.
/// Every call that can be interrupted retries on EINTR.
public final class TCPSocket {
    public private(set) var fd: Int32
    /// The peer's address (for accepted and connected sockets) or the bound one.
    public let address: String

    init(fd: Int32, address: String) {
        self.fd = fd
        self.address = address
    }

    deinit { close() }

    public func close() {
        if fd >= 0 {
            _ = Glibc.close(fd)
            fd = -1
        }
    }

    /// Connects to `target`, trying each address it resolves to, each for at
    /// most `timeout`. The socket is left non-blocking.
    public static func connect(to target: HostPort, timeout: TimeSpan) throws -> TCPSocket {
        let addrs = try resolve(target, passive: false)
        defer { freeaddrinfo(addrs) }
        var lastError = SocketError("connect", address: target.description, code: ECONNREFUSED)
        var ai: UnsafeMutablePointer<addrinfo>? = addrs
        while let a = ai {
            ai = a.pointee.ai_next
            let fd = socket(a.pointee.ai_family, a.pointee.ai_socktype | Int32(SOCK_CLOEXEC.rawValue), a.pointee.ai_protocol)
            if fd < 0 { lastError = SocketError("socket", address: target.description); continue }
            let s = TCPSocket(fd: fd, address: target.description)
            try s.setNonBlocking()
            let rc = Glibc.connect(fd, a.pointee.ai_addr, a.pointee.ai_addrlen)
            if rc == 0 { try s.tune(); return s }
            if errno != EINPROGRESS && errno != EINTR { lastError = SocketError("connect", address: target.description); continue }
            // Wait for the connection to finish or fail.
            let ready = try s.wait(for: Int16(POLLOUT), deadline: Deadline(after: timeout))
            if !ready { lastError = SocketError("connect", address: target.description, code: ETIMEDOUT); continue }
            var err: Int32 = 0
            var len = socklen_t(MemoryLayout<Int32>.size)
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len)
            if err != 0 { lastError = SocketError("connect", address: target.description, code: err); continue }
            try s.tune()
            return s
        }
        throw lastError
    }

    /// A listening socket on `target` (port 0 picks a free one).
    public static func listen(on target: HostPort, backlog: Int32 = 16) throws -> TCPSocket {
        let addrs = try resolve(target, passive: true)
        defer { freeaddrinfo(addrs) }
        var lastError = SocketError("bind", address: target.description, code: EADDRNOTAVAIL)
        var ai: UnsafeMutablePointer<addrinfo>? = addrs
        while let a = ai {
            ai = a.pointee.ai_next
            let fd = socket(a.pointee.ai_family, a.pointee.ai_socktype | Int32(SOCK_CLOEXEC.rawValue), a.pointee.ai_protocol)
            if fd < 0 { lastError = SocketError("socket", address: target.description); continue }
            var one: Int32 = 1
            setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
            let s = TCPSocket(fd: fd, address: target.description)
            if bind(fd, a.pointee.ai_addr, a.pointee.ai_addrlen) != 0 { lastError = SocketError("bind", address: target.description); continue }
            if Glibc.listen(fd, backlog) != 0 { lastError = SocketError("listen", address: target.description); continue }
            try s.setNonBlocking()
            return s
        }
        throw lastError
    }

    /// The next pending connection, or nil when there is none right now.
    public func accept() throws -> TCPSocket? {
        while true {
            var storage = sockaddr_storage()
            var len = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let fd = withUnsafeMutablePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.accept(self.fd, $0, &len) }
            }
            if fd < 0 {
                if errno == EINTR { continue }
                if errno == EAGAIN || errno == EWOULDBLOCK || errno == ECONNABORTED { return nil }
                throw SocketError("accept", address: address)
            }
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            let s = TCPSocket(fd: fd, address: TCPSocket.describe(&storage))
            try s.setNonBlocking()
            try s.tune()
            return s
        }
    }

    /// The address this socket is bound to (for a listener on port 0: the port picked).
    public func localAddress() -> HostPort? {
        var storage = sockaddr_storage()
        var len = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let rc = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) }
        }
        guard rc == 0 else { return nil }
        return HostPort(parsing: TCPSocket.describe(&storage))
    }

    private func setNonBlocking() throws {
        _ = try FamilySync.setNonBlocking(fd, what: address)
    }

    /// No Nagle delay (small control frames go at once) and TCP keepalive, so a
    /// peer that vanished without a FIN is noticed even by the kernel.
    private func tune() throws {
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, socklen_t(MemoryLayout<Int32>.size))
        var idle: Int32 = 30, interval: Int32 = 10, count: Int32 = 3
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_KEEPIDLE, &idle, socklen_t(MemoryLayout<Int32>.size))
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_KEEPINTVL, &interval, socklen_t(MemoryLayout<Int32>.size))
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_KEEPCNT, &count, socklen_t(MemoryLayout<Int32>.size))
    }

    private static func resolve(_ target: HostPort, passive: Bool) throws -> UnsafeMutablePointer<addrinfo> {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : AI_ADDRCONFIG)
        var res: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(target.host, String(target.port), &hints, &res)
        guard rc == 0, let res else {
            throw SyncError(.cannotResolve, peer: target.host, detail: String(cString: gai_strerror(rc)))
        }
        return res
    }

    static func describe(_ storage: inout sockaddr_storage) -> String {
        var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        var serv = [CChar](repeating: 0, count: Int(NI_MAXSERV))
        let len = socklen_t(storage.ss_family == sa_family_t(AF_INET6) ? MemoryLayout<sockaddr_in6>.size : MemoryLayout<sockaddr_in>.size)
        let rc = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                getnameinfo($0, len, &host, socklen_t(host.count), &serv, socklen_t(serv.count), NI_NUMERICHOST | NI_NUMERICSERV)
            }
        }
        guard rc == 0 else { return "?" }
        let h = String(decoding: host.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let s = String(decoding: serv.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return h.contains(":") ? "[\(h)]:\(s)" : "\(h):\(s)"
    }
}
