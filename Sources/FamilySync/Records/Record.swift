/// One version of a record (DESIGN.md "Records"). `line` is the JSON text the
/// store keeps and writes out: the source line verbatim when its `modifiedAt`
/// is already in canonical form, else the same object with only that field
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
public struct RecordError: Error, CustomStringConvertible, Sendable {
    public var field: String?
    public var problem: String
    public init(field: String?, _ problem: String) { self.field = field; self.problem = problem }
    public var description: String { field.map { "\($0): \(problem)" } ?? problem }
}

extension Record {
    /// The longest record line accepted (bytes). Photos travel separately, so a
    /// receipt's JSON stays small; anything larger is hostile or a mistake.
    public static let maxLineBytes = 1 << 20

    /// Parses and validates one NDJSON line.
    public init(line: String) throws(RecordError) {
        guard line.utf8.count <= Record.maxLineBytes else {
            throw RecordError(field: nil, "line longer than \(Record.maxLineBytes) bytes")
        }
        let value: JSONValue
        do { value = try JSONParser.parse(line) } catch {
            throw RecordError(field: nil, "not JSON: \(error)")
        }
        try self.init(json: value, line: line)
    }

    /// Builds a record from a parsed object; `line` is its source text, if any.
    public init(json value: JSONValue, line: String?) throws(RecordError) {
        guard case let .object(pairs) = value else { throw RecordError(field: nil, "not a JSON object") }
        func str(_ k: String) throws(RecordError) -> String {
            guard let v = value[k] else { throw RecordError(field: k, "missing") }
            guard case let .string(s) = v else { throw RecordError(field: k, "not a string") }
            guard !s.isEmpty else { throw RecordError(field: k, "empty") }
            return s
        }
        id = try str("id")
        type = try str("type")
        deviceID = try str("deviceId")
        let stamp = try str("modifiedAt")
        guard let t = Timestamp(rfc3339: stamp) else { throw RecordError(field: "modifiedAt", "not an RFC 3339 time: \"\(stamp.prefix(40))\"") }
        modifiedAt = t
        guard let d = value["deleted"] else { throw RecordError(field: "deleted", "missing") }
        guard case let .bool(b) = d else { throw RecordError(field: "deleted", "not true or false") }
        deleted = b
        if let data = value["data"], !data.isNull, data.objectValue == nil {
            throw RecordError(field: "data", "not an object")
        }
        var ph: [String] = []
        if let p = value["photos"], !p.isNull {
            guard case let .array(items) = p else { throw RecordError(field: "photos", "not an array") }
            for (i, item) in items.enumerated() {
                guard case let .string(h) = item, Record.isPhotoHash(h) else {
                    throw RecordError(field: "photos[\(i)]", "not a lowercase SHA-256 hex string")
                }
                ph.append(h)
            }
        }
        photos = ph
        if let line, stamp == t.rfc3339 {
            self.line = line
        } else {
            self.line = JSONValue.object(pairs).replacing("modifiedAt", with: .string(t.rfc3339)).serialized
        }
    }

    public static func isPhotoHash(_ h: String) -> Bool {
        h.utf8.count == 64 && h.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }
    }

    /// The same record with a new `modifiedAt` (the clamp, or a local stamp).
    public func restamped(_ t: Timestamp, deviceID newDevice: String? = nil) -> Record {
        var r = self
        r.modifiedAt = t
        var v = (try? JSONParser.parse(line)) ?? .object([])
        v = v.replacing("modifiedAt", with: .string(t.rfc3339))
        if let newDevice {
            r.deviceID = newDevice
            v = v.replacing("deviceId", with: .string(newDevice))
        }
        r.line = v.serialized
        return r
    }
}

extension JSONValue {
    /// The object with `key` set to `value`, in place when present, else appended.
    public func replacing(_ key: String, with value: JSONValue) -> JSONValue {
        guard case var .object(pairs) = self else { return self }
        if let i = pairs.firstIndex(where: { $0.0 == key }) { pairs[i].1 = value } else { pairs.append((key, value)) }
        return .object(pairs)
    }
}
