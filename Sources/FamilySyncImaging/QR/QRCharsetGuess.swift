import FamilySync

/// How the character set of a code's byte-mode data was decided, so that a
/// caller can tell a declaration (an ECI) from a guess, and a clear guess
/// from one that could as well have gone the other way.
public struct QRCharsetChoice: Sendable, Equatable {
    public enum Source: String, Sendable {
        /// Every byte-mode segment is under an ECI: the code says its character set.
        case eci
        /// Byte-mode data without an ECI: the character set is a guess.
        case guess
        /// No byte-mode data (numeric, alphanumeric, kanji or hanzi modes only): nothing to decide.
        case none
    }

    /// The character set of the guessed data (or of the first declared
    /// segment); nil for `.none`.
    public var charset: String?
    public var source: Source
    /// False when the bytes fit more than one character set and nothing in
    /// them tells which their maker meant: the text is then not certain.
    public var clear: Bool
    /// What decided it, in words.
    public var reason: String

    static let noByteData = QRCharsetChoice(charset: nil, source: .none, clear: true, reason: "no byte-mode data")
}

/// Guesses the character set of byte-mode data that declares none, by what
/// real producers emit: UTF-8 that is valid UTF-8; Shift_JIS where the bytes
/// read as Japanese (a run of half-width katakana, a run of double-byte
/// characters, or a kanji-mode segment in the same code); ISO 8859-1 where
/// they read as Latin text (an accented letter on its own beside ASCII
/// letters) or fit nothing else. The guess is unclear where the bytes fit
/// two character sets and the evidence names both or neither: Shift_JIS
/// and ISO 8859-1, or Japanese Shift_JIS that is also UTF-8 made of
/// two-byte sequences only.
public enum QRCharsetGuess {
    /// Half-width katakana in a row that make a Japanese word: Latin text
    /// rarely has three high-bit characters in a row.
    static let katakanaRun = 3
    /// Double-byte characters in a row that make a Japanese word.
    static let doubleByteRun = 2

    /// What the bytes look like read as Shift_JIS; nil when they do not fit it.
    struct ShiftJISReading {
        var katakana = 0, longestKatakanaRun = 0
        var doubleBytes = 0, longestDoubleByteRun = 0
    }

    /// What the bytes look like read as ISO 8859-1.
    struct LatinReading {
        /// Bytes 0x80-0x9F: C1 control codes, never in text.
        var controlCodes = 0
        /// High-bit letters (0xC0-0xFF but × and ÷) with no high-bit
        /// neighbour and an ASCII letter beside them: how accents sit in Latin words.
        var lettersInWords = 0
        /// High-bit signs (0xA0-0xBF, ×, ÷): rare in Latin text, and what
        /// half-width katakana look like in ISO 8859-1.
        var signs = 0
    }

    /// Valid UTF-8's multi-byte sequences of three or four bytes.
    struct UTF8Reading {
        var longSequences = 0
        init(_ b: [UInt8]) { longSequences = b.filter { $0 >= 0xE0 }.count }
    }

    static func shiftJIS(_ b: [UInt8]) -> ShiftJISReading? {
        var r = ShiftJISReading()
        var kana = 0, doubles = 0
        for unit in QRShiftJIS.units(b) {
            switch unit {
            case .ascii: kana = 0; doubles = 0
            case .katakana:
                r.katakana += 1; kana += 1; doubles = 0
                r.longestKatakanaRun = max(r.longestKatakanaRun, kana)
            case .doubleByte(let lead, let trail):
                guard QRShiftJIS.maps(lead, trail) else { return nil }
                r.doubleBytes += 1; doubles += 1; kana = 0
                r.longestDoubleByteRun = max(r.longestDoubleByteRun, doubles)
            case .invalid: return nil
            }
        }
        return r
    }

