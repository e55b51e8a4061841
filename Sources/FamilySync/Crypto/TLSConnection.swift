import COpenSSL
import FoundationEssentials
import Glibc

/// A TLS failure: what we were doing, OpenSSL's reason codes and messages.
public struct TLSError: Error, CustomStringConvertible, Sendable {
    public enum Kind: Sendable { case handshake, io, timeout }
    public var kind: Kind
    public var context: String
    public var reasons: [Int32]
    public var messages: [String]

    init(_ kind: Kind, _ context: String) {
        self.kind = kind
        self.context = context
        let queue = OpenSSLError.drainEntries()
        let reasons = queue.map { ERR_GET_REASON($0.code) }
        var messages = queue.map(\.text)
        if reasons.isEmpty, errno != 0, kind != .timeout {
            messages.append(String(cString: strerror(errno)))
        }
        self.reasons = reasons
        self.messages = messages
    }

    public var description: String { reasonText.isEmpty ? context : "\(context): \(reasonText)" }

    /// OpenSSL's reasons in words ("wrong version number"), without the
    /// "error:0A00010B:SSL routines::" codes in front.
    public var reasonText: String {
        messages.map { m in m.hasPrefix("error:") ? String(m.split(separator: ":", omittingEmptySubsequences: false).last ?? "") : m }
            .filter { !$0.isEmpty }.joined(separator: "; ")
    }

    /// Client side: the server rejected our PSK binder, i.e. we hold a
    /// different key. OpenSSL answers a binder that does not verify with an
    /// illegal_parameter alert; other stacks use decrypt_error.
    public var peerRejectedKey: Bool {
        reasons.contains(SSL_R_SSLV3_ALERT_ILLEGAL_PARAMETER) || reasons.contains(SSL_R_TLSV1_ALERT_DECRYPT_ERROR)
    }
    /// The peer's side ended (end of file, or a reset) before the handshake
    /// completed: nothing that is not TLS arrived, only nothing more.
    public var endOfFile: Bool {
        reasons.contains(SSL_R_UNEXPECTED_EOF_WHILE_READING) || (reasons.isEmpty && kind == .handshake)
    }
    /// Server side: the client's PSK binder did not verify under our key.
    public var binderFailed: Bool { reasons.contains(SSL_R_BINDER_DOES_NOT_VERIFY) }
}

/// One TLS 1.3 connection over a non-blocking byte link (a TCP socket, or
/// a pipe's two ends). Not Sendable: one thread drives it. The SSL handle is
/// freed in deinit.
public final class TLSConnection {
    /// The longest PSK identity a server looks at.
    public static let maxIdentityBytes = 512

    public let link: any ByteLink
    let ssl: OpaquePointer

    // Client side: the identity and key offered.
    var clientIdentity: UnsafeMutableBufferPointer<UInt8>?
    var clientKey = SecretBytes([])

    // Server side: the key lookup, the identity the client offered, whether a key matched.
    var lookup: (([UInt8]) -> TLSKeyLookup)?
    public internal(set) var offeredIdentity: [UInt8]?
    var serverAcceptedKey = false

