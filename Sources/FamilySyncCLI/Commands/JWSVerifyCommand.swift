import FoundationEssentials
import Glibc
import FamilySync

public enum JWSVerifyCommand {
    public static let spec = CommandSpec(
        name: "jws-verify",
        abstract: "Verify StoreKit 2 signed transactions offline and re-check a device's cached proof",
        discussion: """
        Reads App Store signed transactions (StoreKit 2 jwsRepresentation, compact JWS), one per line, and writes one JSON verdict per input line, in order. Surrounding spaces, tabs and CR are ignored; a blank line gets a malformed verdict so that output line N always answers input line N. No network is used: a proof is valid when Apple's signature and the payload say so.

        A token is valid when all of these hold, checked in this order, the first failure deciding the reason: it is a compact JWS no longer than 65536 bytes whose header and payload are base64url JSON objects (malformed); alg is exactly ES256 and there is no crit header (unsupported-algorithm); x5c holds exactly three certificates and x5c[0] -> x5c[1] validates to a pinned root at the payload's signedDate, the intermediate carrying Apple's marker 1.2.840.113635.100.6.2.1 and being a CA, the leaf carrying 1.2.840.113635.100.6.11.1 and not being one (untrusted-chain; the root inside x5c is never used); the signature is 64 raw bytes r||s, each below the curve order, verifying over header.payload with the leaf's P-256 key (bad-signature; a DER signature is refused); bundleId matches (wrong-bundle); productId is one of the allowed when any are given (wrong-product); environment is Production, or Sandbox with --allow-sandbox, never Xcode or LocalTesting (wrong-environment); there is no revocationDate (revoked); expiresDate, when present, is after now (expired).

        Without --root, Apple Root CA - G3 (compiled in; SHA-256 63:34:3A:BF:B8:9A:6A:03:EB:B5:7E:9B:3F:5F:A7:BE:7C:4F:5C:75:6F:30:17:B3:A8:C4:88:C3:65:3E:91:79) is the only anchor. --root replaces it. Verified chains are remembered in memory by the exact bytes of leaf and intermediate, so a batch from one leaf costs one P-256 verification per token.

        Store mode (--db, --save, or $FAMILY_SYNC_DB naming a store when no --bundle-id asks for a batch) keeps the family's proof. jws-verify --db STORE --save reads transactions like a batch and, only when every line is valid, keeps them in the store (the owner's purchase). jws-verify --db STORE re-verifies the kept proofs at the current time, as a member does on every launch, and prints {"entitled", "until", "reason", "source"}: until is the proof's expiresDate (null: no end), reason is null when entitled, no-proof when the store holds none, else the newest proof's reason code (with a detail); source is local or peer:DEVICE. A store or kept proof that cannot be read is an error, never a silent free.

        The store's settings bundle_id, products and allow_sandbox are set by giving --bundle-id (with any --product and --allow-sandbox) together with --save; the three are replaced together, standard error names each one that changed (bundle_id: A → B), and later runs without --bundle-id use them. --bundle-id without --save judges the kept proofs by the settings given for that one check and changes nothing in the store.
        """,
        options: [
            OptionSpec("root", kind: .repeating, valueName: "CERT",
                       help: "Pin CERT (a DER or PEM file, one or more certificates) as the trust anchor instead of the bundled Apple Root CA - G3. Repeatable. Given with --save, it is kept in the store (the setting trust_roots) and used by every later command on that store that gives no --root.",
                       default: "the root the store keeps, else Apple Root CA - G3", completion: .file),
            OptionSpec("bundle-id", valueName: "ID",
                       help: "The app's bundle ID that proofs must carry. Needed for a batch; with --save it sets the store's settings, with --db alone it is used for that check only."),
            OptionSpec("product", kind: .repeating, valueName: "ID",
                       help: "A product ID that unlocks the plan. Repeatable.", default: "any product"),
            .flag("allow-sandbox", help: "Also accept Sandbox proofs (TestFlight, development builds). Xcode and LocalTesting proofs are never accepted."),
            OptionSpec("type", valueName: "TYPE",
                       help: "What the tokens are: transaction (checked for bundle, product, environment, revocation, expiry; yields entitledUntil), renewal-info (environment only) or notification (a notification signedPayload: bundle and environment of its data). Only transactions entitle.",
                       default: "transaction", completion: .values(SignedPayloadKind.allCases.map(\.rawValue))),
            OptionSpec("db", valueName: "PATH",
                       help: "Work on this store: check its kept proof (the store must exist), or keep proofs with --save (which creates it on first use).",
                       default: "with --save, $FAMILY_SYNC_DB, else $XDG_DATA_HOME/family-sync/store.db", completion: .file),
            .flag("save", help: "Verify the transactions read and, when all are valid, keep them in the store as the family's proof."),
            CommonOptions.now,
            CommonOptions.quiet,
        ],
        arguments: [ArgumentSpec("FILE", help: "Tokens, one per line; - is standard input. Read in a batch and with --save.", default: "-")],
        examples: [
            Example("Verify one proof; the verdict is one JSON line, exit 0 when valid:",
                    "jws-verify --bundle-id com.example.family --product family.monthly tx.jws"),
            Example("Verify a batch and list the reasons of the invalid ones, with their line numbers:",
                    "jws-verify --bundle-id com.example.family < proofs.jws |\n    jq -r 'select(.valid | not) | \"\\(input_line_number): \\(.reason): \\(.detail)\"'"),
            Example("The owner keeps the App Store proof; the settings are recorded once:",
                    "jws-verify --db owner.db --save --bundle-id com.example.family --product family.monthly < tx.jws"),
            Example("A member, on every launch: premium or free?",
                    "jws-verify --db kid.db && echo premium || echo free"),
            Example("Check Apple's test fixtures against Apple's test root:",
                    "jws-verify --root testCA.der --bundle-id com.example --allow-sandbox transactionInfo.jws"),
        ],
        seeAlso: AllTools.seeAlso(except: "jws-verify") + ["openssl-verify(1)", "jq(1)"],
        extraSections: [
            ("Verdicts", """
            A batch line: {"valid": true|false, "reason": CODE, "detail": TEXT, "transaction": PAYLOAD, "entitledUntil": TIME|null}. reason and detail appear only when invalid; detail names the offending value. The decoded payload appears (under transaction, renewalInfo or notification, after --type) whenever it decodes, even for an invalid token: it is shown, not trusted. entitledUntil is the transaction's expiresDate in RFC 3339 when valid, and null when invalid, when the purchase does not expire, and for renewal info and notifications, which entitle no one.

            Reason codes, in check order: malformed, unsupported-algorithm, untrusted-chain, bad-signature, wrong-bundle, wrong-product, wrong-environment, revoked, expired. The store check adds no-proof.
            """),
            ("Signed types", """
            All three --type values get the same header, chain and signature checks; they differ in the payload checks and in what a valid one yields.

            transaction (the default): a JWSTransaction, StoreKit 2's jwsRepresentation or the server API's signedTransactionInfo. Checked for bundleId, productId, environment, revocationDate and expiresDate. The only type that proves a purchase and the only one a store keeps: entitledUntil is its expiresDate, or null for a purchase that does not expire.

            renewal-info: a JWSRenewalInfo (signedRenewalInfo). It names no bundle, so only its environment is checked. It yields the decoded renewal info (auto-renew status and product, renewal date) and grants nothing: entitledUntil is null.

            notification: an App Store Server Notification V2 signedPayload. Checked for the bundleId and environment of its data (or summary, or externalPurchaseToken). It yields the decoded notification and grants nothing; the signedTransactionInfo and signedRenewalInfo inside stay JWS strings, to be verified on their own, e.g. jq -r .notification.data.signedTransactionInfo | jws-verify --bundle-id ID.
            """),
        ]
    )

