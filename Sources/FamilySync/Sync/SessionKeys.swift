/// The PSK identity a client offers (in clear, inside the ClientHello) and
/// the key behind it (docs/protocol.md, "Keys"). The identity names, but never
/// reveals, the key: the server finds the key from it and the handshake's PSK
/// binder proves the client holds the same one.
public enum SessionIdentity: Equatable, Sendable {
    /// A sync session: `client` connects to `server` in `family`, offering a
    /// key of `epoch` (the family key's epoch; ignored for device keys).
    case sync(family: String, client: String, server: String, epoch: Int64)
    /// A pairing join: `tag` names the offer without revealing its nonce.
    case pair(family: String, tag: String)

    public var text: String {
        switch self {
        case let .sync(f, c, s, e): return "FS1 S \(f) \(c) \(s) \(e)"
        case let .pair(f, t): return "FS1 P \(f) \(t)"
        }
    }

    public var bytes: [UInt8] { Array(text.utf8) }

    /// A pairing identity's offer tag ("" for a sync identity).
    var tag: String {
        if case let .pair(_, t) = self { return t }
        return ""
    }

    /// Parses an identity strictly; nil for anything else.
    public init?(bytes: [UInt8]) {
        guard bytes.count <= 200, bytes.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) else { return nil }
        let parts = String(decoding: bytes, as: UTF8.self).split(separator: " ", omittingEmptySubsequences: false).map(String.init)
        guard parts.count >= 2, parts[0] == "FS1" else { return nil }
        switch parts[1] {
        case "S":
            guard parts.count == 6, PairingOffer.isUUID(parts[2]), PairingOffer.isUUID(parts[3]), PairingOffer.isUUID(parts[4]),
                  parts[5].utf8.count <= 18, let e = Int64(parts[5]), e >= 0, e <= SyncLimits.maxEpoch, String(e) == parts[5] else { return nil }
            self = .sync(family: parts[2], client: parts[3], server: parts[4], epoch: e)
        case "P":
            guard parts.count == 4, PairingOffer.isUUID(parts[2]), parts[3].utf8.count == 32,
                  parts[3].utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }) else { return nil }
            self = .pair(family: parts[2], tag: parts[3])
        default:
            return nil
        }
    }
}

/// HKDF-SHA256 derivations of the session PSKs. Inputs are joined with a 0x00
/// byte between fields; every output is 32 bytes.
public enum SessionKeys {
    /// Salts that separate the uses of one secret.
    static let syncSalt = Array("family-sync/1 sync".utf8)
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

    /// The tag that names an offer in a pairing identity: 16 bytes of HKDF
    /// output in lowercase hex, so the nonce itself never crosses the network.
    public static func offerTag(nonce: String, family: String) throws -> String {
        Hex.encode(try hkdfSHA256(secret: Array(nonce.utf8), salt: pairTagSalt, info: info(["tag", family]), length: 16))
    }
}
