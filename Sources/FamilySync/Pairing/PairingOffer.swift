import Glibc

/// A pairing offer, the text inside the QR code (docs/design.md §6).
/// Deliberately boring: upper-case ASCII from QR's alphanumeric set only
/// (0-9 A-Z space $ % * + - . / :), so it encodes compactly and no decoder
/// can mangle its charset:
///
///     FS1/<FAMILY UUID>/<NONCE>/<EXPIRES>/<HOST:PORT>
///
/// `FS1` is the version; the nonce is 160 random bits in RFC 4648 base32
/// (32 characters, no padding); EXPIRES is Unix seconds; the address is
/// optional (the field may be empty). An IPv6 host is written without
/// brackets: the port is always after the last colon.
public struct PairingOffer: Sendable, Equatable {
    public static let prefix = "FS1"
    public static let version = 1
    /// Random bits in a nonce: more than the 128 a one-time secret needs.
    public static let nonceBits = 160
    public static let nonceLength = 32
    /// The longest QR text an offer may take.
    public static let maxTextLength = 120
    /// How long an offer stays open unless `--ttl` says otherwise.
    public static let defaultTTL = TimeSpan.minutes(10)
    /// The longest an offer may stay open: it is a sheet shown to someone in
    /// the room, not a standing invitation.
    public static let maxTTL = TimeSpan.days(1)

    public var family: String
    public var nonce: String
    public var expiresAt: Timestamp
    public var address: String?

    public init(family: String, nonce: String, expiresAt: Timestamp, address: String?) {
        self.family = family
        self.nonce = nonce
        self.expiresAt = expiresAt
        self.address = address
    }

    /// The exact QR text.
    public var text: String {
        let secs = expiresAt.milliseconds / 1000
        return [PairingOffer.prefix, family, nonce, String(secs), address?.uppercased() ?? ""].joined(separator: "/")
    }

    public var json: JSONValue {
        .object([("version", .int(PairingOffer.version)), ("family", .string(family)), ("nonce", .string(nonce)),
                 ("expiresAt", .string(expiresAt.rfc3339)), ("addr", .optional(address)), ("qr", .string(text))])
    }

    /// A fresh offer with a nonce from the CSPRNG.
    public static func make(family: String, ttl: TimeSpan, address: String?, now: Timestamp) throws -> PairingOffer {
        let nonce = Base32.encode(try secureRandomBytes(nonceBits / 8))
        // Whole seconds, so the QR text and the store agree exactly.
        let expiry = Timestamp(milliseconds: (now.adding(ttl).milliseconds / 1000) * 1000)
        let offer = PairingOffer(family: family, nonce: nonce, expiresAt: expiry, address: try address.map(validateAddress))
        guard offer.text.utf8.count <= maxTextLength else {
            throw PairingError(.addressTooLong, source: address ?? "", limit: maxTextLength)
        }
        return offer
    }

    /// Why a text is not a valid offer.
    public struct Invalid: Error, CustomStringConvertible, Sendable {
        public var field: String
        public var problem: String
        public var description: String { "\(field): \(problem)" }
    }

    /// Parses and validates strictly: version, family UUID, nonce length and
    /// alphabet, expiry, address. Expiry against `now` is checked only when
    /// `now` is given (a scanner may not know whether the clock is right).
    public init(text: String, now: Timestamp? = nil) throws(Invalid) {
        guard text.utf8.count <= PairingOffer.maxTextLength else { throw Invalid(field: "text", problem: "longer than \(PairingOffer.maxTextLength) characters") }
        let parts = text.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        guard parts.first == PairingOffer.prefix else {
            if let v = parts.first, v.hasPrefix("FS") { throw Invalid(field: "version", problem: "unsupported version '\(v.prefix(8))'") }
            throw Invalid(field: "version", problem: "not a family-sync pairing offer")
        }
        guard parts.count == 5 else { throw Invalid(field: "text", problem: "expected 5 fields separated by '/', found \(parts.count)") }
        guard PairingOffer.isUUID(parts[1]) else { throw Invalid(field: "family", problem: "not an upper-case UUID") }
        guard parts[2].utf8.count == PairingOffer.nonceLength, parts[2].utf8.allSatisfy(Base32.isAlphabet) else {
            throw Invalid(field: "nonce", problem: "not \(PairingOffer.nonceLength) base32 characters")
        }
        guard let secs = Int64(parts[3]), secs > 0, parts[3].utf8.count <= 12, parts[3].utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else {
            throw Invalid(field: "expiresAt", problem: "not a time in Unix seconds")
        }
        let expiry = Timestamp(milliseconds: secs * 1000)
        if let now, expiry <= now { throw Invalid(field: "expiresAt", problem: "offer expired at \(expiry.rfc3339)") }
        var addr: String? = nil
        if !parts[4].isEmpty {
            do { addr = try PairingOffer.validateAddress(parts[4]) } catch { throw Invalid(field: "addr", problem: "not HOST:PORT") }
        }
        self.init(family: parts[1], nonce: parts[2], expiresAt: expiry, address: addr)
    }

    static func isUUID(_ s: String) -> Bool {
        // Every FAMILY names a device per roster entry: checked byte by byte, with nothing allocated.
        guard s.utf8.count == 36 else { return false }
        var i = 0
        for c in s.utf8 {
            let dash = i == 8 || i == 13 || i == 18 || i == 23
            guard dash ? c == 0x2D : (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x46) else { return false }
            i += 1
        }
        return true
    }

    /// An address an offer can carry, by the one address rule (`HostPort`),
    /// with a port a joining device can connect to. Returns it as the offer
    /// writes it (lower case, IPv6 without brackets).
    @discardableResult
    public static func validateAddress(_ a: String) throws -> String {
        let hp: HostPort
        do { hp = try HostPort(validating: a) } catch {
            switch error {
            case .notHostPort: throw PairingError(.addressNotHostPort, source: a)
            case .badHost: throw PairingError(.addressBadCharacters, source: a)
            }
        }
        guard hp.isConnectable else { throw PairingError(.addressNotHostPort, source: a) }
        return hp.offerText
    }
}

/// RFC 4648 base32 without padding (upper case), QR-alphanumeric safe.
public enum Base32 {
    static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567".utf8)
    public static func isAlphabet(_ c: UInt8) -> Bool { (c >= 0x41 && c <= 0x5A) || (c >= 0x32 && c <= 0x37) }
    public static func encode(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        var buffer: UInt32 = 0, bits = 0
        for b in bytes {
            buffer = buffer << 8 | UInt32(b)
            bits += 8
            while bits >= 5 {
                out.append(alphabet[Int((buffer >> UInt32(bits - 5)) & 31)])
                bits -= 5
            }
        }
        if bits > 0 { out.append(alphabet[Int((buffer << UInt32(5 - bits)) & 31)]) }
        return String(decoding: out, as: UTF8.self)
    }
    public static func decode(_ s: String) -> [UInt8]? {
        var out: [UInt8] = []
        var buffer: UInt32 = 0, bits = 0
        for c in s.utf8 {
            let v: UInt32
            switch c {
            case 0x41...0x5A: v = UInt32(c - 0x41)
            case 0x32...0x37: v = UInt32(c - 0x32 + 26)
            default: return nil
            }
            buffer = buffer << 5 | v
            bits += 5
            if bits >= 8 {
                out.append(UInt8((buffer >> UInt32(bits - 8)) & 0xFF))
                bits -= 8
            }
        }
        return out
    }
}
