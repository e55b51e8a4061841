import FoundationEssentials
import Glibc

/// A JSON value that keeps object keys in their order, so output is stable and
/// unknown fields survive a round trip. Numbers keep their source text: a
/// value passed through is never re-rounded.
public enum JSONValue: Equatable, Sendable {
    case null
    case bool(Bool)
    case number(String)
    case string(String)
    case array([JSONValue])
    case object([(String, JSONValue)])

    public static func == (a: JSONValue, b: JSONValue) -> Bool {
        switch (a, b) {
        case (.null, .null): return true
        case let (.bool(x), .bool(y)): return x == y
        case let (.number(x), .number(y)): return x == y || Double(x) == Double(y)
        case let (.string(x), .string(y)): return x == y
        case let (.array(x), .array(y)): return x == y
        case let (.object(x), .object(y)):
            return x.count == y.count && zip(x, y).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        default: return false
        }
    }

    public static func int<I: BinaryInteger>(_ v: I) -> JSONValue { .number(String(v)) }
    public static func double(_ v: Double) -> JSONValue {
        guard v.isFinite else { return .null }
        if v == v.rounded(), abs(v) < 1e15 { return .number(String(Int64(v))) }
        return .number(String(cFormat: "%.6g", v))
    }
    /// A string, or null when absent.
    public static func optional(_ s: String?) -> JSONValue { s.map { .string($0) } ?? .null }

    public subscript(key: String) -> JSONValue? {
        guard case let .object(pairs) = self else { return nil }
        return pairs.first(where: { $0.0 == key })?.1
    }
    public var stringValue: String? { if case let .string(s) = self { return s }; return nil }
    public var boolValue: Bool? { if case let .bool(b) = self { return b }; return nil }
    public var arrayValue: [JSONValue]? { if case let .array(a) = self { return a }; return nil }
    public var objectValue: [(String, JSONValue)]? { if case let .object(o) = self { return o }; return nil }
    public var int64Value: Int64? { if case let .number(n) = self { return Int64(n) ?? Double(n).flatMap { $0 == $0.rounded() && abs($0) < 9.2e18 ? Int64($0) : nil } }; return nil }
    public var doubleValue: Double? { if case let .number(n) = self { return Double(n) }; return nil }
    public var isNull: Bool { if case .null = self { return true }; return false }
}

// MARK: - Writing

extension JSONValue {
    /// Compact JSON (no spaces), the form every tool writes on stdout.
    public var serialized: String {
        var out = ""
        out.reserveCapacity(64)
        write(to: &out)
        return out
    }

    public func write(to out: inout String) {
        switch self {
        case .null: out += "null"
        case let .bool(b): out += b ? "true" : "false"
        case let .number(n): out += n
        case let .string(s): JSONValue.writeString(s, to: &out)
        case let .array(items):
            out += "["
            for (i, item) in items.enumerated() {
                if i > 0 { out += "," }
                item.write(to: &out)
            }
            out += "]"
        case let .object(pairs):
            out += "{"
            for (i, (k, v)) in pairs.enumerated() {
                if i > 0 { out += "," }
                JSONValue.writeString(k, to: &out)
                out += ":"
                v.write(to: &out)
            }
            out += "}"
        }
    }

    public static func writeString(_ s: String, to out: inout String) {
        out += "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case "\u{08}": out += "\\b"
            case "\u{0C}": out += "\\f"
            case "\u{2028}": out += "\\u2028"
            case "\u{2029}": out += "\\u2029"
            default:
                if scalar.value < 0x20 || scalar.value == 0x7F {
                    out += String(cFormat: "\\u%04x", scalar.value)
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        out += "\""
    }
}

// MARK: - Parsing

/// Why a JSON text was rejected, with the byte offset where it went wrong.
public struct JSONParseError: Error, CustomStringConvertible, Sendable {
    public var offset: Int
    public var message: String
    public var description: String { "\(message) at byte \(offset + 1)" }
}

/// A strict RFC 8259 parser with a nesting limit, so hostile input cannot
/// exhaust the stack.
public struct JSONParser {
    public static let maxDepth = 64
    /// Objects up to this many keys check duplicates by scanning; larger ones use a set.
    static let linearKeyScan = 16

