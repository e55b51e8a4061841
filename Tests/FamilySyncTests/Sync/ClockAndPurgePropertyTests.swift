import Foundation
import Testing
@testable import FamilySync

/// Revision 3's guarantees (docs/design.md §3, §4; docs/protocol.md §4.5,
/// §7.4), hunted for on random star households of 2 to 4 devices over
/// simulated months: every device's clock is off by up to a year and jumps
/// (±30 and ±100 days), devices go offline for longer than the horizon, are
/// revoked and join again, stores are backed up and restored (the owner's
/// too), sessions are cut off part way (a link dropped after a random number
/// of bytes), bundles (§12b) carry data both ways with no session at all, their
/// parts cut small, shuffled, lost, duplicated, cut off, or kept back and
/// delivered steps later, and edits, deletes, syncs and garbage collection
/// come in any order.
/// The invariants:
/// - **convergence**: after a final round every store has the same digest;
/// - **no resurrection**: no store holds a version a purge covered;
/// - **causality**: no edit or delete made after seeing a version loses to it;
/// - **deletes only by evidence**: no tombstone is purged before every current
///   device held it (or something newer);
/// - **authorship**: at any point of a schedule, the owner's store as it
///   stands takes from a member no version naming another device (the
///   owner, another member, a made-up ID) that it did not make, untagged or
///   with a tag taken from elsewhere (`forgeriesAreRefused`).
/// A failure prints its seed and the schedule's last steps. Schedules run on
/// every core at once, each in a household of its own.
/// `FAMILY_SYNC_SCHEDULES=N` runs N schedules instead of the default, from
/// seed `FAMILY_SYNC_FIRST_SEED` (1) on; `FAMILY_SYNC_SEED=S` runs seed S alone.
@Suite struct ClockAndPurgePropertyTests {
    static let environment = ProcessInfo.processInfo.environment
    static var scheduleCount: Int { Int(environment["FAMILY_SYNC_SCHEDULES"] ?? "") ?? 2_000 }
    static var firstSeed: Int { Int(environment["FAMILY_SYNC_FIRST_SEED"] ?? "") ?? 1 }
    static let year: Int64 = 365

    @Test func randomClocksRejoinsAndRestoresConvergeKeepCausalityAndNeverResurrect() throws {
        let seeds: [UInt64]
        if let one = Self.environment["FAMILY_SYNC_SEED"].flatMap(UInt64.init) {
            seeds = [one]
        } else {
            seeds = (0..<Self.scheduleCount).map { UInt64(Self.firstSeed + $0) }
        }
        for failure in Self.runAll(seeds) { Issue.record(Comment(rawValue: failure)) }
    }

    /// Runs `seeds` on as many threads as there are cores, each taking the next seed
    /// when it is done with one; returns what failed, by seed.
    static func runAll(_ seeds: [UInt64]) -> [String] {
        let next = Locked(0)
        let failures = Locked<[(UInt64, String)]>([])
        let threads = max(1, min(seeds.count, ProcessInfo.processInfo.activeProcessorCount))
        let done = DispatchSemaphore(value: 0)
        for _ in 0..<threads {
            let t = Thread {
                while true {
                    let i = next.withLock { n in defer { n += 1 }; return n }
                    guard i < seeds.count else { break }
                    let found: [String]
                    do { found = try run(seed: seeds[i]) } catch { found = ["seed \(seeds[i]): \(error)"] }
                    failures.withLock { $0 += found.map { (seeds[i], $0) } }
                }
                done.signal()
            }
            // The sessions' TLS and SQLite need more than a secondary thread's default stack.
            t.stackSize = 8 << 20
            t.start()
        }
        for _ in 0..<threads { done.wait() }
        return failures.withLock { $0 }.sorted { $0.0 < $1.0 }.map(\.1)
    }

