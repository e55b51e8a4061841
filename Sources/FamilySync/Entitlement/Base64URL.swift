/// Why text is not the base64 it should be: the first offending byte.
public struct Base64Problem: Error, Equatable, Sendable, CustomStringConvertible {
    public var description: String
    init(_ d: String) { description = d }

    static func badByte(_ b: UInt8, at i: Int) -> Base64Problem {
        let shown = b >= 0x21 && b < 0x7F ? "'\(Character(Unicode.Scalar(b)))' " : ""
        return Base64Problem("byte \(shown)0x\(String(b, radix: 16)) at offset \(i) is not in the alphabet")
    }
}

/// Strict base64 decoding for JWS: base64url without padding for the three
/// segments (RFC 7515), standard padded base64 for `x5c` certificates.
/// Strict means canonical: one byte string has exactly one encoding, so a
/// token cannot be re-encoded into a different but "equal" one.
public enum Base64URL {
    static let invalid: UInt8 = 0xFF

    private static func table(_ alphabet: String) -> [UInt8] {
        var t = [UInt8](repeating: invalid, count: 256)
        for (i, c) in alphabet.utf8.enumerated() { t[Int(c)] = UInt8(i) }
        return t
    }
    static let urlTable = table("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
    static let stdTable = table("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")

    /// Decodes unpadded base64url.
    public static func decode(_ text: UnsafeRawBufferPointer) -> Result<[UInt8], Base64Problem> {
        decode(text, table: urlTable)
    }

    public static func decode(_ text: String) -> Result<[UInt8], Base64Problem> {
        var t = text
        return t.withUTF8 { decode(UnsafeRawBufferPointer($0)) }
    }

    /// Decodes standard base64 with its `=` padding, as `x5c` carries DER.
    public static func decodeStandard(_ text: String) -> Result<[UInt8], Base64Problem> {
        var t = text
        return t.withUTF8 { buf -> Result<[UInt8], Base64Problem> in
            let b = UnsafeRawBufferPointer(buf)
            guard b.count % 4 == 0 else { return .failure(Base64Problem("length \(b.count) is not a multiple of 4")) }
            var n = b.count
            if n > 0, b[n - 1] == UInt8(ascii: "=") { n -= 1 }
            if n > 0, b[n - 1] == UInt8(ascii: "=") { n -= 1 }
            return decode(UnsafeRawBufferPointer(rebasing: b[0..<n]), table: stdTable)
        }
    }

    private static func decode(_ b: UnsafeRawBufferPointer, table: [UInt8]) -> Result<[UInt8], Base64Problem> {
        let n = b.count
        if n % 4 == 1 { return .failure(Base64Problem("length \(n) cannot be base64")) }
        var out = [UInt8](repeating: 0, count: n / 4 * 3 + max(0, n % 4 - 1))
        let ok: Base64Problem? = table.withUnsafeBufferPointer { t in
            out.withUnsafeMutableBufferPointer { o in
                var i = 0, j = 0
                while i + 4 <= n {
                    let a = t[Int(b[i])], c = t[Int(b[i + 1])], d = t[Int(b[i + 2])], e = t[Int(b[i + 3])]
                    if (a | c | d | e) & 0xC0 != 0 {
                        for k in i..<(i + 4) where t[Int(b[k])] == invalid { return .badByte(b[k], at: k) }
                    }
                    let v = UInt32(a) << 18 | UInt32(c) << 12 | UInt32(d) << 6 | UInt32(e)
                    o[j] = UInt8(truncatingIfNeeded: v >> 16)
                    o[j + 1] = UInt8(truncatingIfNeeded: v >> 8)
                    o[j + 2] = UInt8(truncatingIfNeeded: v)
                    i += 4
                    j += 3
                }
                let rest = n - i
                guard rest > 0 else { return nil }
                var v: UInt32 = 0
                for k in i..<n {
                    let x = t[Int(b[k])]
                    if x == invalid { return .badByte(b[k], at: k) }
                    v = v << 6 | UInt32(x)
                }
                if rest == 2 {
                    if v & 0x0F != 0 { return Base64Problem("unused bits at the end are not zero (not canonical)") }
                    o[j] = UInt8(truncatingIfNeeded: v >> 4)
                } else {
                    if v & 0x03 != 0 { return Base64Problem("unused bits at the end are not zero (not canonical)") }
                    o[j] = UInt8(truncatingIfNeeded: v >> 10)
                    o[j + 1] = UInt8(truncatingIfNeeded: v >> 2)
                }
                return nil
            }
        }
        if let ok { return .failure(ok) }
        return .success(out)
    }

    /// Unpadded base64url.
    public static func encode(_ bytes: some Collection<UInt8>) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 4 / 3 + 3)
        var it = bytes.makeIterator()
        while let a = it.next() {
            let b = it.next(), c = it.next()
            let v = UInt32(a) << 16 | UInt32(b ?? 0) << 8 | UInt32(c ?? 0)
            out.append(alphabet[Int(v >> 18 & 63)])
            out.append(alphabet[Int(v >> 12 & 63)])
            if b != nil { out.append(alphabet[Int(v >> 6 & 63)]) }
            if c != nil { out.append(alphabet[Int(v & 63)]) }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Padded standard base64.
    public static func encodeStandard(_ bytes: some Collection<UInt8>) -> String {
        var s = encode(bytes).replacingCharacters("-", "+").replacingCharacters("_", "/")
        while s.utf8.count % 4 != 0 { s += "=" }
        return s
    }
}

private extension String {
    func replacingCharacters(_ a: Character, _ b: Character) -> String { String(map { $0 == a ? b : $0 }) }
}
