import FoundationEssentials
import Glibc

/// A point in time at millisecond precision, the unit every device compares
/// and writes. Parsing accepts any RFC 3339 offset; writing is always UTC,
/// `YYYY-MM-DDTHH:MM:SS.sssZ`, so every device normalizes the same way.
/// Sub-millisecond digits are truncated, never rounded: rounding could move a
/// time across a second and make two devices disagree.
public struct Timestamp: Comparable, Hashable, Sendable, CustomStringConvertible {
    /// Milliseconds since 1970-01-01T00:00:00Z.
    public var milliseconds: Int64

    public init(milliseconds: Int64) { self.milliseconds = milliseconds }

    /// The system clock. Tools take `--now` instead where it is given.
    public static func current() -> Timestamp {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Timestamp(milliseconds: Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000)
    }

    public static func < (a: Timestamp, b: Timestamp) -> Bool { a.milliseconds < b.milliseconds }

    /// Saturating: a sum past the ends of Int64 stops there instead of wrapping
    /// round to a time on the other side of the epoch.
    public func adding(_ d: TimeSpan) -> Timestamp {
        let (v, over) = milliseconds.addingReportingOverflow(d.milliseconds)
        return Timestamp(milliseconds: over ? (d.milliseconds < 0 ? .min : .max) : v)
    }
    public func subtracting(_ d: TimeSpan) -> Timestamp {
        let (v, over) = milliseconds.subtractingReportingOverflow(d.milliseconds)
        return Timestamp(milliseconds: over ? (d.milliseconds < 0 ? .max : .min) : v)
    }

    /// Years 0000–9999 are representable in RFC 3339.
    public static let earliest = Timestamp(milliseconds: -62_167_219_200_000)
    public static let latest = Timestamp(milliseconds: 253_402_300_799_999)

    // MARK: Parsing

    public init?(rfc3339 text: String) {
        var t = text
        guard let v = t.withUTF8({ Timestamp.parse(UnsafeRawBufferPointer($0)) }) else { return nil }
        self = v
    }

    /// Parses RFC 3339 from raw UTF-8 bytes without allocating.
    public static func parse(_ b: UnsafeRawBufferPointer) -> Timestamp? {
        let n = b.count
        guard n >= 20 else { return nil }
        @inline(__always) func d(_ i: Int) -> Int? {
            let c = b[i]
            return c >= 0x30 && c <= 0x39 ? Int(c - 0x30) : nil
        }
        @inline(__always) func num(_ i: Int, _ len: Int) -> Int? {
            var v = 0
            for k in i..<(i + len) { guard let x = d(k) else { return nil }; v = v * 10 + x }
            return v
        }
        guard let year = num(0, 4), b[4] == 0x2D, let month = num(5, 2), b[7] == 0x2D, let day = num(8, 2),
              b[10] == UInt8(ascii: "T") || b[10] == UInt8(ascii: "t") || b[10] == 0x20,
              let hour = num(11, 2), b[13] == 0x3A, let minute = num(14, 2), b[16] == 0x3A, let second = num(17, 2)
        else { return nil }
        guard (1...12).contains(month), day >= 1, day <= daysIn(month: month, year: year),
              hour <= 23, minute <= 59, second <= 60 else { return nil }
        var i = 19
        var millis = 0
        if i < n, b[i] == 0x2E {
            i += 1
            var digits = 0
            while i < n, let x = d(i) {
                if digits < 3 { millis = millis * 10 + x }
                digits += 1
                i += 1
            }
            guard digits > 0 else { return nil }
            for _ in digits..<max(digits, 3) { millis *= 10 }
        }
        guard i < n else { return nil }
        var offsetMinutes = 0
        if b[i] == UInt8(ascii: "Z") || b[i] == UInt8(ascii: "z") {
            i += 1
        } else if b[i] == UInt8(ascii: "+") || b[i] == UInt8(ascii: "-") {
            let sign = b[i] == UInt8(ascii: "-") ? -1 : 1
            guard i + 6 == n, let oh = num(i + 1, 2), b[i + 3] == 0x3A, let om = num(i + 4, 2), oh <= 23, om <= 59 else { return nil }
            offsetMinutes = sign * (oh * 60 + om)
            i += 6
        } else {
            return nil
        }
        guard i == n else { return nil }
        // A leap second is held as the last millisecond of its minute's 59th second.
        let sec = min(second, 59)
        let leapAdjust = second == 60 ? 999 - millis : 0
        let days = daysFromCivil(year: year, month: month, day: day)
        let seconds = Int64(days) * 86400 + Int64(hour * 3600 + minute * 60 + sec) - Int64(offsetMinutes * 60)
        let t = Timestamp(milliseconds: seconds * 1000 + Int64(millis + leapAdjust))
        // An offset can carry a local time past either end of the years 0000-9999 in UTC,
        // which no four-digit year could print back.
        guard t >= .earliest && t <= .latest else { return nil }
        return t
    }

    // MARK: Writing

