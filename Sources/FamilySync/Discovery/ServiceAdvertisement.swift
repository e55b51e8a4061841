import FoundationEssentials
import Glibc

/// What one device advertises over DNS-SD: `INSTANCE._family-sync._tcp.local`
/// with an SRV record to `HOST.local` at the sync port and a TXT record, where
/// INSTANCE and HOST are the day's device tag (see `DiscoveryTags`).
public struct ServiceAdvertisement: Sendable, Equatable {
    public static let serviceType = DNSName("_family-sync._tcp.local")
    /// RFC 6763 section 9: the name that lists every service type on the link.
    public static let serviceTypes = DNSName("_services._dns-sd._udp.local")
    static let local = DNSName("local")

    public var instance: String
    public var port: UInt16
    /// TXT strings: `v=` the sync protocol version, the same for every
    /// device, so the record tells nothing of the family or of its offers.
    public var txt: [String]

    /// The host name's label: the instance's tag, or "tag-N" after a conflict.
    public var hostLabel: String

    public var instanceName: DNSName { ServiceAdvertisement.serviceType.prepending(instance) }
    public var hostName: DNSName { ServiceAdvertisement.local.prepending(hostLabel) }

    public init(instance: String, port: UInt16, txt: [String]) {
        self.instance = instance
        self.port = port
        self.txt = txt
        hostLabel = instance
    }

    /// The names to use after `n - 1` conflicts (RFC 6763 section 9's style):
    /// instance "tag (n)" and host "tag-n"; n = 1 is the advertisement as it is.
    public func renamed(_ n: Int) -> ServiceAdvertisement {
        guard n > 1 else { return self }
        var r = self
        r.instance = "\(instance) (\(n))"
        r.hostLabel = "\(hostLabel)-\(n)"
        return r
    }

    /// The tag a host label was made from: without a "-n" a conflict added.
    public static func baseHostLabel(_ label: String) -> String {
        guard let dash = label.lastIndex(of: "-"), dash > label.startIndex,
              let n = Int(label[label.index(after: dash)...]), n > 1 else { return label }
        return String(label[..<dash])
    }

    /// The tag an instance name was made from: without a " (n)" a conflict added.
    public static func baseTag(_ instance: String) -> String {
        guard instance.hasSuffix(")"), let open = instance.lastIndex(of: "("), open > instance.startIndex,
              instance[instance.index(before: open)] == " ",
              let n = Int(instance[instance.index(after: open)..<instance.index(before: instance.endIndex)]), n > 1 else { return instance }
        return String(instance[..<instance.index(before: open)])
    }

    /// This store's advertisement for the day of `now`; nil for a store with
    /// no family, no family key, or a revoked device (which serves nobody).
    public static func current(store: Store, port: UInt16, now: Timestamp) throws -> ServiceAdvertisement? {
        guard let fam = try store.family(), let key = try store.familySecret(), !(try store.isSelfRevoked) else { return nil }
        let tags = try DiscoveryTags(familyKey: key, family: fam.id)
        return ServiceAdvertisement(instance: tags.deviceTag(try store.deviceID, day: DiscoveryTags.day(now)), port: port, txt: ["v=\(SyncProtocol.version)"])
    }
}
