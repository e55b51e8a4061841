import COpenSSL
import Foundation
@testable import FamilySync

/// An EC key pair minted with OpenSSL for the tests.
final class TestKey: @unchecked Sendable {
    let pkey: OpaquePointer
    let curve: ECCurve

    init(_ curve: ECCurve) {
        self.curve = curve
        let ctx = EVP_PKEY_CTX_new_id(EVP_PKEY_EC, nil)!
        defer { EVP_PKEY_CTX_free(ctx) }
        precondition(EVP_PKEY_keygen_init(ctx) == 1)
        precondition(EVP_PKEY_CTX_set_ec_paramgen_curve_nid(ctx, curve == .p256 ? NID_X9_62_prime256v1 : NID_secp384r1) == 1)
        var k: OpaquePointer?
        precondition(EVP_PKEY_keygen(ctx, &k) == 1)
        pkey = k!
    }
    deinit { EVP_PKEY_free(pkey) }

    /// DER SubjectPublicKeyInfo.
    var spki: [UInt8] {
        let n = i2d_PUBKEY(pkey, nil)
        var out = [UInt8](repeating: 0, count: Int(n))
        _ = out.withUnsafeMutableBufferPointer { b in
            var p: UnsafeMutablePointer<UInt8>? = b.baseAddress
            return i2d_PUBKEY(pkey, &p)
        }
        return out
    }

    /// ECDSA over SHA-256(message), DER, as OpenSSL makes it.
    func signDER(_ message: [UInt8]) -> [UInt8] {
        let md = EVP_MD_CTX_new()!
        defer { EVP_MD_CTX_free(md) }
        precondition(EVP_DigestSignInit(md, nil, EVP_sha256(), nil, pkey) == 1)
        var len = 0
        precondition(EVP_DigestSign(md, nil, &len, message, message.count) == 1)
        var sig = [UInt8](repeating: 0, count: len)
        precondition(EVP_DigestSign(md, &sig, &len, message, message.count) == 1)
        return Array(sig.prefix(len))
    }

    /// The JWS form: raw r‖s (so 96 bytes for a P-384 key).
    func signRaw(_ message: [UInt8]) -> [UInt8] {
        TestKey.derToRaw(signDER(message), scalar: curve.scalarBytes)
    }

    /// An independent DER → raw conversion, so tests do not lean on the code under test.
    static func derToRaw(_ der: [UInt8], scalar: Int) -> [UInt8] {
        var i = 2
        if der[1] == 0x81 { i = 3 }
        func int() -> [UInt8] {
            precondition(der[i] == 0x02)
            let len = Int(der[i + 1])
            var v = Array(der[(i + 2)..<(i + 2 + len)])
            i += 2 + len
            while v.count > scalar, v.first == 0 { v.removeFirst() }
            return [UInt8](repeating: 0, count: scalar - v.count) + v
        }
        return int() + int()
    }
}

/// One certificate minted for the tests.
final class TestCert: @unchecked Sendable {
    let x509: OpaquePointer
    let der: [UInt8]
    init(_ x: OpaquePointer) {
        x509 = x
        let n = i2d_X509(x, nil)
        var out = [UInt8](repeating: 0, count: Int(n))
        _ = out.withUnsafeMutableBufferPointer { b in
            var p: UnsafeMutablePointer<UInt8>? = b.baseAddress
            return i2d_X509(x, &p)
        }
        der = out
    }
    deinit { X509_free(x509) }

    /// Standard base64, as `x5c` carries certificates.
    var base64: String { Data(der).base64EncodedString() }

    var pem: String {
        let b = base64
        var lines: [String] = []
        var i = b.startIndex
        while i < b.endIndex {
            let j = b.index(i, offsetBy: 64, limitedBy: b.endIndex) ?? b.endIndex
            lines.append(String(b[i..<j]))
            i = j
        }
        return "-----BEGIN CERTIFICATE-----\n" + lines.joined(separator: "\n") + "\n-----END CERTIFICATE-----\n"
    }

    struct Spec {
        var commonName: String
        /// nil: no basicConstraints extension at all.
        var isCA: Bool? = nil
        var markerOIDs: [String] = []
        var notBefore = TestPKI.t("2020-01-01T00:00:00Z")
        var notAfter = TestPKI.t("2040-01-01T00:00:00Z")
        var serial = 1
    }

