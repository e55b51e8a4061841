import COpenSSL

/// HKDF-SHA256 (RFC 5869) from OpenSSL's KDF provider. The sync and pairing
/// PSKs are derived with it.
public func hkdfSHA256(secret: [UInt8], salt: [UInt8], info: [UInt8], length: Int) throws -> [UInt8] {
    var out = [UInt8](repeating: 0, count: length)
    try secret.withUnsafeBytes { s in try out.withUnsafeMutableBytes { try hkdfSHA256(secret: s, salt: salt, info: info, into: $0) } }
    return out
}

/// The same, from and into key material that never leaves its owner.
public func hkdfSHA256(secret: SecretBytes, salt: [UInt8], info: [UInt8], length: Int) throws -> SecretBytes {
    try SecretBytes(count: length) { out in try secret.withUnsafeBytes { try hkdfSHA256(secret: $0, salt: salt, info: info, into: out) } }
}

private func hkdfSHA256(secret: UnsafeRawBufferPointer, salt: [UInt8], info: [UInt8], into out: UnsafeMutableRawBufferPointer) throws {
    guard let pctx = EVP_PKEY_CTX_new_id(EVP_PKEY_HKDF, nil) else { throw OpenSSLError("EVP_PKEY_CTX_new_id(HKDF)") }
    defer { EVP_PKEY_CTX_free(pctx) }
    var outLen = out.count
    guard EVP_PKEY_derive_init(pctx) == 1,
          EVP_PKEY_CTX_set_hkdf_md(pctx, EVP_sha256()) == 1,
          EVP_PKEY_CTX_set1_hkdf_salt(pctx, salt, Int32(salt.count)) == 1,
          EVP_PKEY_CTX_set1_hkdf_key(pctx, secret.baseAddress?.assumingMemoryBound(to: UInt8.self), Int32(secret.count)) == 1,
          EVP_PKEY_CTX_add1_hkdf_info(pctx, info, Int32(info.count)) == 1,
          EVP_PKEY_derive(pctx, out.baseAddress?.assumingMemoryBound(to: UInt8.self), &outLen) == 1, outLen == out.count
    else { throw OpenSSLError("HKDF-SHA256") }
}
