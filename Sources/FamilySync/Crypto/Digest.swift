import COpenSSL

/// SHA-256, the digest of photo contents, record-state digests and HKDF.
public struct SHA256: ~Copyable {
    private let ctx: OpaquePointer

    public init() {
        // OpenSSL returns nil only when out of memory, which stops the tool as Swift's own allocations do.
        ctx = EVP_MD_CTX_new()!
        EVP_DigestInit_ex(ctx, EVP_sha256(), nil)
    }
    deinit { EVP_MD_CTX_free(ctx) }

    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        if bytes.count > 0 { EVP_DigestUpdate(ctx, bytes.baseAddress, bytes.count) }
    }
    public mutating func update(_ bytes: [UInt8]) { bytes.withUnsafeBytes { update($0) } }
    public mutating func update(_ s: String) { var s = s; s.withUTF8 { update(UnsafeRawBufferPointer($0)) } }

    public consuming func finalize() -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        var len: UInt32 = 0
        EVP_DigestFinal_ex(ctx, &out, &len)
        return out
    }

    public static func hash(_ bytes: UnsafeRawBufferPointer) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        _ = COpenSSL.SHA256(bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count, &out)
        return out
    }
    public static func hash(_ bytes: [UInt8]) -> [UInt8] { bytes.withUnsafeBytes { hash($0) } }
    public static func hash(_ s: String) -> [UInt8] { hash(Array(s.utf8)) }
}

/// HMAC-SHA256.
public func hmacSHA256(key: [UInt8], message: [UInt8]) -> [UInt8] {
    var out = [UInt8](repeating: 0, count: 32)
    var len: UInt32 = 32
    _ = HMAC(EVP_sha256(), key, Int32(key.count), message, message.count, &out, &len)
    return out
}

/// The same, keyed by key material read in place and over bytes in place.
public func hmacSHA256(key: SecretBytes, message: UnsafeRawBufferPointer) -> [UInt8] {
    var out = [UInt8](repeating: 0, count: 32)
    var len: UInt32 = 32
    key.withUnsafeBytes { k in
        _ = HMAC(EVP_sha256(), k.baseAddress, Int32(k.count), message.baseAddress?.assumingMemoryBound(to: UInt8.self), message.count, &out, &len)
    }
    return out
}

public enum Hex {
    private static let digits = Array("0123456789abcdef".utf8)
    /// Lowercase hex.
    public static func encode(_ bytes: some Sequence<UInt8>) -> String {
        var out = [UInt8]()
        for b in bytes { out.append(digits[Int(b >> 4)]); out.append(digits[Int(b & 15)]) }
        return String(decoding: out, as: UTF8.self)
    }
    /// The value of one hex digit (either case), or nil.
    @inline(__always)
    public static func digitValue(_ c: UInt8) -> UInt8? {
        switch c {
        case 0x30...0x39: return c - 0x30
        case 0x61...0x66: return c - 0x61 + 10
        case 0x41...0x46: return c - 0x41 + 10
        default: return nil
        }
    }

    /// Exactly `digits` lower-case hex digits: the one form names, hashes and
    /// sealed boxes take on the wire.
    public static func isLowercase(_ s: some Collection<UInt8>, digits: Int) -> Bool {
        s.count == digits && s.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }

    public static func decode(_ s: String) -> [UInt8]? {
        let u = Array(s.utf8)
        guard u.count % 2 == 0 else { return nil }
        var out = [UInt8](repeating: 0, count: u.count / 2)
        let ok = u.withUnsafeBufferPointer { hex in out.withUnsafeMutableBytes { decode(hex, into: $0) } }
        return ok ? out : nil
    }

    /// Decodes `out.count * 2` hex digits into `out` in place (a key's owner
    /// fills its own storage this way); false if a digit is not hex.
    public static func decode(_ hex: UnsafeBufferPointer<UInt8>, into out: UnsafeMutableRawBufferPointer) -> Bool {
        guard hex.count == out.count * 2 else { return false }
        for i in 0..<out.count {
            guard let h = digitValue(hex[2 * i]), let l = digitValue(hex[2 * i + 1]) else { return false }
            out[i] = h << 4 | l
        }
        return true
    }
}
