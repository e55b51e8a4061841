import Glibc

/// The one place that retries interrupted reads and writes. Every file, pipe and terminal
/// read or write in the tools goes through here (sockets go through TLS).
public enum FileIO {
    /// read(2), retried while a signal interrupts it: the count read (0 at
    /// the end of the input), or -1 with `errno` set.
    @inlinable
    public static func read(_ fd: Int32, into buffer: UnsafeMutableRawPointer, count: Int) -> Int {
        while true {
            let n = Glibc.read(fd, buffer, count)
            if n < 0 && errno == EINTR { continue }
            return n
        }
    }

    /// Writes every byte, retrying after a short write or an interruption.
    /// Returns 0, or the errno of the write that failed.
    public static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Int32 {
        guard let base = bytes.baseAddress else { return 0 }
        var off = 0
        while off < bytes.count {
            let n = Glibc.write(fd, base + off, bytes.count - off)
            if n < 0 {
                if errno == EINTR { continue }
                return errno
            }
            off += n
        }
        return 0
    }

    public static func writeAll(_ fd: Int32, _ bytes: [UInt8]) -> Int32 { bytes.withUnsafeBytes { writeAll(fd, $0) } }

    /// fsyncs the folder that holds `path` (the current folder for a bare
    /// name): a file made, renamed or removed there is on disk only then.
    /// Returns 0, or the errno that failed.
    public static func syncFolder(of path: String) -> Int32 {
        var dir = path
        while dir.count > 1, dir.hasSuffix("/") { dir.removeLast() }
        if let slash = dir.lastIndex(of: "/") {
            dir = slash == dir.startIndex ? "/" : String(dir[..<slash])
        } else {
            dir = "."
        }
        let fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return errno }
        defer { close(fd) }
        return fsync(fd) == 0 ? 0 : errno
    }

    /// The message for an errno.
    public static func describe(_ code: Int32) -> String { String(cString: strerror(code)) }
}
