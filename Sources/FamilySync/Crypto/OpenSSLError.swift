import COpenSSL
import SystemGlue

/// A failed OpenSSL call: the call's name and the whole error queue, drained
/// so a later call does not report a stale error.
public struct OpenSSLError: Error, CustomStringConvertible, Sendable {
    public var call: String
    public var queue: [String]

    public init(_ call: String) {
        self.call = call
        self.queue = OpenSSLError.drain()
    }

    public var description: String {
        queue.isEmpty ? "\(call) failed" : "\(call) failed: \(queue.joined(separator: "; "))"
    }

    /// Empties OpenSSL's thread-local error queue, returning its messages.
    @discardableResult
    public static func drain() -> [String] { drainEntries().map(\.text) }

    /// Empties OpenSSL's thread-local error queue, returning each error's
    /// code and its words (the texts are loaded on this first need).
    static func drainEntries() -> [(code: UInt, text: String)] {
        var out: [(code: UInt, text: String)] = []
        if ERR_peek_error() != 0 { fs_openssl_error_texts() }
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            var buf = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &buf, buf.count)
            out.append((code, String(decoding: buf.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)))
        }
        return out
    }
}
