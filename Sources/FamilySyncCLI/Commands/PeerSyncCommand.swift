import FoundationEssentials
import Glibc
import FamilySync

public enum PeerSyncCommand {
    static let waveTimeout = OptionSpec("wave-timeout", valueName: "DURATION",
        help: "Stop waiting for a wave of photo replies after this long without one; what is missing counts as unavailable and is asked for again next time.",
        default: SyncLimits.defaultWaveTimeout.description)
    static let quietLimit = OptionSpec("quiet-limit", valueName: "DURATION",
        help: "End a session in which nothing but keepalives has crossed, either way, for this long (a protocol error): a peer that does nothing holds no session.",
        default: SyncLimits.defaultQuietLimit.description)
    static let sessionLimit = OptionSpec("session-limit", valueName: "DURATION",
        help: "End a session that has run this long (a protocol error); what it applied stays, and the next session carries on with the rest.",
        default: SyncLimits.defaultSessionLimit.description)
    static let events = OptionSpec("events", valueName: "PATH",
        help: "Append progress events to PATH as NDJSON (one object per line, with 'event' and 'time'), for scripts.",
        completion: .file)
    static let wait = OptionSpec("wait", valueName: "DURATION",
        help: "Keep retrying a busy peer, with backoff, this long before giving up with status 75.",
        default: SyncLimits.defaultBusyWait.description)
    static let root = OptionSpec("root", kind: .repeating, valueName: "CERT",
        help: "Judge the proofs peers send against CERT (a DER or PEM file) instead of the bundled Apple Root CA - G3, as jws-verify --root does. Repeatable. Given to join, it is kept in the store (the setting trust_roots) and used by every later command on that store that gives no --root.",
        default: "the root the store keeps, else Apple Root CA - G3", completion: .file)
    /// Fault injection for tests only: hidden from help, man page and completions.
    static let faultSkipPhotoReplies = OptionSpec.flag("fault-inject-skip-photo-replies",
        help: "Fault injection for tests: drop photo requests without any reply.", hidden: true)
    static let faultHoldRecords = OptionSpec.flag("fault-inject-hold-records",
        help: "Fault injection for tests: send the first batch of records, then nothing but keepalives.", hidden: true)
    static let faultPreviousProtocol = OptionSpec.flag("fault-inject-previous-protocol",
        help: "Fault injection for tests: speak the previous protocol version in HELLO and JOIN.", hidden: true)

    static let serve = CommandSpec(
        name: "serve",
        abstract: "Accept peers, one session at a time",
        discussion: """
        Listens for paired devices and syncs with one at a time. One serve \
        runs per store: a second one on the same store is refused (status \
        75) while the first keeps serving. A device that \
        connects while a session runs gets an explicit busy reply (its connect \
        retries). Pairing joins are accepted for this store's open offers (see \
        pair-qr(1)): the offer's nonce is consumed in the same transaction that \
        admits the device. A connection that has not authenticated yet gets \
        at most \(SyncLimits.preAuthGrace) and a thread of its own; at most \
        \(SyncLimits.preAuthLimit) such are held, and past that the one stalled \
        longest is dropped, so idle or half-open connections cannot hold up a \
        real peer. Standard error, when not a terminal, has the listening \
        address, a line per session and per refusal to a device that proved \
        its key, and for connections that never did one summary a minute \
        (see Events). Each session's JSON summary is printed on standard \
        output as one line. Runs until interrupted, or with --once until the first session ends. \
        With --stdio it serves the one session already connected to its \
        standard input and output instead (run by ssh, inetd or a systemd \
        socket unit with Accept=yes): the same handshake, refusals and busy \
        reply, the TLS stream alone on standard output, its lines on \
        standard error. Any number may run beside a listening serve on the \
        same store: one session at a time runs over all of them, and the \
        others get the busy reply.
        """,
        options: [CommonOptions.db,
                  OptionSpec("listen", valueName: "HOST:PORT", help: "The address to listen on; port 0 picks a free port (see the 'listening' event).",
                             default: "0.0.0.0:\(SyncLimits.defaultPort)"),
                  .flag("once", help: "Exit after the first session (not after a refusal or a busy reply), with that session's status."),
                  .flag("no-advertise", help: "Do not announce this device with DNS-SD on the local network (it is never announced when listening on loopback)."),
                  .flag("stdio", help: "Serve one session over standard input and output (for ssh, inetd and socket units) instead of listening; exits with that session's status (75 busy, 77 refused, 65 not a family-sync peer)."),
                  waveTimeout, quietLimit, sessionLimit, events, root, CommonOptions.now, CommonOptions.quiet, faultSkipPhotoReplies, faultPreviousProtocol, faultHoldRecords],
        examples: [Example("Serve the owner's device on the default port:", "peer-sync serve --db owner.db"),
                   Example("Let a member sync from afar over ssh (run by the member):", "peer-sync connect --db kid.db --via 'ssh -T home peer-sync serve --stdio --quiet --db owner.db'")]
    )

