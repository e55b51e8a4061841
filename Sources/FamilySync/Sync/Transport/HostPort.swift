import FoundationEssentials
import Glibc

/// A host and port as written on the command line and in pairing offers:
/// `HOST:PORT`, where HOST is a host name, an IPv4 address, a bracketless
/// IPv6 address (the port is after the last colon, as pairing offers write
/// it) or `[IPv6]`, a link-local IPv6 one with its `%interface`. This is the one address rule: the CLI, the offer and the
/// socket layer all parse with it.
public struct HostPort: Sendable, Equatable, CustomStringConvertible {
    public var host: String
    /// 0 only for a listening address (the kernel picks a free port).
    public var port: UInt16
    public init(host: String, port: UInt16) {
        self.host = host
        self.port = port
    }

    /// The longest host name DNS can carry (RFC 1035, in text form).
    public static let maxHostBytes = 253

    /// Why a text is not an address.
    public enum Problem: Error, Sendable, Equatable {
        /// No colon, no port after it, or the port is not a decimal number up to 65535.
        case notHostPort
        /// The host is neither a host name (letters, digits, `-` and `.`,
        /// RFC 1123; no `_`, which no pairing offer can carry either), nor an
        /// IPv4 or IPv6 address, or is longer than `maxHostBytes`.
        case badHost
    }

    /// Parses `text` by the rule above. Port 0 parses (a listener asks for
    /// any port); `isConnectable` says whether a peer can be reached there.
    public init(validating text: String) throws(Problem) {
        guard let colon = text.lastIndex(of: ":") else { throw .notHostPort }
        let digits = text.utf8[text.utf8.index(after: colon)...]
        guard (1...5).contains(digits.count), digits.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
              let p = UInt16(Substring(digits)) else { throw .notHostPort }
        var h = Substring(text[..<colon])
        guard !h.isEmpty else { throw .notHostPort }
        let bracketed = h.hasPrefix("[") && h.hasSuffix("]")
        if bracketed { h = h.dropFirst().dropLast() }
        guard !h.isEmpty, h.utf8.count <= HostPort.maxHostBytes else { throw .badHost }
        if h.contains(":") {
            // A link-local address carries its interface: fe80::1%eth0 (RFC 4007 section 11).
            let parts = h.split(separator: "%", maxSplits: 1, omittingEmptySubsequences: false)
            if parts.count == 2 {
                guard (1...Int(IF_NAMESIZE) - 1).contains(parts[1].utf8.count), parts[1].utf8.allSatisfy({ c in
                    (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || c == 0x2D || c == 0x2E || c == 0x5F
                }) else { throw .badHost }
            }
            var a = in6_addr()
            guard inet_pton(AF_INET6, String(parts[0]), &a) == 1 else { throw .badHost }
        } else {
            guard !bracketed, h.utf8.allSatisfy({ c in
                (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || c == 0x2D || c == 0x2E
            }) else { throw .badHost }
        }
        host = String(h)
        port = p
    }

    public init?(parsing text: String) {
        guard let a = try? HostPort(validating: text) else { return nil }
        self = a
    }

    /// A peer can be reached here: port 0 is only for listening.
    public var isConnectable: Bool { port != 0 }

    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }

    /// The form a pairing offer carries: IPv6 without brackets (QR's
    /// alphanumeric set has none), lower case.
    public var offerText: String { "\(host.lowercased()):\(port)" }
}
