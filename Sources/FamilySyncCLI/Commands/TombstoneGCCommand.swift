import FoundationEssentials
import Glibc
import FamilySync

public enum TombstoneGCCommand {
    static let olderThan = OptionSpec("older-than", valueName: "AGE",
        help: "Purge only tombstones whose delete time is earlier than now - AGE (like 30d, 12w).", default: Store.tombstoneHorizon.description)
    static let photoGrace = OptionSpec("photo-grace", valueName: "AGE",
        help: "Remove an unreferenced photo only when it was added earlier than now - AGE.", default: Store.photoGracePeriod.description)
    static let db = OptionSpec("db", valueName: "PATH", help: "The store; it must exist.",
        default: CommonOptions.db.defaultValue, completion: .file)
    static let dryRun = OptionSpec.flag("dry-run", short: "n", help: "Count what would be removed; change nothing.")
    static let verbose = OptionSpec.flag("verbose", short: "v", help: "Say what each step removed, and the longest write transaction, on standard error.")

    /// Where `make install` puts the tool with its default PREFIX: a crontab line names it in full.
    static let installedPath = "/usr/local/bin/tombstone-gc"

    public static let spec = CommandSpec(
        name: "tombstone-gc",
        abstract: "Purge tombstones that every device has heard about",
        discussion: """
        tombstone-gc removes from the store what no device needs any more, and prints one JSON summary on standard output. It is meant for cron: it says nothing on standard error unless --verbose is given or something fails, running it twice removes nothing the second time, and it is safe while peer-sync or merge-records use the same store.

        It removes exactly these, and nothing else:

        1. On the owner's device (or a store in no family): tombstones (records with deleted true) that this store has held for AGE (--older-than, default 90d) by its own clock, counted from when the store got each one, not from its modifiedAt (which the deleting device's clock gave it), and that every current device has heard of: for every device in the family other than this one and not revoked, how far of this store's changes that device acknowledged in a completed peer-sync (sent_seq) is at or past the change number at which this store last wrote the tombstone. A device that never completed a sync acknowledged nothing and holds every tombstone back, until it syncs or the owner revokes it. A store that knows no other device purges on age alone. Each purge keeps a record of what it purged (a hash of the id and the delete time, 16 bytes), which the owner signs and sends to every member at its next sync. On a member, tombstone-gc purges no tombstone by itself: the member drops what the owner's purge records name when they arrive (peer-sync's summary counts them in records.purged), so no member and no clock can make a store forget anything; heldBackBy then says which devices the family is waiting for.

        2. Pairing offers whose expiry time is at or before now, used or not: none of them can be redeemed any more.

        3. Photo files that no live record names and that were added to the store earlier than now - AGE (--photo-grace, default 7 days). A photo of a deleted record becomes unreferenced with the delete.

        Live records, tombstones that are young or unacknowledged, the family, its devices, secrets and entitlement proofs are never touched.

        The summary holds purged, keptYoung, keptUnacknowledged, heldBackBy (the devices holding tombstones back: deviceId, role, name, sentSeq, lastSyncedAt, and how many tombstones each holds back), oldestKept (the delete time of the oldest tombstone left, or null), offersCleared, photosPurged, photoBytesFreed and dryRun. With --dry-run the counts say what would go, and nothing changes.

        Deletes run in short transactions whose size adapts so that each holds the store's write lock for about \(Int(Store.gcTransactionTarget * 1000)) ms, so a writer never waits long; a crash or kill midway leaves every transaction whole, and the next run carries on.

        What a purge removed stays removed: a version of a purged record that an old copy, a device away for long, or a revoked device joining again still holds is refused by the purge record that names it, and dropped where it is held; a record made meanwhile, whatever its time, is kept (see docs/protocol.md, purge records).
        """,
        options: [db, olderThan, photoGrace, dryRun, verbose, CommonOptions.now, CommonOptions.quiet],
        examples: [
            Example("See what would go, without changing anything:", "tombstone-gc --db kid.db --dry-run"),
            Example("A crontab line: every night at 03:17, keep the summaries (and any error) in a log. Cron's PATH is /usr/bin:/bin, so the line names the installed path (make install's default; command -v tombstone-gc says where it is):",
                    "17 3 * * * \(installedPath) --db $HOME/.local/share/family-sync/store.db >> $HOME/.local/state/tombstone-gc.log 2>&1"),
            Example("A systemd user timer: ~/.config/systemd/user/tombstone-gc.service and tombstone-gc.timer, then systemctl --user enable --now tombstone-gc.timer:",
                    """
                    # tombstone-gc.service
                    [Unit]
                    Description=Purge family-sync tombstones every device has heard about
                    [Service]
                    Type=oneshot
                    ExecStart=/usr/local/bin/tombstone-gc --older-than 90d

                    # tombstone-gc.timer
                    [Unit]
                    Description=Nightly family-sync tombstone purge
                    [Timer]
                    OnCalendar=*-*-* 03:17:00
                    RandomizedDelaySec=30m
                    Persistent=true
                    [Install]
                    WantedBy=timers.target
                    """),
        ],
        seeAlso: AllTools.seeAlso(except: "tombstone-gc")
    )

    public static func run(_ ctx: ToolContext) throws -> ExitStatus {
        let horizon = try ctx.args.timeSpan(Option.olderThan, default: Store.tombstoneHorizon)
        let grace = try ctx.args.timeSpan(Option.photoGrace, default: Store.photoGracePeriod)
        let verbose = ctx.args.flag(Option.verbose)
        if let extra = ctx.args.positionals.first { throw ToolError.usage("unexpected argument '\(extra)'") }
        let store = try ctx.store(create: false)
        // Each step is a transaction of its own: a stop keeps the finished ones, and the next run does the rest.
        if !ctx.args.flag(Option.dryRun) { Interruption.whatIsKept("what the finished steps removed is gone, the step under way was rolled back; run it again to finish") }
        let report = try store.collectGarbage(now: ctx.now, horizon: horizon, photoGrace: grace,
                                              dryRun: ctx.args.flag(Option.dryRun),
                                              log: verbose ? { ctx.warn($0) } : nil)
        try ctx.out.writeLine(report.json)
        return .success
    }
}

extension TombstoneGCCommand {
    /// This tool's options, one case each (see `OptionName`).
    public enum Option: String, OptionName {
        case db
        case dryRun = "dry-run"
        case now
        case olderThan = "older-than"
        case photoGrace = "photo-grace"
        case quiet
        case verbose
    }
}
