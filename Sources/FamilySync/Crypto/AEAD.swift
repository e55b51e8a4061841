import COpenSSL

/// AES-256-GCM (NIST SP 800-38D) from OpenSSL's EVP interface: 32-byte key,
/// 12-byte nonce, 16-byte tag after the ciphertext. Bundles are sealed with
/// it, a chunk at a time (BundleFile.swift), and so are the names a stranger
/// must not read: PSK identities, notices' hints and bundle headers
/// (SessionIdentity.swift).
enum AES256GCM {
    static let keyBytes = 32
    static let nonceBytes = 12
    static let tagBytes = 16

    /// Ciphertext ‖ tag of `plaintext`, authenticating `aad` too.
    static func seal(_ plaintext: UnsafeRawBufferPointer, key: SecretBytes, nonce: [UInt8], aad: [UInt8]) throws -> [UInt8] {
        precondition(key.count == keyBytes && nonce.count == nonceBytes, "AES-256-GCM key or nonce of the wrong size")
        guard let ctx = EVP_CIPHER_CTX_new() else { throw OpenSSLError("EVP_CIPHER_CTX_new") }
        defer { EVP_CIPHER_CTX_free(ctx) }
        var out = [UInt8](repeating: 0, count: plaintext.count + tagBytes)
        var n: Int32 = 0, tail: Int32 = 0
        let ok: Bool = key.withUnsafeBytes { k in
            out.withUnsafeMutableBufferPointer { o in
                guard EVP_EncryptInit_ex(ctx, EVP_aes_256_gcm(), nil, k.baseAddress?.assumingMemoryBound(to: UInt8.self), nonce) == 1,
                      aad.isEmpty || EVP_EncryptUpdate(ctx, nil, &n, aad, Int32(aad.count)) == 1,
                      plaintext.isEmpty || EVP_EncryptUpdate(ctx, o.baseAddress, &n, plaintext.baseAddress?.assumingMemoryBound(to: UInt8.self), Int32(plaintext.count)) == 1,
                      EVP_EncryptFinal_ex(ctx, o.baseAddress.map { $0 + Int(n) }, &tail) == 1,
                      Int(n + tail) == plaintext.count || plaintext.isEmpty,
                      EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, Int32(tagBytes), o.baseAddress.map { UnsafeMutableRawPointer($0 + plaintext.count) }) == 1
                else { return false }
                return true
            }
        }
        guard ok else { throw OpenSSLError("AES-256-GCM seal") }
        return out
    }

    /// The plaintext of ciphertext ‖ tag, or nil when the tag does not
    /// authenticate it (a changed, cut or foreign chunk): fails closed.
    static func open(_ sealed: UnsafeRawBufferPointer, key: SecretBytes, nonce: [UInt8], aad: [UInt8]) throws -> [UInt8]? {
        precondition(nonce.count == nonceBytes, "AES-256-GCM nonce of the wrong size")
        return try nonce.withUnsafeBytes { try AES256GCMKey(key).open(sealed, nonce: $0, aad: aad) }
    }
}

extension AES256GCM {
    /// A fresh random nonce, then `plaintext` sealed under it: a name only a
    /// holder of `key` can read, and no two alike even for the same plaintext.
    static func sealWithFreshNonce(_ plaintext: [UInt8], key: SecretBytes, aad: [UInt8]) throws -> [UInt8] {
        let nonce = try secureRandomBytes(nonceBytes)
        return nonce + (try plaintext.withUnsafeBytes { try seal($0, key: key, nonce: nonce, aad: aad) })
    }

    /// Opens `nonce ‖ ciphertext ‖ tag` with each of `keys` in turn: the
    /// index of the first whose tag authenticates it, with the plaintext, or
    /// nil when none does. One tag check per key: the work is bounded by
    /// the number of keys a caller gives.
    static func openWithAny(_ box: [UInt8], keys: [AES256GCMKey], aad: [UInt8]) throws -> (index: Int, plaintext: [UInt8])? {
        guard box.count >= nonceBytes + tagBytes else { return nil }
        return try box.withUnsafeBytes { all in
            let nonce = UnsafeRawBufferPointer(rebasing: all[0..<nonceBytes])
            let sealed = UnsafeRawBufferPointer(rebasing: all[nonceBytes...])
            for (i, k) in keys.enumerated() {
                if let p = try k.open(sealed, nonce: nonce, aad: aad) { return (i, p) }
            }
            return nil
        }
    }
}

/// One AES-256-GCM key, its schedule made once, for a receiver that tries
/// the same keys on many small boxes (identities, headers): each try then
/// costs only the counter blocks and the tag. Used by one thread at a time.
final class AES256GCMKey {
    private let ctx: OpaquePointer

    init(_ key: SecretBytes) throws {
        precondition(key.count == AES256GCM.keyBytes, "AES-256-GCM key of the wrong size")
        guard let c = EVP_CIPHER_CTX_new() else { throw OpenSSLError("EVP_CIPHER_CTX_new") }
        ctx = c
        let ok = key.withUnsafeBytes { k in EVP_DecryptInit_ex(c, EVP_aes_256_gcm(), nil, k.baseAddress?.assumingMemoryBound(to: UInt8.self), nil) == 1 }
        guard ok else { EVP_CIPHER_CTX_free(c); throw OpenSSLError("AES-256-GCM key") }
    }

    deinit { EVP_CIPHER_CTX_free(ctx) }

    /// The plaintext of ciphertext ‖ tag, or nil when the tag does not authenticate it.
    func open(_ sealed: UnsafeRawBufferPointer, nonce: UnsafeRawBufferPointer, aad: [UInt8]) throws -> [UInt8]? {
        precondition(nonce.count == AES256GCM.nonceBytes, "AES-256-GCM nonce of the wrong size")
        guard sealed.count >= AES256GCM.tagBytes else { return nil }
        let length = sealed.count - AES256GCM.tagBytes
        var out = [UInt8](repeating: 0, count: max(1, length))
        var n: Int32 = 0, tail: Int32 = 0
        // Never nil: `sealed` holds at least the tag's 16 bytes.
        let tag = UnsafeMutableRawPointer(mutating: sealed.baseAddress! + length)
        let setUp: Bool = out.withUnsafeMutableBufferPointer { o in
            EVP_DecryptInit_ex(ctx, nil, nil, nil, nonce.baseAddress?.assumingMemoryBound(to: UInt8.self)) == 1
                && (aad.isEmpty || EVP_DecryptUpdate(ctx, nil, &n, aad, Int32(aad.count)) == 1)
                && (length == 0 || EVP_DecryptUpdate(ctx, o.baseAddress, &n, sealed.baseAddress?.assumingMemoryBound(to: UInt8.self), Int32(length)) == 1)
                && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, Int32(AES256GCM.tagBytes), tag) == 1
        }
        guard setUp else { throw OpenSSLError("AES-256-GCM open") }
        let authentic = out.withUnsafeMutableBufferPointer { o in EVP_DecryptFinal_ex(ctx, o.baseAddress.map { $0 + Int(length == 0 ? 0 : n) }, &tail) == 1 }
        // A tag that does not match is an answer, not an error of OpenSSL's.
        OpenSSLError.drain()
        guard authentic else { return nil }
        out.removeLast(out.count - length)
        return out
    }
}
