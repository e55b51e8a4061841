import Foundation
import Testing
import FamilySync

/// merge-records as a user runs it: pure mode, store mode, errors, and the
/// store's crash and concurrency guarantees.
@Suite struct MergeRecordsTests {
    static let now = "2026-12-01T00:00:00Z"
    static let a = "2026-11-30T10:00:00.000Z", b = "2026-11-30T10:00:00.001Z"

    static func line(_ id: String, _ t: String, _ dev: String, deleted: Bool = false, data: String = "{}") -> String {
        deleted ? #"{"id":"\#(id)","type":"receipt","modifiedAt":"\#(t)","deviceId":"\#(dev)","deleted":true}"#
            : #"{"id":"\#(id)","type":"receipt","modifiedAt":"\#(t)","deviceId":"\#(dev)","deleted":false,"data":\#(data)}"#
    }

    static func lines(_ l: [String]) -> String { l.map { $0 + "\n" }.joined() }

    // MARK: Pure mode

    /// A store holds secrets: it is made 0600 even by a process whose umask
    /// allows everything. The umask is set in a shell that then runs the tool,
    /// so this test's own process (and the tests beside it) keep theirs.
    @Test func aStoreIsMadePrivateWhateverTheUmask() throws {
        let tmp = TempDir()
        let db = tmp.file("s.db")
        let r = try Tools.run("/bin/sh", ["-c", "umask 0 && exec \"$0\" \"$@\"", Tools.path("merge-records"), "--db", db, "--now", Self.now, "/dev/null"])
        #expect(r.status == 0, "\(r.err)")
        for f in [db, db + "-wal", db + "-shm"] where FileManager.default.fileExists(atPath: f) {
            var st = stat()
            #expect(stat(f, &st) == 0)
            #expect(st.st_mode & 0o777 == 0o600, "\(f): mode \(String(st.st_mode & 0o777, radix: 8))")
        }
    }

