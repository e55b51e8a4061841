/// The outcome of verifying one token: a proof, or the first failed check.
/// A bad token is a verdict, never a thrown error.
public enum ProofVerdict: Sendable {
    case valid(VerifiedProof)
    /// `payload` is the decoded payload when it could be decoded (it is then
    /// shown, but it proves nothing).
    case invalid(ProofFailure, kind: SignedPayloadKind, payload: JSONValue?)

    public var isValid: Bool { if case .valid = self { return true }; return false }
    public var proof: VerifiedProof? { if case let .valid(p) = self { return p }; return nil }
    public var failure: ProofFailure? { if case let .invalid(f, _, _) = self { return f }; return nil }
    public var reason: ProofReason? { failure?.reason }

    /// `{"valid", "reason", "detail", "<kind>", "entitledUntil"}`: the line
    /// `jws-verify` writes. `reason` and `detail` appear only when invalid;
    /// the payload key (`transaction`, `renewalInfo`, `notification`) only
    /// when the payload decoded.
    public var json: JSONValue {
        switch self {
        case let .valid(p):
            return .object([
                ("valid", .bool(true)),
                (p.kind.payloadKey, p.payload.json),
                ("entitledUntil", .optional(p.entitledUntil?.rfc3339)),
            ])
        case let .invalid(f, kind, payload):
            var o: [(String, JSONValue)] = [("valid", .bool(false)), ("reason", .string(f.reason.rawValue)), ("detail", .string(f.detail))]
            if let payload { o.append((kind.payloadKey, payload)) }
            o.append(("entitledUntil", .null))
            return .object(o)
        }
    }

    /// The line `json` describes, newline-terminated, built straight into
    /// bytes: a valid proof's payload is copied as signed when it is already
    /// one line, so a batch does not re-serialize every payload.
    public func appendLine(to out: inout [UInt8]) {
        guard case let .valid(p) = self, p.payload.textIsOneLine else {
            out.append(contentsOf: json.serialized.utf8)
            out.append(0x0A)
            return
        }
        out.append(contentsOf: #"{"valid":true,""#.utf8)
        out.append(contentsOf: p.kind.payloadKey.utf8)
        out.append(contentsOf: #"":"#.utf8)
        out.append(contentsOf: p.payload.text)
        out.append(contentsOf: #","entitledUntil":"#.utf8)
        if let until = p.entitledUntil {
            out.append(0x22)
            out.append(contentsOf: until.rfc3339.utf8)
            out.append(0x22)
        } else {
            out.append(contentsOf: "null".utf8)
        }
        out.append(contentsOf: "}\n".utf8)
    }
}
