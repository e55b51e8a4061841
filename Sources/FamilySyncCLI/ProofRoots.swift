import FamilySync

/// Which root proofs are judged against, in one place for jws-verify and
/// peer-sync: `--root` when given, else the root the store was given once
/// (and keeps), else the bundled Apple Root CA - G3.
public enum ProofRoots {
    /// The certificates of `--root`, or nil when none was given.
    public static func given(_ ctx: ToolContext) throws -> [X509Certificate]? {
        let paths = ctx.args.values(SharedOption.root)
        guard !paths.isEmpty else { return nil }
        do { return try TrustAnchors.load(paths: paths) } catch { throw ToolError(error, option: "--root") }
    }

    /// A verifier for work on `store`.
    public static func verifier(_ ctx: ToolContext, store: Store?) throws -> ProofVerifier {
        try ProofVerifier(anchors: try given(ctx) ?? store?.trustRoots())
    }

    /// How --root is described where a store keeps it.
    public static let keptNote = "Given with a store, it is kept there (the store setting trust_roots) and used by every later command on that store that gives no --root."
}