    /// Room for surrounding whitespace on a line beyond the token limit.
    static let lineSpaceAllowance = 1024
    /// Lines between progress updates: a few per second at full speed.
    static let progressInterval = 4096

    public static func run(_ ctx: ToolContext) throws -> ExitStatus {
        let a = ctx.args
        // choice() returns only one of the option's declared values, each a SignedPayloadKind.
        let kind = SignedPayloadKind(rawValue: try a.choice(Option.type, default: SignedPayloadKind.transaction.rawValue))!
        let bundle = a.value(Option.bundleID), products = a.values(Option.product), sandbox = a.flag(Option.allowSandbox)
        if bundle?.isEmpty == true { throw ToolError.usage("--bundle-id: the bundle ID is empty") }
        if products.contains("") { throw ToolError.usage("--product: a product ID is empty") }
        let givenPolicy = bundle.map { ProofPolicy(bundleID: $0, products: products, allowSandbox: sandbox) }
        // $FAMILY_SYNC_DB names the store as --db does, unless --bundle-id asks for a batch.
        let storeMode = a.isSet(Option.db) || a.flag(Option.save) || (ctx.storeNamed && bundle == nil)

        if storeMode {
            guard kind == .transaction else {
                throw ToolError.usage("--type \(kind.rawValue): a store keeps and checks transactions only; only they prove a purchase")
            }
            if givenPolicy == nil && (!products.isEmpty || sandbox) {
                throw ToolError.usage("--product and --allow-sandbox change the store's settings only together with --bundle-id")
            }
            if !a.flag(Option.save), let f = a.argument("FILE") {
                throw ToolError.usage("unexpected argument '\(f)': FILE is read only with --save; --db alone checks the store's kept proof")
            }
        } else if givenPolicy == nil {
            throw ToolError.usage("give --bundle-id ID to verify tokens, or --db STORE to check a store's kept proof")
        }

        // Never nil here: without a policy and a store the block above threw a usage error.
        if !storeMode { return try batch(ctx, verifier: try ProofVerifier(anchors: try ProofRoots.given(ctx)), kind: kind, policy: givenPolicy!) }
        // The root given now, else the one the store keeps (when there is a store yet).
        let existing = FileManager.default.fileExists(atPath: ctx.storePath) ? try ctx.store(create: false) : nil
        let verifier = try ProofRoots.verifier(ctx, store: existing)
        if a.flag(Option.save) { return try save(ctx, verifier: verifier, given: givenPolicy) }
        return try check(ctx, verifier: verifier, given: givenPolicy)
    }