    static let join = CommandSpec(
        name: "join",
        abstract: "Redeem a pairing offer and run a first sync",
        discussion: """
        Reads a pairing offer (pair-scan(1)'s JSON, or the offer text) and \
        redeems it with the owner's device, at the offer's address unless \
        --connect names another. Without --connect, the family-sync services \
        found by browsing are tried too, one after another (at most \
        \(SyncLimits.maxJoinCandidates) in all): nothing on the network names \
        the owner, and only the owner that made the offer opens its sealed \
        identity; any other answers unknown-key and is passed over. On success the store receives the family, its \
        key, this device's own key, the member list, the owner's proof and the \
        revocation list, and a first sync follows on the same connection. A \
        used, expired or unknown offer, or a full family, is refused with \
        status 77 and the reason, and the store receives nothing. A member's \
        store joins its family again this way when it was revoked, or when \
        the owner's device no longer knows it (its store was restored from a \
        copy older than this device's admission): a new admission, after \
        which its records merge by last-writer-wins. A device the owner holds \
        as a current member is refused. A store of a family joins only that \
        family, and again only with the owner whose roster key it holds: an \
        offer whose owner cannot prove that key (anyone can write an offer \
        naming a family) is refused with status 77 and the store is left as \
        it was, unless --accept-new-owner-key says otherwise.
        """,
        options: [CommonOptions.newDB,
                  OptionSpec("connect", valueName: "HOST:PORT", help: "Where the owner's device listens, when the offer carries no address or another one is right."),
                  .flag("accept-new-owner-key", help: "Join again even when the owner's device does not prove the roster key this store holds (only when the family's owner really made a new one: otherwise the offer is forged)."),
                  OptionSpec("name", valueName: "NAME", help: "What to call this device (\"Anna's phone\"), at most \(DeviceName.maxBytes) bytes, no control characters. The owner keeps it and shows it to the family; only the owner can rename it later (peer-sync rename)."),
                  wait, waveTimeout, quietLimit, sessionLimit, events, root, CommonOptions.now, CommonOptions.quiet, faultPreviousProtocol],
        arguments: [ArgumentSpec("OFFER", help: "A file holding the offer (JSON or text), or - for standard input.", default: "-")],
        examples: [Example("Scan the owner's QR code and join:", "pair-scan pair.png | peer-sync join --db kid.db --name \"Anna's phone\"")]
    )

    static let connect = CommandSpec(
        name: "connect",
        abstract: "Sync once with a paired device",
        discussion: """
        Runs one sync session with the device at HOST:PORT. Without an \
        address it tries the peers this store has reached before, at their \
        last known addresses, most recent first, and browses for the \
        family's devices at the same time, until one session completes: \
        the Sync Now button, and the pass at launch. A NAME.local host is \
        resolved over multicast DNS; serve does not answer for its machine's \
        own name (that would tie its daily tags to the machine), so one \
        resolves only where the system's own responder (avahi-daemon) \
        answers for it. An address that answers without proving the \
        family's key (another device, a refusal anyone could send) is \
        passed over for the family's devices found by browsing, and said \
        so. A busy peer is retried \
        with backoff until --wait runs out (then status 75). Nobody listening \
        is status 69, never a silent hang. With --via it syncs over a \
        command's standard input and output instead (ssh to a host that runs \
        peer-sync serve --stdio, socat, any byte pipe), with the same keys, \
        refusals, busy retries and statuses: the family's TLS keeps the bytes \
        secret whatever carries them. A command that cannot start or ends \
        early is status 69, one that writes anything but a family-sync \
        session 65, each naming the command.
        """,
        options: [CommonOptions.db,
                  OptionSpec("via", valueName: "COMMAND", help: "Sync over COMMAND's standard input and output instead of TCP. COMMAND is split into words (with '...' and \"...\" quoting and backslash escapes) and run without a shell, as rsync -e runs one; its standard error is this tool's."),
                  wait, waveTimeout, quietLimit, sessionLimit, events, root, CommonOptions.now, CommonOptions.quiet, faultSkipPhotoReplies, faultPreviousProtocol],
        arguments: [ArgumentSpec("HOST:PORT", help: "The peer's address.", default: "the known peers in turn", completion: .none)],
        examples: [Example("Sync now with the owner's device:", "peer-sync connect --db kid.db 192.168.1.20:7433"),
                   Example("Sync with whichever known peer answers:", "peer-sync connect --db kid.db"),
                   Example("Sync from afar over ssh:", "peer-sync connect --db kid.db --via 'ssh -T home peer-sync serve --stdio --quiet --db owner.db'")]
    )

    static let revoke = CommandSpec(
        name: "revoke",
        abstract: "Revoke a device from the family (owner only)",
        discussion: """
        Marks DEVICE as revoked and moves the family to a fresh family key, so \
        the revoked device can no longer derive any key a current member \
        accepts; its place in the family is freed. The new key and the \
        revocation list reach the other devices on their next contact with the \
        owner's device (and spread between members from there). When the \
        revoked device next reaches the owner's device it is told so on an \
        authenticated session and drops to free.
        """,
        options: [CommonOptions.db, CommonOptions.now,
                  .flag("dry-run", short: "n", help: "Say which device DEVICE names (its ID and name) and change nothing.")],
        arguments: [ArgumentSpec("DEVICE", help: "The device ID, or a unique prefix of it (4 characters or more).", optional: false, completion: revocable)],
        examples: [Example("Which device does 7F3A name? Then revoke the lost phone:", "peer-sync revoke --dry-run --db owner.db 7F3A\npeer-sync revoke --db owner.db 7F3A")]
    )

    static let rename = CommandSpec(
        name: "rename",
        abstract: "Name a device of the family (owner only)",
        discussion: """
        Gives DEVICE the name NAME (at most \(DeviceName.maxBytes) bytes, no \
        control characters), replacing the name it joined with, if any. The \
        owner's signed roster carries the names, so the other devices learn \
        the new name at their next contact with the owner's device (and from \
        each other from there). Only the owner's device names devices; on a \
        member's store this is refused (status 77). Prints {"device", \
        "name", "was"}.
        """,
        options: [CommonOptions.db, CommonOptions.now],
        arguments: [ArgumentSpec("DEVICE", help: "The device ID, or a unique prefix of it (4 characters or more).", optional: false, completion: revocable),
                    ArgumentSpec("NAME", help: "The device's new name.", optional: false, completion: .none)],
        examples: [Example("Name the kid's tablet:", "peer-sync rename --db owner.db 7F3A \"Ben's tablet\"")]
    )

    /// What `revoke DEVICE` completes to: the IDs `status --device-ids` lists.
    static let revocable = CompletionKind.listing

