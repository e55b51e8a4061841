/// The release every tool reports with `--version`.
public enum FamilySyncInfo {
    public static let version = "0.1.0"
    /// The date man pages carry (`.Dd`); bump with the version.
    public static let manualDate = "November 30, 2026"
}
