import Foundation
import Testing
import FamilySync

/// Output paths are what they are (pair-qr -o, merge-records --cursor and
/// --explain-file): regular files replaced atomically, links followed, FIFOs
/// and devices written through or refused, never replaced.
@Suite struct OutputPathTests {
    static let now = "2026-11-30T10:00:00Z"
    static let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47]

    static func kind(_ path: String) -> mode_t {
        var st = stat()
        return lstat(path, &st) == 0 ? st.st_mode & S_IFMT : 0
    }
    static func stats(_ path: String) -> stat {
        var st = stat()
        _ = stat(path, &st)
        return st
    }
    static func bytes(_ path: String) -> [UInt8] { [UInt8](FileManager.default.contents(atPath: path) ?? Data()) }

    func pairQR(_ d: TempDir, _ args: [String]) throws -> ToolResult {
        try Tools.run("pair-qr", ["--db", d.file("o.db"), "--now", Self.now] + args)
    }

    /// An existing regular file is replaced by rename (a new inode), keeps its mode, and no temporary file is left.
    @Test func regularFileIsReplacedAtomicallyKeepingItsMode() throws {
        let d = TempDir()
        let out = d.write("code.png", "old contents\n")
        chmod(out, 0o600)
        let before = Self.stats(out)
        let r = try pairQR(d, ["-o", out])
        #expect(r.status == 0, "\(r.err)")
        let after = Self.stats(out)
        #expect(Array(Self.bytes(out).prefix(4)) == Self.png)
        #expect(after.st_ino != before.st_ino)
        #expect(after.st_mode & 0o777 == 0o600)
        let names = try FileManager.default.contentsOfDirectory(atPath: d.path).sorted()
        #expect(!names.contains { $0.hasPrefix(".") }, "\(names)")
    }

    /// A symbolic link stays a link; its target gets the code (a dangling one's target is created).
    @Test func symlinkIsFollowedAndItsTargetReplaced() throws {
        let d = TempDir()
        let target = d.write("real.png", "old\n")
        let link = d.file("link.png")
        #expect(symlink("real.png", link) == 0)
        let r = try pairQR(d, ["-o", link])
        #expect(r.status == 0, "\(r.err)")
        #expect(Self.kind(link) == S_IFLNK)
        #expect(Array(Self.bytes(target).prefix(4)) == Self.png)

        let dangling = d.file("dangling.svg")
        #expect(symlink(d.file("made.svg"), dangling) == 0)
        let s = try pairQR(d, ["-o", dangling])
        #expect(s.status == 0, "\(s.err)")
        #expect(Self.kind(dangling) == S_IFLNK)
        #expect(Self.kind(d.file("made.svg")) == S_IFREG)
        #expect(String(decoding: Self.bytes(d.file("made.svg")), as: UTF8.self).contains("<svg"))
    }

    /// A FIFO's reader gets the code, and the FIFO is still a FIFO.
    @Test func fifoIsWrittenStraightThrough() throws {
        let d = TempDir()
        let fifo = d.file("pipe.png")
        #expect(mkfifo(fifo, 0o600) == 0)
        nonisolated(unsafe) var got: [UInt8] = []
        let reader = Thread {
            let fd = open(fifo, O_RDONLY)
            var buf = [UInt8](repeating: 0, count: 1 << 16)
            while fd >= 0 {
                let n = read(fd, &buf, buf.count)
                if n <= 0 { break }
                got += buf[0..<n]
            }
            if fd >= 0 { close(fd) }
        }
        reader.start()
        let r = try pairQR(d, ["-o", fifo])
        #expect(r.status == 0, "\(r.err)")
        let deadline = Date().addingTimeInterval(10)
        while !reader.isFinished && Date() < deadline { usleep(10_000) }
        #expect(Array(got.prefix(4)) == Self.png)
        #expect(Self.kind(fifo) == S_IFIFO)
    }

    /// A character device made here (the null device's numbers, in this
    /// test's own folder) is written through and stays a device. Needs root.
    @Test func characterDeviceIsWrittenThroughNotReplaced() throws {
        let d = TempDir()
        let dev = d.file("device.png")
        guard mknod(dev, S_IFCHR | 0o600, dev_t((1 << 8) | 3)) == 0 else { return }  // not root: nothing to test here
        let r = try pairQR(d, ["-o", dev])
        #expect(r.status == 0, "\(r.err)")
        #expect(Self.kind(dev) == S_IFCHR)
        #expect(Self.stats(dev).st_rdev == dev_t((1 << 8) | 3))
    }

    /// A folder is refused with a clear message; the offer made for it is closed.
    @Test func folderIsRefused() throws {
        let d = TempDir()
        let dir = d.file("codes.png")
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: false)
        let r = try pairQR(d, ["-o", dir])
        #expect(r.status == 64, "\(r.err)")
        #expect(r.err.contains("is a folder"))
        #expect(r.out.isEmpty)
        #expect(try pairQR(d, ["--list"]).out.isEmpty)
    }

    /// An extension pair-qr does not write is a usage error before anything is made.
    @Test(arguments: ["q.gif", "q.jpeg", "q.pdf"])
    func unknownExtensionIsAUsageError(name: String) throws {
        let d = TempDir()
        let r = try pairQR(d, ["-o", d.file(name)])
        #expect(r.status == 64)
        #expect(r.err.contains("is not a format pair-qr writes"), "\(r.err)")
        #expect(!FileManager.default.fileExists(atPath: d.file(name)))
        #expect(!FileManager.default.fileExists(atPath: d.file("o.db")))
        // Naming the format makes any name fine.
        let ok = try pairQR(d, ["-o", d.file(name), "--format", "png"])
        #expect(ok.status == 0, "\(ok.err)")
    }

    static func seededStore(_ d: TempDir) throws -> String {
        let db = d.file("s.db")
        let line = #"{"id":"a","type":"t","modifiedAt":"2026-06-01T00:00:00.000Z","deviceId":"D","deleted":false}"#
        let r = try Tools.run("merge-records", ["--db", db, "--now", Self.now], input: line + "\n")
        #expect(r.status == 0, "\(r.err)")
        return db
    }

    /// merge-records --cursor through a link: the target is replaced, the link stays.
    @Test func cursorThroughASymlink() throws {
        let d = TempDir()
        let db = try Self.seededStore(d)
        let target = d.write("real.cursor", "0\n")
        let link = d.file("kid.cursor")
        #expect(symlink(target, link) == 0)
        let r = try Tools.run("merge-records", ["--db", db, "--export", "--cursor", link])
        #expect(r.status == 0, "\(r.err)")
        #expect(r.lines.count == 1)
        #expect(Self.kind(link) == S_IFLNK)
        #expect(String(decoding: Self.bytes(target), as: UTF8.self) == "1\n")
        let again = try Tools.run("merge-records", ["--db", db, "--export", "--cursor", link])
        #expect(again.status == 0 && again.out.isEmpty)
    }

    /// A cursor that is a FIFO is refused (it must be read back), before any export.
    @Test func cursorThatIsAFIFOIsRefused() throws {
        let d = TempDir()
        let db = try Self.seededStore(d)
        let fifo = d.file("c.fifo")
        #expect(mkfifo(fifo, 0o600) == 0)
        let r = try Tools.run("merge-records", ["--db", db, "--export", "--cursor", fifo], timeout: 20)
        #expect(r.status == 64, "\(r.err)")
        #expect(r.err.contains("is a FIFO, not a regular file"))
        #expect(r.out.isEmpty)
        #expect(Self.kind(fifo) == S_IFIFO)
    }

    /// --explain-file into a FIFO: its reader gets the explanations.
    @Test func explainFileIntoAFIFO() throws {
        let d = TempDir()
        let a = d.write("a.ndjson", #"{"id":"x","type":"t","modifiedAt":"2026-06-01T00:00:00.000Z","deviceId":"A","deleted":false}"# + "\n")
        let b = d.write("b.ndjson", #"{"id":"x","type":"t","modifiedAt":"2026-06-02T00:00:00.000Z","deviceId":"B","deleted":false}"# + "\n")
        let fifo = d.file("why.fifo")
        #expect(mkfifo(fifo, 0o600) == 0)
        nonisolated(unsafe) var got = ""
        // The reader signals when `got` is written: polling Thread.isFinished
        // orders nothing, and ThreadSanitizer rightly calls the read a race.
        let done = DispatchSemaphore(value: 0)
        let reader = Thread {
            defer { done.signal() }
            let fd = open(fifo, O_RDONLY)
            var buf = [UInt8](repeating: 0, count: 1 << 16), all: [UInt8] = []
            while fd >= 0 {
                let n = read(fd, &buf, buf.count)
                if n <= 0 { break }
                all += buf[0..<n]
            }
            if fd >= 0 { close(fd) }
            got = String(decoding: all, as: UTF8.self)
        }
        reader.start()
        let r = try Tools.run("merge-records", ["--now", Self.now, "--explain-file", fifo, a, b], timeout: 20)
        #expect(r.status == 0, "\(r.err)")
        #expect(done.wait(timeout: .now() + 10) == .success, "the FIFO's reader did not finish")
        #expect(got.contains(#""winner":"remote""#), "\(got)")
        #expect(Self.kind(fifo) == S_IFIFO)
    }
}
