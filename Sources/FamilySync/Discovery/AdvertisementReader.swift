/// Reads a store's advertisement for the responder's thread, on a store
/// connection of its own (a Store belongs to one thread). It is opened on
/// first use, so it is only ever touched by the thread that reads.
public final class AdvertisementReader: @unchecked Sendable {
    private let path: String
    private var store: Store?

    public init(path: String) { self.path = path }

    /// The advertisement now, or nil when the store cannot say (no family,
    /// revoked, unreadable): the responder then goes quiet rather than guess.
    public func read(port: UInt16, now: Timestamp) -> ServiceAdvertisement? {
        do {
            let s = try store ?? Store(path: path, create: false)
            store = s
            return try ServiceAdvertisement.current(store: s, port: port, now: now)
        } catch {
            store = nil
            return nil
        }
    }
}
