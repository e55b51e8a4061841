import FamilySync
import CQREncode
import Glibc

/// A QR code symbol: a square of dark and light modules, without the quiet
/// zone. Made with libqrencode.
public struct QRCode: Sendable, Equatable {
    /// Error correction: the share of the code that may be damaged and still read.
    public typealias Level = QRErrorCorrection

    /// A piece of a code's data in one of QR's modes.
    public enum Segment: Sendable, Equatable {
        case numeric(String)
        /// 0-9 A-Z space $ % * + - . / : (the mode pairing offers use: 5.5 bits a character).
        case alphanumeric(String)
        case bytes([UInt8])
        /// Shift-JIS double-byte characters, as their Shift-JIS bytes.
        case kanji([UInt8])
        /// An Extended Channel Interpretation: the character set of the data after it (3 ISO 8859-1, 20 Shift-JIS, 26 UTF-8).
        case eci(UInt32)
    }

    public let version: Int
    /// Modules per side.
    public let size: Int
    /// Row-major, true for dark.
    public let modules: [Bool]

    public init(version: Int, size: Int, modules: [Bool]) {
        precondition(modules.count == size * size)
        self.version = version
        self.size = size
        self.modules = modules
    }

    public subscript(x: Int, y: Int) -> Bool { modules[y * size + x] }

    /// Whether `text` fits QR's alphanumeric mode.
    public static func isAlphanumeric(_ text: String) -> Bool {
        text.utf8.allSatisfy { c in
            (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || [0x20, 0x24, 0x25, 0x2A, 0x2B, 0x2D, 0x2E, 0x2F, 0x3A].contains(c)
        }
    }

    /// Encodes text in alphanumeric mode only (a pairing offer).
    public static func encode(alphanumeric text: String, level: Level) throws -> QRCode {
        guard isAlphanumeric(text) else { throw ImageError.encodeFailed("text is not QR alphanumeric") }
        return try encode(segments: [.alphanumeric(text)], level: level)
    }

    /// Encodes segments in the order given, in the smallest version that holds them.
    public static func encode(segments: [Segment], level: Level) throws -> QRCode {
        guard let input = QRinput_new2(0, level.c) else { throw ImageError.encodeFailed("libqrencode: out of memory") }
        defer { QRinput_free(input) }
        try fill(input, segments)
        guard let code = QRcode_encodeInput(input) else {
            throw ImageError.encodeFailed("libqrencode could not encode: \(String(cString: strerror(errno)))")
        }
        defer { QRcode_free(code) }
        let n = Int(code.pointee.width)
        let data = UnsafeBufferPointer(start: code.pointee.data, count: n * n)
        return QRCode(version: Int(code.pointee.version), size: n, modules: data.map { $0 & 1 == 1 })
    }

    /// Encodes a structured-append sequence: one symbol per element of
    /// `parts`, each headed by its index, the total and the parity (by
    /// default the XOR of all the data, as the standard computes it).
    public static func encodeSequence(parts: [[Segment]], level: Level, parity: UInt8? = nil) throws -> [QRCode] {
        guard (2...16).contains(parts.count) else { throw ImageError.encodeFailed("a structured-append sequence has 2 to 16 symbols") }
        guard let seq = QRinput_Struct_new() else { throw ImageError.encodeFailed("libqrencode: out of memory") }
        defer { QRinput_Struct_free(seq) }
        for segments in parts {
            guard let input = QRinput_new2(0, level.c) else { throw ImageError.encodeFailed("libqrencode: out of memory") }
            do {
                try fill(input, segments)
            } catch {
                QRinput_free(input)
                throw error
            }
            // Appended, the input belongs to the sequence.
            guard QRinput_Struct_appendInput(seq, input) > 0 else {
                QRinput_free(input)
                throw ImageError.encodeFailed("libqrencode refused a part: \(String(cString: strerror(errno)))")
            }
        }
        if let parity { QRinput_Struct_setParity(seq, parity) }
        guard QRinput_Struct_insertStructuredAppendHeaders(seq) == 0, let list = QRcode_encodeInputStructured(seq) else {
            throw ImageError.encodeFailed("libqrencode could not encode the sequence: \(String(cString: strerror(errno)))")
        }
        defer { QRcode_List_free(list) }
        var out: [QRCode] = []
        var entry: UnsafeMutablePointer<QRcode_List>? = list
        while let e = entry {
            guard let code = e.pointee.code else { throw ImageError.encodeFailed("libqrencode returned an empty part") }
            let n = Int(code.pointee.width)
            let data = UnsafeBufferPointer(start: code.pointee.data, count: n * n)
            out.append(QRCode(version: Int(code.pointee.version), size: n, modules: data.map { $0 & 1 == 1 }))
            entry = e.pointee.next
        }
        return out
    }

    private static func fill(_ input: OpaquePointer, _ segments: [Segment]) throws {
        for s in segments {
            let rc: Int32
            switch s {
            case let .numeric(t): rc = append(input, QR_MODE_NUM, Array(t.utf8))
            case let .alphanumeric(t): rc = append(input, QR_MODE_AN, Array(t.utf8))
            case let .bytes(b): rc = append(input, QR_MODE_8, b)
            case let .kanji(b): rc = append(input, QR_MODE_KANJI, b)
            case let .eci(n): rc = QRinput_appendECIheader(input, n)
            }
            guard rc == 0 else { throw ImageError.encodeFailed("libqrencode refused a \(s) segment: \(String(cString: strerror(errno)))") }
        }
    }

    private static func append(_ input: OpaquePointer, _ mode: QRencodeMode, _ bytes: [UInt8]) -> Int32 {
        bytes.withUnsafeBufferPointer { QRinput_append(input, mode, Int32($0.count), $0.baseAddress) }
    }
}

extension QRErrorCorrection {
    var c: QRecLevel {
        switch self {
        case .L: return QR_ECLEVEL_L
        case .M: return QR_ECLEVEL_M
        case .Q: return QR_ECLEVEL_Q
        case .H: return QR_ECLEVEL_H
        }
    }
}