    /// Reads tokens and calls `body` with each line's verdict, in order.
    /// Returns whether all were valid; an input with no line is an error.
    private static func eachVerdict(_ ctx: ToolContext, verifier: ProofVerifier, kind: SignedPayloadKind,
                                     policy: ProofPolicy, _ body: (String, Int, ProofVerdict) throws -> Void) throws -> Bool {
        let reader = try LineReader(path: ctx.args.argument("FILE") ?? "-", maxLineBytes: CompactJWS.maxBytes + lineSpaceAllowance)
        var allValid = true
        while let line = try reader.next() {
            let verdict: ProofVerdict
            switch line {
            case let .text(bytes): verdict = verifier.verify(token: bytes, as: kind, policy: policy, now: ctx.now)
            case let .tooLong(n):
                verdict = .invalid(ProofFailure(.malformed, "line is \(n) bytes; a token is at most \(CompactJWS.maxBytes)"), kind: kind, payload: nil)
            }
            if !verdict.isValid { allValid = false }
            try body(reader.name, reader.lineNumber, verdict)
            if reader.lineNumber % progressInterval == 0 { ctx.progress("\(reader.lineNumber) tokens verified") }
        }
        ctx.endProgress()
        guard reader.lineNumber > 0 else { throw ToolError.data("\(reader.name): no token to verify (empty input)") }
        return allValid
    }

    private static func batch(_ ctx: ToolContext, verifier: ProofVerifier, kind: SignedPayloadKind, policy: ProofPolicy) throws -> ExitStatus {
        var line: [UInt8] = []
        let allValid = try eachVerdict(ctx, verifier: verifier, kind: kind, policy: policy) { _, _, verdict in
            line.removeAll(keepingCapacity: true)
            verdict.appendLine(to: &line)
            try ctx.out.write(line)
        }
        return allValid ? .success : .negative
    }

    /// The policy to judge by: the one given, else the store's settings.
    private static func storePolicy(_ ctx: ToolContext, given: ProofPolicy?) throws -> ProofPolicy {
        if let given { return given }
        let store: Store
        do { store = try ctx.store(create: false) } catch let e as StoreError where e.kind == .missing {
            throw ToolError.usage("no store at \(ctx.storePath) yet: give --bundle-id ID (and any --product ID) to set its settings with the first save")
        }
        guard let p = try store.proofPolicy() else {
            throw ToolError.usage("store \(ctx.storePath) has no bundle_id setting yet: give --bundle-id ID (and any --product ID) to set it")
        }
        return p
    }

