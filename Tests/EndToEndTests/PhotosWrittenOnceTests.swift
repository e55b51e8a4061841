import Foundation
import Glibc
import Testing
@testable import FamilySync

/// Photo bytes through the tools: a member receiving a library writes each
/// photo's bytes once, into the photo file beside its store; a backup is the
/// store and its photo file; a store put back without its photo file says so
/// and wants its photos again.
@Suite struct PhotosWrittenOnceTests {
    /// Runs `tool args` with `input` on stdin and reads, after it has exited
    /// and before it is reaped, how many bytes it wrote with write(2) and its
    /// kin (`wchar` in /proc/PID/io): to files and sockets alike.
    static func runCountingWrites(_ tool: String, _ args: [String], input: String, dir: TempDir) throws -> (status: Int32, written: Int64, err: String) {
        let inFile = dir.write("stdin-\(UUID().uuidString)", input)
        let outFile = dir.file("stdout-\(UUID().uuidString)"), errFile = dir.file("stderr-\(UUID().uuidString)")
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, inFile, O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outFile, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, errFile, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        let path = Tools.path(tool)
        let argv = ([path] + args).map { strdup($0) } + [nil]
        defer { for a in argv { free(a) } }
        var env = ProcessInfo.processInfo.environment
        env.removeValue(forKey: "FAMILY_SYNC_DB")
        let envp = env.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for e in envp { free(e) } }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, path, &actions, nil, argv, envp)
        guard rc == 0 else { throw FileError(.cannotOpen, path: path, code: rc) }
        // Exited, not yet reaped: its counters are still there to read.
        var info = siginfo_t()
        let deadline = Date().addingTimeInterval(120)
        while true {
            info = siginfo_t()
            if waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT | WNOHANG) == 0, info.si_signo == SIGCHLD { break }
            if Date() > deadline { kill(pid, SIGKILL) }
            usleep(2000)
        }
        let io = (try? String(contentsOfFile: "/proc/\(pid)/io", encoding: .utf8)) ?? ""
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        let wchar = io.split(separator: "\n").first { $0.hasPrefix("wchar:") }.flatMap { Int64($0.dropFirst(6).trimmingCharacters(in: .whitespaces)) }
        let exit = status & 0x7F == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
        return (exit, wchar ?? -1, (try? String(contentsOfFile: errFile, encoding: .utf8)) ?? "")
    }

    static func size(_ path: String) -> Int64 {
        var st = stat()
        return stat(path, &st) == 0 ? Int64(st.st_size) : 0
    }

    /// The joiner receives 16 MiB of photos and writes their bytes once and
    /// little else: a join of the same records without photos is the
    /// anchor, and what the photos add is under 1.25 times their bytes.
    /// Through a write-ahead log it was over twice (into the log, then into
    /// the store at checkpoint).
    @Test func aJoinWritesTheBytesOfThePhotosItReceivesOnce() throws {
        let dir = TempDir()
        let count = 16, each = 1 << 20
        var written: [Int64] = []
        for withPhotos in [false, true] {
            let owner = dir.file("owner-\(withPhotos).db"), kid = dir.file("kid-\(withPhotos).db")
            let offer = try Household.owner(owner)
            try Household.addRecords(owner, prefix: "p", count: count,
                                     photos: withPhotos ? (0..<count).map { Household.photo(600 + $0, size: each) } : [])
            let serve = try ServeProcess(db: owner, dir: dir, name: "serve-\(withPhotos)")
            defer { serve.stop() }
            let j = try Self.runCountingWrites("peer-sync", ["join", "--db", kid, "--connect", serve.address], input: offer + "\n", dir: dir)
            #expect(j.status == 0, "\(j.err)")
            #expect(j.written > 0, "wchar was not read")
            #expect(try Household.photoCount(kid) == (withPhotos ? Int64(count) : 0))
            written.append(j.written)
            if withPhotos {
                #expect(Self.size(kid) < Int64(count * each) / 4)
                #expect(Self.size(kid + "-photos-pack") >= Int64(count * each))
                #expect(Self.size(kid + "-photos") < Int64(count * each) / 64)
            }
        }
        let photoBytes = Int64(count * each)
        let added = written[1] - written[0]
        #expect(added >= photoBytes, "the photos' bytes were not all written: \(added)")
        #expect(added < photoBytes + photoBytes / 4, "the photos added \(added) bytes of writes for \(photoBytes) bytes of photos (anchor \(written[0]))")
    }

    /// `merge-records --backup` copies the store and its photo file; put
    /// back as the README says, the store holds every photo. Put back
    /// without the photo file, the next tool says so, and the photos are
    /// wanted again (a sync with the owner brings them back).
    @Test func aBackupIsTheStoreAndItsPhotoFile() throws {
        let dir = TempDir()
        let owner = dir.file("owner.db"), kid = dir.file("kid.db")
        let offer = try Household.owner(owner)
        try Household.addRecords(owner, prefix: "p", count: 5, photos: (0..<5).map { Household.photo(700 + $0) })
        let serve = try ServeProcess(db: owner, dir: dir)
        defer { serve.stop() }
        #expect(try Household.join(kid, server: serve, offer: offer).status == 0)
        let copy = dir.file("kid-copy.db")
        let b = try Tools.run("merge-records", ["--db", kid, "--backup", copy])
        #expect(b.status == 0, "\(b.err)")
        #expect(b.json?["photoFile"]?.stringValue == copy + "-photos")
        #expect(b.json?["photoPack"]?.stringValue == copy + "-photos-pack")
        #expect(b.json?.int("photos") == 5)
        try Household.restore(kid, from: copy)
        #expect(try Household.photoCount(kid) == 5)

        // Put back without its photo file.
        for suffix in [""] + Store.companionSuffixes { unlink(kid + suffix) }
        try FileManager.default.copyItem(atPath: copy, toPath: kid)
        let st = try Tools.run("peer-sync", ["status", "--db", kid])
        #expect(st.status == 0, "\(st.err)")
        #expect(st.err.contains("had no photo file") && st.err.contains("the 5 photos it held are wanted again"), "\(st.err)")
        #expect(try Household.photoCount(kid) == 0)
        let c = try Tools.run("peer-sync", ["connect", "--db", kid, serve.address])
        #expect(c.status == 0, "\(c.err)")
        #expect(try Household.photoCount(kid) == 5)
    }
}
