import FamilySync

/// The one place the core's errors become what a tool says and how it
/// exits: the exit status for each kind, and the hints that name commands
/// and options (the core's own messages never quote a command line).
extension ToolError {
    /// `command` is the command path that ran (`["peer-sync", "serve"]`);
    /// `option` the option that named the file or value concerned, if the
    /// caller knows one (`--root`, `--backup`).
    public init(_ error: any Error, command: [String] = [], option: String? = nil) {
        switch error {
        case let e as ToolError:
            self = e
        case let e as FileError:
            var m = e.description
            if e.kind == .standardInputClosed { m += "; give a FILE or pipe the input in" }
            let status: ExitStatus = e.isMissingInput ? .noInput : e.kind == .tooLarge ? .dataError : .ioError
            self.init(status, option.map { "\($0) \(m)" } ?? m)
        case let e as SystemError:
            self.init(.software, e.description)
        case let e as StoreError:
            self.init(ToolError.status(e.kind), ToolError.message(e, command: command, option: option))
        case let e as RecordLineError:
            self.init(.dataError, e.description)
        case let e as RecordError:
            self.init(.dataError, e.description)
        case let e as ProofError:
            var m = e.description
            if e.kind == .noPolicy { m += "; set it once with 'jws-verify --db \(e.path) --bundle-id ID [--product ID]...'" }
            self.init(.dataError, option.map { "\($0) \(m)" } ?? m)
        case let e as PairingError:
            self.init(ToolError.status(e.kind), ToolError.message(e))
        case let e as SyncError:
            self.init(ToolError.status(e, command: command), ToolError.message(e, command: command))
        case let e as SQLiteError:
            self.init(ToolError.status(e), e.description)
        case let e as BundleError:
            let status: ExitStatus
            switch e.kind {
            case .malformed, .replayed, .stale: status = .dataError
            case .notForUs: status = .noPermission
            case .busy: status = .tempFail
            case .usage: status = .usage
            }
            self.init(status, e.message)
        default:
            self.init(.software, "\(error)")
        }
    }

    /// How a revoked device's store comes back, in every message that tells it it is revoked.
    static let rejoinAdvice = "to rejoin, the owner makes a new offer (pair-qr) and this store redeems it with 'peer-sync join' (a new admission; its records merge by last-writer-wins)"
    /// The same for a device the owner's device does not know (docs/protocol.md §4.6).
    static let joinAgainAdvice = "to join, the owner makes a new offer (pair-qr) and this store redeems it with 'peer-sync join' (a new admission; its records merge by last-writer-wins)"

    static func status(_ kind: StoreError.Kind) -> ExitStatus {
        switch kind {
        case .cannotOpen, .cannotRead, .cannotCreate, .cannotWrite, .cannotCreateFolder, .cannotLock, .backupCannotCreate, .backupCannotWrite:
            return .ioError
        case .missing, .noFamily, .familyGone:
            return .noInput
        case .notAStore, .newerVersion, .noDeviceIdentity, .noDeviceKey, .noFamilyKey, .alreadyInFamily, .badSetting,
             .photoTooLarge, .damagedRecord:
            return .dataError
        case .alreadyServed:
            return .tempFail
        case .inconsistent:
            return .software
        }
    }

    static func message(_ e: StoreError, command: [String], option: String?) -> String {
        switch e.kind {
        case .noFamily where command.last == "serve":
            return "\(e): make an offer with 'pair-qr' (owner) or redeem one with 'peer-sync join'"
        case .noFamily:
            return "\(e): redeem an offer with 'peer-sync join' (or make one with 'pair-qr' on the owner's device)"
        case .alreadyServed:
            return "another 'peer-sync serve' is already serving the store \(e.path); one serve per store (stop that one first, or sync through it)"
        case .backupCannotCreate, .backupCannotWrite:
            return "\(option ?? "--backup"): \(e)"
        default:
            return e.description
        }
    }

    static func status(_ kind: PairingError.Kind) -> ExitStatus {
        switch kind {
        case .addressTooLong, .addressNotHostPort, .addressBadCharacters, .alreadyMember: return .usage
        case .notOwner: return .noPermission
        case .offerTooLong, .offerNotJSON, .offerMissingQR, .offerInvalid, .inAnotherFamily: return .dataError
        case .noOffer: return .noInput
        }
    }

    static func message(_ e: PairingError) -> String {
        switch e.kind {
        case .offerMissingQR: return "\(e) (expected pair-scan's offer JSON)"
        case .alreadyMember: return "\(e); sync with 'peer-sync connect'"
        default: return e.description
        }
    }

    static func status(_ e: SyncError, command: [String]) -> ExitStatus {
        if e.kind == .firstSyncFailed, let cause = e.causes.first { return ToolError(cause, command: command).status }
        if e.isBusy { return .tempFail }
        if e.isUnreachable { return .unavailable }
        switch e.kind {
        case .protocolViolation, .peerReportedError, .wrongFamily, .transportGarbage: return .dataError
        case .refused, .refusedRevoked, .unknownToOwner, .perhapsUnknownToOwner, .keyNotAccepted, .reachedItself, .revoked, .revokedByRoster, .notAMember, .ownerKeyDiffers: return .noPermission
        case .noOtherDevice, .notLocalAddress: return .usage
        case .acceptFailed, .storeFailed: return .ioError
        default: return .software
        }
    }

    static func message(_ e: SyncError, command: [String]) -> String {
        let tell = { (cause: any Error) in ToolError(cause, command: command).message }
        let words: String
        switch e.kind {
        case .noPeer: words = "\(e.what) (is 'peer-sync serve' running?)"
        case .refused where e.reason == RefusalReason.alreadyMember.rawValue: words = "\(e.what); use 'peer-sync connect'"
        case .unknownToOwner: words = "\(e.what); \(joinAgainAdvice)"
        case .perhapsUnknownToOwner: words = "\(e.what); if it is the owner's device, \(joinAgainAdvice)"
        case .revoked: words = "\(e.what): \(rejoinAdvice)"
        case .revokedByRoster, .refusedRevoked: words = "\(e.what); \(rejoinAdvice)"
        case .localNameUnanswered: words = "\(e.what) (is 'peer-sync serve' running there, on the same network?)"
        case .nobodyAnswered: words = "\(e.words(telling: tell)). Check that 'peer-sync serve' runs on the owner's device and that both devices are on the same network"
        case .notLocalAddress: words = "--listen: \(e.what) (see 'ip -brief address')"
        default: words = e.words(telling: tell)
        }
        return e.withOutcome(words)
    }

    /// An SQLite failure that escaped the core's own errors.
    static func status(_ e: SQLiteError) -> ExitStatus {
        if e.isBusy { return .tempFail }
        if e.isNotADatabase { return .dataError }
        switch e.code & 0xFF {
        case 10, 13, 14, 8: return .ioError  // IOERR, FULL, CANTOPEN, READONLY
        default: return .software
        }
    }
}