    public static func parse(_ text: String) throws -> JSONValue {
        var utf8 = text
        return try utf8.withUTF8 { try parse(UnsafeRawBufferPointer($0)) }
    }

    public static func parse(_ bytes: some Collection<UInt8>) throws -> JSONValue {
        let array = Array(bytes)
        return try array.withUnsafeBytes { try parse($0) }
    }

    public static func parse(_ buffer: UnsafeRawBufferPointer) throws -> JSONValue {
        var p = JSONParser(buffer: buffer)
        p.skipSpace()
        let v = try p.value(depth: 0)
        p.skipSpace()
        if p.pos != buffer.count { throw p.fail("unexpected data after the JSON value") }
        return v
    }

    let buf: UnsafeRawBufferPointer
    var pos = 0
    init(buffer: UnsafeRawBufferPointer) { buf = buffer }

    func fail(_ m: String) -> JSONParseError { JSONParseError(offset: pos, message: m) }

    mutating func skipSpace() {
        while pos < buf.count {
            let c = buf[pos]
            if c == 0x20 || c == 0x0A || c == 0x0D || c == 0x09 { pos += 1 } else { break }
        }
    }

    mutating func value(depth: Int) throws -> JSONValue {
        guard depth < JSONParser.maxDepth else { throw fail("nesting deeper than \(JSONParser.maxDepth)") }
        guard pos < buf.count else { throw fail("unexpected end of input") }
        switch buf[pos] {
        case UInt8(ascii: "{"):
            pos += 1
            var pairs: [(String, JSONValue)] = []
            // Duplicate keys are found with a set once an object has more than a
            // few, so an object of 200,000 keys costs 200,000 lookups, not 2 × 10¹⁰.
            var keys: Set<String>? = nil
            skipSpace()
            if pos < buf.count, buf[pos] == UInt8(ascii: "}") { pos += 1; return .object(pairs) }
            while true {
                skipSpace()
                guard pos < buf.count, buf[pos] == UInt8(ascii: "\"") else { throw fail("expected a string key") }
                let k = try string()
                skipSpace()
                guard pos < buf.count, buf[pos] == UInt8(ascii: ":") else { throw fail("expected ':'") }
                pos += 1
                skipSpace()
                let v = try value(depth: depth + 1)
                if pairs.count < JSONParser.linearKeyScan {
                    if pairs.contains(where: { $0.0 == k }) { throw fail("duplicate key \"\(k.prefix(100))\"") }
                } else {
                    if keys == nil { keys = Set(pairs.map(\.0)) }
                    if keys?.insert(k).inserted == false { throw fail("duplicate key \"\(k.prefix(100))\"") }
                }
                pairs.append((k, v))
                skipSpace()
                guard pos < buf.count else { throw fail("unexpected end of input") }
                if buf[pos] == UInt8(ascii: ",") { pos += 1; continue }
                if buf[pos] == UInt8(ascii: "}") { pos += 1; return .object(pairs) }
                throw fail("expected ',' or '}'")
            }
        case UInt8(ascii: "["):
            pos += 1
            var items: [JSONValue] = []
            skipSpace()
            if pos < buf.count, buf[pos] == UInt8(ascii: "]") { pos += 1; return .array(items) }
            while true {
                skipSpace()
                items.append(try value(depth: depth + 1))
                skipSpace()
                guard pos < buf.count else { throw fail("unexpected end of input") }
                if buf[pos] == UInt8(ascii: ",") { pos += 1; continue }
                if buf[pos] == UInt8(ascii: "]") { pos += 1; return .array(items) }
                throw fail("expected ',' or ']'")
            }
        case UInt8(ascii: "\""):
            return .string(try string())
        case UInt8(ascii: "t"): try literal("true"); return .bool(true)
        case UInt8(ascii: "f"): try literal("false"); return .bool(false)
        case UInt8(ascii: "n"): try literal("null"); return .null
        default:
            return .number(try number())
        }
    }

    mutating func literal(_ word: String) throws {
        let w = Array(word.utf8)
        guard pos + w.count <= buf.count else { throw fail("unexpected end of input") }
        for i in 0..<w.count where buf[pos + i] != w[i] { throw fail("invalid literal") }
        pos += w.count
    }