    static let status = CommandSpec(
        name: "status",
        abstract: "Show the family, its devices and sync state",
        discussion: """
        On a terminal, a readable view: the family, the devices with their \
        names and when each last synced, the proof state, the photos wanted \
        and which devices hold tombstones back. Piped, or with --json, one \
        JSON object: this device, the family and this device's \
        role, the family key's epoch, every device with its name (null when \
        it has none), when it was last synced and its cursors, the proof state (jws-verify's verdict on the \
        kept proofs), and the photos still wanted: their count, and (up to 1,000, in hash order) each wanted photo's SHA-256 with the ids of the records naming it (up to 20), and gc (what tombstone-gc would keep back now: keptUnacknowledged and heldBackBy).
        """,
        options: [CommonOptions.db, root, CommonOptions.now,
                  .flag("json", help: "Print the JSON object even on a terminal."),
                  .flag("device-ids", help: "Print only the IDs of the devices revoke can name (the other devices not revoked), one per line, each followed by a tab and the device's name when it has one, and nothing else. The shell completions use it; a missing store is an error, never created.")],
        examples: [Example("Which devices have synced lately?", "peer-sync status --db owner.db | jq '.devices[] | {device, lastSynced}'")]
    )

    static let discover = CommandSpec(
        name: "discover",
        abstract: "List the family's devices answering on the local network now",
        discussion: """
        Browses for the family's DNS-SD service (_family-sync._tcp over \
        multicast DNS) on every interface that is up, for --timeout, and \
        prints one JSON object: the interfaces browsed, how long, and each \
        family device that answered (device, role, address, interface). The \
        service's names are tags made from the family key and the device \
        that change every day, and its TXT record is the protocol version \
        alone, so only members recognise them, and only for the devices \
        their roster lists; other services of the same type (another \
        family's, or a device not in the roster yet) are only counted \
        (others). Exits 0 when a family device answered, 1 when none did.
        """,
        options: [CommonOptions.db,
                  OptionSpec("timeout", valueName: "DURATION", help: "How long to browse.", default: PeerFinder.browseTime.description),
                  CommonOptions.now],
        examples: [Example("Which family devices are on this network?", "peer-sync discover --db kid.db | jq -c '.devices[]'")]
    )

    public static let spec = CommandSpec(
        name: "peer-sync",
        abstract: "Sync with one paired device at a time over TLS on the local network",
        discussion: """
        Devices of a family sync one-to-one over TCP and TLS 1.3 with an \
        external pre-shared key and (EC)DHE: records in bounded batches from \
        per-peer cursors, merged by last-writer-wins, and photos in waves of \
        20, each request answered with the bytes or an explicit unavailable. \
        A session ends with a done handshake; only then do cursors and last \
        synced move. There is no plaintext mode.

        The owner's device serves; members join with a pairing offer, then \
        connect. A family holds at most four devices by default (the store \
        setting max_devices); revoking one frees its place. With no link at \
        all, bundle and unbundle carry the same data as encrypted files.

        Standard output carries one JSON summary per session: records \
        sent, received, applied and clamped; photos sent, received, \
        unavailable and still wanted; bytes; duration; clock skew; last \
        synced; the record-state digests of both sides. Progress goes to \
        standard error when it is a terminal, as one line cut to its width \
        (the phase, records and photos done of total, time left, rate and \
        bytes) that is cleared when the session ends; serve's listening line \
        and one line per session stay. --events gets every event as NDJSON.
        """,
        subcommands: [serve, join, connect, discover, bundle, unbundle, revoke, rename, status],
        seeAlso: AllTools.seeAlso(except: "peer-sync"),
        extraSections: [
            ("Summary", """
            Each session prints one JSON object on standard output: peer (the \
            other device's ID), peerName (its name, or null), address, side (client or server), joined, \
            records {sent, received, applied, clamped: this device's own versions \
            sent with modifiedAt pulled back to the family's clock (the owner's) \
            + 5 minutes, and kept so, clampedIn: the peer's versions pulled back \
            here, purged: versions not taken, or records dropped, because the \
            family purged them (the owner's purge records), unattributed: the \
            peer's versions not taken because they name another device than \
            the peer as their author without that device's authorship tag (the \
            owner takes a member's versions only in its own name, or with \
            their author's tag; a member so judges the versions in its own \
            name that another member hands it), resumed: true when \
            the records of either side went on from where a session with the \
            peer that was cut off had stopped}, purgeRecords {sent, \
            received}, photos {sent, received, \
            unavailable, wanted, waves}, bytes {sent, received, perSecond}, \
            durationMs, clockSkew {ms, reported}, lastSynced, proof {sent, \
            received {state: none, known, kept, rejected or not-judged}}, and digest \
            {local, peer, equal}: digests of both sides' record state (sums of \
            per-record SHA-256), equal when the two hold the same versions.
            """),
            ("Events", """
            With --events, each line is a JSON object with event and time: \
            listening (address, device, family, role), session, joined, hello \
            (peer, peerName, role, clockSkewMs, full, resumed, recordsExpected: at most this many \
            records are coming), clock-skew, family-key, proof, \
            phase (records, photos with photosWanted), wave (wave, requested), wave-timeout, \
            progress (phase, wave, bytes, rate, records and photos received \
            and sent, photos unavailable), done-sent, done-received, \
            synced, ended (outcome), busy, refused (reason, message), rejected, \
            peer-hint, unreachable, revoked, warning, keyless, purged \
            (records), roster (version; adopted and revoked when a newer \
            roster was taken), via (command: a session over a command's \
            pipe), trying (peer, address: a remembered address), browsing \
            (passingOver: addresses that failed to prove the key, skipped), \
            passing-over (address, next: join goes on to the next service \
            found after one that did not know the offer).

            A listening serve sums up the connections that never proved a key: \
            rejected (a failed handshake), refused with authenticated false \
            and busy with known false (the identity named no key this device \
            holds) are not written one by one but counted, in at most one \
            keyless event a minute: connections, reasons (the count per \
            reason), addresses (distinct source addresses, counted up to \
            4096; addressesCapped when there were more), first and last (the \
            times of the first and the last). A summary still pending is \
            written when serve stops. Refusals over an authenticated session \
            and busy to a device whose identity named a key this device holds \
            stay one event each, as do sessions. A serve on standard input \
            and output has one connection, whose event it writes as it is.
            """),
            ("Security", """
            Pairing proves the offer's one-time nonce (the PSK is derived from \
            it); the nonce never crosses the network. Sessions between the \
            owner's device and a member use a key the owner issued to that \
            member at pairing; sessions between members use the family key. \
            Revoking a device moves the family to a new family key, which the \
            owner hands only to devices that are not revoked, over sessions \
            authenticated by their own keys: a revoked device keeps no key any \
            current device accepts. Keys live in the store (mode 0600) and are \
            never printed. Nothing a stranger on the network can read names \
            the family, a device or the machine, or links two sessions or two \
            days: the PSK identity in each ClientHello is sealed afresh under \
            the key it names, every refusal before a key is chosen is the one \
            notice unknown-key (with the answering device's ID sealed for its \
            family), the DNS-SD names are daily tags with a TXT record of the \
            protocol version alone, and bundle headers are sealed. A device's \
            addresses, and what it sends when, are not hidden. The wire \
            protocol is described in docs/protocol.md.
            """),
        ]
    )

