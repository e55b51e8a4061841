import FoundationEssentials
import Glibc

/// A specialized, allocation-free reader for one NDJSON record line: it
/// validates the whole line as strict JSON (UTF-8, escapes, numbers, nesting)
/// and, in the same pass, finds the fields the LWW rule needs as byte ranges
/// into the line. Nothing is copied, so the original bytes can be written out
/// verbatim. The general `JSONParser` builds a tree and is far too slow for
/// millions of records per second.
///
/// Rules beyond RFC 8259 (docs/design.md §2, the one statement of them): the
/// line must be one object; the keys of every object in it, `data` and those
/// nested in it included, must be unique (a record with two `id`s, or a
/// `data` with two `total`s, means different things to different readers);
/// whitespace between tokens is space or tab only, never a CR (a line kept
/// byte for byte must read the same to every strict receiver). Values inside
/// `data` and unknown fields are validated but passed through untouched.
struct RecordScan {
    /// A string value's content between its quotes (absolute offsets).
    struct StringSpan: Sendable {
        var start: Int = -1
        var end: Int = -1
        /// The content holds backslash escapes: decode it before comparing.
        var escaped = false
        var isPresent: Bool { start >= 0 }
        var count: Int { end - start }
    }

    /// The object's bytes with surrounding whitespace trimmed (absolute offsets).
    var start = 0
    var end = 0
    var id = StringSpan()
    var type = StringSpan()
    var modifiedAt = StringSpan()
    var deviceID = StringSpan()
    /// -1 when absent, else 0 or 1.
    var deleted: Int8 = -1
    /// The `photos` array value (brackets included), or -1 when absent or null.
    var photosStart = -1
    var photosEnd = -1
    var photoCount = 0
    /// `modifiedAt` parsed, in milliseconds since the epoch (when present).
    var time: Int64 = 0
    /// The object has at least one member (so an appended member needs a comma).
    var hasMembers = false
    /// Where the line's authorship tag member begins (its comma), or -1 when
    /// the line has none (Authorship.swift): the bytes before it are what the tag covers.
    var tagAt = -1
    /// The time the author gave the version (ms), when the tag says it was pulled back since.
    var tagAuthorTime: Int64?

    init() {}

    /// `modifiedAt` is already written as `YYYY-MM-DDTHH:MM:SS.sssZ`, so the
    /// line can be kept byte for byte.
    func isTimeCanonical(_ base: UnsafePointer<UInt8>) -> Bool {
        guard modifiedAt.isPresent, !modifiedAt.escaped, modifiedAt.count == 24 else { return false }
        let b = base + modifiedAt.start
        return b[10] == UInt8(ascii: "T") && b[19] == UInt8(ascii: ".") && b[23] == UInt8(ascii: "Z")
            && !(b[17] == UInt8(ascii: "6") && b[18] == UInt8(ascii: "0"))
    }
}

/// How strict the scanner is about the version fields.
public enum RecordScanMode: Sendable {
    /// A record as exchanged between devices: every field of the contract present.
    case exchanged
    /// A local edit (`--stamp`): `modifiedAt`, `deviceId` and `deleted` may be
    /// absent, since the store stamps them.
    case localEdit
}

public enum RecordScanner {
    /// Nesting deeper than this is refused, so hostile input cannot exhaust the stack.
    public static let maxDepth = 64

    /// Scans the line `base[start..<end]` (no newline). Offsets in the result
    /// are absolute, relative to `base`.
    static func scan(_ base: UnsafePointer<UInt8>, start: Int, end: Int,
                            mode: RecordScanMode = .exchanged) throws(RecordError) -> RecordScan {
        var w = ScanWorkspace()
        return try scan(base, start: start, end: end, mode: mode, workspace: &w)
    }