    mutating func number() throws -> String {
        let start = pos
        func digits() -> Int { let s = pos; while pos < buf.count, buf[pos] >= 0x30, buf[pos] <= 0x39 { pos += 1 }; return pos - s }
        if pos < buf.count, buf[pos] == UInt8(ascii: "-") { pos += 1 }
        guard pos < buf.count else { throw fail("invalid number") }
        if buf[pos] == UInt8(ascii: "0") { pos += 1 } else if digits() == 0 { throw fail("invalid value") }
        if pos < buf.count, buf[pos] == UInt8(ascii: ".") { pos += 1; if digits() == 0 { throw fail("invalid number") } }
        if pos < buf.count, buf[pos] == UInt8(ascii: "e") || buf[pos] == UInt8(ascii: "E") {
            pos += 1
            if pos < buf.count, buf[pos] == UInt8(ascii: "+") || buf[pos] == UInt8(ascii: "-") { pos += 1 }
            if digits() == 0 { throw fail("invalid number") }
        }
        return String(decoding: UnsafeRawBufferPointer(rebasing: buf[start..<pos]), as: UTF8.self)
    }

    mutating func hex4() throws -> UInt32 {
        guard pos + 4 <= buf.count else { throw fail("truncated \\u escape") }
        var v: UInt32 = 0
        for _ in 0..<4 {
            guard let d = Hex.digitValue(buf[pos]) else { throw fail("invalid \\u escape") }
            v = v << 4 | UInt32(d)
            pos += 1
        }
        return v
    }

    mutating func string() throws -> String {
        pos += 1  // opening quote
        let start = pos
        // Fast path: no escapes.
        while pos < buf.count {
            let c = buf[pos]
            if c == UInt8(ascii: "\"") {
                let slice = UnsafeRawBufferPointer(rebasing: buf[start..<pos])
                pos += 1
                guard let s = String(validating: slice, as: UTF8.self) else {
                    pos = start
                    throw fail("invalid UTF-8 in string")
                }
                return s
            }
            if c == UInt8(ascii: "\\") { break }
            if c < 0x20 { throw fail("control character in string") }
            pos += 1
        }
        var bytes = [UInt8](UnsafeRawBufferPointer(rebasing: buf[start..<pos]))
        while pos < buf.count {
            let c = buf[pos]
            if c == UInt8(ascii: "\"") {
                pos += 1
                guard let s = String(validating: bytes, as: UTF8.self) else { throw fail("invalid UTF-8 in string") }
                return s
            }
            if c < 0x20 { throw fail("control character in string") }
            if c != UInt8(ascii: "\\") { bytes.append(c); pos += 1; continue }
            pos += 1
            guard pos < buf.count else { break }
            let e = buf[pos]
            pos += 1
            switch e {
            case UInt8(ascii: "\""): bytes.append(0x22)
            case UInt8(ascii: "\\"): bytes.append(0x5C)
            case UInt8(ascii: "/"): bytes.append(0x2F)
            case UInt8(ascii: "b"): bytes.append(0x08)
            case UInt8(ascii: "f"): bytes.append(0x0C)
            case UInt8(ascii: "n"): bytes.append(0x0A)
            case UInt8(ascii: "r"): bytes.append(0x0D)
            case UInt8(ascii: "t"): bytes.append(0x09)
            case UInt8(ascii: "u"):
                var code = try hex4()
                if (0xD800..<0xDC00).contains(code) {
                    guard pos + 6 <= buf.count, buf[pos] == UInt8(ascii: "\\"), buf[pos + 1] == UInt8(ascii: "u") else {
                        throw fail("unpaired surrogate")
                    }
                    pos += 2
                    let low = try hex4()
                    guard (0xDC00..<0xE000).contains(low) else { throw fail("unpaired surrogate") }
                    code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                } else if (0xDC00..<0xE000).contains(code) {
                    throw fail("unpaired surrogate")
                }
                // Never nil: surrogates were paired or refused above, and the largest pair is 0x10FFFF.
                guard let scalar = Unicode.Scalar(code) else { throw fail("invalid \\u escape") }
                bytes.append(contentsOf: String(Character(scalar)).utf8)
            default: throw fail("invalid escape")
            }
        }
        throw fail("unterminated string")
    }
}