    public static func run(_ ctx: ToolContext) throws -> ExitStatus {
        switch ctx.args.commandPath.last {
        case "serve", "join", "connect":
            // A signal ends a session at its next safe point (no cursor moves), then the tool says what it kept.
            Interruption.stopCooperatively()
        default:
            break
        }
        switch ctx.args.commandPath.last {
        case "serve": return try runServe(ctx)
        case "join": return try runJoin(ctx)
        case "connect": return try runConnect(ctx)
        case "revoke": return try runRevoke(ctx)
        case "rename": return try runRename(ctx)
        case "status": return try runStatus(ctx)
        case "discover": return try runDiscover(ctx)
        case "bundle": return try runBundle(ctx)
        case "unbundle": return try runUnbundle(ctx)
        default: throw ToolError.usage("missing command (one of: serve, join, connect, discover, bundle, unbundle, revoke, rename, status)")
        }
    }

    // MARK: Shared plumbing

    static func options(_ ctx: ToolContext) throws -> SyncOptions {
        // Shared by serve, join and connect, which declare different options.
        let a = ctx.args
        var faults: SyncFaults = []
        if a.declares(Option.faultInjectSkipPhotoReplies) && a.flag(Option.faultInjectSkipPhotoReplies) { faults.insert(.skipPhotoReplies) }
        if a.declares(Option.faultInjectPreviousProtocol) && a.flag(Option.faultInjectPreviousProtocol) { faults.insert(.speakPreviousVersion) }
        if a.declares(Option.faultInjectHoldRecords) && a.flag(Option.faultInjectHoldRecords) { faults.insert(.holdRecordsAfterFirstBatch) }
        let wave = a.declares(Option.waveTimeout) ? try a.timeSpan(Option.waveTimeout, default: SyncLimits.defaultWaveTimeout) : SyncLimits.defaultWaveTimeout
        let quiet = a.declares(Option.quietLimit) ? try a.timeSpan(Option.quietLimit, default: SyncLimits.defaultQuietLimit) : SyncLimits.defaultQuietLimit
        let length = a.declares(Option.sessionLimit) ? try a.timeSpan(Option.sessionLimit, default: SyncLimits.defaultSessionLimit) : SyncLimits.defaultSessionLimit
        return SyncOptions(waveTimeout: wave, faults: faults, quietLimit: quiet, sessionLimit: length)
    }

    /// `--wait`: a duration, 0 included (one try, no retry).
    static func waitSpan(_ ctx: ToolContext) throws -> TimeSpan {
        guard ctx.args.declares(Option.wait) else { return SyncLimits.defaultBusyWait }
        return try ctx.args.timeSpan(Option.wait, default: SyncLimits.defaultBusyWait, allowZero: true)
    }

    /// The proof verifier: --root, else the store's kept root, else Apple's.
    static func verifier(_ ctx: ToolContext) throws -> ProofVerifier {
        try ProofRoots.verifier(ctx, store: try ctx.store())
    }

    /// A peer's address. Port 0 only where a port is picked (--listen): a
    /// peer never listens there.
    static func address(_ text: String, option: String, portZero: Bool = false) throws -> HostPort {
        guard let a = HostPort(parsing: text) else { throw ToolError.usage("\(option): '\(text)' is not HOST:PORT") }
        if !a.isConnectable && !portZero {
            throw ToolError.usage("\(option): '\(text)': port 0 is not a port a peer listens on (the default is \(SyncLimits.defaultPort))")
        }
        return a
    }

