import FamilySync
import Glibc

/// Shift_JIS as Japanese QR producers write it and every reader of the
/// ZXing family reads it: bytes below 0x80 are ASCII (0x5C the backslash a
/// URL or a MECARD escape needs, 0x7E the tilde, not JIS X 0201's yen sign
/// and overline), 0xA1-0xDF half-width katakana, and a lead byte (0x81-0x9F,
/// 0xE0-0xFC) with a trail byte (0x40-0xFC but 0x7F) a JIS X 0208 character,
/// or else one of Windows-31J's extensions (the NEC and IBM rows).
enum QRShiftJIS {
    enum Unit: Equatable {
        case ascii(UInt8)
        case katakana(UInt8)
        case doubleByte(UInt8, UInt8)
        /// A byte that starts nothing, or a lead byte without its trail.
        case invalid(UInt8)
    }

    static func isLead(_ c: UInt8) -> Bool { (0x81...0x9F).contains(c) || (0xE0...0xFC).contains(c) }
    static func isTrail(_ c: UInt8) -> Bool { (0x40...0xFC).contains(c) && c != 0x7F }

    /// The bytes cut into characters by Shift_JIS's structure.
    static func units(_ b: [UInt8]) -> [Unit] {
        var out: [Unit] = []
        out.reserveCapacity(b.count)
        var i = 0
        while i < b.count {
            let c = b[i]
            if c < 0x80 {
                out.append(.ascii(c))
            } else if (0xA1...0xDF).contains(c) {
                out.append(.katakana(c))
            } else if isLead(c), i + 1 < b.count, isTrail(b[i + 1]) {
                out.append(.doubleByte(c, b[i + 1]))
                i += 1
            } else {
                out.append(.invalid(c))
            }
            i += 1
        }
        return out
    }

    /// Whether a double-byte character is one that JIS X 0208 or Windows-31J assigns.
    static func maps(_ lead: UInt8, _ trail: UInt8) -> Bool { character(lead, trail) != nil }

    /// One double-byte character: JIS X 0208's mapping (glibc's SHIFT_JIS),
    /// or Windows-31J's (CP932) for the rows only it assigns. The rows left
    /// to user-defined characters (leads 0xF0-0xF9, Unicode's private use
    /// area) are no character: no producer's text has them.
    static func character(_ lead: UInt8, _ trail: UInt8) -> String? {
        guard !(0xF0...0xF9).contains(lead) else { return nil }
        for cs in ["SHIFT_JIS", "CP932"] {
            if let s = iconvStrict([lead, trail], from: cs), !s.unicodeScalars.contains(where: { (0xE000...0xF8FF).contains($0.value) }) { return s }
        }
        return nil
    }

    /// Converts to UTF-8; each byte that is no character becomes U+FFFD.
    static func decode(_ b: [UInt8], onInvalid: () -> Void = {}) -> String {
        var out = String.UnicodeScalarView()
        for unit in units(b) {
            switch unit {
            case .ascii(let c): out.append(Unicode.Scalar(c))
            // 0xA1-0xDF is U+FF61-U+FF9F, half-width katakana: always a scalar.
            case .katakana(let c): out.append(Unicode.Scalar(0xFF61 + UInt32(c) - 0xA1)!)
            case .doubleByte(let lead, let trail):
                if let s = character(lead, trail) {
                    out.append(contentsOf: s.unicodeScalars)
                } else {
                    onInvalid()
                    out.append(contentsOf: "\u{FFFD}\u{FFFD}".unicodeScalars)
                }
            case .invalid:
                onInvalid()
                out.append("\u{FFFD}")
            }
        }
        return String(out)
    }

    /// iconv on one short input, nil unless all of it converts.
    static func iconvStrict(_ input: [UInt8], from charset: String) -> String? {
        let cd = iconv_open("UTF-8", charset)
        guard cd != iconv_t(bitPattern: -1) else { return nil }
        defer { iconv_close(cd) }
        var inBytes = input.map { CChar(bitPattern: $0) }
        var outBytes = [CChar](repeating: 0, count: 16)
        let produced: Int? = inBytes.withUnsafeMutableBufferPointer { ib in
            outBytes.withUnsafeMutableBufferPointer { ob in
                var ip: UnsafeMutablePointer<CChar>? = ib.baseAddress
                var il = ib.count
                var op: UnsafeMutablePointer<CChar>? = ob.baseAddress
                var ol = ob.count
                guard iconv(cd, &ip, &il, &op, &ol) != -1, il == 0 else { return nil }
                return ob.count - ol
            }
        }
        guard let n = produced, n > 0 else { return nil }
        return String(validating: outBytes.prefix(n).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