    /// `YYYY-MM-DDTHH:MM:SS.sssZ`
    public var rfc3339: String {
        var buf = [UInt8](repeating: 0, count: 24)
        writeRFC3339(into: &buf)
        return String(decoding: buf, as: UTF8.self)
    }

    public var description: String { rfc3339 }

    public func writeRFC3339(into buf: inout [UInt8]) {
        let ms = milliseconds
        var secs = ms / 1000, milli = ms % 1000
        if milli < 0 { milli += 1000; secs -= 1 }
        var days = secs / 86400, rem = secs % 86400
        if rem < 0 { rem += 86400; days -= 1 }
        let (y, m, d) = Timestamp.civilFromDays(Int(days))
        let hh = Int(rem / 3600), mm = Int(rem % 3600 / 60), ss = Int(rem % 60)
        func put(_ v: Int, _ at: Int, _ width: Int) {
            var v = max(v, 0)
            for k in stride(from: at + width - 1, through: at, by: -1) { buf[k] = UInt8(0x30 + v % 10); v /= 10 }
        }
        put(y, 0, 4); buf[4] = 0x2D; put(m, 5, 2); buf[7] = 0x2D; put(d, 8, 2); buf[10] = UInt8(ascii: "T")
        put(hh, 11, 2); buf[13] = 0x3A; put(mm, 14, 2); buf[16] = 0x3A; put(ss, 17, 2); buf[19] = 0x2E
        put(Int(milli), 20, 3); buf[23] = UInt8(ascii: "Z")
    }

    // MARK: Calendar arithmetic (proleptic Gregorian, H. Hinnant's algorithms)

    static func isLeap(_ y: Int) -> Bool { y % 4 == 0 && (y % 100 != 0 || y % 400 == 0) }
    static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: return isLeap(year) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }
    static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = (month + 9) % 12
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146097 + doe - 719468
    }
    static func civilFromDays(_ z0: Int) -> (Int, Int, Int) {
        let z = z0 + 719468
        let era = (z >= 0 ? z : z - 146096) / 146097
        let doe = z - era * 146097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (m <= 2 ? 1 : 0), m, d)
    }
}

/// A length of time, written on the command line as a number and a unit:
/// `500ms`, `30s`, `10m`, `12h`, `90d`, `2w`.
public struct TimeSpan: Comparable, Hashable, Sendable, CustomStringConvertible {
    public var milliseconds: Int64
    public init(milliseconds: Int64) { self.milliseconds = milliseconds }
    public static func seconds(_ s: Int64) -> TimeSpan { TimeSpan(milliseconds: s * 1000) }
    public static func minutes(_ m: Int64) -> TimeSpan { TimeSpan(milliseconds: m * 60_000) }
    public static func hours(_ h: Int64) -> TimeSpan { TimeSpan(milliseconds: h * 3_600_000) }
    public static func days(_ d: Int64) -> TimeSpan { TimeSpan(milliseconds: d * 86_400_000) }
    public static func < (a: TimeSpan, b: TimeSpan) -> Bool { a.milliseconds < b.milliseconds }

    /// The longest span a duration may be written as: the whole range of
    /// representable times (years 0000-9999). Anything longer is a mistake, and
    /// bounding it here keeps every sum of a time and a span inside Int64.
    public static let longest = TimeSpan(milliseconds: Timestamp.latest.milliseconds - Timestamp.earliest.milliseconds)

    /// Why a written duration was refused.
    public enum ParseFailure: Error, Sendable, Equatable {
        /// Not digits followed by one of the units.
        case malformed
        /// Well formed, but longer than `TimeSpan.longest` (or past Int64).
        case tooLong
    }

    public init?(parsing text: String) {
        guard case let .success(t) = TimeSpan.parse(text) else { return nil }
        self = t
    }

    /// Parses `NUMBER UNIT`; an overflowing product is `.tooLong`, never a wrapped value.
    public static func parse(_ text: String) -> Result<TimeSpan, ParseFailure> {
        let units: [(String, Int64)] = [("ms", 1), ("s", 1000), ("m", 60_000), ("h", 3_600_000), ("d", 86_400_000), ("w", 604_800_000)]
        let digits = text.prefix(while: { $0.isASCII && $0.isNumber })
        let unit = text.dropFirst(digits.count)
        guard !digits.isEmpty, let mult = units.first(where: { $0.0 == unit })?.1 else { return .failure(.malformed) }
        // All digits, so Int64() fails only by being too large.
        guard let n = Int64(digits) else { return .failure(.tooLong) }
        let (ms, over) = n.multipliedReportingOverflow(by: mult)
        guard !over, ms <= longest.milliseconds else { return .failure(.tooLong) }
        return .success(TimeSpan(milliseconds: ms))
    }

    public var description: String {
        let ms = milliseconds
        for (u, m) in [("w", Int64(604_800_000)), ("d", 86_400_000), ("h", 3_600_000), ("m", 60_000), ("s", 1000)] where ms != 0 && ms % m == 0 {
            return "\(ms / m)\(u)"
        }
        return "\(ms)ms"
    }

    public var seconds: Double { Double(milliseconds) / 1000 }
}
