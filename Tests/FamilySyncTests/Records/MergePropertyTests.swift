import Foundation
import Testing
@testable import FamilySync

/// Seeded randomized properties of the merge: commutative (clamp aside),
/// idempotent, and any order of several devices' logs converges — in the
/// pure merge and in the store alike. A failure names its seed.
@Suite struct MergePropertyTests {
    static let seeds: [UInt64] = Array(1...24)
    /// No clamp can apply before this.
    static let farFuture = "9000-01-01T00:00:00Z"

    static let ids = ["r-1", "r-2", "r-3", "ü", "日本", "a\"b", "Z", "z", "r-10", "r-100"]
    static let times = ["2026-11-30T10:00:00.000Z", "2026-11-30T10:00:00.001Z", "2026-11-30T10:00:01.000Z",
                        "2026-11-30T11:00:00+01:00", "2026-12-01T00:00:00.000Z"]
    static let devices = ["D1", "D2", "d1", "é"]

    /// A random log; a version's bytes depend only on the version, so equal versions are equal lines.
    static func log(_ rng: inout SplitMix64, count: Int) -> [String] {
        (0..<count).map { _ in
            let id = ids.randomElement(using: &rng)!, t = times.randomElement(using: &rng)!, d = devices.randomElement(using: &rng)!
            let deleted = Int.random(in: 0..<4, using: &rng) == 0
            return RT.line(id, t, d, deleted: deleted, data: JSONValue.object([("v", .string("\(id)|\(RT.t(t).rfc3339)|\(d)"))]).serialized)
        }
    }

    static func text(_ lines: [String]) -> String { lines.joined(separator: "\n") }

    @Test(arguments: seeds)
    func commutative(seed: UInt64) throws {
        var rng = SplitMix64(seed: seed)
        let a = Self.text(Self.log(&rng, count: 30)), b = Self.text(Self.log(&rng, count: 30))
        #expect(try RT.merge(a, b, now: Self.farFuture) == RT.merge(b, a, now: Self.farFuture), "seed \(seed)")
    }

    @Test(arguments: seeds)
    func idempotent(seed: UInt64) throws {
        var rng = SplitMix64(seed: seed)
        let a = Self.text(Self.log(&rng, count: 30)), b = Self.text(Self.log(&rng, count: 30))
        let m = try RT.merge(a, b, now: "2026-11-30T12:00:00Z")  // some clamping happens here
        #expect(try RT.merge(m, m) == m, "seed \(seed)")
        #expect(try RT.merge(m, b, now: "2026-11-30T12:00:00Z") == m, "seed \(seed)")
        #expect(try RT.merge(a, a, now: Self.farFuture) == RT.merge(a, "", now: Self.farFuture), "seed \(seed)")
    }

    @Test(arguments: seeds)
    func anyOrderConverges(seed: UInt64) throws {
        var rng = SplitMix64(seed: seed)
        let logs = (0..<4).map { _ in Self.text(Self.log(&rng, count: 25)) }
        var results = Set<String>()
        for _ in 0..<6 {
            let order = logs.shuffled(using: &rng)
            var m = ""
            for l in order { m = try RT.merge(m, l, now: Self.farFuture) }
            results.insert(m)
        }
        #expect(results.count == 1, "seed \(seed)")
        // A single merge of everything agrees with the folds.
        let all = try RT.merge(logs.joined(separator: "\n"), "", now: Self.farFuture)
        #expect(results.first == all, "seed \(seed)")

        // The store, fed the logs in random orders and pieces, holds the same state.
        let (store, dir) = try RT.store()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        for l in logs.shuffled(using: &rng) {
            var lines = l.split(separator: "\n").map(String.init)
            lines.shuffle(using: &rng)
            let cut = Int.random(in: 0...lines.count, using: &rng)
            _ = try RT.apply(store, Self.text(Array(lines[..<cut])), now: Self.farFuture)
            _ = try store.applyRemote(try lines[cut...].map { try Record(line: $0) }, now: RT.t(Self.farFuture))
        }
        #expect(try RT.export(store) == all, "seed \(seed)")

        // Two stores that exchanged everything hold the same digest.
        let (other, dir2) = try RT.store()
        defer { try? FileManager.default.removeItem(atPath: dir2) }
        _ = try RT.apply(other, all, now: Self.farFuture)
        #expect(try other.recordStateDigest() == store.recordStateDigest(), "seed \(seed)")
    }