    /// Events to --events as NDJSON, progress to a terminal, warnings to stderr.
    static func observer(_ ctx: ToolContext) throws -> (SyncObserver, EventLog?) {
        let log = try (ctx.args.declares(Option.events) ? ctx.args.value(Option.events) : nil).map { try EventLog(path: $0) }
        let view = SyncProgressView(ctx)
        let obs: SyncObserver = { e in
            log?.write(e.json(time: Timestamp.current()))
            view.handle(e)
            switch e.name {
            case "clock-skew":
                let ms = e.fields.first { $0.0 == "ms" }?.1.int64Value ?? 0
                let peerRole = e.fields.first { $0.0 == "peerRole" }?.1.stringValue
                let ownRole = e.fields.first { $0.0 == "role" }?.1.stringValue
                ctx.endProgress()
                // The owner's clock is the family's (docs/design.md §3): say what that means for whoever is off.
                let off = "\(describe(ms: abs(ms))) \(ms > 0 ? "ahead of" : "behind")"
                if peerRole == "owner" {
                    ctx.warn("the owner's clock is \(off) this device's; this device stamps its edits by the owner's clock, "
                             + "and its versions later than that clock + 5 minutes are pulled back to it")
                } else if ownRole == "owner" {
                    ctx.warn("this member's clock is \(off) this device's (the owner's); it stamps its edits by the owner's clock "
                             + "once it has synced, and its versions later than this clock + 5 minutes are pulled back to it")
                } else {
                    ctx.warn("the peer's clock is \(off) this device's; each stamps its edits by the owner's clock as last measured, "
                             + "and takes nothing later than that + 5 minutes")
                }
            case "proof" where e.fields.first(where: { $0.0 == "state" })?.1.stringValue == "rejected":
                func field(_ k: String) -> String { e.fields.first { $0.0 == k }?.1.stringValue ?? "" }
                ctx.endProgress()
                let hint = field("reason") == "untrusted-chain" && ctx.args.values(Option.root).isEmpty
                    ? "; if it is signed by another root, give --root CERT once (with join or jws-verify --save) and the store keeps it" : ""
                ctx.warn("the peer's proof was rejected (\(field("reason")): \(field("detail"))); this device's entitlement is unchanged\(hint)")
            case "warning":
                ctx.endProgress()
                ctx.warn(e.fields.first { $0.0 == "message" }?.1.stringValue ?? "warning")
            default:
                break
            }
        }
        return (obs, log)
    }

    static func describe(ms: Int64) -> String {
        let s = ms / 1000
        if s >= 86400 { return "\(s / 86400) days" }
        if s >= 3600 { return "\(s / 3600) hours" }
        if s >= 60 { return "\(s / 60) minutes" }
        return "\(s) seconds"
    }

    /// The session a signal ended, inside `error` (a summary of tries, a failed first sync).
    static func interruptedSession(_ error: (any Error)?) -> SyncError? {
        guard let e = error as? SyncError else { return nil }
        if e.kind == .interrupted { return e }
        return e.causes.lazy.compactMap(interruptedSession).first
    }

    /// What a session a signal ended leaves: the batches it applied, no cursor moved.
    static func keptOfSession(_ e: SyncError) -> String {
        "the session with \(e.peer) ended; the records it applied are kept and no cursor moved, so the next session with that device goes on from there"
    }

    // MARK: serve

    static func runServe(_ ctx: ToolContext) throws -> ExitStatus {
        if ctx.args.flag(Option.stdio) { return try runServeStdio(ctx) }
        let listen = try address(ctx.args.value(Option.listen) ?? "0.0.0.0:\(SyncLimits.defaultPort)", option: "--listen", portZero: true)
        let opts = try options(ctx)
        let store = try ctx.store(create: false)
        let lock = try ServeLock(storePath: store.path)
        defer { withExtendedLifetime(lock) {} }
        let (progress, _) = try observer(ctx)
        let log = ServiceLog(ctx)
        // Connections that never proved a key are counted, one summary a minute, not a line each.
        let noise = KeylessNoise(clock: SyncClock(base: ctx.now)) { e in progress(e); log.event(e) }
        noise.startTicking()
        defer { noise.finish() }
        let obs: SyncObserver = { e in noise.send(e) }
        ctx.keptAfterStop = { error in
            "stopped serving" + (interruptedSession(error).map { "; \(keptOfSession($0))" } ?? "")
        }
        var stoppedSession: SyncError?
        let server = try SyncServer(store: store, options: opts, now: ctx.now, observer: obs, verifier: try verifier(ctx))
        var responder: MDNSResponder?
        defer { responder?.stop() }
        server.onListening = { bound in
            try store.write { try store.setMeta(Store.serveAddressKey, bound.description) }
            log.line("listening on \(bound)")
            if !ctx.args.flag(Option.noAdvertise) { responder = startResponder(ctx, store: store, listen: listen, port: bound.port, log: log) }
        }
        let last = try server.run(listen: listen, once: ctx.args.flag(Option.once)) { result in
            ctx.endProgress()
            log.session(result)
            switch result {
            case let .success(summary):
                try ctx.out.writeLine(summary.json)
                try ctx.out.flush()
                ctx.log(SyncProgressView.sessionLine(summary.json))
            case let .failure(e):
                // A session a signal ended is told on the one closing line.
                if Interruption.signal != nil, let s = interruptedSession(e) { stoppedSession = s; break }
                ctx.warn(ctx.failure(e).message)
            }
        }
        ctx.endProgress()
        if let stoppedSession { throw stoppedSession }
        if case let .failure(e)? = last { return ctx.failure(e).status }
        return .success
    }

