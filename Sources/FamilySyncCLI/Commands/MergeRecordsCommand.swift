import FamilySync

public enum MergeRecordsCommand {
    public static let spec = CommandSpec(
        name: "merge-records",
        abstract: "Merge record sets by last-writer-wins; apply, stamp and export the store",
        options: [CommonOptions.db, CommonOptions.now, CommonOptions.quiet],
        seeAlso: AllTools.seeAlso(except: "merge-records")
    )

    public static func run(_ ctx: ToolContext) throws -> ExitStatus {
        try AllTools.notImplemented(ctx)
    }
}
