/// The purchase is one of the products that unlock the family plan. An empty
/// list accepts any product of the bundle.
public struct ProductCheck: PayloadCheck {
    public var products: [String]
    public var reason: ProofReason { .wrongProduct }

    public init(products: [String]) { self.products = products }

    public func failure(_ p: SignedPayload, now: Timestamp) -> String? {
        guard !products.isEmpty else { return nil }
        let allowed = products.map { ProofFailure.quote($0) }.joined(separator: ", ")
        guard let id = p.productID else { return "payload has no productId; allowed: \(allowed)" }
        return products.contains(id) ? nil : "productId is \(ProofFailure.quote(id)), allowed: \(allowed)"
    }
}
