import COpenSSL

/// The two NIST curves App Store chains use: P-256 signs the JWS itself
/// (ES256); Apple signs its leaf and intermediate certificates with P-384.
public enum ECCurve: String, Sendable, CaseIterable, CustomStringConvertible {
    case p256 = "P-256"
    case p384 = "P-384"

    /// The length of one scalar (r, s, or a coordinate) in bytes.
    public var scalarBytes: Int { self == .p256 ? 32 : 48 }

    /// The group order n, big-endian: r and s must lie in [1, n - 1].
    public var order: [UInt8] {
        switch self {
        case .p256: return ECCurve.p256Order
        case .p384: return ECCurve.p384Order
        }
    }

    /// OpenSSL's group name for the curve.
    public var openSSLName: String { self == .p256 ? "prime256v1" : "secp384r1" }

    public init?(openSSLName name: String) {
        switch name {
        case "prime256v1", "P-256", "secp256r1": self = .p256
        case "secp384r1", "P-384": self = .p384
        default: return nil
        }
    }

    public var description: String { rawValue }

    // The curve orders are hex literals that always decode.
    private static let p256Order: [UInt8] = Hex.decode("ffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551")!
    private static let p384Order: [UInt8] = Hex.decode(
        // (a literal that always decodes, as above)
        "ffffffffffffffffffffffffffffffffffffffffffffffffc7634d81f4372ddf581a0db248b0a77aecec196accc52973")!
}

/// Why a raw (IEEE P1363, `r‖s`) signature was refused before any key was used.
public enum RawSignatureProblem: Error, Equatable, Sendable, CustomStringConvertible {
    /// Not exactly two scalars long. `looksLikeDER` when it parses as an
    /// ASN.1 SEQUENCE, the form OpenSSL emits but JWS does not use.
    case wrongLength(Int, expected: Int, looksLikeDER: Bool)
    case zero(component: String)
    case notBelowOrder(component: String)

    public var description: String {
        switch self {
        case let .wrongLength(n, expected, der):
            return der ? "signature is \(n) bytes of DER; JWS carries the raw \(expected)-byte r‖s"
                       : "signature is \(n) bytes; the raw r‖s form is \(expected)"
        case let .zero(c): return "\(c) is zero"
        case let .notBelowOrder(c): return "\(c) is not below the curve order"
        }
    }
}

/// Signature encodings. JWS carries ECDSA signatures as raw `r‖s`; OpenSSL
/// verifies DER. Converting here, with range checks first, keeps malleable
/// or out-of-range forms out of OpenSSL entirely.
public enum ECDSASignature {
    /// DER `SEQUENCE { INTEGER r, INTEGER s }` for a raw `r‖s` signature on
    /// `curve`, or the reason it is not one.
    public static func der(fromRaw raw: UnsafeRawBufferPointer, curve: ECCurve) -> Result<[UInt8], RawSignatureProblem> {
        let n = curve.scalarBytes
        guard raw.count == 2 * n else {
            return .failure(.wrongLength(raw.count, expected: 2 * n, looksLikeDER: looksLikeDER(raw)))
        }
        let r = UnsafeRawBufferPointer(rebasing: raw[0..<n])
        let s = UnsafeRawBufferPointer(rebasing: raw[n..<(2 * n)])
        if let p = rangeProblem(r, curve: curve, name: "r") { return .failure(p) }
        if let p = rangeProblem(s, curve: curve, name: "s") { return .failure(p) }
        var out: [UInt8] = []
        out.reserveCapacity(2 * n + 8)
        let ri = minimalInteger(r), si = minimalInteger(s)
        let body = ri.count + si.count
        out.append(0x30)
        if body >= 0x80 { out.append(0x81) }
        out.append(UInt8(body))
        out.append(contentsOf: ri)
        out.append(contentsOf: si)
        return .success(out)
    }

    public static func der(fromRaw raw: [UInt8], curve: ECCurve) -> Result<[UInt8], RawSignatureProblem> {
        raw.withUnsafeBytes { der(fromRaw: $0, curve: curve) }
    }

    /// Raw `r‖s` from DER, for tools that produce DER (OpenSSL) and need the
    /// JWS form. Strict DER only: minimal lengths and integers, nothing after.
    public static func raw(fromDER der: [UInt8], curve: ECCurve) -> [UInt8]? {
        let n = curve.scalarBytes
        var i = 0
        func length() -> Int? {
            guard i < der.count else { return nil }
            let b = der[i]; i += 1
            if b < 0x80 { return Int(b) }
            guard b == 0x81, i < der.count, der[i] >= 0x80 else { return nil }
            i += 1
            return Int(der[i - 1])
        }
        func integer() -> [UInt8]? {
            guard i < der.count, der[i] == 0x02 else { return nil }
            i += 1
            guard let len = length(), len > 0, i + len <= der.count else { return nil }
            var v = Array(der[i..<(i + len)])
            i += len
            if v[0] & 0x80 != 0 { return nil }  // negative
            if v.count > 1, v[0] == 0, v[1] & 0x80 == 0 { return nil }  // not minimal
            if v[0] == 0 { v.removeFirst() }
            guard v.count <= n else { return nil }
            return [UInt8](repeating: 0, count: n - v.count) + v
        }
        guard der.first == 0x30 else { return nil }
        i = 1
        guard let total = length(), i + total == der.count, let r = integer(), let s = integer(), i == der.count else { return nil }
        return r + s
    }

    private static func looksLikeDER(_ b: UnsafeRawBufferPointer) -> Bool {
        guard b.count >= 8, b[0] == 0x30 else { return false }
        let declared = b[1] < 0x80 ? Int(b[1]) + 2 : (b[1] == 0x81 && b.count > 2 ? Int(b[2]) + 3 : -1)
        return declared == b.count && b[b[1] < 0x80 ? 2 : 3] == 0x02
    }

