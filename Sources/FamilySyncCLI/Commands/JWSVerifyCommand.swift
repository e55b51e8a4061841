import FamilySync

public enum JWSVerifyCommand {
    public static let spec = CommandSpec(
        name: "jws-verify",
        abstract: "Verify StoreKit 2 signed transactions offline and re-check a device's cached proof",
        options: [CommonOptions.db, CommonOptions.now, CommonOptions.quiet],
        seeAlso: AllTools.seeAlso(except: "jws-verify")
    )

    public static func run(_ ctx: ToolContext) throws -> ExitStatus {
        try AllTools.notImplemented(ctx)
    }
}