    /// A client connection that will offer `identity` with `key`.
    public init(client link: any ByteLink, context: TLSContext, identity: [UInt8], key: SecretBytes) throws {
        precondition(context.role == .client)
        self.link = link
        guard let s = SSL_new(context.ctx) else { throw OpenSSLError("SSL_new") }
        ssl = s
        let buf = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: max(identity.count, 1))
        _ = buf.initialize(from: identity)
        clientIdentity = UnsafeMutableBufferPointer(rebasing: buf[0..<identity.count])
        clientKey = key
        try attach()
        SSL_set_connect_state(s)
    }

    /// A server connection; `lookup` maps the client's PSK identity to a key.
    public init(server link: any ByteLink, context: TLSContext, lookup: @escaping ([UInt8]) -> TLSKeyLookup) throws {
        precondition(context.role == .server)
        self.link = link
        guard let s = SSL_new(context.ctx) else { throw OpenSSLError("SSL_new") }
        ssl = s
        self.lookup = lookup
        try attach()
        SSL_set_accept_state(s)
    }

    private func attach() throws {
        if link.readFD == link.writeFD {
            guard SSL_set_fd(ssl, link.readFD) == 1 else { throw OpenSSLError("SSL_set_fd") }
        } else {
            // Two descriptors (a pipe's ends, or standard input and output): a file-descriptor BIO for each.
            guard let r = BIO_new_fd(link.readFD, BIO_NOCLOSE) else { throw OpenSSLError("BIO_new_fd") }
            guard let w = BIO_new_fd(link.writeFD, BIO_NOCLOSE) else { BIO_free(r); throw OpenSSLError("BIO_new_fd") }
            SSL_set_bio(ssl, r, w)
        }
        SSL_set_ex_data(ssl, 0, Unmanaged.passUnretained(self).toOpaque())
    }

    deinit {
        SSL_free(ssl)
        if let b = clientIdentity {
            for i in b.indices { b[i] = 0 }
            UnsafeMutableBufferPointer(start: b.baseAddress, count: max(b.count, 1)).deallocate()
        }
    }

    static func owner(of ssl: OpaquePointer) -> TLSConnection? {
        guard let p = SSL_get_ex_data(ssl, 0) else { return nil }
        return Unmanaged<TLSConnection>.fromOpaque(p).takeUnretainedValue()
    }

    /// Runs the handshake to completion or the deadline; `onProgress` hears
    /// each time the socket was ready (bytes can move).
    public func handshake(deadline: Deadline, onProgress: () -> Void = {}) throws {
        while true {
            ERR_clear_error()
            errno = 0
            let rc = SSL_do_handshake(ssl)
            if rc == 1 { return }
            switch SSL_get_error(ssl, rc) {
            case SSL_ERROR_WANT_READ:
                guard try link.wait(for: Int16(POLLIN), deadline: deadline) else { throw TLSError(.timeout, "TLS handshake timed out") }
                onProgress()
            case SSL_ERROR_WANT_WRITE:
                guard try link.wait(for: Int16(POLLOUT), deadline: deadline) else { throw TLSError(.timeout, "TLS handshake timed out") }
                onProgress()
            default:
                throw TLSError(.handshake, "TLS handshake with \(link.address) failed")
            }
        }
    }

    /// True when the handshake used the PSK: the peer proved it holds the key.
    /// False means the session stands on the throwaway certificate and carries
    /// notices only.
    public var isAuthenticated: Bool { SSL_session_reused(ssl) == 1 }

    /// The negotiated cipher suite and the key-exchange group, for tests and diagnostics.
    public var cipherName: String { SSL_get_current_cipher(ssl).flatMap { SSL_CIPHER_get_name($0) }.map { String(cString: $0) } ?? "" }
    public var protocolVersion: String { String(cString: SSL_get_version(ssl)) }
    /// The NID of the (EC)DHE group used, or 0 when none was.
    public var keyExchangeGroup: Int32 { Int32(truncatingIfNeeded: SSL_ctrl(ssl, SSL_CTRL_GET_NEGOTIATED_GROUP, 0, nil)) }

    /// The outcome of one non-blocking read or write.
    public enum IO: Equatable {
        case bytes(Int)
        case wantRead
        case wantWrite
        /// The peer closed: cleanly (close_notify) or not.
        case closed(clean: Bool)
    }

    public func read(into buffer: UnsafeMutableRawBufferPointer) throws -> IO {
        ERR_clear_error()
        errno = 0
        let n = SSL_read(ssl, buffer.baseAddress, Int32(min(buffer.count, Int(Int32.max))))
        if n > 0 { return .bytes(Int(n)) }
        return try classify(n, "reading from \(link.address)")
    }

    public func write(_ bytes: UnsafeRawBufferPointer) throws -> IO {
        guard bytes.count > 0 else { return .bytes(0) }
        ERR_clear_error()
        errno = 0
        let n = SSL_write(ssl, bytes.baseAddress, Int32(min(bytes.count, 1 << 30)))
        if n > 0 { return .bytes(Int(n)) }
        return try classify(n, "writing to \(link.address)")
    }

    /// Decrypted bytes waiting inside OpenSSL (poll(2) cannot see them).
    public var pending: Int { Int(SSL_pending(ssl)) }

    private func classify(_ rc: Int32, _ what: String) throws -> IO {
        let e = SSL_get_error(ssl, rc)
        switch e {
        case SSL_ERROR_WANT_READ: return .wantRead
        case SSL_ERROR_WANT_WRITE: return .wantWrite
        case SSL_ERROR_ZERO_RETURN: return .closed(clean: true)
        case SSL_ERROR_SYSCALL:
            if errno == 0 || errno == ECONNRESET || errno == EPIPE { ERR_clear_error(); return .closed(clean: false) }
            throw TLSError(.io, what)
        default:
            let err = TLSError(.io, what)
            if err.reasons.contains(SSL_R_UNEXPECTED_EOF_WHILE_READING) { return .closed(clean: false) }
            throw err
        }
    }

    /// Sends close_notify and waits (until the deadline) for the peer's,
    /// discarding anything else that still arrives. Returns whether the peer
    /// closed cleanly.
    @discardableResult
    public func shutdown(deadline: Deadline) -> Bool {
        var scratch = [UInt8](repeating: 0, count: 16 << 10)
        while true {
            ERR_clear_error()
            let rc = SSL_shutdown(ssl)
            if rc == 1 { return true }
            if rc == 0 {
                // Ours is sent; read until theirs arrives.
                let r = scratch.withUnsafeMutableBytes { try? read(into: $0) }
                switch r {
                case .closed(clean: let c)?: return c
                case .bytes?: continue
                case .wantWrite?: if (try? link.wait(for: Int16(POLLOUT), deadline: deadline)) != true { return false }
                case .wantRead?: if (try? link.wait(for: Int16(POLLIN), deadline: deadline)) != true { return false }
                case nil: return false
                }
                continue
            }
            switch SSL_get_error(ssl, rc) {
            case SSL_ERROR_WANT_READ: if (try? link.wait(for: Int16(POLLIN), deadline: deadline)) != true { return false }
            case SSL_ERROR_WANT_WRITE: if (try? link.wait(for: Int16(POLLOUT), deadline: deadline)) != true { return false }
            default:
                ERR_clear_error()
                return false
            }
        }
    }
}
