/// Reads a store's advertisement for the responder's thread, on a store
/// connection of its own (a Store belongs to one thread). It is opened on
/// first use, so it is only ever touched by the thread that reads.
public final class AdvertisementReader: @unchecked Sendable {
    private let path: String
    private var store: Store?
    /// The last advertisement read, and how many reads in a row have failed since.
    private var last: ServiceAdvertisement?
    private var failures = 0
    /// Reads that may fail in a row (a store busy with a write, say) before
    /// the last advertisement is given up: one failed read is no reason to
    /// say goodbye and probe for the names all over again.
    static let toleratedFailures = 5

    public init(path: String) { self.path = path }

    /// The advertisement now, or nil when the store says there is none (no
    /// family, revoked) or has been unreadable for a while: the responder
    /// then goes quiet rather than guess.
    public func read(port: UInt16, now: Timestamp) -> ServiceAdvertisement? {
        do {
            let s = try store ?? Store(path: path, create: false)
            store = s
            last = try ServiceAdvertisement.current(store: s, port: port, now: now)
            failures = 0
        } catch {
            store = nil
            failures += 1
            if failures > AdvertisementReader.toleratedFailures { last = nil }
        }
        return last
    }
}
