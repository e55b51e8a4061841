import FoundationEssentials
import Glibc
import Synchronization

/// The store's one session at a time, across processes: a `serve` on TCP
/// and any number of `serve --stdio` (one per ssh login or socket-activated
/// connection) share a store, and still run one session at a time. The one
/// whose lock is taken answers BUSY, as a single server does within itself.
///
/// The lock is an open-file-description (OFD) write lock on one byte of the
/// store file far past anything SQLite locks (its locks sit at 1 GiB), so it
/// neither blocks nor is blocked by SQLite, nor by `ServeLock`'s flock. The
/// kernel drops it when its process ends however it ends, so a killed
/// session leaves no stale lock.
///
/// The descriptor is opened once per store file and process and never closed:
/// closing any descriptor of a file drops every POSIX lock this process holds
/// on it, SQLite's own included.
public final class SessionLock: Sendable {
    private let fd: Int32
    private let held = Atomic<Bool>(false)

    /// The byte locked: past any offset SQLite uses, and past any store's size.
    static let lockedOffset = Int.max - 1
    /// Linux's F_OFD_GETLK and F_OFD_SETLK (fcntl(2)), which Glibc shows only to _GNU_SOURCE.
    static let getLock: Int32 = 36
    static let setLock: Int32 = 37

    private init(fd: Int32) {
        self.fd = fd
    }

    /// One per store file (by device and inode) and process.
    private static let opened = Locked<[String: SessionLock]>([:])

    /// The session lock of the store file at `path`.
    public static func forStore(at path: String) throws -> SessionLock {
        var st = stat()
        guard stat(path, &st) == 0 else { throw StoreError(.cannotLock, path: path, detail: String(cString: strerror(errno))) }
        let key = "\(st.st_dev):\(st.st_ino)"
        return try opened.withLock { map in
            if let l = map[key] { return l }
            // Write access is what a write lock needs; nothing is ever written through it.
            let fd = open(path, O_RDWR | O_CLOEXEC)
            guard fd >= 0 else { throw StoreError(.cannotLock, path: path, detail: String(cString: strerror(errno))) }
            let l = SessionLock(fd: fd)
            map[key] = l
            return l
        }
    }

    private func request(_ type: Int32) -> flock {
        var fl = flock()
        fl.l_type = Int16(type)
        fl.l_whence = Int16(SEEK_SET)
        fl.l_start = SessionLock.lockedOffset
        fl.l_len = 1
        fl.l_pid = 0
        return fl
    }

    /// Takes the lock if no session holds it, here or in another process.
    public func tryAcquire() -> Bool {
        guard held.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged else { return false }
        var fl = request(F_WRLCK)
        if fcntl(fd, SessionLock.setLock, &fl) == 0 { return true }
        held.store(false, ordering: .releasing)
        return false
    }

    /// Gives the lock back (the holder only).
    public func release() {
        var fl = request(F_UNLCK)
        _ = fcntl(fd, SessionLock.setLock, &fl)
        held.store(false, ordering: .releasing)
    }

    /// Whether a session holds the lock, in this process or another.
    public var isTaken: Bool {
        if held.load(ordering: .acquiring) { return true }
        var fl = request(F_WRLCK)
        guard fcntl(fd, SessionLock.getLock, &fl) == 0 else { return false }
        return fl.l_type != Int16(F_UNLCK)
    }
}
