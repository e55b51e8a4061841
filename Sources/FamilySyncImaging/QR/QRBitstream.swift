import FamilySync

/// A QR code's data, parsed from its error-corrected data codewords into
/// segments (ISO/IEC 18004 section 7.4). This is the one place a code's bits
/// become bytes; `QRText` is the one place bytes become text.
public struct QRBitstream: Sendable, Equatable {
    public enum Mode: String, Sendable, Equatable {
        case numeric, alphanumeric, byte, kanji, hanzi
    }

    /// A run of data in one mode, with the ECI in force when it was written
    /// (nil: none declared yet).
    public struct Segment: Sendable, Equatable {
        public var mode: Mode
        public var eci: UInt32?
        /// Numeric and alphanumeric as ASCII; byte mode as written; kanji as Shift-JIS; hanzi as GB 2312.
        public var bytes: [UInt8]
    }

    /// A structured-append header: this symbol is part `index` (from 0) of `total`.
    public struct StructuredAppend: Sendable, Equatable {
        public var index: Int
        public var total: Int
        public var parity: UInt8
    }

    public var version: Int
    public var level: QRErrorCorrection
    public var segments: [Segment]
    public var structuredAppend: StructuredAppend?
    /// FNC1 in first position: GS1 data (alphanumeric % is the group separator).
    public var gs1: Bool

    /// The concatenated bytes of every segment.
    public var bytes: [UInt8] { segments.flatMap(\.bytes) }

    public enum ParseError: Error, Equatable { case unknownSize, badMode(Int), truncated, badValue(String) }

    /// Data codewords per version (index 0 = version 1) for each level:
    /// ISO/IEC 18004:2015 Table 7 (the same figures libqrencode's qrspec.c
    /// tabulates; a test compares the two). Strictly increasing, so a level
    /// and a codeword count name the version.
    static let dataCodewords: [QRErrorCorrection: [Int]] = [
        .L: [19, 34, 55, 80, 108, 136, 156, 194, 232, 274, 324, 370, 428, 461, 523, 589, 647, 721, 795, 861, 932, 1006, 1094, 1174,
             1276, 1370, 1468, 1531, 1631, 1735, 1843, 1955, 2071, 2191, 2306, 2434, 2566, 2702, 2812, 2956],
        .M: [16, 28, 44, 64, 86, 108, 124, 154, 182, 216, 254, 290, 334, 365, 415, 453, 507, 563, 627, 669, 714, 782, 860, 914,
             1000, 1062, 1128, 1193, 1267, 1373, 1455, 1541, 1631, 1725, 1812, 1914, 1992, 2102, 2216, 2334],
        .Q: [13, 22, 34, 48, 62, 76, 88, 110, 132, 154, 180, 206, 244, 261, 295, 325, 367, 397, 445, 485, 512, 568, 614, 664,
             718, 754, 808, 871, 911, 985, 1033, 1115, 1171, 1231, 1286, 1354, 1426, 1502, 1582, 1666],
        .H: [9, 16, 26, 36, 46, 60, 66, 86, 100, 122, 140, 158, 180, 197, 223, 253, 283, 313, 341, 385, 406, 442, 464, 514,
             538, 596, 628, 661, 701, 745, 793, 845, 901, 961, 986, 1054, 1096, 1142, 1222, 1276],
    ]

    /// The version whose data capacity at `level` is exactly `count` codewords.
    public static func version(level: QRErrorCorrection, dataCodewords count: Int) -> Int? {
        dataCodewords[level]?.firstIndex(of: count).map { $0 + 1 }
    }

    static let alphanumericTable = Array("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ $%*+-./:".utf8)

