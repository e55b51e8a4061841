/// A progress event (`--events`): a name and its fields, written as one
/// NDJSON line `{"event":NAME,"time":…,…}` for scripts.
public struct SyncEvent: Sendable {
    public var name: String
    public var fields: [(String, JSONValue)]
    public init(_ name: String, _ fields: [(String, JSONValue)] = []) {
        self.name = name
        self.fields = fields
    }

    public func json(time: Timestamp) -> JSONValue {
        .object([("event", .string(name)), ("time", .string(time.rfc3339))] + fields)
    }

    /// A one-line human rendering for a terminal's progress line.
    public var line: String {
        let parts = fields.map { k, v -> String in
            if case let .string(s) = v { return "\(k) \(s)" }
            return "\(k) \(v.serialized)"
        }
        return ([name] + parts).joined(separator: ", ")
    }
}

/// Receives events as a session makes progress.
public typealias SyncObserver = (SyncEvent) -> Void
