import FoundationEssentials
import Glibc
import FamilySync
import FamilySyncCLI
import FamilySyncImaging

/// What pair-qr does; its declaration lives with the other tools' in FamilySyncCLI.
extension PairQRCommand {
    public static func run(_ ctx: ToolContext) throws -> ExitStatus {
        let a = ctx.args
        let drawing = [Option.ttl, .addr, .output, .format, .size, .margin, .level].filter { a.isSet($0) }.map(\.rawValue)
        if a.flag(Option.list) || a.isSet(Option.close) {
            if a.flag(Option.list) && a.isSet(Option.close) { throw ToolError.usage("--list and --close cannot be combined") }
            if let first = drawing.first { throw ToolError.usage("--\(first) makes no sense with --\(a.flag(Option.list) ? "list" : "close")") }
        }
        if a.flag(Option.json) && !a.flag(Option.list) { throw ToolError.usage("--json goes with --list (an offer is always printed as JSON)") }
        if a.flag(Option.list) {
            let offers = try ctx.store(create: false).openOffers(now: ctx.now)
            if StatusView.wantsJSON(ctx, flag: Option.json) {
                for offer in offers { try ctx.out.writeLine(offer.json) }
            } else {
                try ctx.out.write(StatusView.offers(offers))
            }
            return .success
        }
        if let target = a.value(Option.close) { return try closeOffers(target, ctx) }

        let ttl = try a.timeSpan(Option.ttl, default: PairingOffer.defaultTTL)
        guard ttl <= PairingOffer.maxTTL else { throw ToolError.usage("--ttl: \(ttl) is longer than the \(PairingOffer.maxTTL) an offer may stay open") }
        let address = a.value(Option.addr)
        if let address {
            try PairingOffer.validateAddress(address)
            // The longest offer text this address can make, checked before the store is touched.
            let longest = PairingOffer(family: "00000000-0000-0000-0000-000000000000", nonce: String(repeating: "A", count: PairingOffer.nonceLength),
                                       expiresAt: Timestamp(milliseconds: 9_999_999_999_000), address: address)
            guard longest.text.utf8.count <= PairingOffer.maxTextLength else {
                throw ToolError.usage("--addr: '\(address)' makes the offer longer than \(PairingOffer.maxTextLength) characters")
            }
        }
        let size = try a.int(Option.size, default: QRRenderer.defaultModuleSize, range: QRRenderer.moduleSizeRange)
        let margin = try a.int(Option.margin, default: QRRenderer.defaultMargin, range: QRRenderer.marginRange)
        let level = QRCode.Level(rawValue: try a.choice(Option.level, default: "M")) ?? .M
        let output = a.value(Option.output)
        let format = try chooseFormat(a.value(Option.format), output: output)

        let store = try ctx.store()
        try refuseWhenFull(store, ctx)
        let offer = try store.makeOffer(ttl: ttl, address: try address ?? defaultAddress(store), now: ctx.now)
        Interruption.whatIsKept("offer \(offer.nonce) stays open until \(offer.expiresAt.rfc3339); 'pair-qr --close \(offer.nonce)' closes it")
        do {
            let code = try QRCode.encode(alphanumeric: offer.text, level: level)
            let r = QRRenderer(code: code, margin: margin, moduleSize: size)
            if let output {
                let bytes: [UInt8]
                switch format {
                case "svg": bytes = Array(r.svg().utf8)
                case "text": bytes = Array(r.text().utf8)
                default: bytes = try r.png()
                }
                // The code is the offer, nonce and all: 0600, like the store.
                try OutputFile.replace(output, with: bytes, secret: true)
            } else {
                // Colour escapes only for a terminal; a file or pipe gets plain half blocks.
                let drawn = format == "text" ? r.text() : r.terminal(colour: isatty(2) == 1)
                try StandardStreams.writeErrorOrFail(drawn)
            }
        } catch {
            // An offer nobody can see is closed at once rather than left open.
            _ = try? store.closeOffers(nonce: offer.nonce, now: ctx.now)
            throw error
        }
        try ctx.out.writeLine(offer.json)
        return .success
    }

    /// An offer for a family with no free place could only be refused at the
    /// join: refused here instead (77), with how to make room.
    static func refuseWhenFull(_ store: Store, _ ctx: ToolContext) throws {
        guard let fam = try store.family(), fam.role == .owner else { return }
        let active = try store.activeDeviceCount(), max = try store.maxDevices
        guard active >= max else { return }
        throw ToolError(.noPermission, "the family is full (\(active) of \(max) devices), so no device could join with an offer; "
                        + "make room with 'peer-sync revoke --db \(store.path) DEVICE' ('peer-sync status --db \(store.path)' lists the devices)")
    }

    /// Without --addr, an offer carries where this store's `peer-sync serve`
    /// listens (a wildcard listener: this host's primary address, on its
    /// port), else the primary address on the default port; never nothing.
    static func defaultAddress(_ store: Store) throws -> String {
        let served = try store.serveAddress.flatMap(HostPort.init(parsing:))
        if let served, !["0.0.0.0", "::", "*"].contains(served.host) { return "\(served.host):\(served.port)" }
        guard let host = NetworkInterface.primaryAddress() else {
            throw ToolError.usage("this device has no network address besides loopback to put in the offer: give --addr HOST:PORT")
        }
        return "\(host):\(served?.port ?? SyncLimits.defaultPort)"
    }

    static func chooseFormat(_ given: String?, output: String?) throws -> String {
        if let given {
            if output == nil, given == "png" || given == "svg" {
                throw ToolError.usage("--format \(given) needs -o FILE (standard output carries the offer JSON)")
            }
            if output != nil, given == "terminal" { throw ToolError.usage("--format terminal draws on standard error; it takes no -o FILE") }
            return given
        }
        guard let output else { return "terminal" }
        if output == "-" { throw ToolError.usage("-o -: standard output carries the offer JSON; name a file") }
        switch PathText.fileExtension(output).lowercased() {
        case "svg": return "svg"
        case "txt", "text": return "text"
        case "png", "": return "png"
        case let ext:
            throw ToolError.usage("-o \(output): '.\(ext)' is not a format pair-qr writes (.png, .svg, .txt); give --format to choose one")
        }
    }

    static func closeOffers(_ target: String, _ ctx: ToolContext) throws -> ExitStatus {
        let all = target == "all"
        if !all {
            guard target.utf8.count == PairingOffer.nonceLength, target.utf8.allSatisfy(Base32.isAlphabet) else {
                throw ToolError.usage("--close: '\(target)' is neither 'all' nor a nonce (\(PairingOffer.nonceLength) base32 characters)")
            }
        }
        let n = try ctx.store(create: false).closeOffers(nonce: all ? nil : target, now: ctx.now)
        try ctx.out.writeLine(.object([("closed", .int(n))]))
        if !all && n == 0 {
            ctx.warn("no open offer has nonce \(target) (it may have expired, been used or been closed)")
            return .negative
        }
        return .success
    }
}
