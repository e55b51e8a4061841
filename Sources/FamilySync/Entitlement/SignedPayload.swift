/// A decoded JWS payload with the fields the checks read, typed. A field of
/// the wrong type is `malformed`, never silently treated as absent; JSON
/// `null` counts as absent.
public struct SignedPayload: Sendable {
    public var kind: SignedPayloadKind
    /// The whole payload, as signed (object keys in their order, numbers as written).
    public var json: JSONValue
    /// The payload's JSON text exactly as signed.
    public var text: [UInt8]
    /// When Apple signed it; certificates are judged at this time.
    public var signedDate: Timestamp?
    public var bundleID: String?
    public var productID: String?
    public var environment: String?
    public var expiresDate: Timestamp?
    public var revocationDate: Timestamp?
    public var revocationReason: JSONValue?

    /// Why a payload could not be read; `json` when it was JSON at all.
    public struct Unreadable: Error, Sendable {
        public var failure: ProofFailure
        public var json: JSONValue?
    }

    /// Decodes a base64url payload segment for `kind`.
    public static func decode(_ segment: UnsafeRawBufferPointer, kind: SignedPayloadKind) -> Result<SignedPayload, Unreadable> {
        let bytes: [UInt8]
        switch Base64URL.decode(segment) {
        case let .failure(p): return .failure(Unreadable(failure: ProofFailure(.malformed, "payload is not base64url: \(p)")))
        case let .success(b): bytes = b
        }
        let json: JSONValue
        do { json = try JSONParser.parse(bytes) } catch {
            return .failure(Unreadable(failure: ProofFailure(.malformed, "payload is not JSON: \(error)")))
        }
        guard case .object = json else {
            return .failure(Unreadable(failure: ProofFailure(.malformed, "payload is \(ProofFailure.quote(json)), not a JSON object")))
        }
        do {
            return .success(try SignedPayload(kind: kind, json: json, text: bytes))
        } catch let f as ProofFailure {
            return .failure(Unreadable(failure: f, json: json))
        } catch {
            return .failure(Unreadable(failure: ProofFailure(.malformed, "payload: \(error)"), json: json))
        }
    }

    init(kind: SignedPayloadKind, json: JSONValue, text: [UInt8]) throws {
        self.kind = kind
        self.json = json
        self.text = text
        signedDate = try SignedPayload.time(json, "signedDate")
        switch kind {
        case .transaction:
            bundleID = try SignedPayload.string(json, "bundleId")
            productID = try SignedPayload.string(json, "productId")
            environment = try SignedPayload.string(json, "environment")
            expiresDate = try SignedPayload.time(json, "expiresDate")
            revocationDate = try SignedPayload.time(json, "revocationDate")
            revocationReason = json["revocationReason"]
        case .renewalInfo:
            environment = try SignedPayload.string(json, "environment")
        case .notification:
            // The app the notification is about, where Apple's verifier looks for it.
            let data = try SignedPayload.object(json, "data")
            let summary = data == nil ? try SignedPayload.object(json, "summary") : nil
            if let app = data ?? summary {
                let field = data != nil ? "data" : "summary"
                bundleID = try SignedPayload.string(app, "bundleId", in: field)
                environment = try SignedPayload.string(app, "environment", in: field)
            } else if let token = try SignedPayload.object(json, "externalPurchaseToken") {
                bundleID = try SignedPayload.string(token, "bundleId", in: "externalPurchaseToken")
                if let id = try SignedPayload.string(token, "externalPurchaseId", in: "externalPurchaseToken") {
                    environment = id.hasPrefix("SANDBOX") ? "Sandbox" : "Production"
                }
            }
        }
    }

    /// Whether `text` can go into a JSON line as it is: no raw line breaks or
    /// tabs between tokens, no U+2028/U+2029 (which the writer escapes).
    /// Control characters inside strings were already refused by the parser.
    public var textIsOneLine: Bool {
        for (i, b) in text.enumerated() {
            if b == 0x0A || b == 0x0D || b == 0x09 { return false }
            if b == 0xE2, i + 2 < text.count, text[i + 1] == 0x80, text[i + 2] == 0xA8 || text[i + 2] == 0xA9 { return false }
        }
        return true
    }

    static func present(_ obj: JSONValue, _ key: String) -> JSONValue? {
        guard let v = obj[key], !v.isNull else { return nil }
        return v
    }

    static func string(_ obj: JSONValue, _ key: String, in parent: String? = nil) throws -> String? {
        guard let v = present(obj, key) else { return nil }
        guard case let .string(s) = v else {
            throw ProofFailure(.malformed, "payload \(parent.map { $0 + "." } ?? "")\(key) is \(ProofFailure.quote(v)), not a string")
        }
        return s
    }

    static func object(_ obj: JSONValue, _ key: String) throws -> JSONValue? {
        guard let v = present(obj, key) else { return nil }
        guard case .object = v else { throw ProofFailure(.malformed, "payload \(key) is \(ProofFailure.quote(v)), not an object") }
        return v
    }

    /// App Store times are milliseconds since 1970 as JSON numbers (StoreKit
    /// testing writes fractions; they are truncated to the millisecond).
    static func time(_ obj: JSONValue, _ key: String) throws -> Timestamp? {
        guard let v = present(obj, key) else { return nil }
        if let ms = v.int64Value, ms >= Timestamp.earliest.milliseconds, ms <= Timestamp.latest.milliseconds {
            return Timestamp(milliseconds: ms)
        }
        if let d = v.doubleValue, d.isFinite, d >= Double(Timestamp.earliest.milliseconds), d <= Double(Timestamp.latest.milliseconds) {
            return Timestamp(milliseconds: Int64(d.rounded(.down)))
        }
        throw ProofFailure(.malformed, "payload \(key) is \(ProofFailure.quote(v)), not milliseconds since 1970 in years 0000–9999")
    }
}
