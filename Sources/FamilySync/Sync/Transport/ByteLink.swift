import FoundationEssentials
import Glibc

/// What a session's TLS stream runs over: a TCP socket, or any byte pipe
/// (standard input and output under ssh or inetd, a command's pipes). The
/// protocol above it is the same; only where bytes are read and written,
/// and how readiness is waited for, differ. Both descriptors are
/// non-blocking. Not Sendable: one thread uses a link.
public protocol ByteLink: AnyObject {
    /// Where TLS reads from and writes to (the same descriptor for a socket).
    var readFD: Int32 { get }
    var writeFD: Int32 { get }
    /// What the link is called in messages: a peer's address, a command.
    var address: String { get }
}

extension ByteLink {
    /// Waits until the link is ready for `events` (POLLIN is asked of the
    /// reading side, POLLOUT of the writing side) or the deadline passes.
    /// Returns false on timeout. Retries on EINTR with the time that is left.
    public func wait(for events: Int16, deadline: Deadline) throws -> Bool {
        while true {
            let rc = poll(events: events, milliseconds: deadline.remainingMilliseconds)
            if rc > 0 { return true }
            if rc == 0 { return false }
            if errno == EINTR {
                if deadline.hasPassed { return false }
                continue
            }
            throw SocketError("poll", address: address)
        }
    }

    /// One poll(2) over the link's descriptors: > 0 ready (a hang-up or an
    /// error counts, so the next read or write sees it), 0 timeout, < 0 errno.
    public func poll(events: Int16, milliseconds: Int32) -> Int32 {
        let wantIn = events & Int16(POLLIN) != 0, wantOut = events & Int16(POLLOUT) != 0
        if readFD == writeFD {
            var p = pollfd(fd: readFD, events: events, revents: 0)
            return Glibc.poll(&p, 1, milliseconds)
        }
        var fds = [pollfd(fd: wantIn ? readFD : -1, events: Int16(POLLIN), revents: 0),
                   pollfd(fd: wantOut ? writeFD : -1, events: Int16(POLLOUT), revents: 0)]
        return Glibc.poll(&fds, 2, milliseconds)
    }
}

extension TCPSocket: ByteLink {
    public var readFD: Int32 { fd }
    public var writeFD: Int32 { fd }
}

/// Sets O_NONBLOCK on a descriptor; returns the flags it had, to put back.
func setNonBlocking(_ fd: Int32, what: String) throws -> Int32 {
    let flags = fcntl(fd, F_GETFL)
    guard flags >= 0, fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0 else { throw SocketError("fcntl", address: what) }
    return flags
}
