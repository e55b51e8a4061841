/// HKDF-SHA256 derivations of the session PSKs. Inputs are joined with a 0x00
/// byte between fields; every output is 32 bytes.
public enum SessionKeys {
    /// Salts that separate the uses of one secret.
    static let syncSalt = Array("family-sync/1 sync".utf8)
    /// Version 4's sealed names: PSK identities and the hints of notices
    /// (§3.3), bundle headers (§12b).
    static let identitySalt = Array("family-sync/4 identity".utf8)
    static let bundleHeaderSalt = Array("family-sync/4 bundle-header".utf8)
    static let pairSalt = Array("family-sync/1 pair".utf8)
    static let pairTagSalt = Array("family-sync/1 pair-tag".utf8)
    public static let keyBytes = 32

    /// HKDF `info`: the fields joined with one 0x00 byte between them (docs/protocol.md §3).
    static func info(_ fields: [String]) -> [UInt8] {
        var out: [UInt8] = []
        for (i, f) in fields.enumerated() {
            if i > 0 { out.append(0) }
            out.append(contentsOf: f.utf8)
        }
        return out
    }

    /// Member-to-member: the family key of `epoch`, bound to both device IDs in role order.
    public static func familyPSK(familyKey: SecretBytes, family: String, epoch: Int64, client: String, server: String) throws -> SecretBytes {
        try hkdfSHA256(secret: familyKey, salt: syncSalt, info: info(["family-key", family, String(epoch), client, server]), length: keyBytes)
    }

    /// Owner-to-member (either way round): the member's device key, bound to both device IDs in role order.
    public static func devicePSK(deviceKey: SecretBytes, family: String, client: String, server: String) throws -> SecretBytes {
        try hkdfSHA256(secret: deviceKey, salt: syncSalt, info: info(["device-key", family, client, server]), length: keyBytes)
    }

    /// Pairing: the offer's nonce (its text, as in the QR code).
    public static func pairingPSK(nonce: String, family: String) throws -> SecretBytes {
        try hkdfSHA256(secret: SecretBytes(nonce.utf8), salt: pairSalt, info: info(["pair", family]), length: keyBytes)
    }

    /// The tag that names an offer between its two holders: 16 bytes of HKDF
    /// output in lowercase hex. It never crosses the network in clear; the
    /// owner's WELCOME signs it (§9), so the proof fits this offer only.
    public static func offerTag(nonce: String, family: String) throws -> String {
        Hex.encode(try hkdfSHA256(secret: Array(nonce.utf8), salt: pairTagSalt, info: info(["tag", family]), length: 16))
    }
}
