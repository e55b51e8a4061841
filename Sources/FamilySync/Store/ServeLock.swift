import FoundationEssentials
import Glibc

/// The lock that keeps one `peer-sync serve` per store: an exclusive
/// flock(2) on a descriptor of the store file itself, held for the life of
/// the serving process. The kernel drops it when the process ends, however
/// it ends (SIGKILL included), so a crashed server never leaves a stale lock.
///
/// flock locks are separate from the POSIX (fcntl) record locks SQLite
/// takes on the same file, so this neither blocks nor is blocked by any
/// reader or writer. The descriptor is never closed while the process runs:
/// closing any descriptor of a file drops that process's POSIX locks on it,
/// which would pull SQLite's own locks away underneath it.
public final class ServeLock: Sendable {
    private let fd: Int32

    /// Takes the lock for the store at `path`, or throws `alreadyServed`
    /// when another process serves that store already.
    public init(storePath path: String) throws {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw StoreError(.cannotLock, path: path, detail: String(cString: strerror(errno))) }
        if flock(fd, LOCK_EX | LOCK_NB) != 0 {
            let e = errno
            close(fd)
            if e == EWOULDBLOCK {
                throw StoreError(.alreadyServed, path: path)
            }
            throw StoreError(.cannotLock, path: path, detail: String(cString: strerror(e)))
        }
        self.fd = fd
    }

    deinit { close(fd) }
}