    /// The same, reusing `workspace` between lines so a scan allocates nothing.
    static func scan(_ base: UnsafePointer<UInt8>, start: Int, end: Int,
                            mode: RecordScanMode, workspace w: inout ScanWorkspace) throws(RecordError) -> RecordScan {
        var s = Scanner(p: base, pos: start, end: end)
        swap(&s.keys, &w.nestedKeys)
        s.keys.removeAll(keepingCapacity: true)  // what a line that failed midway left
        defer { swap(&s.keys, &w.nestedKeys) }
        var r = RecordScan()
        s.skipSpace()
        guard s.pos < s.end else { throw RecordError(field: nil, "empty line") }
        guard s.p[s.pos] == UInt8(ascii: "{") else {
            // Tell "valid JSON but not an object" from "not JSON".
            do throws(JSONSyntax) { try s.skipValue(depth: 0); s.skipSpace() } catch {
                throw RecordError(field: nil, "not JSON: \(error.message) at byte \(error.offset - start + 1)")
            }
            if s.pos == s.end { throw RecordError(field: nil, "not a JSON object") }
            throw RecordError(field: nil, "not JSON: unexpected data after the value at byte \(s.pos - start + 1)")
        }
        r.start = s.pos
        var seen: UInt8 = 0
        w.reset()
        // The member being read, named only when an error needs it.
        var current: RecordScan.StringSpan? = nil
        do throws(JSONSyntax) {
            s.pos += 1
            s.skipSpace()
            if s.pos < s.end, s.p[s.pos] == UInt8(ascii: "}") {
                s.pos += 1
            } else {
                while true {
                    s.skipSpace()
                    guard s.pos < s.end else { throw s.fail("unexpected end of line") }
                    guard s.p[s.pos] == UInt8(ascii: "\"") else { throw s.fail("expected a string key") }
                    let key = try s.string()
                    s.skipSpace()
                    guard s.pos < s.end, s.p[s.pos] == UInt8(ascii: ":") else { throw s.fail("expected ':'") }
                    s.pos += 1
                    s.skipSpace()
                    current = key
                    let which = key.escaped ? Known.match(decoded: decode(base, key)) : Known.match(base, key)
                    if which != .other {
                        let bit = UInt8(1) << which.rawValue
                        if seen & bit != 0 { throw RecordErrorBox(RecordError(field: which.name, "appears twice")) }
                        seen |= bit
                    } else if !w.insertOtherKey(key, base: base) {
                        throw RecordErrorBox(RecordError(field: keyName(base, key), "appears twice"))
                    }
                    try scanMember(which, &s, &r)
                    current = nil
                    r.hasMembers = true
                    s.skipSpace()
                    guard s.pos < s.end else { throw s.fail("unexpected end of line") }
                    if s.p[s.pos] == UInt8(ascii: ",") { s.pos += 1; continue }
                    if s.p[s.pos] == UInt8(ascii: "}") { s.pos += 1; break }
                    throw s.fail("expected ',' or '}'")
                }
            }
            r.end = s.pos
            s.skipSpace()
            if s.pos != s.end { throw s.fail("unexpected data after the object") }
        } catch {
            if let boxed = error.boxed { throw boxed }
            let at = "at byte \(error.offset - start + 1)"
            if let current { throw RecordError(field: keyName(base, current), "\(error.message) \(at)") }
            throw RecordError(field: nil, "not JSON: \(error.message) \(at)")
        }
        try check(&r, base: base, seen: seen, mode: mode)
        return r
    }

    /// Reusable scratch space for `scan`: the line's keys beyond the known
    /// ones, to find duplicates. A few are compared directly; past
    /// `linearKeyScan` they go into a hash table, so a 1 MiB line of 100,000
    /// keys costs 100,000 lookups rather than five billion comparisons.
    struct ScanWorkspace {
        var otherKeys: [RecordScan.StringSpan] = []
        /// The keys of the nested objects being read (Scanner.keys), kept between lines for their capacity.
        var nestedKeys: [RecordScan.StringSpan] = []
        /// Open addressing over indexes into `otherKeys` (-1: empty); built for this line when needed.
        private var table: [Int32] = []
        init() {}

        static let linearKeyScan = 16

        mutating func reset() {
            otherKeys.removeAll(keepingCapacity: true)
            table.removeAll(keepingCapacity: false)
        }