    /// `serve --stdio`: the one session on standard input and output. No
    /// ServeLock (a listening serve may run on the same store): the session
    /// lock alone keeps one session at a time. Nothing but TLS goes to
    /// standard output.
    static func runServeStdio(_ ctx: ToolContext) throws -> ExitStatus {
        let listening = [(Option.listen, ctx.args.value(Option.listen) != nil), (Option.once, ctx.args.flag(Option.once)),
                         (Option.noAdvertise, ctx.args.flag(Option.noAdvertise))]
        if let (o, _) = listening.first(where: { $0.1 }) {
            throw ToolError.usage("--stdio serves the one connection on standard input and output: --\(o.rawValue) does not apply")
        }
        if isatty(STDIN_FILENO) == 1 || isatty(STDOUT_FILENO) == 1 {
            throw ToolError.usage("--stdio: standard input and output are a terminal; run it from ssh, inetd or a socket unit (peer-sync connect --via runs it so)")
        }
        let opts = try options(ctx)
        let store = try ctx.store(create: false)
        let (progress, _) = try observer(ctx)
        let log = ServiceLog(ctx)
        // What the one connection got when it got no session: BUSY, REFUSED, or a failed handshake.
        var notice: String?
        let obs: SyncObserver = { e in
            progress(e)
            log.event(e)
            if ["busy", "refused", "rejected"].contains(e.name) { notice = e.name }
        }
        ctx.keptAfterStop = { error in
            "stopped serving" + (interruptedSession(error).map { "; \(keptOfSession($0))" } ?? "")
        }
        let server = try SyncServer(store: store, options: opts, now: ctx.now, observer: obs, verifier: try verifier(ctx))
        let link = try PipeLink.standardStreams()
        defer { link.close() }
        guard let result = try server.serveOne(over: link) else {
            switch notice {
            case "busy": return .tempFail
            case "refused": return .noPermission
            default: return .dataError
            }
        }
        ctx.endProgress()
        log.session(result)
        switch result {
        case .success:
            return .success
        case let .failure(e):
            if Interruption.signal != nil, let s = interruptedSession(e) { throw s }
            throw e
        }
    }

    /// The DNS-SD responder for a listener on `listen`: nil on loopback (no
    /// one else can reach it) and when port 5353 cannot be had (a warning,
    /// and serve goes on without it: connects by address still work).
    static func startResponder(_ ctx: ToolContext, store: Store, listen: HostPort, port: UInt16, log: ServiceLog) -> MDNSResponder? {
        let path = store.path
        let clock = SyncClock(base: ctx.now)
        let reader = AdvertisementReader(path: path)
        do {
            guard let r = try MDNSResponder(listenHost: listen.host, log: { log.line($0) },
                                            advertisement: { reader.read(port: port, now: clock.now()) }) else { return nil }
            r.start()
            return r
        } catch {
            ctx.warn("not advertising on the local network: \(error)")
            return nil
        }
    }

    // MARK: join

    static func runJoin(_ ctx: ToolContext) throws -> ExitStatus {
        let source = ctx.args.argument("OFFER") ?? "-"
        let text: String
        let bytes = try OfferInput.read(source)
        if let problem = OfferInput.binaryProblem(bytes) {
            throw ToolError(.dataError, "\(source == "-" ? "<stdin>" : source): not a pairing offer (\(problem)); expected pair-scan's JSON or the offer text FS1/...")
        }
        text = String(decoding: bytes, as: UTF8.self)
        let offer = try OfferInput.parse(text, source: source == "-" ? "<stdin>" : source)
        // The owner judges the expiry where the offer is redeemed (docs/protocol.md §9):
        // this device's clock may be the wrong one. It only says what it sees.
        if offer.expiresAt <= ctx.now {
            ctx.warn("the offer's expiry (\(offer.expiresAt.rfc3339)) has passed by this device's clock (\(ctx.now.rfc3339)); trying anyway, the owner's device decides")
        }
        // An address given with --connect is taken as it is; the offer's own
        // (or none) is tried while the owner's service is browsed for.
        let given = try ctx.args.value(Option.connect).map { try address($0, option: "--connect") }
        guard let target = given ?? offer.address.flatMap(HostPort.init(parsing:)) else {
            throw ToolError.usage("the offer carries no address: give --connect HOST:PORT")
        }
        let roots = try ProofRoots.given(ctx)
        let name = try ctx.args.value(Option.name).map { n in
            if let problem = DeviceName.problem(n) { throw ToolError.usage("--name: \(problem)") }
            return n
        }
        // A join that fails before the family is stored leaves no store (nor folder) behind.
        let footprint = NewStoreFootprint(path: ctx.storePath)
        do {
            return try runClient(ctx, createStore: true) { client, wait in
                ctx.keptAfterStop = { [unowned ctx] error in joinKept(ctx, error: error) }
                // Joined: the root given now is the store's from here on, kept with the admission.
                let summary = try client.join(offer: offer, at: target, browse: given == nil, wait: wait, name: name,
                                              acceptNewOwnerKey: ctx.args.flag(Option.acceptNewOwnerKey)) { store in
                    if let roots { try store.setTrustRootsInTransaction(roots) }
                }
                ctx.announceCreatedStore()
                return summary
            }
        } catch {
            if !footprint.existedBefore, ctx.closeStoreIfNotJoined() { footprint.remove() } else { ctx.announceCreatedStore() }
            throw error
        }
    }

    /// What an interrupted join kept: nothing before the admission; after
    /// it, the admission (family, keys, the owner's address, --root) and how
    /// to finish the first sync.
    static func joinKept(_ ctx: ToolContext, error: (any Error)?) -> String {
        if error == nil { return "joined, and the first sync had completed (its summary is above)" }
        guard let store = try? ctx.store(create: false), let fam = try? store.family(),
              let owner = try? store.device(fam.ownerDevice) else { return "nothing was stored" }
        let finish = "peer-sync connect --db \(store.path)" + (owner.lastAddress.map { " \($0)" } ?? "")
        return "this device joined family \(fam.id), and the admission is kept in \(store.path)"
            + (interruptedSession(error) != nil ? " with the records the first sync applied" : "")
            + "; finish the first sync with '\(finish)'"
    }

    /// One client session (join or connect): the store, options and progress
    /// set up, `session` run, its summary printed.
    private static func runClient(_ ctx: ToolContext, createStore: Bool = false,
                                  _ session: (SyncClient, TimeSpan) throws -> SyncSummary) throws -> ExitStatus {
        let opts = try options(ctx)
        let wait = try waitSpan(ctx)
        // A join's new store is announced once it holds the family (a refused join leaves none).
        let store = try ctx.store(create: createStore, announceLater: true)
        let (obs, _) = try observer(ctx)
        let client = try SyncClient(store: store, options: opts, now: ctx.now, observer: obs, verifier: try verifier(ctx))
        defer { ctx.endProgress() }
        let summary = try session(client, wait)
        ctx.endProgress()
        try ctx.out.writeLine(summary.json)
        return .success
    }

