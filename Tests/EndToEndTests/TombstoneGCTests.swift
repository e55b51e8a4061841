import Foundation
import Testing
import FamilySync

/// tombstone-gc as cron runs it: the summary, the rule, dry runs, and a gc
/// running while another process writes.
@Suite struct TombstoneGCTests {
    static let now = "2026-12-01T00:00:00Z"

    /// A store with `old` tombstones deleted in June and `live` records, both
    /// received then, and `young` tombstones deleted and received in November
    /// (a tombstone's age is how long this store has held it).
    static func seed(_ db: String, old: Int, young: Int, live: Int) throws {
        var text = ""
        for i in 0..<old { text += #"{"id":"t\#(i)","type":"receipt","modifiedAt":"2026-06-01T00:00:00.000Z","deviceId":"D","deleted":true}"# + "\n" }
        for i in 0..<live { text += #"{"id":"l\#(i)","type":"receipt","modifiedAt":"2026-06-01T00:00:00.000Z","deviceId":"D","deleted":false}"# + "\n" }
        let r = try Tools.run("merge-records", ["--db", db, "--now", "2026-06-01T00:00:00Z"], input: text)
        #expect(r.status == 0)
        var late = ""
        for i in 0..<young { late += #"{"id":"y\#(i)","type":"receipt","modifiedAt":"2026-11-01T00:00:00.000Z","deviceId":"D","deleted":true}"# + "\n" }
        let y = try Tools.run("merge-records", ["--db", db, "--now", "2026-11-01T00:00:00Z"], input: late)
        #expect(y.status == 0)
    }

    static func export(_ db: String) throws -> String { try Tools.run("merge-records", ["--db", db, "--export"]).out }

    @Test func purgesOldTombstonesAndSaysSo() throws {
        let tmp = TempDir()
        let db = tmp.file("s.db")
        try Self.seed(db, old: 4, young: 2, live: 3)
        let r = try Tools.run("tombstone-gc", ["--db", db, "--now", Self.now])
        #expect(r.status == 0)
        #expect(r.err.isEmpty)  // quiet for cron
        #expect(r.out == #"{"purged":4,"keptYoung":2,"keptUnacknowledged":0,"heldBackBy":[],"oldestKept":"2026-11-01T00:00:00.000Z","offersCleared":0,"photosPurged":0,"photoBytesFreed":0,"dryRun":false}"# + "\n")
        #expect(try Self.export(db).split(separator: "\n").count == 5)
        // Idempotent.
        let again = try Tools.run("tombstone-gc", ["--db", db, "--now", Self.now])
        #expect(again.out.hasPrefix(#"{"purged":0,"keptYoung":2,"#))
        // A shorter horizon takes the young ones as well.
        let short = try Tools.run("tombstone-gc", ["--db", db, "--now", Self.now, "--older-than", "14d"])
        #expect(short.out.hasPrefix(#"{"purged":2,"keptYoung":0,"keptUnacknowledged":0,"heldBackBy":[],"oldestKept":null"#))
    }

    @Test func dryRunChangesNothingAndVerboseTalks() throws {
        let tmp = TempDir()
        let db = tmp.file("s.db")
        try Self.seed(db, old: 3, young: 1, live: 1)
        let before = try Self.export(db)
        let r = try Tools.run("tombstone-gc", ["--db", db, "--now", Self.now, "--dry-run", "--verbose"])
        #expect(r.status == 0)
        #expect(r.out.hasPrefix(#"{"purged":3,"keptYoung":1,"#))
        #expect(r.out.contains(#""dryRun":true"#))
        #expect(r.err.contains("tombstone-gc: longest write transaction"))
        #expect(try Self.export(db) == before)
        let v = try Tools.run("tombstone-gc", ["--db", db, "--now", Self.now, "-v"])
        #expect(v.err.contains("tombstone-gc: purged 3 tombstones among rows 1-"))
    }

    @Test func unacknowledgedTombstonesNameTheDevice() throws {
        let tmp = TempDir()
        let db = tmp.file("s.db")
        try Self.seed(db, old: 3, young: 0, live: 0)
        do {
            let store = try Store(path: db)
            try store.db.run("INSERT INTO devices (device_id, role, name, joined_at, sent_seq, last_synced_at) VALUES ('PHONE', 'member', 'Kid''s phone', 0, 2, ?)",
                             [.int(Timestamp(rfc3339: "2026-11-29T08:00:00Z")!.milliseconds)])
        }
        let r = try Tools.run("tombstone-gc", ["--db", db, "--now", Self.now])
        #expect(r.status == 0)
        #expect(r.out == #"{"purged":2,"keptYoung":0,"keptUnacknowledged":1,"heldBackBy":[{"deviceId":"PHONE","role":"member","name":"Kid's phone","sentSeq":2,"lastSyncedAt":"2026-11-29T08:00:00.000Z","tombstones":1}],"oldestKept":"2026-06-01T00:00:00.000Z","offersCleared":0,"photosPurged":0,"photoBytesFreed":0,"dryRun":false}"# + "\n")
    }

    /// The horizon counts from when this store got a delete: one stamped a
    /// year ago by a slow clock, received a day ago, is young here.
    @Test func aDeleteFromASlowClockIsYoungWhereItArrived() throws {
        let tmp = TempDir()
        let db = tmp.file("s.db")
        let line = #"{"id":"slow","type":"receipt","modifiedAt":"2025-11-01T00:00:00.000Z","deviceId":"SLOW","deleted":true}"# + "\n"
        #expect(try Tools.run("merge-records", ["--db", db, "--now", "2026-11-30T00:00:00Z"], input: line).status == 0)
        let r = try Tools.run("tombstone-gc", ["--db", db, "--now", Self.now])
        #expect(r.out.hasPrefix(#"{"purged":0,"keptYoung":1,"#), "\(r.out)")
        let later = try Tools.run("tombstone-gc", ["--db", db, "--now", "2027-03-02T00:00:00Z"])
        #expect(later.out.hasPrefix(#"{"purged":1,"#), "\(later.out)")
        // Its purge record keeps an old copy out.
        let back = try Tools.run("merge-records", ["--db", db, "--now", "2027-03-02T00:00:00Z"],
                                 input: #"{"id":"slow","type":"receipt","modifiedAt":"2025-10-01T00:00:00.000Z","deviceId":"X","deleted":false}"# + "\n")
        #expect(back.out.contains(#""purged":1"#), "\(back.out)")
        #expect(try Self.export(db).isEmpty)
    }

    @Test func usageAndMissingStore() throws {
        let tmp = TempDir()
        let none = try Tools.run("tombstone-gc", ["--db", tmp.file("none.db")])
        #expect(none.status == 66)
        #expect(none.out.isEmpty)
        #expect(none.err == "tombstone-gc: no store at \(tmp.file("none.db"))\n")
        #expect(!FileManager.default.fileExists(atPath: tmp.file("none.db")))
        let bad = try Tools.run("tombstone-gc", ["--db", tmp.file("none.db"), "--older-than", "ninety"])
        #expect(bad.status == 64)
        #expect(bad.err.hasPrefix("tombstone-gc: --older-than: 'ninety' is not a duration"))
        let extra = try Tools.run("tombstone-gc", ["--db", tmp.file("none.db"), "junk"])
        #expect(extra.status == 64)
        let notStore = tmp.write("text.db", "hello, not a database at all, long enough to have a header of sorts............................................")
        let r = try Tools.run("tombstone-gc", ["--db", notStore])
        #expect(r.status == 65)
        #expect(r.err.contains("is not a family-sync store"))
    }

    /// gc and a writer in two processes at once: both succeed, nothing that
    /// should stay is lost, and the store is sound.
    @Test func concurrentGCAndWriter() throws {
        let tmp = TempDir()
        let db = tmp.file("s.db")
        try Self.seed(db, old: 30_000, young: 10, live: 10)
        var edits = ""
        for i in 0..<3_000 { edits += #"{"id":"e\#(i)","type":"receipt","data":{"i":\#(i)}}"# + "\n" }
        let editsFile = tmp.write("edits.ndjson", edits)
        func start(_ tool: String, _ args: [String]) throws -> (Process, Pipe, Pipe) {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: Tools.path(tool))
            p.arguments = args
            let o = Pipe(), e = Pipe()
            p.standardOutput = o
            p.standardError = e
            try p.run()
            return (p, o, e)
        }
        let gc = try start("tombstone-gc", ["--db", db, "--now", Self.now])
        var writers: [(Process, Pipe, Pipe)] = []
        for _ in 0..<3 { writers.append(try start("merge-records", ["--db", db, "--stamp", editsFile])) }
        for (p, o, e) in [gc] + writers {
            let out = String(decoding: o.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            let err = String(decoding: e.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            p.waitUntilExit()
            #expect(p.terminationStatus == 0, "\(err)")
            #expect(err.isEmpty)
            #expect(!out.isEmpty)
        }
        let store = try Store(path: db)
        #expect(try store.integrityCheck() == "ok")
        let counts = try store.recordCounts()
        #expect(counts.live == 3_010)
        #expect(counts.tombstones == 10)
    }
}
