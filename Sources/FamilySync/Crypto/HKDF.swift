import COpenSSL

/// HKDF-SHA256 (RFC 5869) from OpenSSL's KDF provider. The sync and pairing
/// PSKs are derived with it.
public func hkdfSHA256(secret: [UInt8], salt: [UInt8], info: [UInt8], length: Int) throws -> [UInt8] {
    guard let pctx = EVP_PKEY_CTX_new_id(EVP_PKEY_HKDF, nil) else { throw OpenSSLError("EVP_PKEY_CTX_new_id(HKDF)") }
    defer { EVP_PKEY_CTX_free(pctx) }
    var out = [UInt8](repeating: 0, count: length)
    var outLen = length
    guard EVP_PKEY_derive_init(pctx) == 1,
          EVP_PKEY_CTX_set_hkdf_md(pctx, EVP_sha256()) == 1,
          EVP_PKEY_CTX_set1_hkdf_salt(pctx, salt, Int32(salt.count)) == 1,
          EVP_PKEY_CTX_set1_hkdf_key(pctx, secret, Int32(secret.count)) == 1,
          EVP_PKEY_CTX_add1_hkdf_info(pctx, info, Int32(info.count)) == 1,
          EVP_PKEY_derive(pctx, &out, &outLen) == 1, outLen == length
    else { throw OpenSSLError("HKDF-SHA256") }
    return out
}