    private static func rangeProblem(_ v: UnsafeRawBufferPointer, curve: ECCurve, name: String) -> RawSignatureProblem? {
        if !v.contains(where: { $0 != 0 }) { return .zero(component: name) }
        let order = curve.order
        for k in 0..<v.count where v[k] != order[k] {
            return v[k] < order[k] ? nil : .notBelowOrder(component: name)
        }
        return .notBelowOrder(component: name)  // equal to n
    }

    /// A DER INTEGER for an unsigned big-endian value: leading zeros dropped,
    /// one 0x00 added when the top bit is set.
    private static func minimalInteger(_ v: UnsafeRawBufferPointer) -> [UInt8] {
        var start = 0
        while start < v.count - 1, v[start] == 0 { start += 1 }
        var out: [UInt8] = [0x02, 0]
        if v[start] & 0x80 != 0 { out.append(0) }
        out.append(contentsOf: v[start...])
        out[1] = UInt8(out.count - 2)
        return out
    }
}

/// An EC public key (`EVP_PKEY*`) on P-256 or P-384. Owns the handle and
/// frees it in `deinit`. Not Sendable: OpenSSL key objects are shared by
/// reference count and used from one thread here.
public final class ECPublicKey {
    let pkey: OpaquePointer
    public let curve: ECCurve

    /// Takes one reference of `pkey` (already counted for us).
    init(owning pkey: OpaquePointer) throws {
        self.pkey = pkey
        guard EVP_PKEY_get_base_id(pkey) == EVP_PKEY_EC else {
            EVP_PKEY_free(pkey)
            throw KeyProblem("not an elliptic-curve key")
        }
        var name = [CChar](repeating: 0, count: 64)
        var len = 0
        guard EVP_PKEY_get_group_name(pkey, &name, name.count, &len) == 1 else {
            EVP_PKEY_free(pkey)
            OpenSSLError.drain()
            throw KeyProblem("an EC key without a named curve")
        }
        let groupName = String(decoding: name.prefix(len).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        guard let c = ECCurve(openSSLName: groupName) else {
            EVP_PKEY_free(pkey)
            throw KeyProblem("an EC key on \(groupName), not P-256 or P-384")
        }
        curve = c
    }

    /// A DER SubjectPublicKeyInfo, all of it and nothing after it.
    public convenience init(subjectPublicKeyInfo der: [UInt8]) throws {
        var p: UnsafePointer<UInt8>? = nil
        let key: OpaquePointer? = der.withUnsafeBufferPointer { buf in
            p = buf.baseAddress
            let k = d2i_PUBKEY(nil, &p, buf.count)
            if let k, let base = buf.baseAddress, p != base + buf.count {
                EVP_PKEY_free(k)
                return nil
            }
            return k
        }
        guard let key else {
            OpenSSLError.drain()
            throw KeyProblem("not a DER SubjectPublicKeyInfo")
        }
        try self.init(owning: key)
    }

    deinit { EVP_PKEY_free(pkey) }

    /// Why a key could not be used.
    public struct KeyProblem: Error, CustomStringConvertible, Sendable {
        public var description: String
        init(_ d: String) { description = d }
    }
}

/// Verifies ECDSA signatures over SHA-256 digests with one key, reusing one
/// initialized `EVP_PKEY_CTX` so each verification is a single OpenSSL call
/// (as `openssl speed` measures). Not Sendable: the context is mutable.
public final class ECDSAVerifier {
    public let key: ECPublicKey
    private let ctx: OpaquePointer

    public init(key: ECPublicKey) throws {
        self.key = key
        guard let c = EVP_PKEY_CTX_new(key.pkey, nil) else { throw OpenSSLError("EVP_PKEY_CTX_new") }
        guard EVP_PKEY_verify_init(c) == 1, EVP_PKEY_CTX_set_signature_md(c, EVP_sha256()) == 1 else {
            EVP_PKEY_CTX_free(c)
            throw OpenSSLError("EVP_PKEY_verify_init")
        }
        ctx = c
    }

    deinit { EVP_PKEY_CTX_free(ctx) }

    /// True only when the DER signature verifies over the 32-byte digest.
    public func verify(digest: [UInt8], derSignature: [UInt8]) -> Bool {
        let rc = EVP_PKEY_verify(ctx, derSignature, derSignature.count, digest, digest.count)
        if rc != 1 { OpenSSLError.drain() }
        return rc == 1
    }

    /// ES256: a raw `r‖s` signature over SHA-256(`message`), with range checks
    /// before OpenSSL sees anything. The key must be on P-256.
    public func verifyES256(rawSignature: UnsafeRawBufferPointer, message: UnsafeRawBufferPointer) -> ES256Result {
        guard key.curve == .p256 else { return .wrongCurve(key.curve) }
        switch ECDSASignature.der(fromRaw: rawSignature, curve: .p256) {
        case let .failure(p): return .rejected(p)
        case let .success(der):
            return verify(digest: SHA256.hash(message), derSignature: der) ? .valid : .invalid
        }
    }
}

/// The outcome of an ES256 verification.
public enum ES256Result: Equatable, Sendable {
    case valid
    /// Well-formed, but it does not verify with the key.
    case invalid
    /// Refused before verification: wrong length, DER, zero or out of range.
    case rejected(RawSignatureProblem)
    /// The key is not a P-256 key, so it cannot make an ES256 signature.
    case wrongCurve(ECCurve)

    public var isValid: Bool { self == .valid }
}