        /// Adds `key`; false when the line already has it.
        mutating func insertOtherKey(_ key: RecordScan.StringSpan, base: UnsafePointer<UInt8>) -> Bool {
            if otherKeys.count < ScanWorkspace.linearKeyScan {
                for k in otherKeys where RecordScanner.sameKey(base, k, key) { return false }
                otherKeys.append(key)
                return true
            }
            if table.isEmpty { rebuild(base: base, capacity: 4 * ScanWorkspace.linearKeyScan) }
            if (otherKeys.count + 1) * 2 > table.count { rebuild(base: base, capacity: table.count * 2) }
            let mask = table.count - 1
            var i = Int(truncatingIfNeeded: ScanWorkspace.hash(key, base: base)) & mask
            while table[i] >= 0 {
                if RecordScanner.sameKey(base, otherKeys[Int(table[i])], key) { return false }
                i = (i + 1) & mask
            }
            table[i] = Int32(otherKeys.count)
            otherKeys.append(key)
            return true
        }

        private mutating func rebuild(base: UnsafePointer<UInt8>, capacity: Int) {
            table = [Int32](repeating: -1, count: capacity)
            let mask = capacity - 1
            for (n, k) in otherKeys.enumerated() {
                var i = Int(truncatingIfNeeded: ScanWorkspace.hash(k, base: base)) & mask
                while table[i] >= 0 { i = (i + 1) & mask }
                table[i] = Int32(n)
            }
        }

        /// FNV-1a over the key's decoded bytes (escaped and plain spellings hash alike).
        private static func hash(_ k: RecordScan.StringSpan, base: UnsafePointer<UInt8>) -> UInt64 {
            var h: UInt64 = 0xcbf2_9ce4_8422_2325
            func mix(_ c: UInt8) { h = (h ^ UInt64(c)) &* 0x100_0000_01b3 }
            if k.escaped {
                for c in RecordScanner.decode(base, k) { mix(c) }
            } else {
                for i in k.start..<k.end { mix(base[i]) }
            }
            return h
        }
    }

    /// The text of a string span (escapes resolved), validated by the scan.
    static func string(_ base: UnsafePointer<UInt8>, _ span: RecordScan.StringSpan) -> String {
        if span.escaped { return String(decoding: decode(base, span), as: UTF8.self) }
        return String(decoding: UnsafeBufferPointer(start: base + span.start, count: span.count), as: UTF8.self)
    }

    static func keyName(_ base: UnsafePointer<UInt8>, _ k: RecordScan.StringSpan) -> String {
        let bytes = k.escaped ? decode(base, k) : Array(UnsafeBufferPointer(start: base + k.start, count: k.count))
        return String(decoding: bytes.prefix(100), as: UTF8.self)
    }

    static func sameKey(_ base: UnsafePointer<UInt8>, _ a: RecordScan.StringSpan, _ b: RecordScan.StringSpan) -> Bool {
        if !a.escaped && !b.escaped {
            return a.count == b.count && memcmp(base + a.start, base + b.start, a.count) == 0
        }
        return decode(base, a) == decode(base, b)
    }

    /// The field-level rules of the record contract, after the syntax is known good.
    private static func check(_ r: inout RecordScan, base: UnsafePointer<UInt8>, seen: UInt8, mode: RecordScanMode) throws(RecordError) {
        func present(_ k: Known) -> Bool { seen & (UInt8(1) << k.rawValue) != 0 }
        func requireString(_ k: Known, _ span: RecordScan.StringSpan) throws(RecordError) {
            guard present(k) else { throw RecordError(field: k.name, "missing") }
            guard span.isPresent else { throw RecordError(field: k.name, "not a string") }
            guard span.count > 0 else { throw RecordError(field: k.name, "empty") }
        }
        try requireString(.id, r.id)
        let optionalVersion = mode == .localEdit
        // A local delete may name only its id: the store fills in the held type.
        if !(optionalVersion && !present(.type) && present(.deleted) && r.deleted == 1) { try requireString(.type, r.type) }
        if !optionalVersion || present(.modifiedAt) {
            try requireString(.modifiedAt, r.modifiedAt)
            let parsed: Timestamp?
            if r.modifiedAt.escaped {
                let bytes = decode(base, r.modifiedAt)
                parsed = bytes.withUnsafeBytes { Timestamp.parse($0) }
            } else {
                parsed = Timestamp.parse(UnsafeRawBufferPointer(start: base + r.modifiedAt.start, count: r.modifiedAt.count))
            }
            guard let t = parsed else {
                let shown = String(decoding: UnsafeBufferPointer(start: base + r.modifiedAt.start, count: min(r.modifiedAt.count, 40)), as: UTF8.self)
                throw RecordError(field: "modifiedAt", "not an RFC 3339 time: \"\(shown)\"")
            }
            r.time = t.milliseconds
        }
        if !optionalVersion || present(.deviceID) { try requireString(.deviceID, r.deviceID) }
        if !optionalVersion || present(.deleted) {
            guard present(.deleted) else { throw RecordError(field: "deleted", "missing") }
            guard r.deleted >= 0 else { throw RecordError(field: "deleted", "not true or false") }
        }
        if present(.authorship) { try checkTag(&r, base: base) }
    }