    // MARK: connect

    static func runConnect(_ ctx: ToolContext) throws -> ExitStatus {
        let target = try ctx.args.argument("HOST:PORT").map { try address($0, option: "HOST:PORT") }
        let via = ctx.args.value(Option.via)
        if via != nil && target != nil { throw ToolError.usage("give HOST:PORT or --via COMMAND, not both") }
        if let via {
            do {
                if try CommandWords.split(via).isEmpty { throw ToolError.usage("--via: the command is empty") }
            } catch let e as CommandWords.Problem { throw ToolError.usage("--via: '\(via)': \(e.message)") }
        }
        ctx.keptAfterStop = { error in
            if error == nil { return "the session had completed (its summary is above)" }
            return interruptedSession(error).map(keptOfSession) ?? "no session had started; nothing was changed"
        }
        return try runClient(ctx) { client, wait in
            if let via { return try client.sync(via: via, wait: wait) }
            return try target.map { try client.sync(with: $0, wait: wait) } ?? client.syncNow(wait: wait)
        }
    }

    // MARK: discover

    static func runDiscover(_ ctx: ToolContext) throws -> ExitStatus {
        let timeout = try ctx.args.timeSpan(Option.timeout, default: PeerFinder.browseTime)
        guard timeout.milliseconds > 0, timeout <= TimeSpan.minutes(1) else { throw ToolError.usage("--timeout: give a duration from 1ms to 1m") }
        let store = try ctx.store(create: false)
        guard let fam = try store.family(), let key = try store.familySecret() else {
            throw StoreError(.noFamily, path: store.path)
        }
        let devices = try store.devices()
        let me = try store.deviceID
        let tags = try DiscoveryTags(familyKey: key, family: fam.id)
        let recognise = tags.recogniser(devices: devices.map(\.deviceID), me: me, now: ctx.now)
        let mine = Set(DiscoveryTags.acceptedDays(ctx.now).map { tags.deviceTag(me, day: $0) })
        let browser = try MDNSBrowser()
        let started = Deadline.now()
        // One entry per instance: the address it answered at last.
        var found: [FoundService] = []
        for f in browser.browse(for: timeout).reversed() where !found.contains(where: { $0.instance == f.instance }) { found.insert(f, at: 0) }
        let ms = Deadline.now().milliseconds(since: started)
        var listed: [JSONValue] = []
        var others = 0
        for f in found {
            if mine.contains(ServiceAdvertisement.baseTag(f.instance).lowercased()) { continue }
            guard let device = recognise(f) else { others += 1; continue }
            let role = device.flatMap { d in devices.first { $0.deviceID == d }?.role.rawValue }
            listed.append(.object([("device", .optional(device)), ("role", .optional(role)), ("address", .string(f.hostPort.description)),
                                   ("interface", .string(f.interface))]))
        }
        try ctx.out.writeLine(.object([
            ("interfaces", .array(browser.interfaces.map { .object([("name", .string($0.name)), ("address", .string($0.addressText))]) })),
            ("browsedMs", .int(ms)), ("devices", .array(listed)), ("others", .int(others)),
        ]))
        return listed.isEmpty ? .negative : .success
    }

    // MARK: revoke

    static func runRevoke(_ ctx: ToolContext) throws -> ExitStatus {
        let store = try ctx.store(create: false)
        guard let fam = try store.family() else { throw ToolError(.noInput, "this store belongs to no family") }
        guard fam.role == .owner else {
            throw ToolError(.noPermission, "this store is a member of family \(fam.id); only the owner's device revokes devices")
        }
        let me = try store.deviceID
        let dev = try device(ctx, store)
        guard dev.deviceID != me else { throw ToolError.usage("DEVICE: the owner's own device cannot be revoked") }
        let already = dev.revokedAt != nil
        let named = dev.deviceID + (dev.name.map { " (\($0))" } ?? "")
        if ctx.args.flag(Option.dryRun) {
            try ctx.out.writeLine(.object([("device", .string(dev.deviceID)), ("name", .optional(dev.name)), ("alreadyRevoked", .bool(already)), ("dryRun", .bool(true))]))
            ctx.warn("would revoke \(named); nothing was changed")
            return .success
        }
        let epoch = try store.write { () -> Int64 in
            if already { return try store.familyEpoch }
            return try store.revokeDeviceInTransaction(dev.deviceID, now: ctx.now)
        }
        // The old family key is overwritten (secure_delete) and its old pages leave the log.
        if !already, !(try store.scrubReplacedSecrets()) {
            ctx.warn("the old family key stays in the store's write-ahead log until the next checkpoint: another process is reading the store")
        }
        let after = try store.device(dev.deviceID)
        if !already { ctx.warn("revoked \(named)") }
        try ctx.out.writeLine(.object([
            ("revoked", .string(dev.deviceID)), ("name", .optional(dev.name)), ("revokedAt", after?.revokedAt.map { .string($0.rfc3339) } ?? .null),
            ("alreadyRevoked", .bool(already)), ("epoch", .int(epoch)),
            ("devices", .int(try store.activeDeviceCount())), ("maxDevices", .int(try store.maxDevices)),
        ]))
        return .success
    }

    /// The device the DEVICE argument names: its ID or a unique prefix of 4 characters or more.
    static func device(_ ctx: ToolContext, _ store: Store) throws -> DeviceInfo {
        try device(matching: ctx.args.argument("DEVICE") ?? "", option: "DEVICE", store)
    }

