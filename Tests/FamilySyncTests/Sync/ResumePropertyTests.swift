import Foundation
import Testing
@testable import FamilySync

/// Resuming a session that was cut off (docs/protocol.md §7.4b), hunted for
/// on random households: an owner and a member with up to a few hundred
/// records each, sessions cut after a random number of bytes (so either side
/// may have applied any number of the other's batches, batches of 1 to 25
/// records), edits and deletes on either side between the cuts, and, in some
/// schedules, stores backed up and restored from the copies, either side's.
/// The invariants:
/// - **resumed exactly**: while no store was restored, a completed session
///   (unless the cut before it fell between the two DONEs, §8)
///   sends each way exactly the records the other side lacks, none it holds
///   byte for byte, however many sessions before it were cut off where;
/// - **nothing skipped**: after any completed session, restores included,
///   each side holds every record the other made, at that version or newer
///   (or the same edit earlier-dated: the owner's copy stands, §7.4)
///   (a sender whose store went back to a copy never takes a point of the
///   receiver's for more than its store holds);
/// - **convergence**: after two completed sessions the two stores are the same.
/// A failure prints its seed and the schedule's last steps;
/// `FAMILY_SYNC_SCHEDULES=N` runs N schedules instead of the default.
@Suite struct ResumePropertyTests {
    static var scheduleCount: Int { Int(ProcessInfo.processInfo.environment["FAMILY_SYNC_SCHEDULES"] ?? "") ?? 150 }

    @Test func cutOffSessionsResumeExactlyAndRestoresSkipNothing() throws {
        if let one = ProcessInfo.processInfo.environment["FAMILY_SYNC_SEED"].flatMap(UInt64.init) { return try Self.run(seed: one) }
        for seed in 1...Self.scheduleCount {
            try Self.run(seed: UInt64(seed))
        }
    }

    /// The state the schedules above reach only by chance, built directly: the
    /// owner applied a chain's batches up to a point, the member's store then
    /// went back to a copy from before them, made new changes whose numbers
    /// fall below that point, marked them in a session the owner applied none
    /// of, and now connects. The owner's point counts the old numbering; going
    /// on from the lower of the two points would skip the new changes.
    @Test func aSenderRestoredFromACopyResendsWhatItsReusedNumbersName() throws {
        let h = try InProcessHousehold(members: 1, start: Timestamp(rfc3339: "2026-05-01T00:00:00.000Z")!)
        let m = h.members[0]
        try h.edit(m, (1...3).map { "{\"id\":\"m-\($0)\",\"type\":\"note\",\"data\":{}}" })
        _ = try h.sync(m)
        let after = try Store(path: m.path).sentCursor(to: h.owner.id)
        h.now = h.now.adding(.seconds(1))
        try h.edit(m, (4...8).map { "{\"id\":\"m-\($0)\",\"type\":\"note\",\"data\":{}}" })
        let marked = try Store(path: m.path).currentChangeSeq
        #expect(marked > after)
        let chain = try RandomName.make()
        let (ms, os) = (try Store(path: m.path), try Store(path: h.owner.path))
        try ms.write { try ms.setResumePointInTransaction(ResumePoint(chain: chain, after: after, upTo: marked), peer: h.owner.id, .outgoing) }
        try os.write { try os.setResumePointInTransaction(ResumePoint(chain: chain, after: after, upTo: marked + 10), peer: m.id, .incoming) }
        let s = try h.sync(m)
        #expect(!s.client.recordsResumed)
        #expect(s.client.recordsSent == 5)
        let held = try InProcessHousehold.rows(h.owner.path)
        #expect((4...8).allSatisfy { held["m-\($0)"] != nil }, "the owner lacks records the member's new numbers name")
        #expect(try os.resumePoint(m.id, .incoming) == nil && ms.resumePoint(h.owner.id, .outgoing) == nil, "a completed session ends the chain")
    }

