/// The names a device advertises under, which only its family can read.
///
/// A stranger on the network sees a `_family-sync._tcp` service whose
/// instance and host names are an HMAC-SHA256 tag that changes every UTC day,
/// and a TXT record that is the same for every device (`v=` the protocol
/// version): no family ID, device ID or host name, no tag two devices of one
/// family share, nothing that says an offer is open, and nothing to link
/// today's advertisement to yesterday's (docs/protocol.md §12a). A member
/// holding the family key computes each device's tag for the day and
/// recognises which device it is; a device not in its roster yet is not
/// recognised until the roster lists it.
public struct DiscoveryTags: Sendable {
    /// The key the tags are made with, derived from the family key.
    private let key: [UInt8]
    public let family: String

    static let salt = Array("family-sync/1 discovery".utf8)
    /// Bytes kept of each tag: 80 bits (names must not collide).
    static let deviceTagBytes = 10
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

    /// A device's instance (and host) name for a day: 16 base32 characters.
    public func deviceTag(_ device: String, day: Int64) -> String {
        Base32.encode(Array(hmacSHA256(key: key, message: Array("device\u{0}\(day)\u{0}\(device)".utf8)).prefix(DiscoveryTags.deviceTagBytes))).lowercased()
    }
}

extension DiscoveryTags {
    /// Recognises this family's services by the day's tag of one of
    /// `devices` (on any accepted day), naming the device; this device's
    /// own advertisement is never a peer.
    public func recogniser(devices: [String], me: String, now: Timestamp) -> PeerFinder.Recogniser {
        let days = DiscoveryTags.acceptedDays(now)
        var byTag: [String: String] = [:]
        for d in devices + [me] { for day in days { byTag[deviceTag(d, day: day)] = d } }
        let names = byTag
        return { f in
            guard let device = names[ServiceAdvertisement.baseTag(f.instance).lowercased()], device != me else { return nil }
            return .some(device)
        }
    }
}