    private static func save(_ ctx: ToolContext, verifier: ProofVerifier, given: ProofPolicy?) throws -> ExitStatus {
        Interruption.whatIsKept("nothing saved; the store is as it was")
        let policy = try storePolicy(ctx, given: given)
        var proofs: [VerifiedProof] = []
        var firstInvalid: (String, Int, ProofFailure)?
        var out: [UInt8] = []
        let allValid = try eachVerdict(ctx, verifier: verifier, kind: .transaction, policy: policy) { name, line, verdict in
            out.removeAll(keepingCapacity: true)
            verdict.appendLine(to: &out)
            try ctx.out.write(out)
            switch verdict {
            case let .valid(p):
                proofs.append(p)
                // Only the newest few would be kept; hold no more than that.
                if proofs.count > 2 * Store.maxKeptProofs { proofs = newest(proofs) }
            case let .invalid(f, _, _):
                if firstInvalid == nil { firstInvalid = (name, line, f) }
            }
        }
        guard allValid else {
            // Set with the first invalid line, so never nil once allValid is false.
            let (name, line, f) = firstInvalid!
            ctx.warn("nothing saved: \(name):\(line) is not a valid proof (\(f.reason.rawValue): \(f.detail))")
            return .negative
        }
        try ctx.out.flush()
        let store = try ctx.store()
        let before = try store.proofPolicy()
        try store.write {
            if let given { try store.setProofPolicy(given) }
            if let roots = try ProofRoots.given(ctx) { try store.setTrustRootsInTransaction(roots) }
            for p in newest(proofs).reversed() { try store.keepProofInTransaction(p, source: Store.localProofSource, now: ctx.now) }
        }
        if let given { for change in settingChanges(from: before, to: given) { ctx.warn(change) } }
        return .success
    }

    /// One line per store setting that `to` changes, as `bundle_id: A → B`.
    static func settingChanges(from old: ProofPolicy?, to new: ProofPolicy) -> [String] {
        func products(_ p: ProofPolicy?) -> String { p.map { $0.products.isEmpty ? "any product" : $0.products.joined(separator: ", ") } ?? "unset" }
        var lines: [String] = []
        if old?.bundleID != new.bundleID { lines.append("bundle_id: \(old?.bundleID ?? "unset") → \(new.bundleID)") }
        if old.map({ Set($0.products) }) != Set(new.products) { lines.append("products: \(products(old)) → \(products(new))") }
        if old?.allowSandbox != new.allowSandbox { lines.append("allow_sandbox: \(old.map { "\($0.allowSandbox)" } ?? "unset") → \(new.allowSandbox)") }
        return lines
    }

    private static func newest(_ proofs: [VerifiedProof]) -> [VerifiedProof] {
        Array(proofs.sorted { ($0.signedDate ?? .earliest) > ($1.signedDate ?? .earliest) }.prefix(Store.maxKeptProofs))
    }

    /// Only reads: a mistyped --db is "no store" (66), never a new store
    /// that answers "free", and a policy given is used for this check only
    /// (the store's settings change with --save alone).
    private static func check(_ ctx: ToolContext, verifier: ProofVerifier, given: ProofPolicy?) throws -> ExitStatus {
        let store = try ctx.store(create: false)
        if let given, !settingChanges(from: try store.proofPolicy(), to: given).isEmpty {
            ctx.warn("checked against the settings given; the store's are unchanged (give --save with tokens to change them)")
        }
        let e = try store.entitlement(verifier: verifier, now: ctx.now, policy: given)
        try ctx.out.writeLine(e.json)
        return e.entitled ? .success : .negative
    }
}

extension JWSVerifyCommand {
    /// This tool's options, one case each (see `OptionName`).
    public enum Option: String, OptionName {
        case allowSandbox = "allow-sandbox"
        case bundleID = "bundle-id"
        case db
        case now
        case product
        case quiet
        case root
        case save
        case type
    }
}
