/// What a store or a command line says a proof must be for: the app's bundle
/// ID, the products that unlock the plan (empty: any), and whether Sandbox
/// proofs count. A store keeps these as its `bundle_id`, `products` and
/// `allow_sandbox` settings.
public struct ProofPolicy: Sendable, Equatable {
    public var bundleID: String
    public var products: [String]
    public var allowSandbox: Bool

    public init(bundleID: String, products: [String] = [], allowSandbox: Bool = false) {
        self.bundleID = bundleID
        self.products = products
        self.allowSandbox = allowSandbox
    }

    /// The payload checks for `kind`, in verdict order. Every kind gets the
    /// same header, chain and signature checks before these.
    public func checks(for kind: SignedPayloadKind) -> [any PayloadCheck] {
        switch kind {
        case .transaction:
            return [BundleCheck(bundleID: bundleID), ProductCheck(products: products),
                    EnvironmentCheck(allowSandbox: allowSandbox), RevocationCheck(), ExpiryCheck()]
        case .renewalInfo:
            return [EnvironmentCheck(allowSandbox: allowSandbox)]
        case .notification:
            return [BundleCheck(bundleID: bundleID), EnvironmentCheck(allowSandbox: allowSandbox)]
        }
    }
}
