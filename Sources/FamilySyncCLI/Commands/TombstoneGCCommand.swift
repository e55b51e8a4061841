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

    public static let spec = CommandSpec(
        name: "tombstone-gc",
        abstract: "Purge tombstones that every device has heard about",
        discussion: """
        tombstone-gc removes from the store what no device needs any more, and prints one JSON summary on standard output. It is meant for cron: it says nothing on standard error unless --verbose is given or something fails, running it twice removes nothing the second time, and it is safe while peer-sync or merge-records use the same store.

        It removes exactly these, and nothing else:

        1. Tombstones (records with deleted true) whose modifiedAt, the delete time, is earlier than now - AGE (--older-than, default 90d), and that every current device has heard of. On the owner's device: for every device in the family other than this one and not revoked, how far of this store's changes that device acknowledged in a completed peer-sync (sent_seq) is at or past the change number at which this store last wrote the tombstone; a device that never completed a sync acknowledged nothing and holds every tombstone back, until it syncs or the owner revokes it. On a member: the owner passes on, at every contact, up to which of this store's changes every current device has heard everything, and the member purges by that, so a tombstone goes on every store once every current device has synced since the delete. A store that knows no other device purges on age alone.

        2. Pairing offers whose expiry time is at or before now, used or not: none of them can be redeemed any more.

        3. Photo files that no live record names and that were added to the store earlier than now - AGE (--photo-grace, default 7 days). A photo of a deleted record becomes unreferenced with the delete.

        Live records, tombstones that are young or unacknowledged, the family, its devices, secrets and entitlement proofs are never touched.

        The summary holds purged, keptYoung, keptUnacknowledged, heldBackBy (the devices holding tombstones back: deviceId, role, name, sentSeq, lastSyncedAt, and how many tombstones each holds back), oldestKept (the delete time of the oldest tombstone left, or null), offersCleared, photosPurged, photoBytesFreed and dryRun. With --dry-run the counts say what would go, and nothing changes.

        Deletes run in short transactions whose size adapts so that each holds the store's write lock for about \(Int(Store.gcTransactionTarget * 1000)) ms, so a writer never waits long; a crash or kill midway leaves every transaction whole, and the next run carries on.

        Every purge raises the store's purge floor, the latest delete time purged. The owner's device passes its floor on at every contact, and a record older than the floor that the owner does not hold is not brought back: a store restored from an old copy, or a device away for long, cannot resurrect what was purged elsewhere (see docs/protocol.md).
        """,
        options: [db, olderThan, photoGrace, dryRun, verbose, CommonOptions.now, CommonOptions.quiet],
        examples: [
            Example("See what would go, without changing anything:", "tombstone-gc --db kid.db --dry-run"),
            Example("A crontab line: every night at 03:17, keep the summaries in a log:",
                    "17 3 * * * tombstone-gc --db $HOME/.local/share/family-sync/store.db >> $HOME/.local/state/tombstone-gc.log"),
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
