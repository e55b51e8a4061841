import Glibc

/// A file, pipe or stream that could not be opened, read or written: which
/// one (as the user named it), what failed, and errno. Callers that know
/// which option named the file add that; the tools decide the exit status.
public struct FileError: Error, CustomStringConvertible, Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        /// open(2) failed; `code` says why (a missing file is ENOENT).
        case cannotOpen
        case isDirectory
        case notRegularFile
        /// fstat(2) failed on an open file.
        case cannotStat
        /// read(2) failed part way.
        case readFailed
        /// The file could not be read whole (no errno to tell why).
        case unreadable
        /// write(2) failed; `path` names the stream ("standard output").
        case writeFailed
        /// The file is bigger than `limit` bytes; `size` when its size was known up front.
        case tooLarge
        case outOfMemory
        /// Standard input was closed by the shell, and it was to be read.
        case standardInputClosed
    }

    public var kind: Kind
    public var path: String
    /// errno, or 0 when there is none.
    public var code: Int32
    public var limit: Int?
    public var size: Int?

    public init(_ kind: Kind, path: String, code: Int32 = 0, limit: Int? = nil, size: Int? = nil) {
        self.kind = kind
        self.path = path
        self.code = code
        self.limit = limit
        self.size = size
    }

    /// errno in words.
    public var reason: String { String(cString: strerror(code)) }

    /// Whether the input is simply not there (or may not be read), as
    /// opposed to failing while it was there.
    public var isMissingInput: Bool {
        switch kind {
        case .cannotOpen: return code == ENOENT || code == ENOTDIR || code == EACCES
        case .isDirectory, .notRegularFile, .standardInputClosed: return true
        default: return false
        }
    }

    public var description: String {
        switch kind {
        case .cannotOpen, .cannotStat: return "\(path): \(reason)"
        case .isDirectory: return "\(path): is a directory"
        case .notRegularFile: return "\(path): not a regular file"
        case .readFailed: return "\(path): read error: \(reason)"
        case .unreadable: return "\(path): cannot read"
        case .writeFailed: return "write error on \(path): \(reason)"
        case .tooLarge:
            let l = limit ?? 0
            if let size { return "\(path): file is \(size) bytes; the limit is \(l) bytes" }
            return "\(path): more than \(l) bytes; the limit is \(l) bytes"
        case .outOfMemory: return "\(path): out of memory"
        case .standardInputClosed: return "<stdin>: standard input is closed"
        }
    }
}

/// The operating system failed where it should not (no entropy, say): a
/// fault of this machine, not of any input.
public struct SystemError: Error, CustomStringConvertible, Sendable, Equatable {
    /// The call that failed.
    public var call: String
    public var code: Int32
    public init(_ call: String, code: Int32 = errno) {
        self.call = call
        self.code = code
    }
    public var description: String { "\(call) failed: \(String(cString: strerror(code)))" }
}
