/// A DNS message as multicast DNS uses it (RFC 1035 wire format, RFC 6762's
/// cache-flush and unicast-response bits): questions and resource records
/// with the record types DNS-SD needs. Parsing is for hostile input: every
/// read is bounds-checked, compression pointers may only point backwards and
/// at most `DNSLimits.maxPointerHops` times per name, and any malformed
/// packet is a `DNSParseError`, never a crash or an endless loop.

/// The limits of what a packet may hold, each with why it has its value.
public enum DNSLimits {
    /// The largest mDNS packet (RFC 6762 section 17: 9000 bytes, a jumbo frame's payload).
    public static let maxPacketBytes = 9000
    /// A name's wire length, and one label's (RFC 1035 section 2.3.4).
    public static let maxNameBytes = 255
    public static let maxLabelBytes = 63
    /// Compression pointers followed for one name: a name of 255 bytes has
    /// at most 127 labels, so more hops than that can only be a loop.
    public static let maxPointerHops = 127
    /// Questions plus records one packet may declare; each takes at least
    /// 5 bytes, so a 9000-byte packet cannot honestly hold more.
    public static let maxEntries = 1800
}

public struct DNSParseError: Error, Equatable, CustomStringConvertible, Sendable {
    public var message: String
    public var offset: Int
    public init(_ message: String, at offset: Int) {
        self.message = message
        self.offset = offset
    }
    public var description: String { "byte \(offset): \(message)" }
}

/// A domain name: its labels, compared without regard to ASCII case.
public struct DNSName: Hashable, Sendable, CustomStringConvertible {
    public var labels: [[UInt8]]
    public init(labels: [[UInt8]]) { self.labels = labels }
    /// From dotted text ("_family-sync._tcp.local"); labels may not contain dots.
    public init(_ text: String) {
        labels = text.split(separator: ".", omittingEmptySubsequences: true).map { Array($0.utf8) }
    }
    /// The name in lower case, for comparisons and dictionary keys.
    public var key: String {
        labels.map { String(decoding: $0.map { ($0 >= 0x41 && $0 <= 0x5A) ? $0 + 32 : $0 }, as: UTF8.self) }.joined(separator: ".")
    }
    public var description: String { labels.map { String(decoding: $0, as: UTF8.self) }.joined(separator: ".") }
    public static func == (a: DNSName, b: DNSName) -> Bool { a.key == b.key }
    public func hash(into h: inout Hasher) { h.combine(key) }
    /// This name with `label` in front.
    public func prepending(_ label: String) -> DNSName { DNSName(labels: [Array(label.utf8)] + labels) }
    public var first: String { labels.first.map { String(decoding: $0, as: UTF8.self) } ?? "" }
    public var droppingFirst: DNSName { DNSName(labels: Array(labels.dropFirst())) }
    var wireLength: Int { labels.reduce(1) { $0 + 1 + $1.count } }
}

public enum DNSType: UInt16, Sendable {
    case a = 1, ptr = 12, txt = 16, aaaa = 28, srv = 33, nsec = 47, any = 255
}

public struct DNSQuestion: Equatable, Sendable {
    public var name: DNSName
    public var type: UInt16
    /// RFC 6762 section 5.4: the querier asks for a unicast reply.
    public var unicastResponse: Bool
    public init(name: DNSName, type: UInt16, unicastResponse: Bool = false) {
        self.name = name
        self.type = type
        self.unicastResponse = unicastResponse
    }
    public func matches(_ t: DNSType) -> Bool { type == t.rawValue || type == DNSType.any.rawValue }
}

public enum DNSRData: Equatable, Sendable {
    case a([UInt8])
    case aaaa([UInt8])
    case ptr(DNSName)
    case srv(priority: UInt16, weight: UInt16, port: UInt16, target: DNSName)
    case txt([[UInt8]])
    /// Any other type, kept as its bytes (names inside are not decompressed).
    case other(type: UInt16, [UInt8])

    public var type: UInt16 {
        switch self {
        case .a: return DNSType.a.rawValue
        case .aaaa: return DNSType.aaaa.rawValue
        case .ptr: return DNSType.ptr.rawValue
        case .srv: return DNSType.srv.rawValue
        case .txt: return DNSType.txt.rawValue
        case let .other(t, _): return t
        }
    }
}

public struct DNSRecord: Equatable, Sendable {
    public var name: DNSName
    public var ttl: UInt32
    /// RFC 6762 section 10.2: this record replaces what a cache holds for its name and type.
    public var cacheFlush: Bool
    public var data: DNSRData
    public init(name: DNSName, ttl: UInt32, cacheFlush: Bool = false, data: DNSRData) {
        self.name = name
        self.ttl = ttl
        self.cacheFlush = cacheFlush
        self.data = data
    }
}

