import FoundationEssentials
import Glibc

/// One version of a record (docs/design.md §2). `line` is the JSON text the
/// store keeps and writes out: the source line verbatim when its `modifiedAt`
/// is already in canonical form, else the same bytes with only that value
/// rewritten. Unknown fields ride along untouched.
public struct Record: Sendable {
    public var id: String
    public var type: String
    public var modifiedAt: Timestamp
    public var deviceID: String
    public var deleted: Bool
    public var photos: [String]
    public var line: String

    public var version: LWW.Version { LWW.Version(modifiedAt: modifiedAt, deviceID: deviceID, deleted: deleted) }
}

/// A record line that is not a valid record: which field, and what is wrong.
public struct RecordError: Error, CustomStringConvertible, Sendable, Equatable {
    public var field: String?
    public var problem: String
    public init(field: String?, _ problem: String) { self.field = field; self.problem = problem }
    public var description: String { field.map { "\($0): \(problem)" } ?? problem }
}

extension Record {
    /// The longest record line accepted (bytes). Photos travel separately, so a
    /// receipt's JSON stays small; anything larger is hostile or a mistake.
    public static let maxLineBytes = 1 << 20

    /// Parses and validates one NDJSON line (a record as devices exchange it).
    public init(line: String) throws(RecordError) {
        try self.init(line: line, mode: .exchanged)
    }

    /// Parses one line; `.localEdit` lets `modifiedAt`, `deviceId` and
    /// `deleted` be absent (the store stamps them).
    public init(line: String, mode: RecordScanMode) throws(RecordError) {
        var text = line
        let result: Result<Record, RecordError> = text.withUTF8 { buf in
            guard buf.count <= Record.maxLineBytes else {
                return .failure(RecordError(field: nil, "line longer than \(Record.maxLineBytes) bytes"))
            }
            // Never nil: bitPattern 1 is not zero (a stand-in base for an empty buffer, never read).
            let base = buf.baseAddress ?? UnsafePointer(bitPattern: 1)!
            do throws(RecordError) {
                let scan = try RecordScanner.scan(base, start: 0, end: buf.count, mode: mode)
                return .success(Record(base: base, scan: scan))
            } catch {
                return .failure(error)
            }
        }
        self = try result.get()
    }

    /// Builds a record from a validated scan of the bytes at `base`.
    init(base: UnsafePointer<UInt8>, scan r: RecordScan) {
        func str(_ s: RecordScan.StringSpan) -> String {
            s.isPresent ? RecordScanner.string(base, s) : ""
        }
        id = str(r.id)
        type = str(r.type)
        deviceID = str(r.deviceID)
        modifiedAt = Timestamp(milliseconds: r.time)
        deleted = r.deleted == 1
        var ph: [String] = []
        ph.reserveCapacity(r.photoCount)
        RecordScanner.forEachPhoto(base, r) { ph.append(String(decoding: UnsafeBufferPointer(start: $0, count: 64), as: UTF8.self)) }
        photos = ph
        if r.isTimeCanonical(base) || !r.modifiedAt.isPresent {
            line = String(decoding: UnsafeBufferPointer(start: base + r.start, count: r.end - r.start), as: UTF8.self)
        } else {
            var out: [UInt8] = []
            RecordLine.rewrite(base, r, time: r.time, device: nil, ensureDeleted: false, into: &out)
            line = String(decoding: out, as: UTF8.self)
        }
    }

    /// The photo hashes records name: a SHA-256 in 64 lower-case hex digits.
    public static func isPhotoHash(_ h: String) -> Bool {
        Hex.isLowercase(h.utf8, digits: 64)
    }

    /// The same record with a new `modifiedAt` (the clamp, or a local stamp)
    /// and optionally a new `deviceId`. Only those values change in the line,
    /// and its authorship tag as `RecordLine.rewrite` says; a missing
    /// `deleted` is written as `false`.
    public func restamped(_ t: Timestamp, deviceID newDevice: String? = nil) -> Record {
        var r = self
        r.modifiedAt = t
        if let newDevice { r.deviceID = newDevice }
        var text = line
        let device = newDevice
        let out: [UInt8] = text.withUTF8 { buf in
            // Never nil: bitPattern 1 is not zero (a stand-in base for an empty buffer, never read).
            let base = buf.baseAddress ?? UnsafePointer(bitPattern: 1)!
            guard let scan = try? RecordScanner.scan(base, start: 0, end: buf.count, mode: .localEdit) else { return Array(buf) }
            var out: [UInt8] = []
            if var device {
                device.withUTF8 { d in
                    RecordLine.rewrite(base, scan, time: t.milliseconds, device: UnsafeRawBufferPointer(d), ensureDeleted: true, into: &out)
                }
            } else {
                RecordLine.rewrite(base, scan, time: t.milliseconds, device: nil, ensureDeleted: true, into: &out)
            }
            return out
        }
        r.line = String(decoding: out, as: UTF8.self)
        return r
    }
}

