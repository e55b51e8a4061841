import FamilySync

public enum TombstoneGCCommand {
    public static let spec = CommandSpec(
        name: "tombstone-gc",
        abstract: "Purge tombstones that every device has heard about",
        options: [CommonOptions.db, CommonOptions.now, CommonOptions.quiet],
        seeAlso: AllTools.seeAlso(except: "tombstone-gc")
    )

    public static func run(_ ctx: ToolContext) throws -> ExitStatus {
        try AllTools.notImplemented(ctx)
    }
}
