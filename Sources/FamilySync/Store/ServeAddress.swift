extension Store {
    /// Where this store's `peer-sync serve` last listened (meta), so an offer
    /// made while it runs, or later, carries the address members reach it at.
    public static let serveAddressKey = "serve_address"

    public var serveAddress: String? {
        get throws { try meta(Store.serveAddressKey) }
    }
}