    @Test(arguments: seeds.prefix(8))
    func storeApplyIsIdempotent(seed: UInt64) throws {
        var rng = SplitMix64(seed: seed)
        let a = Self.text(Self.log(&rng, count: 40))
        let (store, dir) = try RT.store()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        _ = try RT.apply(store, a, now: Self.farFuture)
        let digest = try store.recordStateDigest()
        let seq = try store.currentChangeSeq
        let again = try RT.apply(store, a, now: Self.farFuture)
        #expect(again.applied == 0, "seed \(seed)")
        #expect(again.unchanged + again.keptLocal == again.received, "seed \(seed)")
        #expect(try store.recordStateDigest() == digest, "seed \(seed)")
        #expect(try store.currentChangeSeq == seq, "seed \(seed)")
    }
}

/// The parallel path of the pure merge (inputs cut in many chunks) agrees
/// with the single-chunk one, and counts lines across chunk boundaries.
@Suite struct MergeChunkTests {
    static func merge(_ l: String, _ r: String, chunkBytes: Int) throws -> String {
        var out: [UInt8] = []
        _ = try RecordMerge.merge(local: RecordInput(name: "L", data: Array(l.utf8)), remote: RecordInput(name: "R", data: Array(r.utf8)),
                                  now: RT.t("9000-01-01T00:00:00Z"), chunkBytes: chunkBytes, explain: nil) { out.append(contentsOf: $0) }
        return String(decoding: out, as: UTF8.self)
    }

    @Test(arguments: [64, 300, 1000, 4096])
    func chunkedMergeAgrees(chunkBytes: Int) throws {
        var rng = SplitMix64(seed: UInt64(chunkBytes))
        let l = MergePropertyTests.text(MergePropertyTests.log(&rng, count: 200))
        let r = MergePropertyTests.text(MergePropertyTests.log(&rng, count: 200))
        #expect(try Self.merge(l, r, chunkBytes: chunkBytes) == Self.merge(l, r, chunkBytes: 1 << 30))
        #expect(RecordMerge.chunks(of: UnsafeRawBufferPointer(start: UnsafeRawPointer(bitPattern: 1), count: 0), chunkBytes: chunkBytes).isEmpty)
    }

    @Test(arguments: [64, 500])
    func errorLineNumbersSpanChunks(chunkBytes: Int) throws {
        var lines = (0..<100).map { RT.line("id\($0)", "2026-11-30T10:00:00Z", "D") }
        lines[77] = #"{"id":"x","type":"t","modifiedAt":"2026-11-30T10:00:00Z","deviceId":"D","deleted":1}"#
        lines[90] = "also bad"
        func message(_ body: () throws -> String) -> String? {
            do { _ = try body(); return nil } catch let e as RecordLineError { return "\(e.kind) \(e)" } catch { return "\(error)" }
        }
        #expect(message { try Self.merge("", lines.joined(separator: "\n"), chunkBytes: chunkBytes) } == "line R:78: deleted: not true or false")
        // A bad LOCAL line is reported before any REMOTE one.
        #expect(message { try Self.merge("\n\nnope", lines.joined(separator: "\n"), chunkBytes: chunkBytes) } == "line L:3: not JSON: invalid literal at byte 1")
    }

    @Test func longSharedPrefixesSortByFullId() throws {
        var rng = SplitMix64(seed: 42)
        let ids = (0..<300).map { "receipt-2026-11-\(String(format: "%05d", $0))" }
        let l = ids.shuffled(using: &rng).map { RT.line($0, "2026-11-30T10:00:00Z", "D") }.joined(separator: "\n")
        let out = try Self.merge(l, "", chunkBytes: 1 << 30).split(separator: "\n").map { try Record(line: String($0)).id }
        #expect(out == ids)
    }
}
