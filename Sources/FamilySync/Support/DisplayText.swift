/// Text from outside (a code's contents, a peer's or a notice's words) as
/// it is shown to a person: every character that could move a cursor,
/// start an escape sequence, end a line or reorder text (the same set
/// DeviceName refuses in names) is written as `\u{XXXX}`, so what a
/// terminal shows is what was sent, and the sender cannot restyle it.
public enum DisplayText {
    public static func escaped(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: DeviceName.isUnsafe) else { return text }
        var out = ""
        for c in text.unicodeScalars {
            if DeviceName.isUnsafe(c) {
                let hex = String(c.value, radix: 16, uppercase: true)
                out += "\\u{" + String(repeating: "0", count: max(0, 2 - hex.count)) + hex + "}"
            } else {
                out.unicodeScalars.append(c)
            }
        }
        return out
    }
}
