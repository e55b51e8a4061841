import Glibc

extension String {
    /// Text formatted as C's printf(3) does, for the few numeric formats the
    /// tools print (`%.1f`, `%04x`): FoundationEssentials has no
    /// `String(format:)`. Arguments are numbers; a `%s` needs a C string.
    public init(cFormat format: String, _ arguments: CVarArg...) {
        self = Self.printf(format, arguments)
    }

    private static func printf(_ format: String, _ arguments: [CVarArg]) -> String {
        var buffer = [CChar](repeating: 0, count: 64)
        let needed = Int(withVaList(arguments) { vsnprintf(&buffer, buffer.count, format, $0) })
        if needed >= buffer.count {
            // vsnprintf consumes its va_list: the second call takes a fresh one.
            buffer = [CChar](repeating: 0, count: needed + 1)
            _ = withVaList(arguments) { vsnprintf(&buffer, buffer.count, format, $0) }
        }
        return String(decoding: buffer.prefix(Swift.max(0, needed)).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
