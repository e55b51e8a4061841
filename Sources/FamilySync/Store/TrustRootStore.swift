/// The trust anchor a store's proofs are judged against, when it is not
/// Apple Root CA - G3: given once (`jws-verify --save --root`, `peer-sync
/// join --root`) and kept as the store setting `trust_roots` (the
/// certificates as PEM), so every later command judges by it without being
/// told again. A `--root` on the command line still wins for that command.
extension Store {
    public static let trustRootsSetting = "trust_roots"

    /// The kept roots, or nil when the store judges by the bundled Apple root.
    public func trustRoots() throws -> [X509Certificate]? {
        guard let pem = try setting(Store.trustRootsSetting), !pem.isEmpty else { return nil }
        do { return try X509Certificate.load(contents: Array(pem.utf8)) } catch {
            throw StoreError(.badSetting, path: path, detail: "not PEM certificates: \(error)", other: Store.trustRootsSetting)
        }
    }

    /// Keeps `roots` as the store's anchor. Call inside a write transaction.
    public func setTrustRootsInTransaction(_ roots: [X509Certificate]) throws {
        try setSetting(Store.trustRootsSetting, roots.map(\.pem).joined())
    }
}

extension X509Certificate {
    /// The certificate as PEM text, 64 base64 characters a line.
    public var pem: String {
        let b64 = Array(Base64URL.encodeStandard(der).utf8)
        var s = "-----BEGIN CERTIFICATE-----\n"
        var i = 0
        while i < b64.count {
            s += String(decoding: b64[i..<min(i + 64, b64.count)], as: UTF8.self) + "\n"
            i += 64
        }
        return s + "-----END CERTIFICATE-----\n"
    }
}