    /// The authorship tag (Authorship.swift) is the line's last member, written
    /// exactly `,"authorship":"<32 lowercase hex>"` or with `/<canonical time>`
    /// after the digits, right before the closing brace: one spelling, so the
    /// bytes it covers are the bytes before it on every device.
    private static func checkTag(_ r: inout RecordScan, base: UnsafePointer<UInt8>) throws(RecordError) {
        func opensAt(_ at: Int) -> Bool {
            at > r.start && memcmp(base + at, Authorship.opening, Authorship.opening.count) == 0
                && isLowerHex(base + at + Authorship.opening.count, Authorship.tagDigits)
                && base[r.end - 2] == UInt8(ascii: "\"") && base[r.end - 1] == UInt8(ascii: "}")
        }
        let plain = r.end - Authorship.plainTail, dated = r.end - Authorship.datedTail
        if opensAt(plain) {
            r.tagAt = plain
            return
        }
        if opensAt(dated), base[dated + Authorship.opening.count + Authorship.tagDigits] == UInt8(ascii: "/") {
            let time = UnsafeRawBufferPointer(start: base + r.end - 2 - Authorship.timeDigits, count: Authorship.timeDigits)
            var span = RecordScan()
            span.modifiedAt = RecordScan.StringSpan(start: r.end - 2 - Authorship.timeDigits, end: r.end - 2)
            if span.isTimeCanonical(base), let t = Timestamp.parse(time) {
                r.tagAt = dated
                r.tagAuthorTime = t.milliseconds
                return
            }
        }
        throw RecordError(field: Authorship.field, "not a tag: the line's last field, written ,\"authorship\":\"<32 lowercase hex digits>\" (or with /<modifiedAt as YYYY-MM-DDTHH:MM:SS.sssZ> after the digits) right before the closing brace")
    }

