import Foundation

/// A host and port as written on the command line: `HOST:PORT`, where HOST
/// is a name, an IPv4 address, a bracketless IPv6 address (the port is after
/// the last colon, as pairing offers write it) or `[IPv6]`.
public struct HostPort: Sendable, Equatable, CustomStringConvertible {
    public var host: String
    public var port: UInt16
    public init(host: String, port: UInt16) {
        self.host = host
        self.port = port
    }

    public init?(parsing text: String) {
        guard let colon = text.lastIndex(of: ":"), let p = UInt16(text[text.index(after: colon)...]) else { return nil }
        var h = String(text[..<colon])
        if h.hasPrefix("[") && h.hasSuffix("]") { h = String(h.dropFirst().dropLast()) }
        guard !h.isEmpty, h.utf8.count <= 253,
              h.utf8.allSatisfy({ c in (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || c == 0x2D || c == 0x2E || c == 0x3A || c == 0x5F })
        else { return nil }
        host = h
        port = p
    }

    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}