    /// Issues a certificate for `key`, signed by `issuerKey` (self-signed when `issuer` is nil).
    static func issue(_ spec: Spec, key: TestKey, issuer: TestCert?, issuerKey: TestKey) -> TestCert {
        let x = X509_new()!
        X509_set_version(x, 2)
        ASN1_INTEGER_set(X509_get_serialNumber(x), spec.serial)
        ASN1_TIME_set(X509_getm_notBefore(x), time_t(spec.notBefore.milliseconds / 1000))
        ASN1_TIME_set(X509_getm_notAfter(x), time_t(spec.notAfter.milliseconds / 1000))
        let name = X509_get_subject_name(x)!
        X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC, "family-sync tests", -1, -1, 0)
        X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, spec.commonName, -1, -1, 0)
        X509_set_issuer_name(x, issuer.map { X509_get_subject_name($0.x509) } ?? name)
        X509_set_pubkey(x, key.pkey)
        func add(_ nid: Int32, _ value: String) {
            let ext = X509V3_EXT_conf_nid(nil, nil, nid, value)!
            X509_add_ext(x, ext, -1)
            X509_EXTENSION_free(ext)
        }
        if let ca = spec.isCA {
            add(NID_basic_constraints, ca ? "critical,CA:TRUE" : "critical,CA:FALSE")
            add(NID_key_usage, ca ? "critical,keyCertSign,cRLSign" : "critical,digitalSignature")
        }
        for oid in spec.markerOIDs {
            // Apple's markers hold an ASN.1 NULL.
            let obj = OBJ_txt2obj(oid, 1)!
            let value = ASN1_OCTET_STRING_new()!
            let null: [UInt8] = [0x05, 0x00]
            ASN1_OCTET_STRING_set(value, null, 2)
            let ext = X509_EXTENSION_create_by_OBJ(nil, obj, 0, value)!
            X509_add_ext(x, ext, -1)
            X509_EXTENSION_free(ext)
            ASN1_OCTET_STRING_free(value)
            ASN1_OBJECT_free(obj)
        }
        let md = issuerKey.curve == .p384 ? EVP_sha384() : EVP_sha256()
        precondition(X509_sign(x, issuerKey.pkey, md) > 0)
        return TestCert(x)
    }
}

/// A root → intermediate → leaf PKI shaped like Apple's: Apple's marker OIDs,
/// a CA intermediate, a non-CA leaf with a P-256 key. `.appleLike` signs the
/// root and intermediate with P-384 keys as Apple does; `.allP256` uses P-256
/// throughout.
final class TestPKI: @unchecked Sendable {
    enum Flavor: String, CaseIterable, Sendable { case appleLike, allP256 }

    let flavor: Flavor
    let rootKey: TestKey, intermediateKey: TestKey, leafKey: TestKey
    let root: TestCert, intermediate: TestCert, leaf: TestCert

    static let intermediateOID = ChainPolicy.appleIntermediateMarkerOID
    static let leafOID = ChainPolicy.appleLeafMarkerOID

    static func t(_ s: String) -> Timestamp { Timestamp(rfc3339: s)! }

    /// The leaf's validity: proofs in the tests are signed inside it unless a test says otherwise.
    static let leafNotBefore = t("2025-01-01T00:00:00Z")
    static let leafNotAfter = t("2027-01-01T00:00:00Z")
    static let signedDate = t("2026-06-01T12:00:00Z")
    static let now = t("2026-11-30T10:00:00Z")
    static let expires = t("2026-12-30T10:00:00Z")

    init(_ flavor: Flavor) {
        self.flavor = flavor
        let caCurve: ECCurve = flavor == .appleLike ? .p384 : .p256
        rootKey = TestKey(caCurve)
        intermediateKey = TestKey(caCurve)
        leafKey = TestKey(.p256)
        root = TestCert.issue(.init(commonName: "Test Root CA", isCA: true), key: rootKey, issuer: nil, issuerKey: rootKey)
        intermediate = TestCert.issue(.init(commonName: "Test Intermediate", isCA: true, markerOIDs: [TestPKI.intermediateOID],
                                            notBefore: TestPKI.t("2021-01-01T00:00:00Z"), notAfter: TestPKI.t("2035-01-01T00:00:00Z"), serial: 2),
                                      key: intermediateKey, issuer: root, issuerKey: rootKey)
        leaf = TestPKI.makeLeaf(key: leafKey, intermediate: intermediate, intermediateKey: intermediateKey)
    }