    private static func scanMember(_ which: Known, _ s: inout Scanner, _ r: inout RecordScan) throws(JSONSyntax) {
        let c = s.pos < s.end ? s.p[s.pos] : 0
        switch which {
        case .id, .type, .modifiedAt, .deviceID:
            if c == UInt8(ascii: "\"") {
                let span = try s.string()
                switch which {
                case .id: r.id = span
                case .type: r.type = span
                case .modifiedAt: r.modifiedAt = span
                default: r.deviceID = span
                }
            } else {
                try s.skipValue(depth: 1)  // reported as "not a string" once the syntax is known good
            }
        case .deleted:
            if c == UInt8(ascii: "t"), s.literal("true") { r.deleted = 1 }
            else if c == UInt8(ascii: "f"), s.literal("false") { r.deleted = 0 }
            else {
                try s.skipValue(depth: 1)
                throw RecordErrorBox(RecordError(field: "deleted", "not true or false"))
            }
        case .data:
            if c == UInt8(ascii: "n"), s.literal("null") { return }
            guard c == UInt8(ascii: "{") else {
                try s.skipValue(depth: 1)
                throw RecordErrorBox(RecordError(field: "data", "not an object"))
            }
            try s.skipValue(depth: 1)
        case .photos:
            if c == UInt8(ascii: "n"), s.literal("null") { return }
            guard c == UInt8(ascii: "[") else {
                try s.skipValue(depth: 1)
                throw RecordErrorBox(RecordError(field: "photos", "not an array"))
            }
            r.photosStart = s.pos
            s.pos += 1
            s.skipSpace()
            var i = 0
            if s.pos < s.end, s.p[s.pos] == UInt8(ascii: "]") { s.pos += 1 } else {
                while true {
                    s.skipSpace()
                    var ok = false
                    if s.pos < s.end, s.p[s.pos] == UInt8(ascii: "\"") {
                        let span = try s.string()
                        ok = !span.escaped && span.count == 64 && isLowerHex(s.p + span.start, 64)
                    } else {
                        try s.skipValue(depth: 2)
                    }
                    if !ok {
                        throw RecordErrorBox(RecordError(field: "photos[\(i)]", "not a lowercase SHA-256 hex string"))
                    }
                    i += 1
                    s.skipSpace()
                    guard s.pos < s.end else { throw s.fail("unexpected end of line") }
                    if s.p[s.pos] == UInt8(ascii: ",") { s.pos += 1; continue }
                    if s.p[s.pos] == UInt8(ascii: "]") { s.pos += 1; break }
                    throw s.fail("expected ',' or ']'")
                }
            }
            r.photosEnd = s.pos
            r.photoCount = i
        case .authorship, .other:
            // A tag's form is checked against the line's end once the syntax is known good.
            try s.skipValue(depth: 1)
        }
    }

    /// Calls `body` with each photo hash (64 bytes) of a scanned record.
    @inline(__always)
    static func forEachPhoto(_ base: UnsafePointer<UInt8>, _ r: RecordScan, _ body: (UnsafePointer<UInt8>) throws -> Void) rethrows {
        guard r.photosStart >= 0 else { return }
        var i = r.photosStart + 1
        while i < r.photosEnd {
            if base[i] == UInt8(ascii: "\"") {
                try body(base + i + 1)
                i += 66
            } else {
                i += 1
            }
        }
    }

    static func isLowerHex(_ p: UnsafePointer<UInt8>, _ n: Int) -> Bool {
        Hex.isLowercase(UnsafeBufferPointer(start: p, count: n), digits: n)
    }

