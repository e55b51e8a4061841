import FamilySync

public enum PeerSyncCommand {
    public static let spec = CommandSpec(
        name: "peer-sync",
        abstract: "Sync with one paired device at a time over TLS on the local network",
        options: [CommonOptions.db, CommonOptions.now, CommonOptions.quiet],
        seeAlso: AllTools.seeAlso(except: "peer-sync")
    )

    public static func run(_ ctx: ToolContext) throws -> ExitStatus {
        try AllTools.notImplemented(ctx)
    }
}
