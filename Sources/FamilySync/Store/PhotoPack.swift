import SystemGlue
import FoundationEssentials
import Glibc

/// The photos' bytes, one after another in one file beside the store,
/// `STORE-photos-pack`: each photo starts at a multiple of `alignment`, its
/// last block padded with zeros. The photo file's index (PhotoFile.swift)
/// says where each photo is and how far the pack is in use; nothing in the
/// pack itself is trusted.
///
/// Bytes are appended through a buffer of `bufferBytes` with direct I/O where
/// the file system allows it, so they go from that buffer to the disk without
/// a copy into the page cache (on a small home server, the kernel's copy into
/// the cache was most of what writing a received library cost, and the
/// cached pages push out what is worth keeping). Where it does not (tmpfs,
/// FUSE), the same writes go through the cache. Either way they are on disk
/// at `sync`, before the index that names them commits. Not Sendable.
final class PhotoPack {
    /// The pack's file name is the store's with this after it.
    static let suffix = "-photos-pack"
    /// Every photo starts at a multiple of this: the block size direct I/O
    /// needs, for file offsets, lengths and the buffer's address alike.
    static let alignment = 4096
    /// The append buffer: direct writes of this size keep well ahead of a
    /// session on a home network (smaller ones wait on each write's round
    /// trip), and it is all the memory appending takes.
    static let bufferBytes = 256 << 10

    let path: String
    private var readFD: Int32 = -1
    private var appender: Appender?

    init(path: String) {
        self.path = path
    }

    /// Rounds `n` up to a multiple of `alignment`.
    static func aligned(_ n: Int64) -> Int64 {
        let a = Int64(alignment)
        return (n + a - 1) / a * a
    }

    /// The pack's size on disk now, or nil when it is not there.
    func fileSize() -> Int64? {
        var st = stat()
        guard lstat(path, &st) == 0, st.st_mode & S_IFMT == S_IFREG else { return nil }
        return Int64(st.st_size)
    }

    /// Begins appending at `offset` (a multiple of `alignment`: the end the
    /// index says is in use; what lies past it is left from a write that
    /// never committed and is written over).
    func startAppending(at offset: Int64) throws {
        precondition(offset % Int64(PhotoPack.alignment) == 0, "a pack offset is aligned")
        if appender == nil { appender = try Appender(path: path) }
        appender?.start(at: offset)
    }

    /// Where the next photo appended goes.
    var appendPosition: Int64 { appender?.position ?? 0 }

    /// Appends one photo (`size` bytes, as `chunks`) and returns its offset.
    func append(_ chunks: [ArraySlice<UInt8>], size: Int) throws -> Int64 {
        guard let a = appender else { preconditionFailure("appending to a pack before startAppending") }
        return try a.append(chunks, size: size, path: path)
    }

    /// Writes what is buffered and puts every appended byte on disk.
    func sync() throws {
        try appender?.sync(path: path)
    }

    /// Forgets what was appended and not synced (the index that would name it rolled back).
    func abandonAppends() {
        appender?.abandon()
    }

    /// Whether the file holds bytes up to `end` (those appended here and
    /// still in the buffer are written out first).
    func reaches(_ end: Int64) throws -> Bool {
        if let a = appender, a.buffersAnything(before: end) { try a.writeOut(path: path) }
        return end <= fileSize() ?? 0
    }

    /// Reads `count` bytes at `offset` into `buffer`. Throws when the pack
    /// ends before them (a pack cut short, or put back from another copy).
    func read(into buffer: UnsafeMutableRawBufferPointer, count: Int, at offset: Int64) throws {
        precondition(count <= buffer.count, "a read fits its buffer")
        // A photo staged here and still in the append buffer is read from the file like any other.
        if let a = appender, a.buffersAnything(before: offset + Int64(count)) { try a.writeOut(path: path) }
        if readFD < 0 {
            readFD = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
            guard readFD >= 0 else { throw PhotoPack.error(.cannotRead, path, errno, "opening it") }
            _ = posix_fadvise(readFD, 0, 0, POSIX_FADV_SEQUENTIAL)
        }
        var done = 0
        while done < count {
            // Never nil: count > 0 here and the buffer holds count bytes.
            let n = pread(readFD, buffer.baseAddress! + done, count - done, off_t(offset) + off_t(done))
            if n < 0 {
                if errno == EINTR { continue }
                throw PhotoPack.error(.cannotRead, path, errno, "reading it")
            }
            guard n > 0 else { throw StoreError(.cannotRead, path: path, detail: "the pack ends before a photo it should hold") }
            done += n
        }
    }

