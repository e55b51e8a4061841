import FoundationEssentials
import Glibc

/// Standard input as every tool treats it when the shell closed it (`<&-`):
/// no input, the same in every mode. The slot is filled with /dev/null at
/// start, so the next file opened (a store) cannot become descriptor 0 and be
/// read as input.
public enum StandardInput {
    nonisolated(unsafe) public private(set) static var wasClosed = false

    /// Called once, first thing, by every tool.
    public static func claimIfClosed() {
        guard fcntl(0, F_GETFD) < 0, errno == EBADF else { return }
        let fd = open("/dev/null", O_RDONLY)
        if fd > 0 { dup2(fd, 0); close(fd) }
        wasClosed = true
    }

    /// The error for reading standard input when it was closed.
    public static var closedError: FileError { FileError(.standardInputClosed, path: "<stdin>") }
}
