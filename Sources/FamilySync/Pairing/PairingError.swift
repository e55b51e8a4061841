/// Pairing that cannot go ahead: an address an offer cannot carry, an offer
/// input that holds no usable offer, a store that may not make or redeem one.
public struct PairingError: Error, CustomStringConvertible, Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        /// `address` would make the offer longer than `limit` characters.
        case addressTooLong
        case addressNotHostPort
        /// `address` has characters an offer cannot carry.
        case addressBadCharacters
        /// A member's store (of `family`) was asked for an offer; only the owner makes them.
        case notOwner
        /// The offer input `source` is longer than `limit` bytes.
        case offerTooLong
        /// Line `line` of `source` is not JSON (`detail`).
        case offerNotJSON
        /// Line `line` of `source` is a JSON object without `qr`.
        case offerMissingQR
        /// Line `line` of `source` holds an offer whose `field` is wrong (`detail`).
        case offerInvalid
        /// Nothing in `source` is an offer.
        case noOffer
        /// The store is in another family (`family`) than the offer's.
        case inAnotherFamily
        /// The store is in the offer's family (`family`) already.
        case alreadyMember
    }

    public var kind: Kind
    /// The address, or the offer input's name.
    public var source: String
    public var line: Int?
    public var field: String?
    public var detail: String
    public var family: String?
    public var limit: Int?

    public init(_ kind: Kind, source: String = "", line: Int? = nil, field: String? = nil, detail: String = "",
                family: String? = nil, limit: Int? = nil) {
        self.kind = kind
        self.source = source
        self.line = line
        self.field = field
        self.detail = detail
        self.family = family
        self.limit = limit
    }

    private var at: String { line.map { "\(source):\($0)" } ?? source }

    public var description: String {
        switch kind {
        case .addressTooLong: return "the address '\(source)' makes the offer longer than \(limit ?? 0) characters"
        case .addressNotHostPort: return "address '\(source)' is not HOST:PORT"
        case .addressBadCharacters: return "address '\(source)' has characters a pairing offer cannot carry"
        case .notOwner: return "this store is a member of family \(family ?? ""); only the owner's device makes pairing offers"
        case .offerTooLong: return "\(source): longer than \(limit ?? 0) bytes; not an offer"
        case .offerNotJSON: return "\(at): not JSON: \(detail)"
        case .offerMissingQR: return "\(at): field 'qr': missing"
        case .offerInvalid: return "\(at): field '\(field ?? "")': \(detail)"
        case .noOffer: return "\(source): no offer found"
        case .inAnotherFamily: return "this store belongs to family \(family ?? ""); a store joins one family only"
        case .alreadyMember: return "this store is already in family \(family ?? "")"
        }
    }
}