    /// A record line without its time: what makes two versions one edit.
    static func content(_ line: String) -> String {
        line.replacingOccurrences(of: #""modifiedAt":"[^"]*""#, with: "", options: .regularExpression)
    }

    typealias Rows = [String: (time: Int64, deleted: Bool, device: String, line: String)]

    static func run(seed: UInt64) throws {
        var rng = SplitMix64(seed: seed)
        let h = try InProcessHousehold(members: 1, start: Timestamp(rfc3339: "2026-05-01T00:00:00.000Z")!)
        h.options.recordBatchCount = Int.random(in: 1...25, using: &rng)
        let m = h.members[0]
        let withRestores = Int.random(in: 0..<3, using: &rng) == 0
        var log: [String] = ["batches of \(h.options.recordBatchCount)"]
        func fail(_ what: String) -> String { "seed \(seed): \(what); last steps: \(log.suffix(40).joined(separator: " | "))" }
        // Each side edits only ids of its own prefix, so what one side lacks is plain to see.
        var made: [String: Int] = ["o": 0, "m": 0]
        func edit(_ d: InProcessHousehold.Device, count: Int) throws {
            let prefix = d.isOwner ? "o" : "m"
            let held = try InProcessHousehold.rows(d.path).keys.filter { $0.hasPrefix(prefix + "-") }.sorted()
            var lines: [String] = []
            for _ in 0..<count {
                switch Int.random(in: 0..<6, using: &rng) {
                case 0 where !held.isEmpty:
                    lines.append("{\"id\":\"\(held.randomElement(using: &rng)!)\",\"deleted\":true}")
                case 1 where !held.isEmpty, 2 where !held.isEmpty:
                    lines.append("{\"id\":\"\(held.randomElement(using: &rng)!)\",\"type\":\"note\",\"data\":{\"v\":\(Int.random(in: 0...999, using: &rng))}}")
                default:
                    made[prefix, default: 0] += 1
                    lines.append("{\"id\":\"\(prefix)-\(made[prefix]!)\",\"type\":\"note\",\"data\":{\"text\":\"note \(made[prefix]!) of seed \(seed)\"}}")
                }
            }
            // An id edited twice in one input keeps its last line; each step's edits are a second later than the last's.
            h.now = h.now.adding(.seconds(1))
            try h.edit(d, lines)
            log.append("\(count) edits on \(prefix)")
        }
        func lacking(_ from: Rows, _ to: Rows, prefix: String) -> Int {
            from.filter { $0.key.hasPrefix(prefix + "-") && to[$0.key]?.line != $0.value.line }.count
        }
        var restored = false
        var halfCompleted = false
        func lastSynced() throws -> (Int64?, Int64?) {
            (try Store(path: h.owner.path).device(m.id)?.lastSyncedAt?.milliseconds, try Store(path: m.path).device(h.owner.id)?.lastSyncedAt?.milliseconds)
        }
        var backups: [String: String] = [:]
        // A completed session and what it must have sent.
        func completed(_ s: (client: SyncSummary, server: SyncSummary)?, before: (owner: Rows, member: Rows)) throws {
            let (o, mm) = (try InProcessHousehold.rows(h.owner.path), try InProcessHousehold.rows(m.path))
            defer { halfCompleted = false }
            if !restored, !halfCompleted, let s {
                // And the owner's copies of the member's edits it holds earlier-dated go back (§7.4).
                let kept = before.member.filter { id, r in
                    id.hasPrefix("m-") && before.owner[id].map { $0.time < r.time && $0.device == r.device && Self.content($0.line) == Self.content(r.line) } == true
                }.count
                let ownerLacked = lacking(before.member, before.owner, prefix: "m"), memberLacked = lacking(before.owner, before.member, prefix: "o") + kept
                #expect(s.server.recordsSent == Int64(memberLacked), "\(fail("the owner sent \(s.server.recordsSent) records, the member lacked \(memberLacked)"))")
                #expect(s.client.recordsSent == Int64(ownerLacked), "\(fail("the member sent \(s.client.recordsSent) records, the owner lacked \(ownerLacked)"))")
                #expect(s.client.localDigest == s.client.peerDigest, "\(fail("the stores differ after a completed session"))")
            }
            // The same edit held earlier-dated counts as held: the owner keeps its copy of a member's
            // edit sent again later-dated (a restored member), and the member takes it next (§7.4).
            func holds(_ rows: Rows, _ id: String, _ r: (time: Int64, deleted: Bool, device: String, line: String)) -> Bool {
                guard let h = rows[id] else { return false }
                return h.time >= r.time || (h.device == r.device && Self.content(h.line) == Self.content(r.line))
            }
            for (id, r) in o where id.hasPrefix("o-") {
                #expect(holds(mm, id, r), "\(fail("the member lacks the owner's \(id) after a completed session: it holds \(mm[id]?.line ?? "nothing"), the owner \(r.line)"))")
            }
            for (id, r) in mm where id.hasPrefix("m-") {
                #expect(holds(o, id, r), "\(fail("the owner lacks the member's \(id) after a completed session: it holds \(o[id]?.line ?? "nothing"), the member \(r.line)"))")
            }
        }
        func sync() throws {
            let before = (try InProcessHousehold.rows(h.owner.path), try InProcessHousehold.rows(m.path))
            let s = try h.sync(m)
            log.append("sync\(s.server.recordsResumed ? " (owner resumed)" : "")\(s.client.recordsResumed ? " (member resumed)" : "")")
            try completed(s, before: before)
        }

        try edit(h.owner, count: Int.random(in: 0...300, using: &rng))
        try edit(m, count: Int.random(in: 0...120, using: &rng))
        if Bool.random(using: &rng) {
            try sync()
            try edit(h.owner, count: Int.random(in: 0...150, using: &rng))
            try edit(m, count: Int.random(in: 0...60, using: &rng))
        }
        // The hard case, often: a store copied, then edits, sessions cut after they delivered some,
        // the store restored from the copy (its change numbers now name other changes), new edits.
        let race = withRestores && Bool.random(using: &rng) ? (Bool.random(using: &rng) ? h.owner : m) : nil
        var script: [Int] = race == nil ? [] : [8] + [5] + Array(repeating: 0, count: Int.random(in: 1...3, using: &rng)) + [10, 5]
        for _ in 0..<Int.random(in: 1...(withRestores ? 12 : 8), using: &rng) + script.count {
            let step = script.isEmpty ? Int.random(in: 0..<(withRestores ? 12 : 8), using: &rng) : script.removeFirst()
            switch step {
            case 0...4:
                // About 100 bytes a record each way, and the session's opening.
                let records = try InProcessHousehold.rows(h.owner.path).count + InProcessHousehold.rows(m.path).count
                let cut = Int.random(in: 200...max(400, 3000 + records * 100), using: &rng)
                let before = (try InProcessHousehold.rows(h.owner.path), try InProcessHousehold.rows(m.path))
                let synced = try lastSynced()
                if try h.interruptedSync(m, cutAfter: cut) {
                    log.append("cut after \(cut) bytes, but completed")
                    // It completed: its summaries are not at hand, but nothing may be skipped either.
                    try completed(nil, before: before)
                } else if try lastSynced() != synced {
                    // The cut fell between the two DONEs: one side moved its cursors, the other did not.
                    // Neither can tell what the other holds, so the next session sends everything (§8).
                    halfCompleted = true
                    log.append("cut after \(cut) bytes, between the DONEs")
                } else {
                    log.append("cut after \(cut) bytes")
                }
            case 5, 6:
                try edit(race ?? (Bool.random(using: &rng) ? h.owner : m), count: Int.random(in: 1...40, using: &rng))
            case 7:
                try sync()
            case 8, 9:
                let d = race ?? (Bool.random(using: &rng) ? h.owner : m)
                let copy = h.dir + "/copy-\(d.isOwner ? "o" : "m")-\(log.count).db"
                _ = try Store(path: d.path).backup(to: copy)
                backups[d.path] = copy
                log.append("backup \(d.isOwner ? "owner" : "member")")
            case 10, 11:
                let d = race ?? (Bool.random(using: &rng) ? h.owner : m)
                if let copy = backups[d.path] {
                    try h.restore(d, from: copy)
                    restored = true
                    log.append("restore \(d.isOwner ? "owner" : "member")")
                }
            default:
                break
            }
        }
        try sync()
        try sync()
        #expect(try InProcessHousehold.digest(h.owner.path) == InProcessHousehold.digest(m.path), "\(fail("the stores differ after two completed sessions"))")
    }
}
