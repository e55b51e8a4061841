import Foundation
import FamilySync

/// What a passive stranger can read in bytes it sees (a ClientHello, a
/// notice, an mDNS packet, a bundle file): whether they hold an ID, and
/// whether two of them share anything that would link them.
enum InClear {
    /// `id` (a family or device UUID) in any form it could take: its text in
    /// either case, with or without dashes, or its 16 raw bytes.
    static func holds(_ bytes: some Collection<UInt8>, _ id: String) -> Bool {
        let b = Array(bytes)
        let plain = id.replacingOccurrences(of: "-", with: "")
        let forms: [[UInt8]] = [id.uppercased(), id.lowercased(), plain.uppercased(), plain.lowercased()].map { Array($0.utf8) }
            + [Hex.decode(plain.lowercased()) ?? []]
        return forms.contains { f in !f.isEmpty && b.count >= f.count && (0...(b.count - f.count)).contains { Array(b[$0..<($0 + f.count)]) == f } }
    }

    /// The same for a word (a host name), case-insensitive.
    static func holds(_ bytes: some Collection<UInt8>, word: String) -> Bool {
        String(decoding: Array(bytes), as: UTF8.self).lowercased().contains(word.lowercased())
    }

    /// A run of `length` bytes that `a` and `b` both hold, or nil when they
    /// share none: two random strings of a few hundred bytes share a 4-byte
    /// run with odds of about one in ten thousand.
    static func sharedRun(_ a: [UInt8], _ b: [UInt8], length: Int = 4) -> [UInt8]? {
        guard a.count >= length, b.count >= length else { return nil }
        let windows = Set((0...(a.count - length)).map { Array(a[$0..<($0 + length)]) })
        return (0...(b.count - length)).lazy.map { Array(b[$0..<($0 + length)]) }.first { windows.contains($0) }
    }
}
