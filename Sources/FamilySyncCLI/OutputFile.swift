import FamilySync
import FoundationEssentials
import Glibc

/// The one way a tool writes a file named on its command line (`pair-qr -o`,
/// `merge-records --cursor`, `--explain-file`). A path is what it is:
/// - a regular file (or none yet) is replaced atomically: a temporary file in
///   the same folder, fsync, rename; an existing file keeps its mode;
/// - a symbolic link is followed, and its target is what gets replaced (the
///   link stays a link);
/// - a FIFO or character device (a terminal, a pipe someone reads) is written
///   straight through, or refused where the caller needs a real file; it is
///   never replaced by a regular file;
/// - anything else (a folder, a block device, a socket) is refused.
public final class OutputFile {
    /// What to do with a path that names a FIFO or a character device.
    public enum NonRegular {
        case writeThrough
        /// Refused, with `reason` saying why this output must be a regular file.
        case refuse(reason: String)
    }

    /// The path as given, for messages.
    public let path: String
    /// The descriptor to write to.
    public let fd: Int32
    /// The regular file this replaces (a link's target), when writing to a temporary file.
    private let target: String?
    private let temporary: String?
    private var finished = false

    /// Opens `path` for writing as the rules above say. `newMode` is the mode
    /// of a file that did not exist (the umask applies). A `secret` output
    /// (an offer's image holds its nonce) is 0600 whatever was there before.
    public init(path: String, newMode: mode_t = 0o644, nonRegular: NonRegular = .writeThrough, secret: Bool = false) throws {
        self.path = path
        let resolved = try OutputFile.resolve(path)
        var st = stat()
        if stat(resolved, &st) == 0, st.st_mode & S_IFMT != S_IFREG {
            let kind = st.st_mode & S_IFMT
            guard kind == S_IFIFO || kind == S_IFCHR else {
                throw ToolError.usage("\(path): \(OutputFile.describe(kind)); name a file to write")
            }
            if case let .refuse(reason) = nonRegular {
                throw ToolError.usage("\(path): \(OutputFile.describe(kind)), not a regular file; \(reason)")
            }
            // Straight through: no O_CREAT and no O_TRUNC, so nothing is ever made or replaced here.
            let f = open(resolved, O_WRONLY | O_CLOEXEC | O_NOCTTY)
            guard f >= 0 else { throw ToolError.io("\(path): \(String(cString: strerror(errno)))") }
            fd = f
            target = nil
            temporary = nil
            return
        }
        let existing = stat(resolved, &st) == 0
        let dir = PathText.directory(resolved)
        let base = PathText.lastComponent(resolved)
        var template = Array(((dir.isEmpty ? "." : dir) + "/.\(base).XXXXXX").utf8CString)
        let f = template.withUnsafeMutableBufferPointer { buf in buf.baseAddress.map { mkstemp($0) } ?? -1 }
        guard f >= 0 else {
            throw ToolError.io("\(path): cannot create a file there: \(String(cString: strerror(errno)))")
        }
        _ = fcntl(f, F_SETFD, FD_CLOEXEC)
        let mask = umask(0)
        umask(mask)
        fchmod(f, secret ? 0o600 : existing ? st.st_mode & 0o7777 : newMode & ~mask)
        fd = f
        target = resolved
        temporary = String(decoding: template.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    deinit {
        // Not committed: the temporary file goes, and whatever was at the path stays as it was.
        if !finished {
            close(fd)
            if let temporary { unlink(temporary) }
        }
    }

    public func write(_ bytes: UnsafeRawBufferPointer) throws {
        guard let base = bytes.baseAddress else { return }
        var off = 0
        while off < bytes.count {
            let n = Glibc.write(fd, base + off, bytes.count - off)
            if n < 0 {
                if errno == EINTR { continue }
                throw ToolError.io("\(path): write error: \(String(cString: strerror(errno)))")
            }
            off += n
        }
    }

    public func write(_ bytes: [UInt8]) throws { try bytes.withUnsafeBytes { try write($0) } }

    /// Makes the new contents the file's: fsync and rename for a regular file,
    /// nothing more for one written straight through.
    public func commit() throws {
        guard !finished else { return }
        finished = true
        guard let temporary, let target else {
            close(fd)
            return
        }
        guard fsync(fd) == 0 else {
            let e = errno
            close(fd)
            unlink(temporary)
            throw ToolError.io("\(path): sync failed: \(String(cString: strerror(e)))")
        }
        close(fd)
        guard rename(temporary, target) == 0 else {
            let e = errno
            unlink(temporary)
            throw ToolError.io("\(path): cannot replace: \(String(cString: strerror(e)))")
        }
        // The new name is on disk only with its folder.
        let e = FileIO.syncFolder(of: target)
        guard e == 0 else { throw ToolError.io("\(path): sync of its folder failed: \(FileIO.describe(e))") }
    }

    /// Writes `bytes` as the whole of `path`.
    public static func replace(_ path: String, with bytes: [UInt8], newMode: mode_t = 0o644, nonRegular: NonRegular = .writeThrough, secret: Bool = false) throws {
        let f = try OutputFile(path: path, newMode: newMode, nonRegular: nonRegular, secret: secret)
        try f.write(bytes)
        try f.commit()
    }

    /// The path with every symbolic link along the final component followed
    /// (a dangling link's target is where the new file is made).
    static func resolve(_ path: String) throws -> String {
        var current = path
        for _ in 0..<40 {
            var st = stat()
            guard lstat(current, &st) == 0, st.st_mode & S_IFMT == S_IFLNK else { return current }
            var buf = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
            let n = readlink(current, &buf, buf.count - 1)
            guard n > 0 else { throw ToolError.io("\(path): cannot read the link: \(String(cString: strerror(errno)))") }
            let dest = String(decoding: buf[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
            current = dest.hasPrefix("/") ? dest : PathText.appending(PathText.directory(current), dest)
        }
        throw ToolError.io("\(path): too many levels of symbolic links")
    }

    static func describe(_ kind: mode_t) -> String {
        switch kind {
        case S_IFDIR: return "is a folder"
        case S_IFBLK: return "is a block device"
        case S_IFSOCK: return "is a socket"
        case S_IFIFO: return "is a FIFO"
        case S_IFCHR: return "is a character device"
        default: return "is not a regular file"
        }
    }
}
