/// The frames of protocol version 1 (docs/protocol.md, "Frames"): a 4-byte
/// big-endian payload length, a 1-byte type, then the payload. Control frames
/// carry one JSON object; record batches carry NDJSON; photo data is binary.
public enum FrameType: UInt8, Sendable, CaseIterable {
    case hello = 0x01
    case family = 0x02
    case refused = 0x03
    case busy = 0x04
    case join = 0x05
    case welcome = 0x06
    case records = 0x10
    case recordsEnd = 0x11
    case purged = 0x12
    case recordsMark = 0x13
    case photoRequest = 0x20
    case photoData = 0x21
    case photoUnavailable = 0x22
    case done = 0x30
    case ping = 0x31
    case error = 0x3F

    public var name: String {
        switch self {
        case .hello: return "HELLO"
        case .family: return "FAMILY"
        case .refused: return "REFUSED"
        case .busy: return "BUSY"
        case .join: return "JOIN"
        case .welcome: return "WELCOME"
        case .records: return "RECORDS"
        case .recordsEnd: return "RECORDS-END"
        case .purged: return "PURGED"
        case .recordsMark: return "RECORDS-MARK"
        case .photoRequest: return "PHOTO-REQUEST"
        case .photoData: return "PHOTO-DATA"
        case .photoUnavailable: return "PHOTO-UNAVAILABLE"
        case .done: return "DONE"
        case .ping: return "PING"
        case .error: return "ERROR"
        }
    }
}

public struct Frame: Sendable {
    public var type: FrameType
    public var payload: [UInt8]
    public init(_ type: FrameType, _ payload: [UInt8]) {
        self.type = type
        self.payload = payload
    }

    /// The hard limit on a frame's payload. A record line may be 1 MiB
    /// (Record.maxLineBytes) and a batch always carries at least one, so
    /// twice that; photos travel in much smaller chunks. Anything larger is
    /// hostile or broken and ends the session before a byte of it is buffered.
    public static let maxPayloadBytes = 2 << 20
    /// The limit on a notice (REFUSED, BUSY) read before authentication: its
    /// sender proved nothing, so it gets a few KiB, not the 2 MiB a peer gets.
    /// The largest notice a server sends is well under 1 KiB.
    public static let maxNoticeBytes = 4 << 10
    /// Length (4) and type (1).
    public static let headerBytes = 5

    /// The JSON object a control frame carries.
    public func json() throws(ProtocolError) -> JSONValue {
        guard payload.count <= Frame.maxPayloadBytes else { throw ProtocolError("\(type.name) frame too large") }
        let v: JSONValue
        do { v = try JSONParser.parse(payload) } catch { throw ProtocolError("\(type.name) frame is not JSON: \(error)") }
        guard v.objectValue != nil else { throw ProtocolError("\(type.name) frame is not a JSON object") }
        return v
    }

    /// The bytes of a whole frame, header included.
    public static func encode(_ type: FrameType, _ payload: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(headerBytes + payload.count)
        appendHeader(type, length: payload.count, to: &out)
        out.append(contentsOf: payload)
        return out
    }

    static func appendHeader(_ type: FrameType, length: Int, to out: inout [UInt8]) {
        precondition(length <= maxPayloadBytes, "frame payload over the limit")
        let n = UInt32(length)
        out.append(UInt8(n >> 24)); out.append(UInt8((n >> 16) & 0xFF)); out.append(UInt8((n >> 8) & 0xFF)); out.append(UInt8(n & 0xFF))
        out.append(type.rawValue)
    }
}

/// The peer broke the protocol: a malformed, oversized or unexpected frame.
/// The session ends; nothing from the offending frame is kept.
public struct ProtocolError: Error, CustomStringConvertible, Sendable {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// Cuts a byte stream into frames, checking each header before buffering
/// its payload. Small frames are cut from a shared buffer; once a header
/// promises more than has arrived, the frame gets a payload of its own, of
/// exactly the promised length, and the rest of it is read straight into
/// that (`withPayloadSpace`), so a photo chunk is copied once from TLS to
/// its frame.
struct FrameDecoder {
    /// Bytes received that are not part of a payload being filled.
    private var buffer: [UInt8] = []
    private var start = 0
    /// The largest payload accepted: `Frame.maxPayloadBytes`, or less on a
    /// session that may carry only a notice.
    var maxPayload = Frame.maxPayloadBytes

