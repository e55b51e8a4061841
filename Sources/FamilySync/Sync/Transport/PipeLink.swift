import FoundationEssentials
import Glibc

/// A byte link over two descriptors: standard input and output (`serve
/// --stdio` under ssh, inetd or a socket unit), or a command's pipes
/// (`connect --via`). The descriptors are made non-blocking while the link
/// lives and get their flags back when it closes, since a shell, sshd or the
/// terminal may share them.
public final class PipeLink: ByteLink {
    public let readFD: Int32
    public let writeFD: Int32
    public let address: String
    private let owned: Bool
    private var savedFlags: [(Int32, Int32)] = []
    private var closed = false

    /// `owned`: the link closes the descriptors (a command's pipes); else it
    /// leaves them open (standard input and output).
    public init(read: Int32, write: Int32, address: String, owned: Bool) throws {
        readFD = read
        writeFD = write
        self.address = address
        self.owned = owned
        savedFlags.append((read, try setNonBlocking(read, what: address)))
        if write != read { savedFlags.append((write, try setNonBlocking(write, what: address))) }
    }

    /// Standard input and output, for a session that is already connected.
    public static func standardStreams() throws -> PipeLink {
        try PipeLink(read: STDIN_FILENO, write: STDOUT_FILENO, address: "standard input and output", owned: false)
    }

    deinit { close() }

    /// Puts the flags back, then closes what the link owns. The peer reads
    /// end of file once the write side is closed.
    public func close() {
        guard !closed else { return }
        closed = true
        for (fd, flags) in savedFlags { _ = fcntl(fd, F_SETFL, flags) }
        if owned {
            _ = Glibc.close(readFD)
            if writeFD != readFD { _ = Glibc.close(writeFD) }
        }
    }
}
