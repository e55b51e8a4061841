/// The names a device advertises under, which only its family can read.
///
/// A stranger on the network sees a `_family-sync._tcp` service whose instance
/// name and TXT strings are HMAC-SHA256 tags that change every UTC day: no
/// family ID, device ID or host name in clear, and nothing to link today's
/// advertisement to yesterday's. A member holding the family key computes
/// the same tags and recognises its family and which device it is. A device
/// joining with an offer recognises the owner by a tag of the offer's nonce.
public struct DiscoveryTags: Sendable {
    /// The key the tags are made with, derived from the family key.
    private let key: [UInt8]
    public let family: String

    static let salt = Array("family-sync/1 discovery".utf8)
    /// Bytes kept of each tag: 80 bits for a device (names must not collide),
    /// 50 for the family tag (recognition only; a false match costs one refused handshake).
    static let deviceTagBytes = 10
    static let familyTagBytes = 6
    static let offerTagBytes = 6
    /// Open offers named in the TXT record at most (the newest), so the record stays small.
    public static let maxOfferTags = 4
    static let dayMilliseconds: Int64 = 86_400_000

    public init(familyKey: SecretBytes, family: String) throws {
        self.family = family
        let k = try hkdfSHA256(secret: familyKey, salt: DiscoveryTags.salt, info: Array("discovery\u{0}\(family)".utf8), length: 32)
        key = k.withUnsafeBytes { Array($0) }
    }

    /// The UTC day a time falls on.
    public static func day(_ t: Timestamp) -> Int64 { t.milliseconds >= 0 ? t.milliseconds / dayMilliseconds : -1 }
    /// The days a browser accepts: a peer's clock may be on the day before or after.
    public static func acceptedDays(_ t: Timestamp) -> [Int64] { let d = day(t); return [d, d - 1, d + 1] }

    private func tag(_ message: String, bytes: Int) -> String {
        Base32.encode(Array(hmacSHA256(key: key, message: Array(message.utf8)).prefix(bytes))).lowercased()
    }

    /// A device's instance (and host) name for a day: 16 base32 characters.
    public func deviceTag(_ device: String, day: Int64) -> String { tag("device\u{0}\(day)\u{0}\(device)", bytes: DiscoveryTags.deviceTagBytes) }
    /// The family's TXT tag for a day: 10 base32 characters.
    public func familyTag(day: Int64) -> String { tag("family\u{0}\(day)", bytes: DiscoveryTags.familyTagBytes) }

    /// An open offer's TXT tag for a day, which its holder can compute
    /// without the family key (it has the nonce only).
    public static func offerTag(nonce: String, family: String, day: Int64) throws -> String {
        let k = try hkdfSHA256(secret: Array(nonce.utf8), salt: salt, info: Array("offer\u{0}\(family)".utf8), length: 32)
        return Base32.encode(Array(hmacSHA256(key: k, message: Array("offer\u{0}\(day)".utf8)).prefix(offerTagBytes))).lowercased()
    }
}

extension DiscoveryTags {
    /// Recognises this family's services: the day's family tag (on any
    /// accepted day), named by device tag when it is one of `devices`;
    /// this device's own advertisement is never a peer.
    public func recogniser(devices: [String], me: String, now: Timestamp) -> PeerFinder.Recogniser {
        let days = DiscoveryTags.acceptedDays(now)
        let familyTags = Set(days.map { familyTag(day: $0) })
        var byTag: [String: String] = [:]
        for d in devices + [me] { for day in days { byTag[deviceTag(d, day: day)] = d } }
        let names = byTag
        return { f in
            guard let t = ServiceAdvertisement.txtValue("f", in: f.txt), familyTags.contains(t.lowercased()) else { return nil }
            let device = names[ServiceAdvertisement.baseTag(f.instance).lowercased()]
            if device == me { return nil }
            return .some(device)
        }
    }

    /// Recognises the owner's service by an open offer's tag (a joining
    /// device holds only the offer).
    public static func offerRecogniser(nonce: String, family: String, owner: String?, now: Timestamp) throws -> PeerFinder.Recogniser {
        let tags = Set(try acceptedDays(now).map { try offerTag(nonce: nonce, family: family, day: $0) })
        return { f in
            guard let list = ServiceAdvertisement.txtValue("o", in: f.txt) else { return nil }
            return list.lowercased().split(separator: ",").contains(where: { tags.contains(String($0)) }) ? .some(owner) : nil
        }
    }
}
