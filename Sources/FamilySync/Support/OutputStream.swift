import FoundationEssentials
import Glibc

/// A buffered writer on a file descriptor that reports failure instead of
/// losing data silently: a tool whose stdout write fails must exit 74.
/// Used from one thread at a time (the tool's main flow); marked Sendable
/// only so the process-wide stdout writer can be a global.
public final class OutputStream: @unchecked Sendable {
    public let fd: Int32
    private var buffer: [UInt8] = []
    private let limit: Int
    /// The first write error, if any; further writes are dropped.
    public private(set) var failure: FileError?

    public init(fd: Int32, bufferSize: Int = 1 << 16) {
        self.fd = fd
        self.limit = bufferSize
        buffer.reserveCapacity(bufferSize)
    }

    public static let stdout = OutputStream(fd: 1)

    public func write(_ s: String) throws {
        var s = s
        try s.withUTF8 { try write(UnsafeRawBufferPointer($0)) }
    }

    public func write(_ bytes: UnsafeRawBufferPointer) throws {
        if let failure { throw failure }
        if buffer.count + bytes.count > limit { try flush() }
        if bytes.count >= limit {
            try writeAll(bytes)
        } else {
            buffer.append(contentsOf: bytes)
        }
    }

    public func write(_ bytes: [UInt8]) throws { try bytes.withUnsafeBytes { try write($0) } }

    /// Writes one line of JSON.
    public func writeLine(_ json: JSONValue) throws {
        var s = json.serialized
        s += "\n"
        try write(s)
    }

    public func flush() throws {
        if let failure { throw failure }
        guard !buffer.isEmpty else { return }
        defer { buffer.removeAll(keepingCapacity: true) }
        try buffer.withUnsafeBytes { try writeAll($0) }
    }

    private func writeAll(_ bytes: UnsafeRawBufferPointer) throws {
        let e = FileIO.writeAll(fd, bytes)
        guard e == 0 else {
            let what = fd == 1 ? "standard output" : "file descriptor \(fd)"
            let f = FileError(.writeFailed, path: what, code: e)
            failure = f
            throw f
        }
    }
}
