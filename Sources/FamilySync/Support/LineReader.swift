import FoundationEssentials
import Glibc

/// Reads lines from a file or standard input in large chunks, for NDJSON and
/// JWS batches. Lines longer than `maxLineBytes` are reported, not buffered
/// without bound: the reader skips to the next newline and hands back a
/// marker, so hostile input costs bounded memory.
public final class LineReader {
    public enum Line {
        case text(UnsafeRawBufferPointer)
        /// The line was longer than the limit; its bytes were skipped.
        case tooLong(Int)
    }

    public let name: String
    private let fd: Int32
    private let ownsFD: Bool
    private let buf: UnsafeMutableRawBufferPointer
    /// buf's first byte (the buffer is never empty, so it has one).
    private let base: UnsafeMutableRawPointer
    private var start = 0, end = 0
    private var eof = false
    public let maxLineBytes: Int
    /// The 1-based number of the line last returned.
    public private(set) var lineNumber = 0
    /// The input's size when it is a regular file (for progress), else nil.
    public private(set) var size: Int64?
    private var bytesRead: Int64 = 0
    /// Bytes of the input handed out so far (the lines returned and their newlines).
    public var position: Int64 { bytesRead - Int64(end - start) }

    /// Opens `path` ("-" for standard input), or throws a `FileError`.
    public init(path: String, maxLineBytes: Int) throws {
        if path == "-" {
            if StandardInput.wasClosed { throw StandardInput.closedError }
            fd = 0
            ownsFD = false
            name = "<stdin>"
            // A file redirected in (< file) has a size too: what is left of it.
            var st = stat()
            if fstat(0, &st) == 0, st.st_mode & S_IFMT == S_IFREG { size = max(0, Int64(st.st_size) - max(0, Int64(lseek(0, 0, SEEK_CUR)))) }
        } else {
            let f = open(path, O_RDONLY | O_CLOEXEC)
            guard f >= 0 else {
                let e = errno
                throw FileError(.cannotOpen, path: path, code: e)
            }
            var st = stat()
            if fstat(f, &st) == 0, st.st_mode & S_IFMT == S_IFDIR {
                close(f)
                throw FileError(.isDirectory, path: path)
            }
            if st.st_mode & S_IFMT == S_IFREG { size = Int64(st.st_size) }
            fd = f
            ownsFD = true
            name = path
        }
        self.maxLineBytes = maxLineBytes
        base = .allocate(byteCount: max(1 << 20, maxLineBytes + 1), alignment: 16)
        buf = UnsafeMutableRawBufferPointer(start: base, count: max(1 << 20, maxLineBytes + 1))
    }

    deinit {
        buf.deallocate()
        if ownsFD { close(fd) }
    }

    private func fill() throws {
        if start > 0 {
            if end > start { base.copyMemory(from: base + start, byteCount: end - start) }
            end -= start
            start = 0
        }
        while end < buf.count {
            let n = FileIO.read(fd, into: base + end, count: buf.count - end)
            if n < 0 {
                throw FileError(.readFailed, path: name, code: errno)
            }
            if n == 0 { eof = true; return }
            end += n
            bytesRead += Int64(n)
            return
        }
    }

    /// The next line without its newline (and without a trailing CR), or nil
    /// at end of input. The bytes are valid until the next call.
    public func next() throws -> Line? {
        var scanFrom = start
        while true {
            if let nl = memchrIndex(from: scanFrom) {
                lineNumber += 1
                var stop = nl
                if stop > start, buf[stop - 1] == 0x0D { stop -= 1 }
                let line = UnsafeRawBufferPointer(rebasing: buf[firstByte(start, stop)..<stop])
                start = nl + 1
                if line.count > maxLineBytes { return .tooLong(line.count) }
                return .text(line)
            }
            if eof {
                guard end > start else { return nil }
                lineNumber += 1
                var stop = end
                if buf[stop - 1] == 0x0D { stop -= 1 }
                let line = UnsafeRawBufferPointer(rebasing: buf[firstByte(start, stop)..<stop])
                start = end
                if line.count > maxLineBytes { return .tooLong(line.count) }
                return .text(line)
            }
            if end - start > maxLineBytes {
                // Skip the rest of this overlong line.
                var skipped = end - start
                start = end
                while true {
                    try fill()
                    if let nl = memchrIndex(from: start) {
                        skipped += nl - start
                        start = nl + 1
                        break
                    }
                    skipped += end - start
                    start = end
                    if eof { break }
                }
                lineNumber += 1
                return .tooLong(skipped)
            }
            let scanned = end - start
            try fill()
            scanFrom = start + scanned
        }
    }

    /// Where line `lineNumber` (just counted) starts: past a UTF-8 byte-order
    /// mark at the very start of the input, which editors on some systems
    /// write and which is no part of the first line's text.
    private func firstByte(_ from: Int, _ stop: Int) -> Int {
        guard lineNumber == 1, stop - from >= 3, buf[from] == 0xEF, buf[from + 1] == 0xBB, buf[from + 2] == 0xBF else { return from }
        return from + 3
    }

    private func memchrIndex(from i: Int) -> Int? {
        guard i < end else { return nil }
        guard let p = memchr(base + i, 0x0A, end - i) else { return nil }
        return base.distance(to: UnsafeMutableRawPointer(p))
    }
}
