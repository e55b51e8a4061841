import FamilySync
import Glibc

/// Turns a code's segments into the text the code means, always valid UTF-8:
/// - a segment under an ECI is converted from the character set it names;
/// - byte-mode data without an ECI is decided as ZXing-family readers
///   decide it, over all such data of the code at once: valid UTF-8 is
///   UTF-8, else plausible Shift-JIS (how most Japanese generators write) is
///   Shift-JIS, else ISO 8859-1 (the standard's default);
/// - kanji mode is Shift-JIS, hanzi mode GB 2312, numeric and alphanumeric ASCII.
/// Bytes that are invalid in their declared character set become U+FFFD.
public enum QRText {
    /// The character set an ECI designates (AIM ECI assignments), as iconv names it; nil for one this reader does not know.
    public static func charset(eci: UInt32) -> String? {
        switch eci {
        case 0, 2: return "CP437"
        case 1, 3: return "ISO-8859-1"
        case 4...13: return "ISO-8859-\(eci - 2)"
        case 15...18: return "ISO-8859-\(eci - 2)"
        case 20: return "SHIFT_JIS"
        case 21: return "CP1250"
        case 22: return "CP1251"
        case 23: return "CP1252"
        case 24: return "CP1256"
        case 25: return "UTF-16BE"
        case 26: return "UTF-8"
        case 27, 170: return "ASCII"
        case 28: return "BIG5"
        case 29: return "GB18030"
        case 30: return "EUC-KR"
        // 899: binary data, shown byte for byte as ISO 8859-1.
        case 899: return "ISO-8859-1"
        default: return nil
        }
    }

    /// The character set chosen for byte-mode data that declares none.
    public static func guessCharset(_ bytes: [UInt8]) -> String {
        if String(validating: bytes, as: UTF8.self) != nil { return "UTF-8" }
        if isPlausibleShiftJIS(bytes) { return "SHIFT_JIS" }
        return "ISO-8859-1"
    }

    public static func text(_ stream: QRBitstream) -> String {
        let undeclared = stream.segments.filter { $0.mode == .byte && $0.eci == nil }.flatMap(\.bytes)
        let guessed = guessCharset(undeclared)
        var out = ""
        // Adjacent byte segments in one character set convert as one run: a
        // multi-byte character may straddle two (the parts of a structured-append sequence).
        var run: (charset: String, bytes: [UInt8])?
        func flush() {
            if let r = run { out += convert(r.bytes, from: r.charset) }
            run = nil
        }
        for s in stream.segments {
            if s.mode == .byte {
                // An ECI this reader does not know: the bytes as ISO 8859-1, so nothing is lost or invented.
                let cs = s.eci.map { charset(eci: $0) ?? "ISO-8859-1" } ?? guessed
                if run?.charset == cs { run?.bytes += s.bytes } else { flush(); run = (cs, s.bytes) }
                continue
            }
            flush()
            switch s.mode {
            case .numeric, .alphanumeric: out += String(decoding: s.bytes, as: UTF8.self)
            case .kanji: out += convert(s.bytes, from: "SHIFT_JIS")
            case .hanzi: out += convert(s.bytes, from: "GB18030")
            case .byte: break
            }
        }
        flush()
        return out
    }

    /// Bytes that zbar read from a code (it hands over one run of bytes, with
    /// ECI data already converted to UTF-8): decided as undeclared byte-mode data.
    public static func text(zbarBytes b: [UInt8]) -> String { convert(b, from: guessCharset(b)) }

    /// Shift-JIS that a Japanese generator would write, and not Latin-1 that
    /// happens to parse: every byte fits Shift-JIS's structure (ASCII,
    /// half-width katakana, or a JIS X 0208 lead and trail byte), iconv maps
    /// it, there is a double-byte character, and either a byte in 0x80-0x9F
    /// (C1 control codes in ISO 8859-1, never in real text) or two
    /// double-byte characters in a row (a Japanese word).
    static func isPlausibleShiftJIS(_ b: [UInt8]) -> Bool {
        var i = 0, doubles = 0, run = 0, longestRun = 0, c1 = false
        while i < b.count {
            let c = b[i]
            if c < 0x80 || (0xA1...0xDF).contains(c) {
                run = 0
                i += 1
                continue
            }
            guard (0x81...0x9F).contains(c) || (0xE0...0xEF).contains(c), i + 1 < b.count else { return false }
            let t = b[i + 1]
            guard (0x40...0xFC).contains(t), t != 0x7F else { return false }
            if (0x80...0x9F).contains(c) || (0x80...0x9F).contains(t) { c1 = true }
            doubles += 1
            run += 1
            longestRun = max(longestRun, run)
            i += 2
        }
        guard doubles > 0, c1 || longestRun >= 2 else { return false }
        return strictConvert(b, from: "SHIFT_JIS") != nil
    }

    /// iconv, failing on any invalid or unmapped byte.
    static func strictConvert(_ input: [UInt8], from charset: String) -> String? {
        var bad = false
        let s = convert(input, from: charset) { bad = true }
        return bad ? nil : s
    }

    /// Converts to UTF-8 with iconv; each byte iconv cannot map becomes U+FFFD.
    static func convert(_ input: [UInt8], from charset: String, onInvalid: () -> Void = {}) -> String {
        if input.isEmpty { return "" }
        if charset == "UTF-8" {
            if let s = String(validating: input, as: UTF8.self) { return s }
            onInvalid()
            return String(decoding: input, as: UTF8.self)
        }
        if charset == "ISO-8859-1" { return String(String.UnicodeScalarView(input.map { Unicode.Scalar($0) })) }
        let cd = iconv_open("UTF-8", charset)
        guard cd != iconv_t(bitPattern: -1) else {
            onInvalid()
            return String(String.UnicodeScalarView(input.map { Unicode.Scalar($0) }))
        }
        defer { iconv_close(cd) }
        var result: [UInt8] = []
        var inBytes = input.map { CChar(bitPattern: $0) }
        var chunk = [CChar](repeating: 0, count: 4096)
        inBytes.withUnsafeMutableBufferPointer { ib in
            var ip: UnsafeMutablePointer<CChar>? = ib.baseAddress
            var il = ib.count
            while il > 0 {
                let (rc, produced, err): (Int, Int, Int32) = chunk.withUnsafeMutableBufferPointer { ob in
                    var op: UnsafeMutablePointer<CChar>? = ob.baseAddress
                    var ol = ob.count
                    let rc = iconv(cd, &ip, &il, &op, &ol)
                    return (rc, ob.count - ol, errno)
                }
                result += chunk.prefix(produced).map { UInt8(bitPattern: $0) }
                if rc != -1 { break }
                if err == E2BIG { continue }
                // EILSEQ or EINVAL (a truncated sequence at the end): one byte becomes U+FFFD.
                onInvalid()
                result += [0xEF, 0xBF, 0xBD]
                ip = ip.map { $0 + 1 }
                il -= 1
            }
        }
        return String(decoding: result, as: UTF8.self)
    }
}