/// Rewriting a record line in place: only the named values change, every
/// other byte (unknown fields, spacing, key order) stays as it was.
public enum RecordLine {
    /// Appends to `out` the line of `r` with `modifiedAt` set to `time` and,
    /// when given, `deviceId` set to `device`; fields that are absent are
    /// appended as new members. `ensureDeleted` adds `"deleted":false` when
    /// the line has no `deleted`; `type` is appended when the line has none.
    ///
    /// The authorship tag (Authorship.swift) stays the line's last member:
    /// `tag` (an edit stamped here) tags the new line afresh; otherwise a
    /// tag the line carries is kept only where it still speaks for the
    /// version: as it was when nothing it covers changed, with the author's
    /// time when `time` pulls the version back to an earlier one, and not at
    /// all when anything else changed (another `deviceId`, a member added, a
    /// time rewritten from a form the tag was not made over).
    static func rewrite(_ base: UnsafePointer<UInt8>, _ r: RecordScan, time: Int64?, device: UnsafeRawBufferPointer?,
                        ensureDeleted: Bool, type: [UInt8]? = nil, tag: Authorship.Key? = nil, into out: inout [UInt8]) {
        var edits: [(Int, Int, [UInt8])] = []  // replace base[from..<to] with bytes
        var appended: [UInt8] = []
        var stamp = [UInt8](repeating: 0, count: 26)
        if let time {
            var t = [UInt8](repeating: 0, count: 24)
            Timestamp(milliseconds: time).writeRFC3339(into: &t)
            stamp = [0x22] + t + [0x22]
            if r.modifiedAt.isPresent {
                edits.append((r.modifiedAt.start - 1, r.modifiedAt.end + 1, stamp))
            } else {
                appended += Array(",\"modifiedAt\":".utf8) + stamp
            }
        }
        if let device {
            var d: [UInt8] = []
            appendJSONString(device, to: &d)
            if r.deviceID.isPresent {
                edits.append((r.deviceID.start - 1, r.deviceID.end + 1, d))
            } else {
                appended += Array(",\"deviceId\":".utf8) + d
            }
        }
        if ensureDeleted && r.deleted < 0 { appended += Array(",\"deleted\":false".utf8) }
        if let type, !r.type.isPresent {
            appended += Array(",\"type\":".utf8)
            type.withUnsafeBytes { appendJSONString($0, to: &appended) }
        }
        edits.sort { $0.0 < $1.0 }
        out.reserveCapacity(out.count + (r.end - r.start) + appended.count + 64)
        let lineStart = out.count
        var at = r.start
        for (from, to, bytes) in edits {
            out.append(contentsOf: UnsafeBufferPointer(start: base + at, count: from - at))
            out += bytes
            at = to
        }
        // The members end at the tag, or else at the closing brace.
        let close = r.tagAt >= 0 ? r.tagAt : r.end - 1
        out.append(contentsOf: UnsafeBufferPointer(start: base + at, count: close - at))
        if !appended.isEmpty {
            out += r.hasMembers ? appended : Array(appended.dropFirst())
        }
        if let tag {
            Authorship.appendTag(tag, to: &out, from: lineStart)
            return
        }
        if r.tagAt >= 0, device == nil, appended.isEmpty, r.isTimeCanonical(base) {
            let newTime = time ?? r.time
            let digits = base + r.tagAt + Authorship.opening.count
            if newTime == r.time {
                // Nothing the tag covers changed: it stays as it was.
                out.append(contentsOf: UnsafeBufferPointer(start: base + r.tagAt, count: r.end - r.tagAt))
                return
            }
            if newTime < r.time {
                // Pulled back: the tag stays, with the time its author gave (the first pull-back's, kept).
                let authored = r.tagAuthorTime != nil ? digits + Authorship.tagDigits + 1 : base + r.modifiedAt.start
                Authorship.appendKeptTag(digits: digits, authorTime: authored, to: &out)
                return
            }
        }
        out.append(UInt8(ascii: "}"))
    }

    /// Appends `bytes` (valid UTF-8) as a JSON string literal.
    public static func appendJSONString(_ bytes: UnsafeRawBufferPointer, to out: inout [UInt8]) {
        let hex: [UInt8] = Array("0123456789abcdef".utf8)
        out.append(0x22)
        for c in bytes {
            switch c {
            case 0x22: out += [0x5C, 0x22]
            case 0x5C: out += [0x5C, 0x5C]
            case 0x0A: out += [0x5C, UInt8(ascii: "n")]
            case 0x0D: out += [0x5C, UInt8(ascii: "r")]
            case 0x09: out += [0x5C, UInt8(ascii: "t")]
            case 0..<0x20, 0x7F:
                out += [0x5C, UInt8(ascii: "u"), 0x30, 0x30, hex[Int(c >> 4)], hex[Int(c & 15)]]
            default: out.append(c)
            }
        }
        out.append(0x22)
    }
}

/// Whether a local edit says nothing new: its content equals the version
/// held, leaving aside what stamping fills in (modifiedAt, deviceId, the
/// authorship tag) and a `deleted` it leaves out (false). Two tombstones are
/// the same content.
enum RecordContent {
    static func same(held: [UInt8], incoming: UnsafeRawBufferPointer) -> Bool {
        guard let h = try? JSONParser.parse(String(decoding: held, as: UTF8.self)), let hv = h.objectValue,
              let i = try? JSONParser.parse(String(decoding: incoming, as: UTF8.self)), let iv = i.objectValue else { return false }
        func content(_ o: [(String, JSONValue)]) -> [String: JSONValue] {
            var d: [String: JSONValue] = [:]
            for (k, v) in o where k != "modifiedAt" && k != "deviceId" && k != Authorship.field { d[k] = v }
            if d["deleted"] == nil { d["deleted"] = .bool(false) }
            if d["deleted"] == .bool(true) { return ["deleted": .bool(true)] }
            for k in ["data", "photos"] where d[k] == .null { d[k] = nil }
            return d
        }
        return content(hv) == content(iv)
    }
}
