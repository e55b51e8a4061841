import Foundation
import Testing
@testable import FamilySync

/// The record-state digest is kept current by every write to the records
/// table (RecordStateDigest.swift): after any mix of remote applies, local
/// edits and deletes, clamped versions adopted, tombstones purged and
/// records dropped as purged elsewhere, the kept digest equals the one
/// computed afresh from the rows, and it depends on the state only.
@Suite struct RecordStateDigestTests {
    static let now = "2026-12-01T00:00:00Z"

    @Test func anEmptyStoreAndOneRecordMatchTheDefinition() throws {
        let (store, dir) = try RT.store()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        #expect(try store.recordStateDigest() == String(repeating: "0", count: 64))
        let line = RT.line("r-1", "2026-11-30T10:00:00.000Z", "D1")
        _ = try RT.apply(store, line)
        // One record: the sum of one term is SHA-256(id ‖ 0x00 ‖ line ‖ 0x0A) itself.
        #expect(try store.recordStateDigest() == Hex.encode(SHA256.hash(Array("r-1".utf8) + [0] + Array(line.utf8) + [0x0A])))
    }

    @Test(arguments: Array(UInt64(1)...12))
    func theKeptDigestFollowsEveryKindOfWrite(seed: UInt64) throws {
        var rng = SplitMix64(seed: seed)
        let (store, dir) = try RT.store()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        func check(_ step: String) throws {
            #expect(try store.recordStateDigest() == store.recomputedRecordStateDigest(), "seed \(seed), after \(step)")
        }
        let ids = (0..<30).map { "r-\($0)" } + ["ü", "a\"b"]
        let days = ["2026-06-01", "2026-08-15", "2026-11-30"]
        for round in 0..<12 {
            switch Int.random(in: 0..<5, using: &rng) {
            case 0, 1:
                // Remote versions, some later than the clamp allows.
                let lines = (0..<Int.random(in: 1...20, using: &rng)).map { _ in
                    let day = Int.random(in: 0..<5, using: &rng) == 0 ? "2027-01-01" : days.randomElement(using: &rng)!
                    return RT.line(ids.randomElement(using: &rng)!, "\(day)T10:00:00.\(100 + round)Z", ["D1", "D2"].randomElement(using: &rng)!,
                                   deleted: Int.random(in: 0..<3, using: &rng) == 0, data: "{\"n\":\(round)}")
                }
                _ = try RT.apply(store, lines.joined(separator: "\n"), now: Self.now)
                try check("remote applies")
            case 2:
                // Local edits and deletes (a delete by id alone of a held record).
                let held = try store.exportRecords(afterSeq: 0, limit: 1000).lines.compactMap { try? Record(line: $0) }.filter { !$0.deleted }
                var lines = (0..<Int.random(in: 1...5, using: &rng)).map { _ in
                    "{\"id\":\"\(ids.randomElement(using: &rng)!.replacingOccurrences(of: "\"", with: "\\\""))\",\"type\":\"receipt\",\"data\":{\"edit\":\(round)}}"
                }
                if let victim = held.randomElement(using: &rng) { lines.append(JSONValue.object([("id", .string(victim.id)), ("deleted", .bool(true))]).serialized) }
                _ = try RT.apply(store, lines.joined(separator: "\n"), stamping: true, now: Self.now)
                try check("local edits")
            case 3:
                // The family's clock is behind: this device's versions go out pulled back and are kept so here.
                let limit = RT.t("2026-11-30T00:00:00Z").milliseconds
                let b = try store.exportRecordBatch(after: 0, upTo: try store.currentChangeSeq, maxCount: 1000, maxBytes: 1 << 20,
                                                    bound: OwnVersionBound(limit: limit))
                _ = try store.write { try store.adoptClampedInTransaction(b.clamped) }
                try check("clamped versions adopted")
            default:
                // Tombstones purged by age, then old records dropped as purged elsewhere.
                _ = try store.collectGarbage(now: RT.t("2027-03-01T00:00:00Z"))
                try check("garbage collection")
                let named = ids.filter { _ in Bool.random(using: &rng) }
                let batch = PurgeEntry.encode(named.map { PurgeEntry(idHash: PurgeEntry.hash($0), deletedAt: RT.t("2026-07-01T00:00:00Z").milliseconds) })
                _ = try batch.withUnsafeBytes { b in try store.write { try store.applyPurgeBatch(b) } }
                try check("records dropped by the owner's purge records")
            }
        }
        // The state alone decides: a store given the same rows in another order has the same digest.
        let (other, dir2) = try RT.store()
        defer { try? FileManager.default.removeItem(atPath: dir2) }
        let lines = try store.exportRecords(afterSeq: 0, limit: 1000).lines.shuffled(using: &rng)
        _ = try other.applyRemote(try lines.map { try Record(line: $0) }, now: RT.t("9000-01-01T00:00:00Z"))
        #expect(try other.recordStateDigest() == store.recordStateDigest(), "seed \(seed)")
    }

    /// A store from before the kept digest (schema version 2) gets it computed once, on opening.
    @Test func aStoreFromVersionTwoGetsItsDigestOnOpening() throws {
        let (store, dir) = try RT.store()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        _ = try RT.apply(store, (0..<50).map { RT.line("r-\($0)", "2026-11-30T10:00:00.000Z", "D1") }.joined(separator: "\n"))
        let expected = try store.recomputedRecordStateDigest()
        try store.db.execute("""
            UPDATE meta SET value = '\(String(repeating: "f", count: 64))' WHERE key = 'record_digest';
            ALTER TABLE records DROP COLUMN prev_at; ALTER TABLE records DROP COLUMN came_from; ALTER TABLE records DROP COLUMN came_seq;
            DROP TABLE purge_batches; DROP TABLE seq_clock; ALTER TABLE photos ADD COLUMN bytes BLOB; PRAGMA user_version = 2
            """)
        let reopened = try Store(path: store.path)
        #expect(try reopened.db.scalarInt("PRAGMA user_version") == Int64(Schema.currentVersion))
        #expect(try reopened.recordStateDigest() == expected)
    }

    /// design.md §2: a record line holds no CR. A store from version 4 whose
    /// lines kept a CR between tokens has each such CR made a space on opening
    /// (the same JSON, so no value is lost), and its kept digest follows.
    @Test func aStoreFromVersionFourLosesItsCRsBetweenTokens() throws {
        let (store, dir) = try RT.store()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        _ = try RT.apply(store, (0..<5).map { RT.line("r-\($0)", "2026-11-30T10:00:00.000Z", "D1") }.joined(separator: "\n"))
        // As an earlier build kept it: a CR after a comma and before the closing brace.
        try store.db.execute("""
            UPDATE records SET line = replace(replace(line, ',"type"', ','||char(13)||'"type"'), '}', char(13)||'}') WHERE id IN ('r-1', 'r-3');
            ALTER TABLE records DROP COLUMN came_from; ALTER TABLE records DROP COLUMN came_seq;
            ALTER TABLE photos ADD COLUMN bytes BLOB; PRAGMA user_version = 4
            """)
        let crLines = try store.db.scalarInt("SELECT count(*) FROM records WHERE instr(line, char(13)) > 0")
        #expect(crLines == 2)
        let reopened = try Store(path: store.path)
        #expect(try reopened.db.scalarInt("PRAGMA user_version") == Int64(Schema.currentVersion))
        #expect(try reopened.db.scalarInt("SELECT count(*) FROM records WHERE instr(line, char(13)) > 0") == 0)
        #expect(try reopened.recordStateDigest() == reopened.recomputedRecordStateDigest())
        for line in try reopened.exportRecords(afterSeq: 0, limit: 10).lines {
            #expect(throws: Never.self) { try Record(line: line) }
        }
        #expect(try reopened.exportRecords(afterSeq: 0, limit: 10).lines.filter { $0.contains(", \"type\"") }.count == 2)
    }
}