    /// Gives the ranges back to the file system: a punched hole where it can,
    /// else (with `zeroFill`) zeros written over them, so a removed photo's
    /// bytes do not stay in the file either way. On disk when this returns.
    func free(_ ranges: [(offset: Int64, length: Int64)], zeroFill: Bool = true) throws {
        guard !ranges.isEmpty else { return }
        let fd = open(path, O_WRONLY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { throw PhotoPack.error(.cannotWrite, path, errno, "opening it") }
        defer { Glibc.close(fd) }
        var zeros: [UInt8] = []
        for r in ranges where r.length > 0 {
            if fs_punch_hole(fd, r.offset, r.length) == 0 { continue }
            guard errno == EOPNOTSUPP || errno == ENOSYS else { throw PhotoPack.error(.cannotWrite, path, errno, "freeing a removed photo's bytes") }
            guard zeroFill else { continue }
            if zeros.isEmpty { zeros = [UInt8](repeating: 0, count: PhotoPack.bufferBytes) }
            var at = r.offset
            while at < r.offset + r.length {
                let n = Int(min(Int64(zeros.count), r.offset + r.length - at))
                // Never nil: zeros holds bufferBytes.
                let w = zeros.withUnsafeBytes { pwrite(fd, $0.baseAddress!, n, off_t(at)) }
                if w < 0 && errno == EINTR { continue }
                guard w > 0 else { throw PhotoPack.error(.cannotWrite, path, errno, "writing zeros over a removed photo") }
                at += Int64(w)
            }
        }
        // fsync: a punched hole changes only the file's map of blocks, which fdatasync may leave.
        guard fsync(fd) == 0 else { throw PhotoPack.error(.cannotWrite, path, errno, "syncing it to disk") }
    }

    /// Cuts the pack back to `length` (what was written past the end in use
    /// and never committed), on disk when this returns.
    func truncate(to length: Int64) throws {
        guard let size = fileSize(), size > length else { return }
        let fd = open(path, O_WRONLY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { throw PhotoPack.error(.cannotWrite, path, errno, "opening it") }
        defer { Glibc.close(fd) }
        guard ftruncate(fd, off_t(length)) == 0, fdatasync(fd) == 0 else { throw PhotoPack.error(.cannotWrite, path, errno, "cutting it back") }
    }

    func close() {
        if readFD >= 0 { Glibc.close(readFD) }
        readFD = -1
        appender?.close()
        appender = nil
    }

    deinit { close() }

    static func error(_ kind: StoreError.Kind, _ path: String, _ code: Int32, _ doing: String) -> StoreError {
        StoreError(kind, path: path, detail: "\(doing): \(FileIO.describe(code))")
    }

    /// Appends through one aligned buffer; a full buffer, and the rest at
    /// `sync`, go out in writes whose offset and length are multiples of
    /// `alignment` (a photo's tail is padded), as direct I/O needs.
    private final class Appender {
        private var fd: Int32
        private var direct: Bool
        private var buffer: UnsafeMutableRawPointer?
        /// The file offset of the buffer's first byte.
        private var start: Int64 = 0
        private var filled = 0
        /// Written since the last sync.
        private var unsynced = false

        init(path: String) throws {
            fd = fs_open_direct_write(path)
            direct = fd >= 0
            if fd < 0 {
                guard errno == EINVAL else { throw PhotoPack.error(.cannotWrite, path, errno, "opening it") }
                fd = open(path, O_WRONLY | O_NOFOLLOW | O_CLOEXEC)
                guard fd >= 0 else { throw PhotoPack.error(.cannotWrite, path, errno, "opening it") }
            }
        }

        var position: Int64 { start + Int64(filled) }

        func start(at offset: Int64) {
            start = offset
            filled = 0
        }

        func abandon() {
            filled = 0
        }

        /// Whether the buffer holds bytes that belong before `offset`.
        func buffersAnything(before offset: Int64) -> Bool { filled > 0 && start < offset }

        func append(_ chunks: [ArraySlice<UInt8>], size: Int, path: String) throws -> Int64 {
            precondition(chunks.reduce(0) { $0 + $1.count } == size, "photo chunks do not add up to its size")
            if buffer == nil {
                guard posix_memalign(&buffer, PhotoPack.alignment, PhotoPack.bufferBytes) == 0, buffer != nil else {
                    throw StoreError(.cannotWrite, path: path, detail: "no memory for the pack's buffer")
                }
            }
            // Never nil: allocated above.
            let buf = buffer!
            let offset = position
            for chunk in chunks {
                try chunk.withUnsafeBytes { src in
                    var from = 0
                    while from < src.count {
                        let n = min(src.count - from, PhotoPack.bufferBytes - filled)
                        // Never nil: from < src.count, so the chunk is not empty.
                        (buf + filled).copyMemory(from: src.baseAddress! + from, byteCount: n)
                        filled += n
                        from += n
                        if filled == PhotoPack.bufferBytes { try writeOut(path: path) }
                    }
                }
            }
            let padded = Int(PhotoPack.aligned(Int64(filled)))
            if padded > filled {
                (buf + filled).initializeMemory(as: UInt8.self, repeating: 0, count: padded - filled)
                filled = padded
                if filled == PhotoPack.bufferBytes { try writeOut(path: path) }
            }
            return offset
        }

        func writeOut(path: String) throws {
            guard filled > 0, let buf = buffer else { return }
            var done = 0
            while done < filled {
                let n = pwrite(fd, buf + done, filled - done, off_t(start) + off_t(done))
                if n < 0 && errno == EINTR { continue }
                if n < 0 && errno == EINVAL && direct {
                    // A file system that took O_DIRECT at open but refuses these writes: through the cache, then.
                    let plain = open(path, O_WRONLY | O_NOFOLLOW | O_CLOEXEC)
                    guard plain >= 0 else { throw PhotoPack.error(.cannotWrite, path, errno, "opening it") }
                    Glibc.close(fd)
                    fd = plain
                    direct = false
                    continue
                }
                guard n > 0 else { throw PhotoPack.error(.cannotWrite, path, n < 0 ? errno : ENOSPC, "writing a photo") }
                done += n
            }
            start += Int64(filled)
            filled = 0
            unsynced = true
        }

        func sync(path: String) throws {
            try writeOut(path: path)
            guard unsynced else { return }
            // fdatasync writes the file's new size too, which reading the bytes needs.
            guard fdatasync(fd) == 0 else { throw PhotoPack.error(.cannotWrite, path, errno, "syncing it to disk") }
            unsynced = false
        }

        func close() {
            if fd >= 0 { Glibc.close(fd) }
            fd = -1
            Glibc.free(buffer)
            buffer = nil
        }
    }
}
