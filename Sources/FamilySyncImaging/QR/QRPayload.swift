import FamilySync
import Glibc

/// Turns the bytes zbar read from a code into the text `pair-scan --raw`
/// prints, without guessing:
/// - valid UTF-8 (which includes ASCII, and every ECI-declared character
///   set, already converted by zbar) is printed as it is;
/// - bytes made only of ASCII and the two-byte Shift-JIS characters that QR's
///   kanji mode can carry are kanji-mode text (zbar's binary mode hands kanji
///   mode over as its Shift-JIS bytes) and are converted to UTF-8;
/// - anything else is binary and is printed byte for byte.
public enum QRPayload {
    public static func text(_ bytes: [UInt8]) -> [UInt8] {
        if String(validating: bytes, as: UTF8.self) != nil { return bytes }
        if let sjis = kanjiText(bytes) { return sjis }
        return bytes
    }

    /// The two Shift-JIS lead-byte ranges kanji mode encodes (JIS X 0208).
    static func isKanjiPair(_ a: UInt8, _ b: UInt8) -> Bool {
        let v = Int(a) << 8 | Int(b)
        guard (0x8140...0x9FFC).contains(v) || (0xE040...0xEBBF).contains(v) else { return false }
        return b >= 0x40 && b <= 0xFC && b != 0x7F
    }

    static func kanjiText(_ b: [UInt8]) -> [UInt8]? {
        var out: [UInt8] = []
        var i = 0, pairs = 0
        var run: [UInt8] = []
        func flush() -> Bool {
            guard !run.isEmpty else { return true }
            guard let u = convertShiftJIS(run) else { return false }
            out += u
            run.removeAll()
            return true
        }
        while i < b.count {
            if b[i] < 0x80 {
                guard flush() else { return nil }
                out.append(b[i])
                i += 1
            } else if i + 1 < b.count, isKanjiPair(b[i], b[i + 1]) {
                run += [b[i], b[i + 1]]
                pairs += 1
                i += 2
            } else {
                return nil
            }
        }
        guard flush(), pairs > 0 else { return nil }
        return out
    }

    /// Shift-JIS double-byte characters to UTF-8 with iconv; nil if any is unmapped.
    static func convertShiftJIS(_ input: [UInt8]) -> [UInt8]? {
        let cd = iconv_open("UTF-8", "SHIFT_JIS")
        guard cd != iconv_t(bitPattern: -1) else { return nil }
        defer { iconv_close(cd) }
        var inBytes = input.map { CChar(bitPattern: $0) }
        var out = [CChar](repeating: 0, count: input.count * 2 + 8)
        let produced: Int? = inBytes.withUnsafeMutableBufferPointer { ib in
            out.withUnsafeMutableBufferPointer { ob in
                var ip: UnsafeMutablePointer<CChar>? = ib.baseAddress
                var op: UnsafeMutablePointer<CChar>? = ob.baseAddress
                var il = ib.count, ol = ob.count
                guard iconv(cd, &ip, &il, &op, &ol) != -1, il == 0 else { return nil }
                return ob.count - ol
            }
        }
        guard let produced else { return nil }
        return out.prefix(produced).map { UInt8(bitPattern: $0) }
    }
}