    /// The device `given` names (`option` names it in errors): its ID or a unique prefix of 4 characters or more.
    static func device(matching given: String, option: String, _ store: Store) throws -> DeviceInfo {
        let wanted = given.uppercased()
        guard wanted.utf8.count >= 4 else { throw ToolError.usage("\(option): give the device ID or at least 4 of its first characters") }
        let matches = try store.devices().filter { $0.deviceID.hasPrefix(wanted) }
        guard !matches.isEmpty else { throw ToolError(.dataError, "\(option): no device of this family starts with '\(wanted)'") }
        guard matches.count == 1 else {
            throw ToolError.usage("\(option): '\(wanted)' matches \(matches.count) devices (\(matches.map(\.deviceID).joined(separator: ", "))); give more of it")
        }
        return matches[0]
    }

    // MARK: rename

    static func runRename(_ ctx: ToolContext) throws -> ExitStatus {
        let name = ctx.args.argument("NAME") ?? ""
        if let problem = DeviceName.problem(name) { throw ToolError.usage("NAME: \(problem)") }
        let store = try ctx.store(create: false)
        guard let fam = try store.family() else { throw ToolError(.noInput, "this store belongs to no family") }
        guard fam.role == .owner else {
            throw ToolError(.noPermission, "this store is a member of family \(fam.id); only the owner's device names devices (its names reach this device at the next sync)")
        }
        let dev = try device(ctx, store)
        try store.write { try store.setDeviceName(dev.deviceID, name) }
        try ctx.out.writeLine(.object([("device", .string(dev.deviceID)), ("name", .optional(try store.device(dev.deviceID)?.name)),
                                       ("was", .optional(dev.name))]))
        return .success
    }

    // MARK: status

    static func runStatus(_ ctx: ToolContext) throws -> ExitStatus {
        let store = try ctx.store(create: false)
        let me = try store.deviceID
        if ctx.args.flag(Option.deviceIDs) {
            for d in try store.devices() where d.deviceID != me && d.revokedAt == nil {
                try ctx.out.write(d.deviceID + (d.name.map { "\t" + $0 } ?? "") + "\n")
            }
            return .success
        }
        let fam = try store.family()
        let devices = try store.devices().map { d -> JSONValue in
            .object([("device", .string(d.deviceID)), ("name", .optional(d.name)), ("role", .string(d.role.rawValue)), ("self", .bool(d.deviceID == me)),
                     ("joinedAt", .string(d.joinedAt.rfc3339)), ("revokedAt", d.revokedAt.map { .string($0.rfc3339) } ?? .null),
                     ("lastAddress", .optional(d.lastAddress)), ("lastSynced", d.lastSyncedAt.map { .string($0.rfc3339) } ?? .null),
                     ("sentSeq", .int(d.sentSeq)), ("recvSeq", .int(d.recvSeq))])
        }
        let maxDevices: Int = fam?.role == .member ? Int(try store.meta("family_max_devices") ?? "") ?? Store.defaultMaxDevices : try store.maxDevices
        let counts = try store.recordCounts()
        let records = counts.live + counts.tombstones
        let photos = try store.photoCount()
        let gc = try store.collectGarbage(now: ctx.now, dryRun: true)
        let status: JSONValue = .object([
            ("device", .string(me)),
            ("family", .optional(fam?.id)), ("role", .optional(fam?.role.rawValue)), ("owner", .optional(fam?.ownerDevice)),
            ("epoch", .int(try store.familyEpoch)), ("revoked", .bool(try store.isSelfRevoked)),
            ("maxDevices", .int(maxDevices)), ("activeDevices", .int(try store.activeDeviceCount())),
            ("devices", .array(devices)),
            ("proof", try SyncStatus.proofState(store, verifier: try verifier(ctx), now: ctx.now)),
            ("records", .int(records)), ("changeSeq", .int(try store.currentChangeSeq)),
            ("photos", .object([("held", .int(photos)), ("wanted", .int(try store.wantedPhotoCount())),
                                ("wantedList", .array(try store.wantedPhotoList().map {
                                    .object([("sha256", .string($0.sha256)), ("records", .array($0.records.map { .string($0) }))])
                                }))])),
            ("gc", .object([("keptUnacknowledged", .int(gc.keptUnacknowledged)), ("heldBackBy", gc.json["heldBackBy"] ?? .array([]))])),
        ])
        if StatusView.wantsJSON(ctx, flag: Option.json) { try ctx.out.writeLine(status) } else { try ctx.out.write(StatusView.status(status)) }
        return .success
    }
}

/// An append-only NDJSON event log (`--events`). Each event is one write(2)
/// of one line, so a script tailing the file never sees half an event.
final class EventLog {
    private let fd: Int32
    let path: String

    init(path: String) throws {
        self.path = path
        fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw ToolError.io("--events: cannot open \(path): \(String(cString: strerror(errno)))") }
    }

    deinit { close(fd) }

    func write(_ v: JSONValue) {
        var line = v.serialized
        line += "\n"
        // A log that cannot be written must not stop a sync: the event is dropped.
        _ = line.withUTF8 { FileIO.writeAll(fd, UnsafeRawBufferPointer($0)) }
    }
}

extension PeerSyncCommand {
    /// This tool's options, one case each (see `OptionName`).
    public enum Option: String, OptionName {
        case connect
        case db
        case deviceIDs = "device-ids"
        case dryRun = "dry-run"
        case name
        case events
        case json
        case faultInjectHoldRecords = "fault-inject-hold-records"
        case faultInjectPreviousProtocol = "fault-inject-previous-protocol"
        case faultInjectSkipPhotoReplies = "fault-inject-skip-photo-replies"
        case listen
        case now
        case once
        case quiet
        case root
        case wait
        case waveTimeout = "wave-timeout"
        case quietLimit = "quiet-limit"
        case acceptNewOwnerKey = "accept-new-owner-key"
        case sessionLimit = "session-limit"
        case noAdvertise = "no-advertise"
        case stdio
        case via
        case timeout
        case to
        case output
        case maxBytes = "max-bytes"
        case reply
    }
}