public struct DNSMessage: Equatable, Sendable {
    public var id: UInt16 = 0
    public var flags: UInt16 = 0
    public var questions: [DNSQuestion] = []
    public var answers: [DNSRecord] = []
    public var authorities: [DNSRecord] = []
    public var additionals: [DNSRecord] = []
    public init() {}

    public var isResponse: Bool { flags & 0x8000 != 0 }
    /// TC: in a multicast query, the known answers go on in the querier's next packets (RFC 6762 section 7.2).
    public static let truncatedFlag: UInt16 = 0x0200
    public var isTruncated: Bool { flags & DNSMessage.truncatedFlag != 0 }
    /// An authoritative answer, as mDNS responses are (QR and AA set).
    public static let responseFlags: UInt16 = 0x8400
    static let classIN: UInt16 = 1

    // MARK: Writing

    /// The wire form, names compressed against earlier ones.
    public func encoded() -> [UInt8] {
        var w = DNSWriter()
        w.u16(id); w.u16(flags)
        w.u16(UInt16(questions.count)); w.u16(UInt16(answers.count))
        w.u16(UInt16(authorities.count)); w.u16(UInt16(additionals.count))
        for q in questions {
            w.name(q.name)
            w.u16(q.type)
            w.u16(DNSMessage.classIN | (q.unicastResponse ? 0x8000 : 0))
        }
        for r in answers + authorities + additionals { w.record(r) }
        return w.bytes
    }

    // MARK: Reading

    /// Parses a packet strictly; trailing bytes after the last record are an error.
    public init(parsing bytes: [UInt8]) throws(DNSParseError) {
        guard bytes.count <= DNSLimits.maxPacketBytes else { throw DNSParseError("packet of \(bytes.count) bytes is over \(DNSLimits.maxPacketBytes)", at: 0) }
        var r = DNSReader(bytes: bytes)
        id = try r.u16()
        flags = try r.u16()
        let qd = Int(try r.u16()), an = Int(try r.u16()), ns = Int(try r.u16()), ar = Int(try r.u16())
        guard qd + an + ns + ar <= DNSLimits.maxEntries else { throw DNSParseError("declares \(qd + an + ns + ar) entries", at: 4) }
        for _ in 0..<qd {
            let name = try r.name()
            let type = try r.u16()
            let cls = try r.u16()
            questions.append(DNSQuestion(name: name, type: type, unicastResponse: cls & 0x8000 != 0))
        }
        answers = try (0..<an).map { _ throws(DNSParseError) in try r.record() }
        authorities = try (0..<ns).map { _ throws(DNSParseError) in try r.record() }
        additionals = try (0..<ar).map { _ throws(DNSParseError) in try r.record() }
        guard r.offset == bytes.count else { throw DNSParseError("\(bytes.count - r.offset) bytes after the last record", at: r.offset) }
    }

    /// Every record of the packet, whatever its section.
    public var allRecords: [DNSRecord] { answers + authorities + additionals }
}

struct DNSWriter {
    var bytes: [UInt8] = []
    /// Where each name suffix (by key) was first written, for compression pointers.
    private var suffixes: [String: Int] = [:]

    mutating func u16(_ v: UInt16) { bytes.append(UInt8(v >> 8)); bytes.append(UInt8(v & 0xFF)) }
    mutating func u32(_ v: UInt32) { u16(UInt16(v >> 16)); u16(UInt16(v & 0xFFFF)) }

    mutating func name(_ n: DNSName) {
        var labels = n.labels[...]
        while !labels.isEmpty {
            let key = DNSName(labels: Array(labels)).key
            if let at = suffixes[key] {
                u16(0xC000 | UInt16(at))
                return
            }
            if bytes.count < 0x3FFF { suffixes[key] = bytes.count }
            let l = labels.removeFirst().prefix(DNSLimits.maxLabelBytes)
            bytes.append(UInt8(l.count))
            bytes.append(contentsOf: l)
        }
        bytes.append(0)
    }

    mutating func record(_ r: DNSRecord) {
        name(r.name)
        u16(r.data.type)
        u16(DNSMessage.classIN | (r.cacheFlush ? 0x8000 : 0))
        u32(r.ttl)
        let lengthAt = bytes.count
        u16(0)
        rdata(r.data)
        let length = bytes.count - lengthAt - 2
        bytes[lengthAt] = UInt8(length >> 8)
        bytes[lengthAt + 1] = UInt8(length & 0xFF)
    }

