import COpenSSL
import FoundationEssentials
import Glibc

/// One X.509 certificate (`X509*`), parsed from exact DER. Owns the handle
/// and frees it in `deinit`. Not Sendable: OpenSSL caches extension data
/// inside the object on first use.
public final class X509Certificate {
    let handle: OpaquePointer
    /// The DER bytes the certificate was parsed from, unchanged.
    public let der: [UInt8]

    /// Why bytes are not a certificate.
    public struct ParseError: Error, CustomStringConvertible, Sendable {
        public var description: String
        init(_ d: String) { description = d }
    }

    /// Parses DER. Trailing bytes after the certificate are refused, so two
    /// different byte strings never stand for the same certificate.
    public init(der: [UInt8]) throws {
        var consumed = 0
        let x: OpaquePointer? = der.withUnsafeBufferPointer { buf in
            var p: UnsafePointer<UInt8>? = buf.baseAddress
            let x = d2i_X509(nil, &p, buf.count)
            if let p, let base = buf.baseAddress { consumed = base.distance(to: p) }
            return x
        }
        guard let x else {
            let q = OpenSSLError.drain()
            throw ParseError("not a DER certificate" + (q.first.map { " (\($0))" } ?? ""))
        }
        guard consumed == der.count else {
            X509_free(x)
            throw ParseError("\(der.count - consumed) bytes after the DER certificate")
        }
        handle = x
        self.der = der
    }

    deinit { X509_free(handle) }

    /// Every certificate in a file's contents: PEM (one or more
    /// `CERTIFICATE` blocks) or a single DER certificate.
    public static func load(contents: [UInt8]) throws -> [X509Certificate] {
        let pemMarker = Array("-----BEGIN CERTIFICATE-----".utf8)
        guard contents.firstRange(of: pemMarker) != nil else { return [try X509Certificate(der: contents)] }
        var out: [X509Certificate] = []
        let bio: OpaquePointer? = contents.withUnsafeBytes { BIO_new_mem_buf($0.baseAddress, Int32($0.count)) }
        guard let bio else { throw OpenSSLError("BIO_new_mem_buf") }
        defer { BIO_free(bio) }
        while let x = PEM_read_bio_X509(bio, nil, nil, nil) {
            defer { X509_free(x) }
            let len = i2d_X509(x, nil)
            guard len > 0 else { throw OpenSSLError("i2d_X509") }
            var bytes = [UInt8](repeating: 0, count: Int(len))
            _ = bytes.withUnsafeMutableBufferPointer { b in
                var p: UnsafeMutablePointer<UInt8>? = b.baseAddress
                return i2d_X509(x, &p)
            }
            out.append(try X509Certificate(der: bytes))
        }
        OpenSSLError.drain()  // the end-of-PEM "no start line" report
        guard !out.isEmpty else { throw ParseError("a PEM file with no readable CERTIFICATE block") }
        return out
    }

    /// The subject in RFC 2253 form, for diagnostics.
    public var subject: String {
        guard let name = X509_get_subject_name(handle), let bio = BIO_new(BIO_s_mem()) else { return "?" }
        defer { BIO_free(bio) }
        X509_NAME_print_ex(bio, name, 0, fs_XN_FLAG_RFC2253())
        var p: UnsafeMutablePointer<CChar>?
        let n = BIO_ctrl(bio, BIO_CTRL_INFO, 0, &p)
        guard n > 0, let p else { return "" }
        return String(decoding: UnsafeRawBufferPointer(start: p, count: n), as: UTF8.self)
    }

    public var notBefore: Timestamp? { X509Certificate.timestamp(X509_get0_notBefore(handle)) }
    public var notAfter: Timestamp? { X509Certificate.timestamp(X509_get0_notAfter(handle)) }

    static func timestamp(_ t: UnsafePointer<ASN1_TIME>?) -> Timestamp? {
        guard let t else { return nil }
        var tm = tm()
        guard ASN1_TIME_to_tm(t, &tm) == 1 else { OpenSSLError.drain(); return nil }
        return Timestamp(milliseconds: Int64(timegm(&tm)) * 1000)
    }

    /// Whether the certificate carries an extension with this dotted OID,
    /// whatever its value. Apple marks its receipt-signing chains this way.
    public func hasExtension(oid: String) -> Bool {
        guard let obj = OBJ_txt2obj(oid, 1) else { OpenSSLError.drain(); return false }
        defer { ASN1_OBJECT_free(obj) }
        return X509_get_ext_by_OBJ(handle, obj, -1) >= 0
    }

    /// basicConstraints says cA: TRUE.
    public var isCA: Bool { X509_get_extension_flags(handle) & UInt32(EXFLAG_CA) != 0 }

    /// OpenSSL found an extension it could not decode (a malformed or
    /// duplicated basicConstraints, key usage, …).
    public var hasInvalidExtensions: Bool { X509_get_extension_flags(handle) & UInt32(EXFLAG_INVALID) != 0 }

    /// The subject public key, when it is an EC key on P-256 or P-384.
    public func publicKey() throws -> ECPublicKey {
        guard let k = X509_get0_pubkey(handle) else {
            OpenSSLError.drain()
            throw ECPublicKey.KeyProblem("a public key OpenSSL cannot read")
        }
        EVP_PKEY_up_ref(k)
        return try ECPublicKey(owning: k)
    }

    /// Lowercase hex SHA-256 of the DER bytes.
    public var sha256Fingerprint: String { Hex.encode(SHA256.hash(der)) }
}
