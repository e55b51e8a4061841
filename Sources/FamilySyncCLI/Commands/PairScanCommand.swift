import FamilySync

public enum PairScanCommand {
    public static let spec = CommandSpec(
        name: "pair-scan",
        abstract: "Decode pairing QR codes from PNG, JPEG and PNM images",
        options: [CommonOptions.db, CommonOptions.now, CommonOptions.quiet],
        seeAlso: AllTools.seeAlso(except: "pair-scan")
    )

    public static func run(_ ctx: ToolContext) throws -> ExitStatus {
        try AllTools.notImplemented(ctx)
    }
}
