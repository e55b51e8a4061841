import Foundation
import Testing
@testable import FamilySync

/// The session's checkpointer: the log stays bounded while one connection
/// keeps writing, the store stays sound, and automatic checkpoints come back.
@Suite struct BackgroundCheckpointerTests {
    func fileSize(_ p: String) -> Int64 {
        ((try? FileManager.default.attributesOfItem(atPath: p)[.size]) as? NSNumber)?.int64Value ?? 0
    }

    @Test func keepsTheLogBoundedWhileWriting() throws {
        let d = TempFolder("fs-store")
        let p = d.path + "/store.db"
        let store = try Store(path: p)
        let before = try store.db.scalarInt("PRAGMA wal_autocheckpoint")
        let pageSize = try #require(try store.db.scalarInt("PRAGMA page_size"))
        let hard = 16 * pageSize
        // The log starts empty (the new store's schema pages out of it): what is measured is its growth while writing.
        try store.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        let c = try #require(BackgroundCheckpointer.start(for: store.db, stepBytes: 4 * pageSize, hardLimitBytes: hard))
        #expect(try store.db.scalarInt("PRAGMA wal_autocheckpoint") == 0)
        var largest: Int64 = 0
        // Large values, each its own commit, as a session's batches are (photo bytes go to the photo file, not here).
        let filler = String(repeating: "x", count: Int(pageSize) * 3)
        for i in 0..<60 {
            try store.write { try store.setMeta("filler-\(i)", "\(i)" + filler) }
            largest = max(largest, fileSize(p + "-wal"))
        }
        c.stop()
        // Without the checkpointer the log would hold all 60 values (180+ pages).
        #expect(largest > 0)
        #expect(largest < 2 * hard, "the log grew to \(largest) bytes")
        #expect(try store.db.scalarInt("PRAGMA wal_autocheckpoint") == before)
        #expect(try store.db.scalarInt("SELECT count(*) FROM meta WHERE key LIKE 'filler-%'") == 60)
        #expect(try store.integrityCheck() == "ok")
    }
}