    /// The decoded UTF-8 bytes of a string span (escapes resolved). The span
    /// was validated by the scan, so decoding cannot fail.
    static func decode(_ base: UnsafePointer<UInt8>, _ span: RecordScan.StringSpan) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(span.count)
        var i = span.start
        func hex4(_ at: Int) -> UInt32 {
            var v: UInt32 = 0
            for k in 0..<4 {
                let c = base[at + k]
                v = v << 4 | UInt32(c <= 0x39 ? c - 0x30 : (c | 0x20) - 0x61 + 10)
            }
            return v
        }
        while i < span.end {
            let c = base[i]
            if c != UInt8(ascii: "\\") { out.append(c); i += 1; continue }
            let e = base[i + 1]
            i += 2
            switch e {
            case UInt8(ascii: "b"): out.append(0x08)
            case UInt8(ascii: "f"): out.append(0x0C)
            case UInt8(ascii: "n"): out.append(0x0A)
            case UInt8(ascii: "r"): out.append(0x0D)
            case UInt8(ascii: "t"): out.append(0x09)
            case UInt8(ascii: "u"):
                var code = hex4(i)
                i += 4
                if (0xD800..<0xDC00).contains(code) {
                    let low = hex4(i + 2)
                    i += 6
                    code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                }
                appendUTF8(code, to: &out)
            default: out.append(e)  // " \ /
            }
        }
        return out
    }

    static func appendUTF8(_ code: UInt32, to out: inout [UInt8]) {
        switch code {
        case 0..<0x80: out.append(UInt8(code))
        case 0x80..<0x800:
            out.append(UInt8(0xC0 | code >> 6)); out.append(UInt8(0x80 | code & 0x3F))
        case 0x800..<0x10000:
            out.append(UInt8(0xE0 | code >> 12)); out.append(UInt8(0x80 | code >> 6 & 0x3F)); out.append(UInt8(0x80 | code & 0x3F))
        default:
            out.append(UInt8(0xF0 | code >> 18)); out.append(UInt8(0x80 | code >> 12 & 0x3F))
            out.append(UInt8(0x80 | code >> 6 & 0x3F)); out.append(UInt8(0x80 | code & 0x3F))
        }
    }

    /// The top-level keys the contract names.
    enum Known: UInt8 {
        case id = 0, type, modifiedAt, deviceID, deleted, data, photos, authorship, other

        var name: String {
            switch self {
            case .id: return "id"
            case .type: return "type"
            case .modifiedAt: return "modifiedAt"
            case .deviceID: return "deviceId"
            case .deleted: return "deleted"
            case .data: return "data"
            case .photos: return "photos"
            case .authorship: return Authorship.field
            case .other: return ""
            }
        }

        @inline(__always)
        static func match(_ base: UnsafePointer<UInt8>, _ k: RecordScan.StringSpan) -> Known {
            let p = base + k.start
            @inline(__always) func eq(_ s: StaticString) -> Bool {
                s.utf8CodeUnitCount == k.count && memcmp(p, s.utf8Start, k.count) == 0
            }
            switch k.count {
            case 2: return eq("id") ? .id : .other
            case 4: return eq("type") ? .type : eq("data") ? .data : .other
            case 6: return eq("photos") ? .photos : .other
            case 7: return eq("deleted") ? .deleted : .other
            case 8: return eq("deviceId") ? .deviceID : .other
            case 10: return eq("modifiedAt") ? .modifiedAt : eq("authorship") ? .authorship : .other
            default: return .other
            }
        }

        static func match(decoded: [UInt8]) -> Known {
            decoded.withUnsafeBufferPointer { b in
                // Never nil: bitPattern 1 is not zero (a stand-in base for an empty buffer, never read).
                match(b.baseAddress ?? UnsafePointer(bitPattern: 1)!, RecordScan.StringSpan(start: 0, end: b.count, escaped: false))
            }
        }
    }
}

/// A syntax error inside the scanner, or a field error carried through it.
struct JSONSyntax: Error {
    var offset: Int
    var message: String
    var boxed: RecordError?
}

@inline(__always)
func RecordErrorBox(_ e: RecordError) -> JSONSyntax { JSONSyntax(offset: 0, message: "", boxed: e) }

/// The byte-level JSON validator behind RecordScanner.
struct Scanner {
    let p: UnsafePointer<UInt8>
    var pos: Int
    let end: Int
    /// The keys of each nested object being read, innermost last: a stack,
    /// so a key is compared only with its own object's keys.
    var keys: [RecordScan.StringSpan] = []

    /// An object with more keys than this is checked for a repeated key by
    /// sorting them when it closes, not by comparing each with every other.
    static let linearKeyCheck = 16

    @inline(__always)
    func fail(_ m: String) -> JSONSyntax {
        // A CR stops the whitespace of a record line (design.md §2); say so rather than "expected ...".
        if pos < end, p[pos] == 0x0D { return JSONSyntax(offset: pos, message: "a CR (0x0D) between tokens, which a record line never holds") }
        return JSONSyntax(offset: pos, message: m)
    }

    /// Whitespace between tokens: space and tab (a line has no LF, and a CR is refused).
    @inline(__always)
    mutating func skipSpace() {
        while pos < end {
            let c = p[pos]
            if c == 0x20 || c == 0x09 { pos += 1 } else { return }
        }
    }

    /// Notes `key` of the object whose keys start at `keys[from]`; a key
    /// that object already has is an error.
    @inline(__always)
    mutating func noteKey(_ key: RecordScan.StringSpan, from: Int) throws(JSONSyntax) {
        if keys.count - from < Scanner.linearKeyCheck {
            for i in from..<keys.count where RecordScanner.sameKey(p, keys[i], key) { throw repeated(key) }
        }
        keys.append(key)
    }