    /// A version as the causality check tells them apart: its line, time, author
    /// and content alike (a pull-back can give a later edit the time of an earlier one).
    static func version(_ r: (time: Int64, deleted: Bool, device: String, line: String)) -> String { r.line }

    static func randomOffset(_ rng: inout SplitMix64) -> TimeSpan {
        // Most devices are right; some are off by minutes, some by up to a year either way.
        switch Int.random(in: 0..<4, using: &rng) {
        case 0: return .seconds(0)
        case 1: return .seconds(Int64.random(in: -600...600, using: &rng))
        default: return .minutes(Int64.random(in: -year * 1440...year * 1440, using: &rng))
        }
    }

    /// A member that turns against the household (docs/protocol.md §7.4
    /// "Authorship"), tried on copies of its store and the owner's as they
    /// stand: it holds, and hands the owner in a session, versions of 1 to 3
    /// ids naming another device (the owner, another member, revoked or not,
    /// or a made-up ID that wins ties), each later than both stores' versions
    /// or at the very time with the greater ID, untagged or with a tag taken
    /// from one of its lines (as it is, or dated). The owner's copy takes none;
    /// returns what it took.
    static func forgeriesAreRefused(_ h: InProcessHousehold, forger m: InProcessHousehold.Device, ids: [String], step: Int,
                                    rng: inout SplitMix64, fail: (String) -> String) throws -> [String] {
        let (ownerCopy, forgerCopy) = (h.dir + "/forged-owner-\(step).db", h.dir + "/forger-\(step).db")
        _ = try Store(path: h.owner.path).backup(to: ownerCopy)
        _ = try Store(path: m.path).backup(to: forgerCopy)
        defer { for p in [ownerCopy, forgerCopy] { for suffix in [""] + Store.companionSuffixes { unlink(p + suffix) } } }
        let (held, mine) = (try InProcessHousehold.rows(ownerCopy), try InProcessHousehold.rows(forgerCopy))
        let madeUp = "FFFFFFFF-FFFF-4FFF-8FFF-FFFFFFFFFFFF"
        let others = h.all.map(\.id).filter { $0 != m.id } + [madeUp]
        // A tag as one of its lines carries it (its digits only, if it came dated).
        let stolen = mine.values.map(\.line).sorted().lazy.compactMap { line -> String? in
            guard let r = line.range(of: #","authorship":""#) else { return nil }
            return #","authorship":""# + line[r.upperBound...].prefix(2 * Authorship.tagBytes) + #""}"#
        }.first
        var forged: [String: String] = [:]
        for id in ids.shuffled(using: &rng).prefix(Int.random(in: 1...3, using: &rng)) {
            let author = others.randomElement(using: &rng)!
            let latest = max(held[id]?.time ?? h.clock(h.owner).milliseconds, mine[id]?.time ?? .min)
            let time = author == madeUp && Bool.random(using: &rng) ? latest : latest + Int64.random(in: 1...60_000, using: &rng)
            var tail = "}"
            if let stolen, Bool.random(using: &rng) {
                tail = Bool.random(using: &rng) ? stolen : String(stolen.dropLast(2)) + "/" + Timestamp(milliseconds: time + 1).rfc3339 + "\"}"
            }
            forged[id] = #"{"id":"\#(id)","type":"note","modifiedAt":"\#(Timestamp(milliseconds: time).rfc3339)","deviceId":"\#(author)","deleted":false,"data":{"forged":\#(step)}"# + tail
        }
        // Planted as the forger's store takes its own user's word (merge-records --db FILE), no clock bounding them.
        _ = try Store(path: forgerCopy).applyRemote(try forged.values.sorted().map { try Record(line: $0) }, now: Timestamp(rfc3339: "9999-01-01T00:00:00.000Z")!)
        let planted = try InProcessHousehold.rows(forgerCopy)
        forged = forged.filter { planted[$0.key]?.line == $0.value }  // a purge it holds may refuse one
        do {
            try h.sync(InProcessHousehold.Device(path: forgerCopy, isOwner: false, offset: m.offset, id: m.id),
                       owner: InProcessHousehold.Device(path: ownerCopy, isOwner: true, offset: h.owner.offset, id: h.owner.id))
        } catch is SyncError {
            return []  // the member learns in this session that it was revoked: nothing of its went in
        }
        let after = try InProcessHousehold.rows(ownerCopy)
        return forged.sorted(by: { $0.key < $1.key }).filter { after[$0.key]?.line != held[$0.key]?.line }.map { id, line in
            fail("the owner took \(id) from \(m.path.suffix(9)) in another device's name: \(line)")
        }
    }

    /// One schedule; returns what it found wrong (nothing: it passed).
    static func run(seed: UInt64) throws -> [String] {
        var failures: [String] = []
        /// An invariant, checked: a failure is kept with the seed and the last steps.
        func check(_ holds: Bool, _ what: @autoclosure () throws -> String) rethrows {
            if !holds { failures.append(try what()) }
        }
        var rng = SplitMix64(seed: seed)
        let start = Timestamp(rfc3339: "2026-01-01T00:00:00.000Z")!
        let h = try InProcessHousehold(members: Int.random(in: 1...3, using: &rng), start: start, ownerOffset: randomOffset(&rng))
        for m in h.members { m.offset = randomOffset(&rng) }
        // Batches as small as one record in some schedules, so cut-off sessions stop between
        // many marks (§7.4b); drawn apart, so every schedule's other steps stay what they were.
        var batchRng = SplitMix64(seed: seed ^ 0x5DEE_CE66_D1CE_4E5B)
        h.options.recordBatchCount = [1, 2, 3, 1_000][Int.random(in: 0..<4, using: &batchRng)]
        // One forgery per schedule, tried on copies and drawn apart too: the schedule goes on as it would have.
        var forgeryRng = SplitMix64(seed: seed ^ 0x0A07_0A07_F0F0_3C3C)
        let ids = (0..<6).map { "p-\($0)" }
        var log: [String] = []
        // Replaying one seed shows every step and which device is which; a run of many, the last steps.
        let replay = environment["FAMILY_SYNC_SEED"] != nil
        func fail(_ what: String) -> String {
            let devices = h.all.map { "\($0.path.suffix(9)) = \($0.id)" }.joined(separator: ", ")
            return "seed \(seed): \(what); \(replay ? "steps" : "last steps"): \(log.suffix(replay ? log.count : 14).joined(separator: " | ")); devices: \(devices)"
        }
        var backups: [String: (copy: String, step: Int)] = [:]
        var revoked: Set<String> = []
        // The versions (time/device) edits superseded: none may end up the winner. An
        // edit lost by restoring its store from an older copy, or made on a device
        // still revoked at the end, never reached the family, so it proves nothing.
        var superseded: [(device: String, step: Int, id: String, version: String)] = []
        // Per store and id, the newest modifiedAt it ever held (its history, restores included).
        var seen: [String: [String: Int64]] = [:]
        // Purges: id → the delete time purged (the newest).
        var purged: [String: Int64] = [:]

        /// Notes what every store holds now in `seen`, and returns it.
        @discardableResult
        func observe() throws -> [String: InProcessHousehold.Rows] {
            var all: [String: InProcessHousehold.Rows] = [:]
            for d in h.all {
                let rows = try h.rows(d)
                all[d.path] = rows
                for (id, r) in rows { seen[d.path, default: [:]][id] = max(seen[d.path]?[id] ?? .min, r.time) }
            }
            return all
        }
        // Stores restored from a copy and not synced since: they may hold what was
        // purged after the copy until their next session drops it.
        var restoredSinceSync: Set<String> = []
        // Bundle parts kept back, and where they go.
        var drawer: [(path: String, to: InProcessHousehold.Device)] = []
        func checkNoResurrection(_ held: [String: InProcessHousehold.Rows]) throws {
            for d in h.all where !revoked.contains(d.id) && !restoredSinceSync.contains(d.path) {
                for (id, r) in try held[d.path] ?? h.rows(d) where !r.deleted {
                    if let p = purged[id] {
                        check(r.time > p, fail("\(id) is live at \(r.time) on \(d.path.suffix(9)) though a purge at \(p) covers it"))
                    }
                }
            }
        }
        func current() -> [InProcessHousehold.Device] { h.members.filter { !revoked.contains($0.id) } }

        let steps = Int.random(in: 12...30, using: &rng)
        let forgeryStep = Int.random(in: 0..<steps, using: &forgeryRng)
        for step in 0..<steps {
            h.now = h.now.adding(.hours(Int64.random(in: 0...(24 * 14), using: &rng)))
            let d = h.all.randomElement(using: &rng)!
            let live = current()
            if step == forgeryStep, let forger = live.randomElement(using: &forgeryRng) {
                failures += try Self.forgeriesAreRefused(h, forger: forger, ids: ids, step: step, rng: &forgeryRng, fail: fail)
            }
            switch Int.random(in: 0..<26, using: &rng) {
            case 0...4:
                let id = ids.randomElement(using: &rng)!
                let held = try h.rows(d)[id]
                try h.edit(d, ["{\"id\":\"\(id)\",\"type\":\"note\",\"data\":{\"v\":\(step)}}"])
                if let held { superseded.append((d.path, step, id, Self.version(held))) }
                log.append("edit \(id) on \(d.path.suffix(9))")
            case 5:
                let rows = try h.rows(d).filter { !$0.value.deleted }
                if let (id, held) = rows.sorted(by: { $0.key < $1.key }).randomElement(using: &rng) {
                    try h.edit(d, ["{\"id\":\"\(id)\",\"deleted\":true}"])
                    superseded.append((d.path, step, id, Self.version(held)))
                    log.append("delete \(id) on \(d.path.suffix(9))")
                }
            case 6...10:
                if let m = live.randomElement(using: &rng) {
                    do { try h.sync(m) } catch let e as SyncError where e.kind == .revokedByRoster {
                        // The owner's store was restored and took back, from a member, a statement that revokes
                        // this device again (docs/protocol.md §4.6: a revocation stays): it is out.
                        revoked.insert(m.id)
                        log.append("sync \(m.path.suffix(9)): revoked by the roster")
                        break
                    }
                    restoredSinceSync.remove(m.path)
                    restoredSinceSync.remove(h.owner.path)
                    log.append("sync \(m.path.suffix(9))")
                }
            case 11, 12:
                try observe()
                let before = try h.rows(d)
                _ = try h.gc(d)
                let after = try h.rows(d)
                for (id, r) in before where r.deleted && after[id] == nil {
                    check(d.isOwner, fail("\(id) purged by a member's own collection"))
                    for other in [h.owner] + live where other !== d {
                        check((seen[other.path]?[id] ?? .min) >= r.time, fail("\(id) purged before \(other.path.suffix(9)) held its delete"))
                    }
                    purged[id] = max(purged[id] ?? .min, r.time)
                }
                log.append("gc \(d.path.suffix(9))")
            case 13:
                // A jump of this device's clock.
                let jump = [Int64(-100), -30, 30, 100].randomElement(using: &rng)!
                d.offset = TimeSpan(milliseconds: max(-year, min(year, d.offset.milliseconds / 86_400_000 + jump)) * 86_400_000)
                log.append("jump \(d.path.suffix(9)) to \(d.offset)")
            case 14:
                let copy = h.dir + "/bk-\(step).db"
                _ = try h.store(d).backup(to: copy)
                backups[d.path] = (copy, step)
                log.append("backup \(d.path.suffix(9))")
            case 15:
                if let (copy, taken) = backups[d.path] {
                    try h.restore(d, from: copy)
                    superseded.removeAll { $0.device == d.path && $0.step > taken }
                    restoredSinceSync.insert(d.path)
                    log.append("restore \(d.path.suffix(9))")
                }
            case 16:
                // Away for longer than the horizon.
                h.now = h.now.adding(.days(Int64.random(in: 91...150, using: &rng)))
                log.append("months pass")
            case 17:
                if let m = live.randomElement(using: &rng), live.count > 1 {
                    try h.revoke(m)
                    revoked.insert(m.id)
                    log.append("revoke \(m.path.suffix(9))")
                }
            case 20, 21:
                // A session whose link is cut part way (either side may have applied some batches; no cursor moves).
                if let m = live.randomElement(using: &rng) {
                    let cut = Int.random(in: 200...12_000, using: &rng)
                    do {
                        let completed = try h.interruptedSync(m, cutAfter: cut)
                        log.append("sync \(m.path.suffix(9)) cut after \(cut) bytes\(completed ? " (completed)" : "")")
                    } catch let e as SyncError where e.kind == .revokedByRoster {
                        revoked.insert(m.id)
                        log.append("sync \(m.path.suffix(9)) cut after \(cut) bytes: revoked by the roster")
                    }
                }
            case 22...24:
                // Bundles between two current devices, one way or both, as a trip without a link would bring.
                var pair = ([h.owner] + live).shuffled(using: &rng)
                guard pair.count >= 2 else { break }
                if !pair[0].isOwner && !pair[1].isOwner && Bool.random(using: &rng) { pair.swapAt(1, 0) }
                let (from, to) = (pair[0], pair[1])
                let cap = Bool.random(using: &rng) ? nil : Int64.random(in: 300...4000, using: &rng)
                let parts: [String]
                do { parts = try h.writeBundle(from: from, to: to, maxBytes: cap) } catch let e as BundleError where e.kind == .notForUs {
                    // The writer's store holds no key for the reader (its copy predates the reader's admission).
                    log.append("bundle \(from.path.suffix(9)) → \(to.path.suffix(9)): no key")
                    break
                }
                var delivered = parts.shuffled(using: &rng)
                switch Int.random(in: 0..<5, using: &rng) {
                case 0: if !delivered.isEmpty { delivered.removeLast() }  // a part lost
                case 1: delivered += delivered.prefix(1)  // a part twice
                case 2:
                    // A part cut off on the way: refused, the store as it was.
                    if let p = delivered.first {
                        let bytes = try Data(contentsOf: URL(fileURLWithPath: p))
                        let cut = p + ".cut"
                        try bytes.prefix(Int.random(in: 0..<bytes.count, using: &rng)).write(to: URL(fileURLWithPath: cut))
                        let before = try h.digest(to)
                        do {
                            _ = try h.applyBundle(cut, at: to)
                            check(false, fail("a cut-off part was applied"))
                        } catch is BundleError {}
                        check(try h.digest(to) == before, fail("a refused part changed the store"))
                    }
                case 3: drawer += delivered.map { ($0, to) }; delivered = []  // kept back, delivered later
                default: break
                }
                var reply = false
                for p in delivered {
                    do {
                        _ = try h.applyBundle(p, at: to)
                        reply = true
                    } catch let e as BundleError where e.kind == .replayed || e.kind == .stale || e.kind == .notForUs {
                    } catch let e as SyncError where e.kind == .revokedByRoster || e.kind == .revoked {
                        revoked.insert(to.id)
                    }
                }
                log.append("bundle \(from.path.suffix(9)) → \(to.path.suffix(9)): \(delivered.count) of \(parts.count) parts")
                if reply, !revoked.contains(to.id), Bool.random(using: &rng) {
                    do {
                        for p in try h.writeBundle(from: to, to: from, maxBytes: nil) { _ = try h.applyBundle(p, at: from) }
                    } catch let e as BundleError where e.kind == .notForUs {}
                    log.append("reply")
                }
            case 25:
                // A bundle kept back steps ago arrives now.
                if !drawer.isEmpty {
                    let (p, to) = drawer.removeFirst()
                    if !revoked.contains(to.id) {
                        do { _ = try h.applyBundle(p, at: to) } catch let e as BundleError where e.kind != .malformed {
                        } catch let e as SyncError where e.kind == .revokedByRoster || e.kind == .revoked { revoked.insert(to.id) }
                        log.append("late part at \(to.path.suffix(9))")
                    }
                }
            default:
                if let m = h.members.first(where: { revoked.contains($0.id) }) {
                    revoked.remove(m.id)
                    try h.rejoin(m)
                    restoredSinceSync.remove(m.path)
                    restoredSinceSync.remove(h.owner.path)
                    log.append("rejoin \(m.path.suffix(9))")
                }
            }
            try checkNoResurrection(try observe())
        }

        // Bundles alone converge too: three rounds in which each current member and the owner
        // exchange bundles, every part delivered (in any order), with no session at all (a
        // writer put back from a copy included: docs/protocol.md §12b "Writes", seeds 1548, 1555).
        for _ in 0..<3 {
            for m in current() {
                for (from, to) in [(h.owner, m), (m, h.owner)] where !revoked.contains(m.id) {
                    do {
                        for p in try h.writeBundle(from: from, to: to, maxBytes: Int64.random(in: 300...4000, using: &rng)).shuffled(using: &rng) {
                            _ = try h.applyBundle(p, at: to)
                        }
                    } catch let e as SyncError where e.kind == .revokedByRoster || e.kind == .revoked {
                        revoked.insert(m.id)
                    } catch let e as BundleError where e.kind == .stale {
                        // A writer restored from a copy and set back in time: its reader's next bundle renumbers it.
                        log.append("final bundle \(from.path.suffix(9)) → \(to.path.suffix(9)): stale")
                    } catch let e as BundleError where e.kind == .notForUs {
                        // A store that holds no key for the other (the owner's copy predates this member): only a new pairing helps.
                        revoked.insert(m.id)
                    }
                }
            }
        }
        /// What each current store holds that the owner's does not, id by id.
        func differences(_ stores: [InProcessHousehold.Device]) throws -> String {
            let base = try h.rows(h.owner)
            var diff: [String] = []
            for d in stores where d.path != h.owner.path {
                let r = try h.rows(d)
                for id in Set(base.keys).union(r.keys).sorted() where base[id].map({ "\($0)" }) != r[id].map({ "\($0)" }) {
                    diff.append("\(id): owner \(base[id].map { "\($0)" } ?? "none") vs \(d.path.suffix(6)) \(r[id].map { "\($0)" } ?? "none")")
                }
            }
            return diff.joined(separator: "; ")
        }
        let byBundles = try ([h.owner] + current()).map { try h.digest($0) }
        try check(Set(byBundles).count == 1, fail("stores differ after three rounds of bundles alone: \(try differences([h.owner] + current()))"))

        // The final rounds: everyone current syncs with the owner, twice.
        for _ in 0..<2 {
            for m in current() {
                do { try h.sync(m) } catch let e as SyncError where e.kind == .revokedByRoster { revoked.insert(m.id) }
            }
        }
        restoredSinceSync = []
        try checkNoResurrection([:])
        let stores = [h.owner] + current()
        let digests = try stores.map { try h.digest($0) }
        try check(Set(digests).count == 1, fail("stores differ after every device synced: \(try differences(stores))"))
        let currentPaths = Set(stores.map(\.path))
        for (id, r) in try h.rows(h.owner) {
            let version = Self.version(r)
            let beaten = superseded.contains { $0.id == id && $0.version == version && currentPaths.contains($0.device) }
            check(!beaten, fail("\(id): the version \(version) won though an edit made after seeing it exists"))
        }
        return failures
    }
}
