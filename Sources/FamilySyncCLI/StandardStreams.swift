import FamilySync
import FoundationEssentials
import Glibc

/// Standard input and standard error as a tool meets them: possibly closed
/// (`<&-`, `2>&-`) or full (`2>/dev/full`). Foundation's `FileHandle`
/// traps on a failed write, so the tools use these instead: a diagnostic
/// that cannot be written is dropped and the tool still exits with the
/// status its outcome calls for. (A closed standard input is StandardInput's.)
public enum StandardStreams {
    /// Run first, after StandardInput.claimIfClosed(). A closed standard
    /// output or error gets a placeholder that fails every write with EBADF,
    /// just as the closed one would; without it, the next file the tool opens
    /// (the store, say) would become "standard error" and diagnostics would
    /// be written into it.
    static func occupyClosedDescriptors() {
        for fd: Int32 in 1...2 where fcntl(fd, F_GETFD) < 0 && errno == EBADF {
            // Opened read-only, so writes to it fail; never truncated or replaced.
            let placeholder = open("/dev/null", O_RDONLY | O_CLOEXEC)
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