    static func latin(_ b: [UInt8]) -> LatinReading {
        var r = LatinReading()
        func isHigh(_ i: Int) -> Bool { i >= 0 && i < b.count && b[i] >= 0x80 }
        func isLetter(_ i: Int) -> Bool {
            guard i >= 0, i < b.count else { return false }
            return (0x41...0x5A).contains(b[i]) || (0x61...0x7A).contains(b[i])
        }
        for (i, c) in b.enumerated() where c >= 0x80 {
            if c < 0xA0 {
                r.controlCodes += 1
            } else if c < 0xC0 || c == 0xD7 || c == 0xF7 {
                r.signs += 1
            } else if !isHigh(i - 1), !isHigh(i + 1), isLetter(i - 1) || isLetter(i + 1) {
                r.lettersInWords += 1
            }
        }
        return r
    }

    /// The character set for `bytes`, byte-mode data without an ECI.
    /// `kanjiInCode`: the same code has a kanji-mode segment (its maker writes Shift_JIS).
    public static func guess(_ bytes: [UInt8], kanjiInCode: Bool = false) -> QRCharsetChoice {
        func choice(_ cs: String, clear: Bool = true, _ why: String) -> QRCharsetChoice {
            QRCharsetChoice(charset: cs, source: .guess, clear: clear, reason: why)
        }
        if bytes.allSatisfy({ $0 < 0x80 }) { return choice("UTF-8", "ASCII only") }
        let sjis = shiftJIS(bytes)
        var japanese: [String] = []
        if let sjis {
            if sjis.longestKatakanaRun >= katakanaRun { japanese.append("\(sjis.longestKatakanaRun) half-width katakana in a row") }
            if sjis.longestDoubleByteRun >= doubleByteRun { japanese.append("\(sjis.longestDoubleByteRun) double-byte characters in a row") }
            if kanjiInCode { japanese.append("a kanji-mode segment in the code") }
        }
        if String(validating: bytes, as: UTF8.self) != nil {
            // Pairs of half-width katakana can be two-byte UTF-8 too; a
            // three- or four-byte sequence (CJK, emoji) Shift_JIS text almost never forms.
            let long = UTF8Reading(bytes).longSequences
            if japanese.isEmpty || long > 0 { return choice("UTF-8", long > 0 || sjis == nil ? "valid UTF-8" : "valid UTF-8, and not Japanese as Shift_JIS") }
            return choice((sjis?.longestKatakanaRun ?? 0) >= katakanaRun ? "Shift_JIS" : "UTF-8", clear: false,
                          "unclear: fits UTF-8 (two-byte sequences only) and Shift_JIS (\(japanese.joined(separator: ", ")))")
        }
        let latin = latin(bytes)
        guard let sjis else {
            return choice("ISO-8859-1", latin.controlCodes > 0 ? "binary: neither UTF-8 nor Shift_JIS, shown byte for byte" : "neither UTF-8 nor Shift_JIS")
        }
        if latin.controlCodes > 0 {
            return choice("Shift_JIS", (japanese.isEmpty ? "" : japanese.joined(separator: ", ") + "; ") + "as ISO-8859-1 it would hold control codes")
        }
        let latinText = latin.lettersInWords > 0 ? "\(latin.lettersInWords) accented letters inside Latin words" : nil
        switch (japanese.isEmpty, latinText) {
        case (false, nil): return choice("Shift_JIS", japanese.joined(separator: ", "))
        case (true, let l?): return choice("ISO-8859-1", l)
        case (false, let l?):
            return choice(sjis.longestKatakanaRun >= katakanaRun || sjis.longestDoubleByteRun > doubleByteRun ? "Shift_JIS" : "ISO-8859-1", clear: false,
                          "unclear: fits Shift_JIS (\(japanese.joined(separator: ", "))) and ISO-8859-1 (\(l))")
        case (true, nil):
            // Nothing either way; high-bit signs lean to katakana.
            let leaning = latin.signs * 2 >= sjis.katakana + sjis.doubleBytes && sjis.katakana > 0 ? "Shift_JIS" : "ISO-8859-1"
            return choice(leaning, clear: false, "unclear: fits Shift_JIS and ISO-8859-1 with nothing to tell them apart")
        }
    }
}