    static func makeLeaf(key: TestKey, intermediate: TestCert, intermediateKey: TestKey, commonName: String = "Test Leaf",
                         isCA: Bool? = false, oids: [String] = [TestPKI.leafOID],
                         notBefore: Timestamp = TestPKI.leafNotBefore, notAfter: Timestamp = TestPKI.leafNotAfter) -> TestCert {
        TestCert.issue(.init(commonName: commonName, isCA: isCA, markerOIDs: oids, notBefore: notBefore, notAfter: notAfter, serial: 3),
                       key: key, issuer: intermediate, issuerKey: intermediateKey)
    }

    static let appleLike = TestPKI(.appleLike)
    static let allP256 = TestPKI(.allP256)
    static func shared(_ f: Flavor) -> TestPKI { f == .appleLike ? appleLike : allP256 }

    /// A verifier pinned on this PKI's root.
    func verifier() throws -> ProofVerifier {
        try ProofVerifier(anchors: [X509Certificate(der: root.der)])
    }

    var chain: [TestCert] { [leaf, intermediate, root] }
}

/// Builds compact JWS tokens from parts, each part overridable for attacks.
struct TokenBuilder {
    var header: JSONValue
    var payload: JSONValue

    static let policy = ProofPolicy(bundleID: "com.example.family", products: ["family.monthly", "family.yearly"], allowSandbox: false)

    static func transaction(signedDate: Timestamp = TestPKI.signedDate, expires: Timestamp? = TestPKI.expires,
                            extra: [(String, JSONValue)] = []) -> JSONValue {
        var o: [(String, JSONValue)] = [
            ("transactionId", .string("2000000123456789")),
            ("originalTransactionId", .string("2000000123456700")),
            ("bundleId", .string("com.example.family")),
            ("productId", .string("family.monthly")),
            ("purchaseDate", .int(signedDate.milliseconds - 60_000)),
            ("type", .string("Auto-Renewable Subscription")),
            ("inAppOwnershipType", .string("PURCHASED")),
            ("signedDate", .int(signedDate.milliseconds)),
            ("environment", .string("Production")),
        ]
        if let expires { o.append(("expiresDate", .int(expires.milliseconds))) }
        for (k, v) in extra {
            if let i = o.firstIndex(where: { $0.0 == k }) { o[i].1 = v } else { o.append((k, v)) }
        }
        return .object(o.filter { !($0.1 == .string("<absent>")) })
    }

    static func header(chain: [TestCert], alg: String = "ES256", extra: [(String, JSONValue)] = []) -> JSONValue {
        .object([("alg", .string(alg)), ("x5c", .array(chain.map { .string($0.base64) }))] + extra)
    }

    init(pki: TestPKI, payload: JSONValue = TokenBuilder.transaction()) {
        header = TokenBuilder.header(chain: pki.chain)
        self.payload = payload
    }

    init(header: JSONValue, payload: JSONValue) {
        self.header = header
        self.payload = payload
    }

    var signingInput: String {
        Base64URL.encode(Array(header.serialized.utf8)) + "." + Base64URL.encode(Array(payload.serialized.utf8))
    }

    func signed(with key: TestKey) -> String {
        let input = signingInput
        return input + "." + Base64URL.encode(key.signRaw(Array(input.utf8)))
    }

    func withSignature(_ bytes: [UInt8]) -> String { signingInput + "." + Base64URL.encode(bytes) }
}

/// Loads a file of the test vectors.
enum Vectors {
    static func data(_ path: String) throws -> Data {
        guard let url = Bundle.module.url(forResource: "Vectors/" + path, withExtension: nil) else {
            throw CocoaError(.fileNoSuchFile, userInfo: [NSFilePathErrorKey: path])
        }
        return try Data(contentsOf: url)
    }
    static func bytes(_ path: String) throws -> [UInt8] { Array(try data(path)) }
    static func text(_ path: String) throws -> String { String(decoding: try data(path), as: UTF8.self) }
}