    /// Parses a symbol's data codewords. Anything that is not a well-formed
    /// bitstream throws: a code that cannot be read exactly is not read.
    public init(codewords: [UInt8], level: QRErrorCorrection) throws {
        guard let version = QRBitstream.version(level: level, dataCodewords: codewords.count) else { throw ParseError.unknownSize }
        self.version = version
        self.level = level
        var bits = BitReader(codewords)
        var segments: [Segment] = []
        var eci: UInt32?
        var sa: StructuredAppend?
        var gs1 = false
        let sizeClass = version <= 9 ? 0 : version <= 26 ? 1 : 2
        func count(_ widths: (Int, Int, Int)) throws -> Int {
            try bits.read([widths.0, widths.1, widths.2][sizeClass])
        }
        while bits.remaining >= 4 {
            let mode = try bits.read(4)
            switch mode {
            case 0b0000:
                // Terminator: the rest is padding.
                self.segments = segments; self.structuredAppend = sa; self.gs1 = gs1
                return
            case 0b0001:
                var n = try count((10, 12, 14))
                var out: [UInt8] = []
                while n >= 3 {
                    let v = try bits.read(10)
                    guard v < 1000 else { throw ParseError.badValue("numeric \(v)") }
                    out += [UInt8(0x30 + v / 100), UInt8(0x30 + v / 10 % 10), UInt8(0x30 + v % 10)]
                    n -= 3
                }
                if n == 2 {
                    let v = try bits.read(7)
                    guard v < 100 else { throw ParseError.badValue("numeric \(v)") }
                    out += [UInt8(0x30 + v / 10), UInt8(0x30 + v % 10)]
                } else if n == 1 {
                    let v = try bits.read(4)
                    guard v < 10 else { throw ParseError.badValue("numeric \(v)") }
                    out.append(UInt8(0x30 + v))
                }
                segments.append(Segment(mode: .numeric, eci: eci, bytes: out))
            case 0b0010:
                var n = try count((9, 11, 13))
                var out: [UInt8] = []
                let table = QRBitstream.alphanumericTable
                while n >= 2 {
                    let v = try bits.read(11)
                    guard v < 45 * 45 else { throw ParseError.badValue("alphanumeric \(v)") }
                    out += [table[v / 45], table[v % 45]]
                    n -= 2
                }
                if n == 1 {
                    let v = try bits.read(6)
                    guard v < 45 else { throw ParseError.badValue("alphanumeric \(v)") }
                    out.append(table[v])
                }
                if gs1 { out = QRBitstream.gs1Separators(out) }
                segments.append(Segment(mode: .alphanumeric, eci: eci, bytes: out))
            case 0b0100:
                let n = try count((8, 16, 16))
                var out: [UInt8] = []
                out.reserveCapacity(n)
                for _ in 0..<n { out.append(UInt8(try bits.read(8))) }
                segments.append(Segment(mode: .byte, eci: eci, bytes: out))
            case 0b1000:
                let n = try count((8, 10, 12))
                var out: [UInt8] = []
                for _ in 0..<n {
                    let v = try bits.read(13)
                    let t = (v / 0xC0) << 8 | (v % 0xC0)
                    let sjis = t < 0x1F00 ? t + 0x8140 : t + 0xC140
                    guard sjis <= 0xEBBF else { throw ParseError.badValue("kanji \(v)") }
                    out += [UInt8(sjis >> 8), UInt8(sjis & 0xFF)]
                }
                segments.append(Segment(mode: .kanji, eci: eci, bytes: out))
            case 0b1101:
                // Chinese (GB/T 18284): a 4-bit subset, 1 = GB 2312.
                let subset = try bits.read(4)
                guard subset == 1 else { throw ParseError.badValue("hanzi subset \(subset)") }
                let n = try count((8, 10, 12))
                var out: [UInt8] = []
                for _ in 0..<n {
                    let v = try bits.read(13)
                    let t = (v / 0x60) << 8 | (v % 0x60)
                    let gb = t < 0x0A00 ? t + 0xA1A1 : t + 0xA6A1
                    guard gb <= 0xFFFF else { throw ParseError.badValue("hanzi \(v)") }
                    out += [UInt8(gb >> 8), UInt8(gb & 0xFF)]
                }
                segments.append(Segment(mode: .hanzi, eci: eci, bytes: out))
            case 0b0111:
                let first = try bits.read(8)
                if first & 0x80 == 0 {
                    eci = UInt32(first)
                } else if first & 0xC0 == 0x80 {
                    eci = UInt32((first & 0x3F) << 8 | (try bits.read(8)))
                } else if first & 0xE0 == 0xC0 {
                    eci = UInt32((first & 0x1F) << 16 | (try bits.read(16)))
                } else {
                    throw ParseError.badValue("ECI designator \(first)")
                }
            case 0b0011:
                let index = try bits.read(4), total = try bits.read(4) + 1, parity = UInt8(try bits.read(8))
                guard index < total else { throw ParseError.badValue("structured append \(index)/\(total)") }
                sa = StructuredAppend(index: index, total: total, parity: parity)
            case 0b0101:
                gs1 = true
            case 0b1001:
                // FNC1 in second position: an 8-bit application indicator, then ordinary data.
                _ = try bits.read(8)
            default:
                throw ParseError.badMode(mode)
            }
        }
        self.segments = segments; self.structuredAppend = sa; self.gs1 = gs1
    }

    /// GS1 in alphanumeric mode: `%` is the FNC1 separator (GS, 0x1D) and `%%` a literal `%`.
    static func gs1Separators(_ b: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        var i = 0
        while i < b.count {
            if b[i] == 0x25 {
                if i + 1 < b.count, b[i + 1] == 0x25 { out.append(0x25); i += 2 } else { out.append(0x1D); i += 1 }
            } else {
                out.append(b[i]); i += 1
            }
        }
        return out
    }

    struct BitReader {
        let bytes: [UInt8]
        var position = 0
        init(_ b: [UInt8]) { bytes = b }
        var remaining: Int { bytes.count * 8 - position }
        mutating func read(_ n: Int) throws -> Int {
            guard n <= remaining else { throw ParseError.truncated }
            var v = 0
            for _ in 0..<n {
                v = v << 1 | Int(bytes[position >> 3] >> (7 - UInt8(position & 7)) & 1)
                position += 1
            }
            return v
        }
    }
}