    /// The frame being filled: its type, its payload (full length) and how much of it has arrived.
    private var partialType: FrameType?
    private var partial: [UInt8] = []
    private var filled = 0

    /// A payload still missing at least this much is read into directly;
    /// below it, a read into the shared buffer is cheaper than a short one.
    static let directReadMinimum = 16 << 10

    /// Bytes received but not yet returned as frames.
    var buffered: Int { buffer.count - start + (partialType == nil ? 0 : Frame.headerBytes + filled) }

    mutating func append(_ bytes: UnsafeRawBufferPointer) {
        var rest = bytes
        if partialType != nil {
            let n = min(rest.count, partial.count - filled)
            if n > 0 {
                partial.withUnsafeMutableBytes { UnsafeMutableRawBufferPointer(rebasing: $0[filled..<(filled + n)]).copyMemory(from: UnsafeRawBufferPointer(rebasing: rest[0..<n])) }
                filled += n
                rest = UnsafeRawBufferPointer(rebasing: rest[n...])
            }
        }
        guard !rest.isEmpty else { return }
        if start > 0 && (start >= buffer.count || start > (1 << 20)) {
            buffer.removeFirst(start)
            start = 0
        }
        buffer.append(contentsOf: rest)
    }

    /// Calls `body` with the room left in the payload being filled, when it
    /// is large enough to read into directly (nil otherwise). The caller then
    /// says how much it wrote there with `filled(_:)`.
    mutating func withPayloadSpace<R>(_ body: (UnsafeMutableRawBufferPointer) throws -> R) rethrows -> R? {
        guard partialType != nil, partial.count - filled >= FrameDecoder.directReadMinimum else { return nil }
        let from = filled
        return try partial.withUnsafeMutableBytes { try body(UnsafeMutableRawBufferPointer(rebasing: $0[from...])) }
    }

    /// `n` bytes were written at the start of the space `withPayloadSpace` lent.
    mutating func filled(_ n: Int) {
        precondition(partialType != nil && n <= partial.count - filled, "filled past the payload")
        filled += n
    }

    /// The next complete frame, or nil when more bytes are needed.
    mutating func next() throws(ProtocolError) -> Frame? {
        if let type = partialType {
            guard filled == partial.count else { return nil }
            partialType = nil
            filled = 0
            defer { partial = [] }
            return Frame(type, partial)
        }
        guard buffered >= Frame.headerBytes else { return nil }
        let b = start
        let length = Int(buffer[b]) << 24 | Int(buffer[b + 1]) << 16 | Int(buffer[b + 2]) << 8 | Int(buffer[b + 3])
        guard length <= maxPayload else {
            throw ProtocolError("frame of \(length) bytes exceeds the limit of \(maxPayload)")
        }
        guard let type = FrameType(rawValue: buffer[b + 4]) else {
            throw ProtocolError(String(cFormat: "unknown frame type 0x%02x", UInt32(buffer[b + 4])))
        }
        let body = b + Frame.headerBytes
        let available = buffer.count - body
        if available < length {
            // The payload gets its own buffer; what has arrived moves there, the rest is read into it.
            partial = [UInt8](unsafeUninitializedCapacity: length) { p, n in
                // Never nil: the buffer holds at least the header and the payload at least one byte more than has arrived.
                buffer.withUnsafeBytes { p.baseAddress!.update(from: $0.baseAddress!.advanced(by: body).assumingMemoryBound(to: UInt8.self), count: available) }
                n = length
            }
            filled = available
            partialType = type
            buffer.removeAll(keepingCapacity: buffer.capacity <= (4 << 20))
            start = 0
            return nil
        }
        let payload = Array(buffer[body..<(body + length)])
        start = body + length
        if start == buffer.count {
            buffer.removeAll(keepingCapacity: buffer.capacity <= (4 << 20))
            start = 0
        }
        return Frame(type, payload)
    }
}
