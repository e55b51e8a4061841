import COpenSSL

/// Bytes from OpenSSL's CSPRNG (seeded from the OS). Fails closed: no
/// randomness, no nonce.
public func secureRandomBytes(_ count: Int) throws -> [UInt8] {
    var out = [UInt8](repeating: 0, count: count)
    guard RAND_bytes(&out, Int32(count)) == 1 else { throw OpenSSLError("RAND_bytes") }
    return out
}

extension SecretBytes {
    /// `count` bytes from OpenSSL's CSPRNG, drawn straight into their owner.
    public static func random(count: Int) throws -> SecretBytes {
        try SecretBytes(count: count) { out in
            guard RAND_bytes(out.baseAddress?.assumingMemoryBound(to: UInt8.self), Int32(out.count)) == 1 else { throw OpenSSLError("RAND_bytes") }
        }
    }
}

/// A random RFC 4122 version 4 UUID in upper case, the form device and family
/// IDs take.
public func randomUUID() throws -> String {
    var b = try secureRandomBytes(16)
    b[6] = (b[6] & 0x0F) | 0x40
    b[8] = (b[8] & 0x3F) | 0x80
    let h = Hex.encode(b).uppercased()
    let c = Array(h)
    return String(c[0..<8]) + "-" + String(c[8..<12]) + "-" + String(c[12..<16]) + "-" + String(c[16..<20]) + "-" + String(c[20..<32])
}
