import FoundationEssentials
import Glibc

/// A device's name ("Anna's phone"), shown next to its ID in peer-sync
/// status, tombstone-gc's heldBackBy and serve's log lines. A member names
/// itself when it joins; the owner may rename any device, and its signed
/// roster carries the names, so members learn them only as the owner decided.
///
/// Names reach terminals and logs, and some come from peers, so every name
/// that enters a store passes through here: at most `maxBytes`, and no
/// character that could move a cursor, start an escape sequence, end a log
/// line or reorder text (control characters, line and paragraph separators,
/// format characters such as bidi overrides).
public enum DeviceName {
    /// The longest name, in bytes of UTF-8.
    public static let maxBytes = 64

    /// Why a name as typed is not taken.
    public static func problem(_ name: String) -> String? {
        if name.trimmingWhiteSpace().isEmpty { return "the name is empty" }
        if name.utf8.count > maxBytes { return "the name is longer than \(maxBytes) bytes (\(name.utf8.count))" }
        if let bad = name.unicodeScalars.first(where: isUnsafe) {
            return "the name holds a control character (U+\(String(bad.value, radix: 16, uppercase: true).leftPadded(to: 4)))"
        }
        return nil
    }

    /// A name from a peer, made safe: each unsafe character becomes U+FFFD,
    /// spaces at the ends go, and it is cut to `maxBytes` on a character
    /// boundary; nil when nothing is left.
    public static func neutralised(_ name: String) -> String? {
        var s = String(String.UnicodeScalarView(name.unicodeScalars.map { isUnsafe($0) ? "\u{FFFD}" : $0 }))
            .trimmingWhiteSpace()
        while s.utf8.count > maxBytes { s.removeLast() }
        return s.isEmpty ? nil : s
    }

    /// Controls (C0, DEL, C1), line and paragraph separators, and format
    /// characters but the zero-width joiner that emoji sequences use.
    static func isUnsafe(_ c: Unicode.Scalar) -> Bool {
        switch c.properties.generalCategory {
        case .control, .lineSeparator, .paragraphSeparator, .surrogate, .privateUse, .unassigned: return true
        case .format: return c.value != 0x200D
        default: return false
        }
    }
}

private extension String {
    func leftPadded(to n: Int) -> String { String(repeating: "0", count: max(0, n - count)) + self }
}

extension Store {
    /// Names a device (the owner's rename, or the name a joining device
    /// gave); nil forgets the name. Call inside `write`.
    public func setDeviceName(_ device: String, _ name: String?) throws {
        try db.run("UPDATE devices SET name = ? WHERE device_id = ?", [name.flatMap(DeviceName.neutralised).map { .text($0) } ?? .null, .text(device)])
    }
}
