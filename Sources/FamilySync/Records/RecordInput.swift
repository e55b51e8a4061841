import FoundationEssentials
import Glibc

/// One NDJSON input held whole in memory, for the pure merge: a regular file
/// is mapped (the page cache is the only copy), a pipe is read into one
/// growing buffer. Lines are then scanned in place, never copied.
/// Not Sendable on purpose: it owns a mapping; the merge lends its bytes out.
public final class RecordInput {
    /// The name used in diagnostics ("<stdin>" for `-`).
    public let name: String
    /// The records' bytes: the input after a UTF-8 byte-order mark at its
    /// start, if any (no part of the first line's text).
    public var bytes: UnsafeRawBufferPointer { RecordInput.withoutByteOrderMark(whole) }
    /// The input as mapped or read, which the value owns.
    private let whole: UnsafeRawBufferPointer
    private let mapped: Bool

    static func withoutByteOrderMark(_ b: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer {
        guard b.count >= 3, b[0] == 0xEF, b[1] == 0xBB, b[2] == 0xBF else { return b }
        return UnsafeRawBufferPointer(rebasing: b[3...])
    }

    /// Fault the whole mapping in at once (Linux): far cheaper than a page fault per 4 KiB.
    #if os(Linux)
    static let populate = MAP_POPULATE
    #else
    static let populate: Int32 = 0
    #endif

    /// Reads `path` ("-" for standard input). A missing file is `noInput` (66).
    public init(path: String) throws {
        let fd: Int32
        if path == "-" {
            if StandardInput.wasClosed { throw StandardInput.closedError }
            fd = 0
            name = "<stdin>"
        } else {
            fd = open(path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else {
                let e = errno
                throw FileError(.cannotOpen, path: path, code: e)
            }
            name = path
        }
        defer { if fd != 0 { close(fd) } }
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw FileError(.cannotStat, path: name, code: errno) }
        if st.st_mode & S_IFMT == S_IFDIR { throw FileError(.isDirectory, path: name) }
        if st.st_mode & S_IFMT == S_IFREG && st.st_size > 0 {
            let size = Int(st.st_size)
            if let p = mmap(nil, size, PROT_READ, MAP_PRIVATE | RecordInput.populate, fd, 0), p != MAP_FAILED {
                _ = madvise(p, size, MADV_WILLNEED)
                whole = UnsafeRawBufferPointer(start: p, count: size)
                mapped = true
                return
            }
        }
        // A pipe (or a file that cannot be mapped): read it all.
        var cap = 1 << 20, used = 0
        // Out of memory is not recoverable here; like Swift's own allocations, it stops the tool.
        var buf = malloc(cap)!
        while true {
            if used == cap {
                cap *= 2
                guard let grown = realloc(buf, cap) else { free(buf); throw FileError(.outOfMemory, path: name) }
                buf = grown
            }
            let n = FileIO.read(fd, into: buf + used, count: cap - used)
            if n < 0 {
                let e = errno
                free(buf)
                throw FileError(.readFailed, path: name, code: e)
            }
            if n == 0 { break }
            used += n
        }
        whole = UnsafeRawBufferPointer(start: buf, count: used)
        mapped = false
    }

    /// An input made from bytes in memory (tests).
    public init(name: String, data: [UInt8]) {
        self.name = name
        // Out of memory is not recoverable here; like Swift's own allocations, it stops the tool.
        let p = malloc(max(data.count, 1))!
        data.withUnsafeBytes { if let b = $0.baseAddress { p.copyMemory(from: b, byteCount: $0.count) } }
        whole = UnsafeRawBufferPointer(start: p, count: data.count)
        mapped = false
    }

    deinit {
        if mapped { munmap(UnsafeMutableRawPointer(mutating: whole.baseAddress), whole.count) }
        else { free(UnsafeMutableRawPointer(mutating: whole.baseAddress)) }
    }
}

/// Bytes that must outlive their scan (decoded ids, rewritten lines), kept in
/// chunks that never move, so pointers into them stay valid.
final class ByteArena {
    /// The size of one chunk: large enough that rewrites rarely need a new one.
    static let chunkBytes = 1 << 20
    private var chunks: [UnsafeMutableRawPointer] = []
    private var cur: UnsafeMutableRawPointer?
    private var used = 0, cap = 0

    func store(_ src: UnsafeRawBufferPointer) -> UnsafePointer<UInt8> {
        let n = src.count
        if cur == nil || used + n > cap {
            let size = max(ByteArena.chunkBytes, n)
            // Out of memory is not recoverable here; like Swift's own allocations, it stops the tool.
            let c = malloc(max(size, 1))!
            chunks.append(c)
            cur = c
            used = 0
            cap = size
        }
        // Never nil: set just above when there was no chunk.
        let dst = cur! + used
        // Never nil: src has n > 0 bytes.
        if n > 0 { dst.copyMemory(from: src.baseAddress!, byteCount: n) }
        used += n
        return UnsafePointer(dst.assumingMemoryBound(to: UInt8.self))
    }

    func store(_ bytes: [UInt8]) -> UnsafePointer<UInt8> { bytes.withUnsafeBytes { store($0) } }

    deinit { for c in chunks { free(c) } }
}
