/// A failed check: its reason code and a detail naming the offending value.
public struct ProofFailure: Error, Equatable, Sendable, CustomStringConvertible {
    public var reason: ProofReason
    /// What exactly failed, with the value that failed it.
    public var detail: String

    public init(_ reason: ProofReason, _ detail: String) {
        self.reason = reason
        self.detail = detail
    }

    public var description: String { "\(reason.rawValue): \(detail)" }

    /// Longest excerpt of an input value quoted in a detail; hostile input
    /// can be megabytes, a diagnostic should stay one readable line.
    public static let quotedValueLimit = 120

    /// `value` as a JSON string literal, cut to `quotedValueLimit` characters.
    public static func quote(_ value: String) -> String {
        var out = ""
        if value.count > quotedValueLimit {
            JSONValue.writeString(String(value.prefix(quotedValueLimit)) + "…", to: &out)
        } else {
            JSONValue.writeString(value, to: &out)
        }
        return out
    }

    /// A JSON value quoted for a detail: strings as literals, others as JSON text.
    public static func quote(_ value: JSONValue) -> String {
        if case let .string(s) = value { return quote(s) }
        let text = value.serialized
        return text.count > quotedValueLimit ? String(text.prefix(quotedValueLimit)) + "…" : text
    }
}