    /// At the close of an object with many keys: sorts them and finds a repeat.
    mutating func checkManyKeys(from: Int) throws(JSONSyntax) {
        guard keys.count - from > Scanner.linearKeyCheck else { return }
        let p = self.p
        func bytes(_ k: RecordScan.StringSpan) -> [UInt8] {
            k.escaped ? RecordScanner.decode(p, k) : Array(UnsafeBufferPointer(start: p + k.start, count: k.count))
        }
        let sorted = keys[from...].map { (bytes($0), $0) }.sorted { $0.0.lexicographicallyPrecedes($1.0) }
        for i in 1..<sorted.count where sorted[i].0 == sorted[i - 1].0 { throw repeated(sorted[i].1) }
    }

    private func repeated(_ key: RecordScan.StringSpan) -> JSONSyntax {
        JSONSyntax(offset: key.start - 1, message: "key '\(RecordScanner.keyName(p, key))' appears twice in one object")
    }

    @inline(__always)
    mutating func literal(_ w: StaticString) -> Bool {
        let n = w.utf8CodeUnitCount
        guard pos + n <= end, memcmp(p + pos, w.utf8Start, n) == 0 else { return false }
        pos += n
        return true
    }

    /// Validates any JSON value starting at `pos`.
    mutating func skipValue(depth: Int) throws(JSONSyntax) {
        guard depth < RecordScanner.maxDepth else { throw fail("nesting deeper than \(RecordScanner.maxDepth)") }
        guard pos < end else { throw fail("unexpected end of line") }
        switch p[pos] {
        case UInt8(ascii: "\""):
            _ = try string()
        case UInt8(ascii: "{"):
            pos += 1
            skipSpace()
            if pos < end, p[pos] == UInt8(ascii: "}") { pos += 1; return }
            let from = keys.count
            while true {
                skipSpace()
                guard pos < end else { throw fail("unexpected end of line") }
                guard p[pos] == UInt8(ascii: "\"") else { throw fail("expected a string key") }
                try noteKey(try string(), from: from)
                skipSpace()
                guard pos < end, p[pos] == UInt8(ascii: ":") else { throw fail("expected ':'") }
                pos += 1
                skipSpace()
                try skipValue(depth: depth + 1)
                skipSpace()
                guard pos < end else { throw fail("unexpected end of line") }
                if p[pos] == UInt8(ascii: ",") { pos += 1; continue }
                if p[pos] == UInt8(ascii: "}") {
                    pos += 1
                    try checkManyKeys(from: from)
                    keys.removeSubrange(from...)
                    return
                }
                throw fail("expected ',' or '}'")
            }
        case UInt8(ascii: "["):
            pos += 1
            skipSpace()
            if pos < end, p[pos] == UInt8(ascii: "]") { pos += 1; return }
            while true {
                skipSpace()
                try skipValue(depth: depth + 1)
                skipSpace()
                guard pos < end else { throw fail("unexpected end of line") }
                if p[pos] == UInt8(ascii: ",") { pos += 1; continue }
                if p[pos] == UInt8(ascii: "]") { pos += 1; return }
                throw fail("expected ',' or ']'")
            }
        case UInt8(ascii: "t"): if !literal("true") { throw fail("invalid literal") }
        case UInt8(ascii: "f"): if !literal("false") { throw fail("invalid literal") }
        case UInt8(ascii: "n"): if !literal("null") { throw fail("invalid literal") }
        default: try number()
        }
    }

    mutating func number() throws(JSONSyntax) {
        @inline(__always) func digits() -> Int {
            let s = pos
            while pos < end, p[pos] &- 0x30 < 10 { pos += 1 }
            return pos - s
        }
        if pos < end, p[pos] == UInt8(ascii: "-") { pos += 1 }
        guard pos < end else { throw fail("invalid number") }
        if p[pos] == UInt8(ascii: "0") { pos += 1 } else if digits() == 0 { throw fail("invalid value") }
        if pos < end, p[pos] == UInt8(ascii: ".") { pos += 1; if digits() == 0 { throw fail("invalid number") } }
        if pos < end, p[pos] | 0x20 == UInt8(ascii: "e") {
            pos += 1
            if pos < end, p[pos] == UInt8(ascii: "+") || p[pos] == UInt8(ascii: "-") { pos += 1 }
            if digits() == 0 { throw fail("invalid number") }
        }
    }

