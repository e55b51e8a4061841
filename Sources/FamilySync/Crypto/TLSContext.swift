import COpenSSL

/// What a server's key lookup decided for a client's PSK identity.
public enum TLSKeyLookup {
    /// Use this key: the handshake then proves the client holds it (the PSK
    /// binder is an HMAC under it) and DHE adds forward secrecy.
    case key(SecretBytes)
    /// No key for this identity. The handshake completes on the server's
    /// throwaway certificate instead, unauthenticated, so that a notice
    /// (busy, refused and why) can still reach the client. The client knows
    /// such a session is not authenticated and accepts only a notice on it.
    case noKey
}

/// An OpenSSL SSL_CTX set up for family-sync: TLS 1.3 only, one cipher
/// suite, external PSKs with (EC)DHE (psk_dhe_ke; psk_ke is never allowed),
/// no session tickets, no certificate checks (keys, not certificates,
/// authenticate peers). Thread-safe once made: connections may be created
/// from several threads.
public final class TLSContext: @unchecked Sendable {
    public enum Role: Sendable { case client, server }

    /// The one cipher suite offered and accepted, and the one the PSK sessions name.
    public static let cipherSuite = "TLS_AES_128_GCM_SHA256"
    /// Its two-byte IANA code, for SSL_CIPHER_find.
    static let cipherSuiteCode: [UInt8] = [0x13, 0x01]

    public let role: Role
    let ctx: OpaquePointer

    public init(role: Role) throws {
        self.role = role
        guard let c = SSL_CTX_new(role == .client ? TLS_client_method() : TLS_server_method()) else {
            throw OpenSSLError("SSL_CTX_new")
        }
        ctx = c
        guard fs_SSL_CTX_set_min_proto_version(c, TLS1_3_VERSION) == 1,
              fs_SSL_CTX_set_max_proto_version(c, TLS1_3_VERSION) == 1,
              SSL_CTX_set_ciphersuites(c, TLSContext.cipherSuite) == 1,
              SSL_CTX_set_num_tickets(c, 0) == 1
        else { throw OpenSSLError("configuring TLS 1.3") }
        // No resumption tickets, no psk_ke without (EC)DHE.
        _ = SSL_CTX_set_options(c, fs_SSL_OP_NO_TICKET())
        _ = SSL_CTX_clear_options(c, fs_SSL_OP_ALLOW_NO_DHE_KEX())
        _ = fs_SSL_CTX_set_mode(c, Int(SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER))
        _ = fs_SSL_CTX_set_session_cache_mode(c, Int(SSL_SESS_CACHE_OFF))
        SSL_CTX_set_verify(c, SSL_VERIFY_NONE, nil)
        switch role {
        case .client:
            SSL_CTX_set_psk_use_session_callback(c, tlsClientUseSession)
        case .server:
            SSL_CTX_set_psk_find_session_callback(c, tlsServerFindSession)
            try installNoticeCertificate()
        }
    }

    deinit { SSL_CTX_free(ctx) }

    /// A fresh Ed25519 key and self-signed certificate, made in memory and
    /// never stored: it only lets the handshake complete when no PSK matched,
    /// so the refusal can be told. It authenticates nothing.
    private func installNoticeCertificate() throws {
        guard let kctx = EVP_PKEY_CTX_new_id(EVP_PKEY_ED25519, nil) else { throw OpenSSLError("EVP_PKEY_CTX_new_id(Ed25519)") }
        defer { EVP_PKEY_CTX_free(kctx) }
        var key: OpaquePointer?
        guard EVP_PKEY_keygen_init(kctx) == 1, EVP_PKEY_keygen(kctx, &key) == 1, let key else { throw OpenSSLError("EVP_PKEY_keygen(Ed25519)") }
        defer { EVP_PKEY_free(key) }
        guard let cert = X509_new() else { throw OpenSSLError("X509_new") }
        defer { X509_free(cert) }
        guard X509_set_version(cert, 2) == 1,
              ASN1_INTEGER_set(X509_get_serialNumber(cert), 1) == 1,
              X509_gmtime_adj(X509_getm_notBefore(cert), -3600) != nil,
              X509_gmtime_adj(X509_getm_notAfter(cert), 86400) != nil,
              X509_set_pubkey(cert, key) == 1,
              let name = X509_get_subject_name(cert),
              X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, "family-sync notice", -1, -1, 0) == 1,
              X509_set_issuer_name(cert, name) == 1,
              X509_sign(cert, key, nil) > 0,
              SSL_CTX_use_certificate(ctx, cert) == 1,
              SSL_CTX_use_PrivateKey(ctx, key) == 1
        else { throw OpenSSLError("making the notice certificate") }
    }

    /// An SSL_SESSION carrying `key` as an external TLS 1.3 PSK.
    static func pskSession(_ ssl: OpaquePointer, key: SecretBytes) -> OpaquePointer? {
        guard let cipher = cipherSuiteCode.withUnsafeBufferPointer({ SSL_CIPHER_find(ssl, $0.baseAddress) }),
              let sess = SSL_SESSION_new() else { return nil }
        // OpenSSL copies the key into the session and cleanses that copy when the session is freed.
        guard key.withUnsafeBytes({ SSL_SESSION_set1_master_key(sess, $0.baseAddress?.assumingMemoryBound(to: UInt8.self), $0.count) }) == 1,
              SSL_SESSION_set_cipher(sess, cipher) == 1,
              SSL_SESSION_set_protocol_version(sess, TLS1_3_VERSION) == 1
        else {
            SSL_SESSION_free(sess)
            return nil
        }
        return sess
    }
}

/// Client side: offers the connection's one PSK identity and key.
private func tlsClientUseSession(_ ssl: OpaquePointer?, _ md: OpaquePointer?,
                                 _ id: UnsafeMutablePointer<UnsafePointer<UInt8>?>?, _ idlen: UnsafeMutablePointer<Int>?,
                                 _ sess: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    guard let ssl, let id, let idlen, let sess, let conn = TLSConnection.owner(of: ssl), let psk = conn.clientIdentity else { return 0 }
    if let md {
        // A second call (after HelloRetryRequest) must keep the hash of our one suite.
        guard let cipher = TLSContext.cipherSuiteCode.withUnsafeBufferPointer({ SSL_CIPHER_find(ssl, $0.baseAddress) }),
              SSL_CIPHER_get_handshake_digest(cipher) == md else {
            sess.pointee = nil
            return 1
        }
    }
    guard let s = TLSContext.pskSession(ssl, key: conn.clientKey) else { return 0 }
    id.pointee = UnsafePointer(psk.baseAddress)
    idlen.pointee = psk.count
    sess.pointee = s
    return 1
}

/// Server side: asks the connection's lookup for the key of the identity offered.
private func tlsServerFindSession(_ ssl: OpaquePointer?, _ identity: UnsafePointer<UInt8>?, _ len: Int,
                                  _ sess: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    guard let ssl, let sess, let conn = TLSConnection.owner(of: ssl) else { return 0 }
    sess.pointee = nil
    let bytes = identity.map { Array(UnsafeBufferPointer(start: $0, count: min(len, TLSConnection.maxIdentityBytes))) } ?? []
    guard len <= TLSConnection.maxIdentityBytes, let lookup = conn.lookup else {
        conn.offeredIdentity = nil
        return 1
    }
    conn.offeredIdentity = bytes
    switch lookup(bytes) {
    case let .key(k):
        guard let s = TLSContext.pskSession(ssl, key: k) else { return 0 }
        sess.pointee = s
        conn.serverAcceptedKey = true
    case .noKey:
        conn.serverAcceptedKey = false
    }
    return 1
}
