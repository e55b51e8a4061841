import FoundationEssentials
import Glibc

/// `connect --via COMMAND`: a session over a command's standard input and
/// output (`ssh -T home peer-sync serve --stdio`, `socat - TCP:…`), as
/// `rsync -e` and git's ssh transport do. The command is split into words
/// (`CommandWords`) and run without a shell; its standard error is ours, so
/// ssh can ask for a passphrase and say what failed. The TLS stream inside
/// is the family's, end to end: whatever carries it sees only ciphertext.
public final class CommandTransport {
    /// The command as given, for messages.
    public let text: String
    public let link: PipeLink
    private let pid: pid_t
    private var status: Int32?

    private init(text: String, link: PipeLink, pid: pid_t) {
        self.text = text
        self.link = link
        self.pid = pid
    }

    deinit { _ = finish() }

    /// Starts the command with a pipe to its standard input and one from its
    /// standard output. A command that cannot be started is a SyncError
    /// (`transportCannotStart`), said at once.
    public static func start(_ text: String) throws -> CommandTransport {
        let words: [String]
        do { words = try CommandWords.split(text) } catch let e as CommandWords.Problem {
            throw SyncError(.transportCannotStart, peer: "'\(text)'", detail: e.message)
        }
        guard let program = words.first else { throw SyncError(.transportCannotStart, peer: "'\(text)'", detail: "the command is empty") }
        var toChild: [Int32] = [-1, -1], fromChild: [Int32] = [-1, -1]
        guard pipeClosedOnExec(&toChild) else { throw SyncError(.transportCannotStart, peer: "'\(text)'", detail: String(cString: strerror(errno))) }
        guard pipeClosedOnExec(&fromChild) else {
            let e = errno
            _ = close(toChild[0]); _ = close(toChild[1])
            throw SyncError(.transportCannotStart, peer: "'\(text)'", detail: String(cString: strerror(e)))
        }
        // Larger pipes move a wave of photos in fewer wake-ups (the kernel caps the size; a refusal is harmless).
        for fd in [toChild[1], fromChild[0]] { _ = fcntl(fd, CommandTransport.setPipeSize, CommandTransport.pipeBytes) }

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, toChild[0], STDIN_FILENO)
        posix_spawn_file_actions_adddup2(&actions, fromChild[1], STDOUT_FILENO)
        // Nothing else of ours reaches it, even a descriptor some library opened without O_CLOEXEC.
        if let closeFrom = CommandTransport.addCloseFrom { _ = closeFrom(&actions, 3) }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // The command starts with default signal dispositions and nothing blocked (this process ignores SIGPIPE).
        var none = sigset_t(), defaults = sigset_t()
        sigemptyset(&none)
        sigemptyset(&defaults)
        for s in [SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGQUIT] { sigaddset(&defaults, s) }
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        var argv: [UnsafeMutablePointer<CChar>?] = words.map { strdup($0) } + [nil]
        defer { for p in argv { free(p) } }
        var pid: pid_t = 0
        let rc = posix_spawnp(&pid, program, &actions, &attributes, &argv, environ)
        _ = close(toChild[0])
        _ = close(fromChild[1])
        guard rc == 0 else {
            _ = close(toChild[1]); _ = close(fromChild[0])
            throw SyncError(.transportCannotStart, peer: "'\(text)'", detail: "\(program): \(String(cString: strerror(rc)))")
        }
        do {
            let link = try PipeLink(read: fromChild[0], write: toChild[1], address: "'\(text)'", owned: true)
            return CommandTransport(text: text, link: link, pid: pid)
        } catch {
            _ = close(toChild[1]); _ = close(fromChild[0])
            kill(pid, SIGKILL)
            var st: Int32 = 0
            _ = waitpid(pid, &st, 0)
            throw error
        }
    }

    /// pipe(2) with both ends closed on exec: only the ends dup'ed onto the
    /// command's standard input and output reach it.
    private static func pipeClosedOnExec(_ fds: inout [Int32]) -> Bool {
        guard pipe(&fds) == 0 else { return false }
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        return true
    }

    /// The command's wait status once it has exited, without waiting.
    public func exited() -> Int32? {
        if status == nil {
            var st: Int32 = 0
            if waitpid(pid, &st, WNOHANG) == pid { status = st }
        }
        return status
    }

    /// The command's exit, waiting up to `within` for it (it ends when it
    /// reads end of file on its input).
    public func exited(within: TimeSpan) -> Int32? {
        let until = Deadline(after: within)
        while exited() == nil {
            if until.hasPassed { return nil }
            usleep(10_000)
        }
        return status
    }

    /// Closes the link (the command reads end of file) and waits for the
    /// command to end: `grace`, then SIGTERM, then SIGKILL, so no child is
    /// left behind. Returns its wait status.
    @discardableResult
    public func finish(grace: TimeSpan = SyncLimits.transportExitGrace) -> Int32? {
        link.close()
        if let s = exited(within: grace) { return s }
        kill(pid, SIGTERM)
        if let s = exited(within: TimeSpan.seconds(1)) { return s }
        kill(pid, SIGKILL)
        var st: Int32 = 0
        if waitpid(pid, &st, 0) == pid { status = st }
        return status
    }

    /// A wait status in words: "exited with status 255", "was killed by signal 9".
    public static func describe(_ status: Int32) -> String {
        let low = status & 0x7f
        if low == 0 { return "exited with status \((status >> 8) & 0xff)" }
        return "was killed by signal \(low)"
    }

    /// glibc's closefrom action for posix_spawn, looked up at run time: its
    /// declaration is behind _GNU_SOURCE, which Swift's Glibc module does not set.
    private typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
    private static let addCloseFrom: AddCloseFrom? = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np")
        .map { unsafeBitCast($0, to: AddCloseFrom.self) }

    /// F_SETPIPE_SZ (Linux), and the size asked for.
    static let setPipeSize: Int32 = 1031
    static let pipeBytes: Int32 = 1 << 20
}

/// A command line split into words as `rsync -e` splits one: on blanks,
/// with '…' and "…" quoting and a backslash escaping the next character. No
/// shell runs, so nothing else is special; a shell pipeline is
/// `sh -c '…'`.
public enum CommandWords {
    public struct Problem: Error { public var message: String }

    public static func split(_ text: String) throws -> [String] {
        var words: [String] = []
        var word = "", inWord = false
        var quote: Character?
        var escaped = false
        for c in text {
            if escaped { word.append(c); escaped = false; inWord = true; continue }
            if let q = quote {
                if c == q { quote = nil } else if c == "\\" && q == "\"" { escaped = true } else { word.append(c) }
                continue
            }
            switch c {
            case "\\": escaped = true; inWord = true
            case "'", "\"": quote = c; inWord = true
            case " ", "\t", "\n":
                if inWord { words.append(word); word = ""; inWord = false }
            default: word.append(c); inWord = true
            }
        }
        if let q = quote { throw Problem(message: "an unterminated \(q) quote") }
        if escaped { throw Problem(message: "a backslash at the end") }
        if inWord { words.append(word) }
        return words
    }
}
