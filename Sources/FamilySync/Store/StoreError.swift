/// Something about the store: it cannot be opened or created, is not a
/// store, is in the wrong state for what was asked, or holds something it
/// should not. `path` is the store's file (for `photoTooLarge`, the photo's;
/// for the backup kinds, the backup's).
public struct StoreError: Error, CustomStringConvertible, Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        case cannotOpen, cannotRead, cannotCreate
        /// A write to one of the store's files failed (`detail` says what and why).
        case cannotWrite
        /// The folder the store goes in (`other`) cannot be made.
        case cannotCreateFolder
        /// No store at `path`, and none was to be created.
        case missing
        /// `path` is not a family-sync store; `detail` says what it is instead.
        case notAStore
        /// Written by a newer family-sync: `version` is the store's.
        case newerVersion
        case noDeviceIdentity, noDeviceKey, noFamilyKey
        /// The store belongs to no family yet.
        case noFamily
        /// The store left its family while it was being served.
        case familyGone
        /// The store is in family `family` already.
        case alreadyInFamily
        /// The setting `other` holds `detail`, which is not what it should.
        case badSetting
        /// Another process serves this store.
        case alreadyServed
        case cannotLock
        case backupCannotCreate, backupCannotWrite
        /// A photo bigger than `limit` bytes (`size`).
        case photoTooLarge
        /// A record line the store holds does not scan.
        case damagedRecord
        /// The store contradicts itself: a fault of this program.
        case inconsistent
    }

    public var kind: Kind
    public var path: String
    /// Why, in words (an errno's or SQLite's message, what was found).
    public var detail: String
    public var family: String?
    /// The setting or the folder concerned.
    public var other: String?
    public var version: Int?
    public var limit: Int?
    public var size: Int?

    public init(_ kind: Kind, path: String = "", detail: String = "", family: String? = nil, other: String? = nil,
                version: Int? = nil, limit: Int? = nil, size: Int? = nil) {
        self.kind = kind
        self.path = path
        self.detail = detail
        self.family = family
        self.other = other
        self.version = version
        self.limit = limit
        self.size = size
    }

    public var description: String {
        switch kind {
        case .cannotOpen: return "cannot open store \(path): \(detail)"
        case .cannotRead: return "cannot read store \(path): \(detail)"
        case .cannotCreate: return "cannot create store \(path): \(detail)"
        case .cannotWrite: return "cannot write \(path): \(detail)"
        case .cannotCreateFolder: return "cannot create folder \(other ?? "") for the store: \(detail)"
        case .missing: return "no store at \(path)"
        case .notAStore: return "\(path) is not a family-sync store (\(detail))"
        case .newerVersion:
            return "\(path) was written by a newer family-sync (store version \(version ?? 0); this one knows up to \(Schema.currentVersion)); upgrade family-sync to use it"
        case .noDeviceIdentity: return "store \(path) has no device identity"
        case .noDeviceKey: return "this store holds no device key; pair it again"
        case .noFamilyKey: return "this store holds no family key; pair it again"
        case .noFamily: return "this store belongs to no family yet"
        case .familyGone: return "this store no longer belongs to a family"
        case .alreadyInFamily: return "store already belongs to family \(family ?? "")"
        case .badSetting: return "store \(path): setting \(other ?? "") is \(detail)"
        case .alreadyServed: return "the store \(path) is already being served by another process; one serve per store"
        case .cannotLock: return "cannot lock store \(path): \(detail)"
        case .backupCannotCreate: return "cannot create \(path): \(detail)"
        case .backupCannotWrite: return "cannot write \(path): \(detail)"
        case .photoTooLarge:
            let what = "photo of \(size ?? 0) bytes is larger than the limit of \(limit ?? 0)"
            return path.isEmpty ? what : "\(path): \(what)"
        case .damagedRecord: return "a stored record line does not scan: \(detail)"
        case .inconsistent: return detail
        }
    }
}
