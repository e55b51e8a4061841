import COpenSSL

/// Ed25519 (RFC 8032) signatures through OpenSSL, for the owner's roster
/// statements. Chosen over ECDSA P-256 because its keys and signatures are
/// fixed-size raw bytes (32-byte keys, 64-byte signatures: nothing to parse
/// from a peer but a length) and signing is deterministic, so no per-signature
/// nonce can leak the key if randomness is ever poor.
public enum Ed25519 {
    public static let keyBytes = 32
    public static let signatureBytes = 64

    /// A fresh private key (its 32-byte seed), drawn straight into its owner.
    public static func generatePrivateKey() throws -> SecretBytes { try SecretBytes.random(count: keyBytes) }

    /// The public key of a private key.
    public static func publicKey(privateKey: SecretBytes) throws -> [UInt8] {
        let pkey = try load(privateKey: privateKey)
        defer { EVP_PKEY_free(pkey) }
        var out = [UInt8](repeating: 0, count: keyBytes)
        var n = keyBytes
        guard EVP_PKEY_get_raw_public_key(pkey, &out, &n) == 1, n == keyBytes else { throw OpenSSLError("EVP_PKEY_get_raw_public_key") }
        return out
    }

    public static func sign(_ message: [UInt8], privateKey: SecretBytes) throws -> [UInt8] {
        let pkey = try load(privateKey: privateKey)
        defer { EVP_PKEY_free(pkey) }
        guard let md = EVP_MD_CTX_new() else { throw OpenSSLError("EVP_MD_CTX_new") }
        defer { EVP_MD_CTX_free(md) }
        guard EVP_DigestSignInit(md, nil, nil, nil, pkey) == 1 else { throw OpenSSLError("EVP_DigestSignInit") }
        var sig = [UInt8](repeating: 0, count: signatureBytes)
        var n = signatureBytes
        let rc = message.withUnsafeBufferPointer { EVP_DigestSign(md, &sig, &n, $0.baseAddress, $0.count) }
        guard rc == 1, n == signatureBytes else { throw OpenSSLError("EVP_DigestSign") }
        return sig
    }

    /// Whether `signature` is `publicKey`'s over `message`. Fails closed: a
    /// key or signature of the wrong length, or any OpenSSL failure, is false.
    public static func verify(_ signature: [UInt8], message: [UInt8], publicKey: [UInt8]) -> Bool {
        guard signature.count == signatureBytes, publicKey.count == keyBytes,
              let pkey = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nil, publicKey, keyBytes) else {
            OpenSSLError.drain()
            return false
        }
        defer { EVP_PKEY_free(pkey) }
        guard let md = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(md) }
        guard EVP_DigestVerifyInit(md, nil, nil, nil, pkey) == 1 else { OpenSSLError.drain(); return false }
        let rc = message.withUnsafeBufferPointer { m in EVP_DigestVerify(md, signature, signature.count, m.baseAddress, m.count) }
        if rc != 1 { OpenSSLError.drain() }
        return rc == 1
    }

    /// OpenSSL copies the seed into its own key object, which EVP_PKEY_free
    /// clears; the seed is read from its owner in place.
    private static func load(privateKey: SecretBytes) throws -> OpaquePointer {
        let key = privateKey.withUnsafeBytes { seed in
            seed.count == keyBytes ? EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, nil, seed.baseAddress?.assumingMemoryBound(to: UInt8.self), keyBytes) : nil
        }
        guard let p = key else {
            throw OpenSSLError("EVP_PKEY_new_raw_private_key")
        }
        return p
    }
}