    @Test func pureModeMergesSortsAndKeepsBytes() throws {
        let tmp = TempDir()
        let local = tmp.write("local.ndjson", Self.lines([
            Self.line("b", Self.a, "D1"),
            #"{ "id":"a", "zz":[1.0e1], "type":"receipt","modifiedAt":"2026-11-30T10:00:00.001Z","deviceId":"D1","deleted":false }"#,
            Self.line("c", Self.a, "D1", deleted: true),
        ]))
        let remote = Self.lines([Self.line("b", Self.b, "D2", data: #"{"n":"Grüße"}"#), Self.line("a", Self.a, "D9"),
                                 Self.line("c", Self.a, "D0"), Self.line("d", "2031-01-01T00:00:00Z", "D3")])
        let r = try Tools.run("merge-records", ["--now", Self.now, local, "-"], input: remote)
        #expect(r.status == 0)
        #expect(r.err.isEmpty)
        #expect(r.out == Self.lines([
            #"{ "id":"a", "zz":[1.0e1], "type":"receipt","modifiedAt":"2026-11-30T10:00:00.001Z","deviceId":"D1","deleted":false }"#,
            Self.line("b", Self.b, "D2", data: #"{"n":"Grüße"}"#),
            Self.line("c", Self.a, "D0"),
            Self.line("d", "2026-12-01T00:05:00.000Z", "D3"),
        ]))
        // Swapped, nothing is clamped the other way: LOCAL is never clamped (only normalized).
        let swapped = try Tools.run("merge-records", ["--now", Self.now, "-", local], input: remote)
        #expect(swapped.lines.last == Self.line("d", "2031-01-01T00:00:00.000Z", "D3"))
    }

    @Test func explainGoesToStderrOrAFile() throws {
        let tmp = TempDir()
        let l = tmp.write("l", Self.lines([Self.line("x", Self.a, "D1"), Self.line("y", Self.a, "D1")]))
        let r = tmp.write("r", Self.lines([Self.line("x", Self.a, "D2")]))
        let res = try Tools.run("merge-records", ["--now", Self.now, "--explain", l, r])
        #expect(res.status == 0)
        #expect(res.lines.count == 2)
        #expect(res.err == """
            {"id":"x","rule":"greater-device","winner":"remote","versions":2,"clamped":false}
            {"id":"y","rule":"new","winner":"local","versions":1,"clamped":false}

            """)
        let why = tmp.file("why.ndjson")
        let res2 = try Tools.run("merge-records", ["--now", Self.now, "--explain-file", why, l, r])
        #expect(res2.err.isEmpty)
        #expect(res2.out == res.out)
        #expect(try String(contentsOfFile: why, encoding: .utf8) == res.err)
    }

    static let badLines: [(String, String)] = [
        ("{\"id\":\"x\"", "2: not JSON: unexpected end of line at byte 10"),
        ("[]", "2: not a JSON object"),
        (#"{"id":"","type":"t","modifiedAt":"2026-11-30T10:00:00Z","deviceId":"D","deleted":false}"#, "2: id: empty"),
        (#"{"id":"x","modifiedAt":"2026-11-30T10:00:00Z","deviceId":"D","deleted":false}"#, "2: type: missing"),
        (#"{"id":"x","type":"t","modifiedAt":"2026-11-30 10:00","deviceId":"D","deleted":false}"#, "2: modifiedAt: not an RFC 3339 time: \"2026-11-30 10:00\""),
        (#"{"id":"x","type":"t","modifiedAt":"2026-11-30T10:00:00Z","deviceId":1,"deleted":false}"#, "2: deviceId: not a string"),
        (#"{"id":"x","type":"t","modifiedAt":"2026-11-30T10:00:00Z","deviceId":"D","deleted":"false"}"#, "2: deleted: not true or false"),
        (#"{"id":"x","type":"t","modifiedAt":"2026-11-30T10:00:00Z","deviceId":"D","deleted":false,"photos":["ABC"]}"#, "2: photos[0]: not a lowercase SHA-256 hex string"),
        (#"{"id":"x","type":"t","modifiedAt":"2026-11-30T10:00:00Z","deviceId":"D","deleted":false,"data":"text"}"#, "2: data: not an object"),
        ("{\"id\":\"x\",\"data\":{\"a\":\"\u{01}\"}}", "2: data: control character in string at byte 24"),
        (#"{"id":"x","id":"y"}"#, "2: id: appears twice"),
        (#"{"id":"x","type":"t","modifiedAt":"2026-11-30T10:00:00Z","deviceId":"D","deleted":false,"data":{"a":1,"a":2}}"#, "2: data: key 'a' appears twice in one object at byte 103"),
        ("{\"id\":\"x\",\r\"type\":\"t\"}", "2: not JSON: a CR (0x0D) between tokens, which a record line never holds at byte 11"),
        ("{\"id\":\"x\",\"data\":" + String(repeating: "[", count: 200) + "}", "2: data: nesting deeper than 64 at byte 81"),
        ("{\"id\":\"" + String(repeating: "x", count: Record.maxLineBytes) + "\"}", "2: line longer than 1048576 bytes"),
    ]

    @Test(arguments: badLines)
    func pureModeRejectsBadLinesAndWritesNothing(bad: String, expected: String) throws {
        let tmp = TempDir()
        let good = tmp.write("good.ndjson", Self.lines([Self.line("g", Self.a, "D")]))
        let badFile = tmp.write("bad.ndjson", Self.lines([Self.line("h", Self.a, "D"), bad, Self.line("i", Self.a, "D")]))
        let r = try Tools.run("merge-records", [good, badFile])
        #expect(r.status == 65)
        #expect(r.out.isEmpty)
        #expect(r.err == "merge-records: \(badFile):\(expected)\n")
        // Through standard input the file is named <stdin>.
        let r2 = try Tools.run("merge-records", ["-", good], stdin: FileManager.default.contents(atPath: badFile))
        #expect(r2.status == 65 && r2.out.isEmpty)
        #expect(r2.err == "merge-records: <stdin>:\(expected)\n")
    }

    @Test func invalidUTF8AndBinaryInputAreBadData() throws {
        let tmp = TempDir()
        let good = tmp.write("good.ndjson", Self.lines([Self.line("g", Self.a, "D")]))
        let bin = tmp.file("bin")
        _ = FileManager.default.createFile(atPath: bin, contents: Data([0x7B, 0x22, 0x69, 0x64, 0x22, 0x3A, 0x22, 0xFF, 0xFE, 0x22, 0x7D, 0x0A, 0x00, 0x01]))
        let r = try Tools.run("merge-records", [good, bin])
        #expect(r.status == 65 && r.out.isEmpty)
        #expect(r.err == "merge-records: \(bin):1: id: invalid UTF-8 in string at byte 8\n")
    }

    @Test func usageAndMissingInputs() throws {
        let tmp = TempDir()
        let good = tmp.write("good.ndjson", Self.lines([Self.line("g", Self.a, "D")]))
        let one = try Tools.run("merge-records", [good])
        #expect(one.status == 64)
        #expect(one.err.hasPrefix("merge-records: missing REMOTE"))
        let both = try Tools.run("merge-records", ["-", "-"], input: "")
        #expect(both.status == 64)
        let missing = try Tools.run("merge-records", [good, tmp.file("nope.ndjson")])
        #expect(missing.status == 66 && missing.out.isEmpty)
        #expect(missing.err == "merge-records: \(tmp.file("nope.ndjson")): No such file or directory\n")
        let dir = try Tools.run("merge-records", [good, tmp.path])
        #expect(dir.status == 66)
        let modes = try Tools.run("merge-records", ["--db", tmp.file("s.db"), "--stamp", "--export"])
        #expect(modes.status == 64)
        let since = try Tools.run("merge-records", ["--db", tmp.file("s.db"), "--since", "3"])
        #expect(since.status == 64)
        #expect(since.err.hasPrefix("merge-records: --since and --cursor go with --export"))
        #expect(!FileManager.default.fileExists(atPath: tmp.file("s.db")))
    }

    // MARK: Store mode

    static func export(_ db: String) throws -> String {
        let r = try Tools.run("merge-records", ["--db", db, "--export"])
        #expect(r.status == 0)
        return r.out
    }

    @Test func storeModeSummaryExportAndCursor() throws {
        let tmp = TempDir()
        let db = tmp.file("s.db")
        let first = try Tools.run("merge-records", ["--db", db, "--now", Self.now, "-"],
                                  input: Self.lines([Self.line("b", Self.a, "D1"), Self.line("a", Self.a, "D1"), Self.line("c", Self.a, "D1")]))
        #expect(first.status == 0)
        #expect(first.out == #"{"received":3,"applied":3,"keptLocal":0,"unchanged":0,"clamped":0,"resurrected":0,"deleted":0,"purged":0}"# + "\n")
        let cursor = tmp.file("cursor")
        let all = try Tools.run("merge-records", ["--db", db, "--export", "--cursor", cursor])
        #expect(all.lines.count == 3)
        #expect(try String(contentsOfFile: cursor, encoding: .utf8) == "3\n")
        let second = try Tools.run("merge-records", ["--db", db, "--now", Self.now, "--explain"],
                                   input: Self.lines([Self.line("a", Self.b, "D2", deleted: true), Self.line("c", Self.a, "D1"),
                                                      Self.line("b", "2020-01-01T00:00:00Z", "D9")]))
        #expect(second.out == #"{"received":3,"applied":1,"keptLocal":1,"unchanged":1,"clamped":0,"resurrected":0,"deleted":1,"purged":0}"# + "\n")
        #expect(second.err.contains(#"{"line":1,"id":"a","rule":"later-wins","winner":"incoming","clamped":false}"#))
        #expect(second.err.contains(#"{"line":2,"id":"c","rule":"same-version","winner":"held","clamped":false}"#))
        // Full export: sorted by id, tombstones included.
        #expect(try Self.export(db) == Self.lines([Self.line("a", Self.b, "D2", deleted: true), Self.line("b", Self.a, "D1"), Self.line("c", Self.a, "D1")]))
        // Incremental: only what changed since the cursor, then nothing.
        let inc = try Tools.run("merge-records", ["--db", db, "--export", "--cursor", cursor])
        #expect(inc.out == Self.lines([Self.line("a", Self.b, "D2", deleted: true)]))
        #expect(try String(contentsOfFile: cursor, encoding: .utf8) == "4\n")
        #expect(try Tools.run("merge-records", ["--db", db, "--export", "--cursor", cursor]).out.isEmpty)
        #expect(try Tools.run("merge-records", ["--db", db, "--export", "--since", "0"]).lines.count == 3)
        let badSince = try Tools.run("merge-records", ["--db", db, "--export", "--since", "-1"])
        #expect(badSince.status == 64)
        try "junk\n".write(toFile: cursor, atomically: true, encoding: .utf8)
        let badCursor = try Tools.run("merge-records", ["--db", db, "--export", "--cursor", cursor])
        #expect(badCursor.status == 65)
        #expect(badCursor.err == "merge-records: \(cursor):1: cursor: not a change number\n")
        // Exporting a store that does not exist creates nothing.
        let none = try Tools.run("merge-records", ["--db", tmp.file("none.db"), "--export"])
        #expect(none.status == 66)
        #expect(!FileManager.default.fileExists(atPath: tmp.file("none.db")))
    }

    @Test(arguments: badLines)
    func storeModeIsAllOrNothing(bad: String, expected: String) throws {
        let tmp = TempDir()
        let db = tmp.file("s.db")
        _ = try Tools.run("merge-records", ["--db", db, "--now", Self.now], input: Self.lines([Self.line("h", Self.a, "D")]))
        let before = try Self.export(db)
        let input = tmp.write("in.ndjson", Self.lines([Self.line("h", Self.b, "D"), bad, Self.line("new", Self.a, "D")]))
        let r = try Tools.run("merge-records", ["--db", db, "--now", Self.now, input])
        #expect(r.status == 65)
        #expect(r.out.isEmpty)
        #expect(r.err == "merge-records: \(input):\(expected)\n")
        #expect(try Self.export(db) == before)
        let stamped = try Tools.run("merge-records", ["--db", db, "--stamp", input])
        #expect(stamped.status == 65)
        #expect(try Self.export(db) == before)
    }

    @Test func stampAndPhotos() throws {
        let tmp = TempDir()
        let db = tmp.file("s.db")
        let photo = tmp.write("receipt.jpg", "not really a jpeg")
        let added = try Tools.run("merge-records", ["--db", db, "--add-photo", photo, "--add-photo", photo])
        #expect(added.status == 0)
        let hash = Hex.encode(SHA256.hash(Array("not really a jpeg".utf8)))
        #expect(added.lines == [String](repeating: #"{"file":"\#(photo)","sha256":"\#(hash)","size":17}"#, count: 2))
        let edit = #"{"id":"r-9","type":"receipt","data":{"total":"12.50"},"photos":["\#(hash)"]}"#
        let r = try Tools.run("merge-records", ["--db", db, "--stamp", "--now", Self.now], input: edit + "\n")
        #expect(r.status == 0)
        #expect(r.out.hasPrefix(#"{"received":1,"applied":1,"#))
        let out = try Self.export(db)
        let store = try Store(path: db)
        #expect(out == #"{"id":"r-9","type":"receipt","data":{"total":"12.50"},"photos":["\#(hash)"],"modifiedAt":"2026-12-01T00:00:00.000Z","deviceId":"\#(try store.deviceID)","deleted":false}"# + "\n")
        #expect(try store.wantedPhotos() == [])
        #expect(try store.photo(hash) == Array("not really a jpeg".utf8))
        // A missing photo file is no input; an oversized one is bad data; neither adds anything.
        let missing = try Tools.run("merge-records", ["--db", db, "--add-photo", photo, "--add-photo", tmp.file("gone.jpg")])
        #expect(missing.status == 66 && missing.out.isEmpty)
        let big = tmp.file("big.jpg")
        _ = FileManager.default.createFile(atPath: big, contents: nil)
        #expect(truncate(big, off_t(Store.maxPhotoBytes + 1)) == 0)
        let tooBig = try Tools.run("merge-records", ["--db", db, "--add-photo", big])
        #expect(tooBig.status == 65)
        #expect(tooBig.err == "merge-records: \(big): photo of \(Store.maxPhotoBytes + 1) bytes is larger than the limit of \(Store.maxPhotoBytes)\n")
    }

    // MARK: Crashes and concurrency

    /// kill -9 at random moments of large applies: the store stays sound and
    /// holds each batch whole or not at all.
    @Test func killNineLeavesWholeTransactions() throws {
        let tmp = TempDir()
        let db = tmp.file("s.db")
        let seed: UInt64 = 7
        var rng = SplitMix64(seed: seed)
        let perBatch = 40_000
        var outcomes: [Bool] = []
        for run in 0..<5 {
            var text = ""
            text.reserveCapacity(perBatch * 160)
            for i in 0..<perBatch {
                text += #"{"id":"b\#(run)-\#(i)","type":"receipt","modifiedAt":"2026-11-30T10:00:00.000Z","deviceId":"D","deleted":false,"data":{"pad":"\#(String(repeating: "x", count: 60))"}}"# + "\n"
            }
            let input = tmp.write("batch\(run).ndjson", text)
            let p = Process()
            p.executableURL = URL(fileURLWithPath: Tools.path("merge-records"))
            p.arguments = ["--db", db, "--now", Self.now, input]
            p.standardOutput = FileHandle.nullDevice
            p.standardError = FileHandle.nullDevice
            try p.run()
            usleep(UInt32.random(in: 5_000...400_000, using: &rng))
            kill(p.processIdentifier, SIGKILL)
            p.waitUntilExit()
            let store = try Store(path: db)
            #expect(try store.integrityCheck() == "ok")
            let n = try store.db.scalarInt("SELECT count(*) FROM records WHERE id LIKE ?", [.text("b\(run)-%")]) ?? -1
            #expect(n == 0 || n == Int64(perBatch), "seed \(seed), run \(run): \(n) of \(perBatch) records")
            outcomes.append(n == Int64(perBatch))
            // Every earlier batch is still whole.
            for earlier in 0..<run {
                let m = try store.db.scalarInt("SELECT count(*) FROM records WHERE id LIKE ?", [.text("b\(earlier)-%")]) ?? -1
                #expect(m == (outcomes[earlier] ? Int64(perBatch) : 0))
            }
        }
    }

    /// Two processes writing one store at once both succeed: writers wait
    /// for the lock instead of failing with "database is locked". Each round
    /// starts the two writers together (the first round races to create the
    /// store, too), so a writer waits for at most one other transaction: the
    /// test does not depend on how fast the machine is against the store's
    /// busy timeout, which a pile of sanitized processes on a loaded machine
    /// can exceed.
    @Test func twoWritersBothSucceed() throws {
        let tmp = TempDir()
        let db = tmp.file("fresh.db")
        var inputs: [String] = []
        for w in 0..<2 {
            var text = ""
            for i in 0..<4_000 { text += #"{"id":"w\#(w)-\#(i)","type":"receipt","data":{"i":\#(i)}}"# + "\n" }
            inputs.append(tmp.write("w\(w).ndjson", text))
        }
        for round in 0..<3 {
            var procs: [(Process, Pipe, Pipe)] = []
            for w in 0..<2 {
                let p = Process()
                p.executableURL = URL(fileURLWithPath: Tools.path("merge-records"))
                p.arguments = ["--db", db, "--stamp", inputs[w]]
                let out = Pipe(), err = Pipe()
                p.standardOutput = out
                p.standardError = err
                procs.append((p, out, err))
            }
            for (p, _, _) in procs { try p.run() }
            for (p, out, err) in procs {
                let o = out.fileHandleForReading.readDataToEndOfFile()
                let e = err.fileHandleForReading.readDataToEndOfFile()
                p.waitUntilExit()
                #expect(p.terminationStatus == 0, "round \(round): \(String(decoding: e, as: UTF8.self))")
                // Each writer's first round applies its edits; its repeats find the same content held.
                let summary = try JSONParser.parse(String(decoding: o, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
                #expect(summary.int("received") == 4000)
                #expect(summary.int(round == 0 ? "applied" : "unchanged") == 4000, "round \(round): \(summary.serialized)")
            }
        }
        let store = try Store(path: db)
        #expect(try store.recordCounts().live == 8_000)
        #expect(try store.integrityCheck() == "ok")
    }
}