    /// Validates a string at `pos` (on its opening quote); returns its content span.
    @inline(__always)
    mutating func string() throws(JSONSyntax) -> RecordScan.StringSpan {
        pos += 1
        let start = pos
        var escaped = false
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        while true {
            // Eight bytes at a time while none is special: '"', '\', a control byte or non-ASCII.
            while pos + 8 <= end {
                let x = UnsafeRawPointer(p + pos).loadUnaligned(as: UInt64.self)
                let q = x ^ (ones &* 0x22)
                let b = x ^ (ones &* 0x5C)
                let special = ((q &- ones) & ~q) | ((b &- ones) & ~b) | ((x &- ones &* 0x20) & ~x) | x
                let m = special & highs
                if m != 0 { pos += m.trailingZeroBitCount >> 3; break }
                pos += 8
            }
            guard pos < end else { throw fail("unterminated string") }
            let c = p[pos]
            if c == UInt8(ascii: "\"") {
                let span = RecordScan.StringSpan(start: start, end: pos, escaped: escaped)
                pos += 1
                return span
            }
            if c == UInt8(ascii: "\\") {
                escaped = true
                try escape()
                continue
            }
            if c < 0x20 { throw fail("control character in string") }
            if c < 0x80 { pos += 1; continue }
            try utf8Sequence(c)
        }
    }

    mutating func escape() throws(JSONSyntax) {
        guard pos + 1 < end else { throw fail("unterminated string") }
        switch p[pos + 1] {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
             UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
            pos += 2
        case UInt8(ascii: "u"):
            pos += 2
            let code = try hex4()
            if code >= 0xD800 && code < 0xDC00 {
                guard pos + 6 <= end, p[pos] == UInt8(ascii: "\\"), p[pos + 1] == UInt8(ascii: "u") else { throw fail("unpaired surrogate") }
                pos += 2
                let low = try hex4()
                guard low >= 0xDC00 && low < 0xE000 else { throw fail("unpaired surrogate") }
            } else if code >= 0xDC00 && code < 0xE000 {
                throw fail("unpaired surrogate")
            }
        default:
            throw fail("invalid escape")
        }
    }

    mutating func hex4() throws(JSONSyntax) -> UInt32 {
        guard pos + 4 <= end else { throw fail("truncated \\u escape") }
        var v: UInt32 = 0
        for _ in 0..<4 {
            guard let d = Hex.digitValue(p[pos]) else { throw fail("invalid \\u escape") }
            v = v << 4 | UInt32(d)
            pos += 1
        }
        return v
    }

    /// One multi-byte UTF-8 sequence (RFC 3629: no overlongs, no surrogates, nothing past U+10FFFF).
    @inline(__always)
    mutating func utf8Sequence(_ c: UInt8) throws(JSONSyntax) {
        @inline(__always) func cont(_ i: Int, _ lo: UInt8 = 0x80, _ hi: UInt8 = 0xBF) -> Bool {
            i < end && p[i] >= lo && p[i] <= hi
        }
        switch c {
        case 0xC2...0xDF:
            guard cont(pos + 1) else { break }
            pos += 2; return
        case 0xE0...0xEF:
            let lo: UInt8 = c == 0xE0 ? 0xA0 : 0x80
            let hi: UInt8 = c == 0xED ? 0x9F : 0xBF
            guard cont(pos + 1, lo, hi), cont(pos + 2) else { break }
            pos += 3; return
        case 0xF0...0xF4:
            let lo: UInt8 = c == 0xF0 ? 0x90 : 0x80
            let hi: UInt8 = c == 0xF4 ? 0x8F : 0xBF
            guard cont(pos + 1, lo, hi), cont(pos + 2), cont(pos + 3) else { break }
            pos += 4; return
        default: break
        }
        throw fail("invalid UTF-8 in string")
    }
}
