import FamilySync
import Glibc

/// Turns a code's segments into the text the code means, always valid UTF-8:
/// - a segment under an ECI is converted from the character set it names;
/// - byte-mode data without an ECI is decided by `QRCharsetGuess`, over all
///   such data of the code at once, as its maker most likely meant it;
/// - kanji mode is Shift_JIS (`QRShiftJIS`), hanzi mode GB 2312, numeric and
///   alphanumeric ASCII.
/// Bytes that are invalid in their character set become U+FFFD.
public enum QRText {
    /// The character set an ECI designates (AIM ECI assignments), as iconv names it; nil for one this reader does not know.
    public static func charset(eci: UInt32) -> String? {
        switch eci {
        case 0, 2: return "CP437"
        case 1, 3: return "ISO-8859-1"
        case 4...13: return "ISO-8859-\(eci - 2)"
        case 15...18: return "ISO-8859-\(eci - 2)"
        case 20: return "Shift_JIS"
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

    /// A code's text, and how the character set of its byte-mode data was decided.
    public static func decode(_ stream: QRBitstream) -> (text: String, charset: QRCharsetChoice) {
        let undeclared = stream.segments.filter { $0.mode == .byte && $0.eci == nil }.flatMap(\.bytes)
        let declared = stream.segments.first { $0.mode == .byte && $0.eci != nil }
        let choice: QRCharsetChoice
        if stream.segments.contains(where: { $0.mode == .byte && $0.eci == nil }) {
            choice = QRCharsetGuess.guess(undeclared, kanjiInCode: stream.segments.contains { $0.mode == .kanji })
        } else if let d = declared, let eci = d.eci {
            choice = QRCharsetChoice(charset: charset(eci: eci) ?? "ISO-8859-1", source: .eci, clear: true,
                                     reason: charset(eci: eci) == nil ? "ECI \(eci), unknown here: shown byte for byte" : "ECI \(eci)")
        } else {
            choice = .noByteData
        }
        let guessed = choice.source == .guess ? choice.charset ?? "ISO-8859-1" : "ISO-8859-1"
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
            case .kanji: out += convert(s.bytes, from: "Shift_JIS")
            case .hanzi: out += convert(s.bytes, from: "GB18030")
            case .byte: break
            }
        }
        flush()
        return (out, choice)
    }

    public static func text(_ stream: QRBitstream) -> String { decode(stream).text }

    /// Bytes that zbar read from a code (it hands over one run of bytes, with
    /// ECI data already converted to UTF-8): decided as undeclared byte-mode
    /// data, with nothing known of the code's segments.
    public static func decode(zbarBytes b: [UInt8]) -> (text: String, charset: QRCharsetChoice) {
        let choice = QRCharsetGuess.guess(b)
        return (convert(b, from: choice.charset ?? "ISO-8859-1"), choice)
    }

    public static func text(zbarBytes b: [UInt8]) -> String { decode(zbarBytes: b).text }

    /// Converts to UTF-8 with iconv; each byte iconv cannot map becomes U+FFFD.
    static func convert(_ input: [UInt8], from charset: String, onInvalid: () -> Void = {}) -> String {
        if input.isEmpty { return "" }
        if charset == "UTF-8" {
            if let s = String(validating: input, as: UTF8.self) { return s }
            onInvalid()
            return String(decoding: input, as: UTF8.self)
        }
        if charset == "ISO-8859-1" { return String(String.UnicodeScalarView(input.map { Unicode.Scalar($0) })) }
        if charset == "Shift_JIS" { return QRShiftJIS.decode(input, onInvalid: onInvalid) }
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
