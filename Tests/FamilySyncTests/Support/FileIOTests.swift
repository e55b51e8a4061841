import Foundation
import Testing
@testable import FamilySync

@Suite struct FileIOTests {
    @Test func openFailuresSayWhetherTheInputIsMissing() {
        for code in [ENOENT, ENOTDIR, EACCES] { #expect(FileError(.cannotOpen, path: "f", code: code).isMissingInput) }
        for code in [EIO, EMFILE] { #expect(!FileError(.cannotOpen, path: "f", code: code).isMissingInput) }
        #expect(!FileError(.readFailed, path: "f", code: ENOENT).isMissingInput)
    }

    /// More than a pipe holds at once, so the writer sees short writes and
    /// must carry on where each stopped; the reader gets every byte in order.
    @Test func writeAllAndReadMoveEveryByteThroughAPipe() throws {
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        let bytes = (0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 9) }
        let writeEnd = fds[1]
        let writer = Thread {
            _ = FileIO.writeAll(writeEnd, bytes)
            close(writeEnd)
        }
        writer.start()
        var got: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = chunk.withUnsafeMutableBytes { FileIO.read(fds[0], into: $0.baseAddress!, count: $0.count) }
            #expect(n >= 0)
            if n <= 0 { break }
            got += chunk[0..<n]
        }
        close(fds[0])
        #expect(got == bytes)
    }

    @Test func aFailedWriteReportsItsErrno() {
        // A descriptor opened for reading only cannot be written: EBADF.
        let fd = open("/dev/null", O_RDONLY | O_CLOEXEC)
        #expect(fd >= 0)
        defer { close(fd) }
        #expect(FileIO.writeAll(fd, [1, 2, 3]) == EBADF)
        #expect(FileIO.writeAll(fd, []) == 0)
    }
}
