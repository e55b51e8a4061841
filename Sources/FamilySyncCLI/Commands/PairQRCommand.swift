import FamilySync

public enum PairQRCommand {
    public static let spec = CommandSpec(
        name: "pair-qr",
        abstract: "Make a one-time pairing offer and draw it as a QR code",
        options: [CommonOptions.db, CommonOptions.now, CommonOptions.quiet],
        seeAlso: AllTools.seeAlso(except: "pair-qr")
    )

    public static func run(_ ctx: ToolContext) throws -> ExitStatus {
        try AllTools.notImplemented(ctx)
    }
}
