import FamilySync
import Foundation

/// Standard input and standard error as a tool meets them: possibly closed
/// (`<&-`, `2>&-`) or full (`2>/dev/full`). Foundation's `FileHandle`
/// traps on a failed read or write, so the tools use these instead: a
/// diagnostic that cannot be written is dropped and the tool still exits
/// with the status its outcome calls for; standard input that cannot be read
/// is an I/O error (74).
public enum StandardStreams {
    /// Run first. A standard descriptor that is closed gets a placeholder that
    /// fails every read (0) or write (1, 2) with EBADF, just as the closed one
    /// would; without it, the next file the tool opens (the store, say) would
    /// become "standard error" and diagnostics would be written into it.
    static func occupyClosedDescriptors() {
        for fd: Int32 in 0...2 where fcntl(fd, F_GETFD) < 0 && errno == EBADF {
            // Opened for the other direction, so the I/O a tool does on it fails; never truncated or replaced.
            let placeholder = open("/dev/null", (fd == 0 ? O_WRONLY : O_RDONLY) | O_CLOEXEC)
            guard placeholder >= 0 else { continue }
            if placeholder != fd {
                _ = dup2(placeholder, fd)
                _ = close(placeholder)
            }
        }
    }

    /// Writes `text` to standard error, all of it or as much as it takes.
    /// Returns false when it could not (closed, full, a broken pipe).
    @discardableResult
    public static func writeError(_ text: String) -> Bool {
        var text = text
        return text.withUTF8 { writeAll(fd: 2, UnsafeRawBufferPointer($0)) }
    }

    /// The same, failing with an I/O error (74) when standard error is the
    /// tool's output itself (a QR code drawn on the terminal).
    public static func writeErrorOrFail(_ text: String) throws {
        guard writeError(text) else {
            throw ToolError.io("write error on standard error: \(String(cString: strerror(errno)))")
        }
    }

    /// Reads standard input up to `limit` bytes (or its end). A closed or
    /// unreadable standard input is an I/O error (74).
    public static func readInput(limit: Int) throws -> [UInt8] {
        var out: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        while out.count < limit {
            let n = chunk.withUnsafeMutableBytes { read(0, $0.baseAddress, min($0.count, limit - out.count)) }
            if n < 0 {
                if errno == EINTR { continue }
                throw ToolError.io("cannot read standard input: \(String(cString: strerror(errno)))")
            }
            if n == 0 { break }
            out.append(contentsOf: chunk[0..<n])
        }
        return out
    }

    private static func writeAll(fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Bool {
        guard let base = bytes.baseAddress else { return true }
        var off = 0
        while off < bytes.count {
            let n = write(fd, base + off, bytes.count - off)
            if n < 0 {
                if errno == EINTR { continue }
                return false
            }
            off += n
        }
        return true
    }
}
