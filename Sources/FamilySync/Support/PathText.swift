/// A file path's parts, taken from its text alone (no file system access),
/// as the tools name folders in messages and make sibling temporary files.
public enum PathText {
    /// The path without its last component: "/a/b" → "/a", "/a" → "/", "a" → "", "a/b/" → "a".
    public static func directory(_ path: String) -> String {
        let trimmed = withoutTrailingSlashes(path)
        guard trimmed != "/" else { return "/" }
        guard let slash = trimmed.lastIndex(of: "/") else { return "" }
        let dir = withoutTrailingSlashes(String(trimmed[..<slash]))
        return dir.isEmpty ? "/" : dir
    }

    /// The last component: "/a/b" → "b", "/a/b/" → "b", "/" → "/".
    public static func lastComponent(_ path: String) -> String {
        let trimmed = withoutTrailingSlashes(path)
        guard trimmed != "/", let slash = trimmed.lastIndex(of: "/") else { return trimmed }
        return String(trimmed[trimmed.index(after: slash)...])
    }

    /// `component` under `directory`: "a" + "b" → "a/b", "" + "b" → "b", "/" + "b" → "/b".
    public static func appending(_ directory: String, _ component: String) -> String {
        if directory.isEmpty { return component }
        return withoutTrailingSlashes(directory) == "/" ? "/" + component : withoutTrailingSlashes(directory) + "/" + component
    }

    /// The extension of the last component, without the dot: "x.png" → "png",
    /// "x" → "", ".png" → "" (a hidden file's name, not an extension).
    public static func fileExtension(_ path: String) -> String {
        let name = lastComponent(path)
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return "" }
        return String(name[name.index(after: dot)...])
    }

    private static func withoutTrailingSlashes(_ path: String) -> String {
        var p = Substring(path)
        while p.count > 1, p.hasSuffix("/") { p = p.dropLast() }
        return String(p)
    }
}

extension StringProtocol {
    /// The text without leading and trailing white space (`newlines`: line breaks too), as Unicode defines both.
    public func trimmingWhiteSpace(newlines: Bool = false) -> String {
        func blank(_ c: Character) -> Bool { c.isWhitespace && (newlines || !c.isNewline) }
        guard let first = firstIndex(where: { !blank($0) }), let last = lastIndex(where: { !blank($0) }) else { return "" }
        return String(self[first...last])
    }
}