    /// A record's data; names in it are compressed against earlier ones
    /// (a fresh writer leaves them whole, as RFC 6762 section 8.2 compares them).
    mutating func rdata(_ data: DNSRData) {
        switch data {
        case let .a(b), let .aaaa(b), let .other(_, b): bytes.append(contentsOf: b)
        case let .ptr(n): name(n)
        case let .srv(p, w, port, target):
            u16(p); u16(w); u16(port)
            name(target)
        case let .txt(strings):
            if strings.isEmpty { bytes.append(0) }
            for s in strings {
                let s = s.prefix(255)
                bytes.append(UInt8(s.count))
                bytes.append(contentsOf: s)
            }
        }
    }
}

struct DNSReader {
    let bytes: [UInt8]
    var offset = 0

    mutating func u8() throws(DNSParseError) -> UInt8 {
        guard offset < bytes.count else { throw DNSParseError("truncated", at: offset) }
        defer { offset += 1 }
        return bytes[offset]
    }
    mutating func u16() throws(DNSParseError) -> UInt16 {
        guard offset + 2 <= bytes.count else { throw DNSParseError("truncated", at: offset) }
        defer { offset += 2 }
        return UInt16(bytes[offset]) << 8 | UInt16(bytes[offset + 1])
    }
    mutating func u32() throws(DNSParseError) -> UInt32 {
        UInt32(try u16()) << 16 | UInt32(try u16())
    }
    mutating func take(_ n: Int) throws(DNSParseError) -> [UInt8] {
        guard n >= 0, offset + n <= bytes.count else { throw DNSParseError("truncated: \(n) bytes wanted", at: offset) }
        defer { offset += n }
        return Array(bytes[offset..<offset + n])
    }

    /// A name at the current offset, following compression pointers. Each
    /// pointer must point before the label that holds it, so a chain of
    /// pointers can only move backwards and ends; the hop count bounds it too.
    mutating func name() throws(DNSParseError) -> DNSName {
        var labels: [[UInt8]] = []
        var at = offset
        var resume: Int?
        var hops = 0
        var wire = 1
        /// Pointers must go strictly below this.
        var floor = offset
        while true {
            guard at < bytes.count else { throw DNSParseError("name runs past the end", at: at) }
            let len = bytes[at]
            switch len & 0xC0 {
            case 0x00:
                if len == 0 {
                    offset = resume ?? at + 1
                    return DNSName(labels: labels)
                }
                guard at + 1 + Int(len) <= bytes.count else { throw DNSParseError("label runs past the end", at: at) }
                wire += 1 + Int(len)
                guard wire <= DNSLimits.maxNameBytes else { throw DNSParseError("name longer than \(DNSLimits.maxNameBytes) bytes", at: at) }
                labels.append(Array(bytes[at + 1..<at + 1 + Int(len)]))
                at += 1 + Int(len)
            case 0xC0:
                guard at + 2 <= bytes.count else { throw DNSParseError("compression pointer cut short", at: at) }
                let target = Int(len & 0x3F) << 8 | Int(bytes[at + 1])
                guard target < floor else { throw DNSParseError("compression pointer to \(target) does not point backwards", at: at) }
                hops += 1
                guard hops <= DNSLimits.maxPointerHops else { throw DNSParseError("too many compression pointers", at: at) }
                if resume == nil { resume = at + 2 }
                floor = target
                at = target
            default:
                throw DNSParseError("unknown label type 0x\(String(len, radix: 16))", at: at)
            }
        }
    }

    mutating func record() throws(DNSParseError) -> DNSRecord {
        let owner = try name()
        let type = try u16()
        let cls = try u16()
        let ttl = try u32()
        let length = Int(try u16())
        let start = offset
        guard start + length <= bytes.count else { throw DNSParseError("record data of \(length) bytes runs past the end", at: start) }
        let end = start + length
        let data: DNSRData
        switch DNSType(rawValue: type) {
        case .a:
            guard length == 4 else { throw DNSParseError("A record of \(length) bytes", at: start) }
            data = .a(try take(4))
        case .aaaa:
            guard length == 16 else { throw DNSParseError("AAAA record of \(length) bytes", at: start) }
            data = .aaaa(try take(16))
        case .ptr:
            data = .ptr(try name())
        case .srv:
            let p = try u16(), w = try u16(), port = try u16()
            data = .srv(priority: p, weight: w, port: port, target: try name())
        case .txt:
            var strings: [[UInt8]] = []
            while offset < end {
                let n = Int(try u8())
                guard offset + n <= end else { throw DNSParseError("TXT string runs past its record", at: offset) }
                strings.append(try take(n))
            }
            data = .txt(strings)
        default:
            data = .other(type: type, try take(length))
        }
        guard offset == end else { throw DNSParseError("record data is \(length) bytes but its content is \(offset - start)", at: start) }
        return DNSRecord(name: owner, ttl: ttl, cacheFlush: cls & 0x8000 != 0, data: data)
    }
}
