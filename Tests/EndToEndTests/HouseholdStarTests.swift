import Foundation
import Testing
import FamilySync

/// A household as the README lays it out: the owner's device serves, three
/// members each sync only with it. Simulated days go by with --now on every
/// tool; the owner's serve is restarted at each new day so its clock agrees.
final class Star {
    let dir = TempDir()
    let owner: String
    var members: [String] = []
    let base = Timestamp(milliseconds: Timestamp.current().milliseconds / 1000 * 1000)
    /// Per-store clock errors: a store listed here runs every tool (edit,
    /// sync, gc, join; the owner's serve) with its clock off by this much.
    var clockOffset: [String: TimeSpan] = [:]
    private var serve: ServeProcess?
    private var serveNow: String?
    private var serves = 0

    init(members count: Int, maxDevices: Int? = nil) throws {
        owner = dir.file("owner.db")
        let s = try Store(path: owner)
        _ = try s.makeOffer(ttl: .minutes(10), address: nil, now: base)
        if let m = maxDevices { try s.setSetting("max_devices", String(m)) }
        for i in 0..<count {
            let m = dir.file("m\(i).db")
            let j = try join(m, day: 0)
            guard j.status == 0 else { throw HarnessError("join m\(i): \(j.err)") }
            members.append(m)
        }
    }

    func day(_ d: Int) -> String { base.adding(.days(Int64(d))).rfc3339 }

    /// What `store`'s clock says on day `d`.
    func clock(_ store: String, day d: Int) -> Timestamp {
        base.adding(.days(Int64(d))).adding(clockOffset[store] ?? TimeSpan(milliseconds: 0))
    }
    func now(_ store: String, day d: Int) -> String { clock(store, day: d).rfc3339 }

    /// The owner's serve, running with the owner's clock of day `d`.
    func server(day d: Int) throws -> ServeProcess {
        let t = now(owner, day: d)
        if let s = serve, serveNow == t { return s }
        serve?.stop()
        serves += 1
        let s = try ServeProcess(db: owner, dir: dir, name: "serve\(serves)", extra: ["--now", t])
        serve = s
        serveNow = t
        return s
    }

    func stop() { serve?.stop() }

    /// Stops the owner's serve; the next session starts a new one (after the store was replaced, say).
    func stopServe() {
        serve?.stop()
        serve = nil
        serveNow = nil
    }

    func join(_ member: String, day d: Int) throws -> ToolResult {
        let offer = try Store(path: owner).makeOffer(ttl: .minutes(10), address: nil, now: clock(owner, day: d))
        return try Tools.run("peer-sync", ["join", "--db", member, "--now", now(member, day: d), "--connect", try server(day: d).address], input: offer.text + "\n")
    }

    @discardableResult
    func sync(_ member: String, day d: Int) throws -> ToolResult {
        let r = try Tools.run("peer-sync", ["connect", "--db", member, "--now", now(member, day: d), try server(day: d).address])
        // The server's summary comes after its closing handshake; wait for it so the next session is not busy.
        return r
    }

    /// Every member in turn, `rounds` times.
    func rounds(_ n: Int, day d: Int, skipping: Set<String> = []) throws {
        for _ in 0..<n {
            for m in members where !skipping.contains(m) {
                let r = try sync(m, day: d)
                #expect(r.status == 0, "sync \(m) on day \(d): \(r.err)")
            }
        }
    }

    func edit(_ store: String, day d: Int, _ lines: [String]) throws {
        let r = try Tools.run("merge-records", ["--db", store, "--stamp", "--now", now(store, day: d)], input: lines.joined(separator: "\n") + "\n")
        #expect(r.status == 0, "stamp on \(store): \(r.err)")
    }

    func gc(_ store: String, day d: Int) throws -> JSONValue {
        let r = try Tools.run("tombstone-gc", ["--db", store, "--now", now(store, day: d)])
        #expect(r.status == 0, "gc \(store): \(r.err)")
        return try #require(r.json)
    }

    var all: [String] { [owner] + members }

    /// The owner's collection purges `expected` tombstones; a member's purges
    /// none by itself (docs/protocol.md §4.5) and drops them when the owner's
    /// purge records reach it, in a round of syncs the same day.
    func purgeAtOwner(day d: Int, expected: Int) throws {
        let r = try gc(owner, day: d)
        #expect(r.int("purged") == Int64(expected), "owner: \(r.serialized)")
        for m in members { #expect(try gc(m, day: d).int("purged") == 0, "a member purged by itself") }
        for m in members {
            let s = try sync(m, day: d)
            #expect(s.status == 0, "\(s.err)")
            #expect(s.json?.int("records", "purged") == Int64(expected), "\(m): \(s.out)")
        }
    }

    static func has(_ store: String, _ id: String) throws -> Bool {
        try Store(path: store).db.scalarInt("SELECT count(*) FROM records WHERE id = ?", [.text(id)]) == 1
    }
    static func isLive(_ store: String, _ id: String) throws -> Bool {
        try Store(path: store).db.scalarInt("SELECT count(*) FROM records WHERE id = ? AND deleted = 0", [.text(id)]) == 1
    }
    /// The version of the signed roster statement a store holds.
    static func rosterVersion(_ store: String) throws -> Int {
        Int(try Store(path: store).meta("roster_version") ?? "0") ?? 0
    }
    static func heldBackBy(_ report: JSONValue) -> [String] {
        (report["heldBackBy"]?.arrayValue ?? []).compactMap { $0["deviceId"]?.stringValue }
    }
}

@Suite(.serialized) struct HouseholdStarTests {
    static func receipt(_ id: String, _ note: String) -> String { "{\"id\":\"\(id)\",\"type\":\"receipt\",\"data\":{\"note\":\"\(note)\"}}" }

    @Test func aMembersDeletePurgesEverywhereAndAnOfflineMemberHoldsItBack() throws {
        let h = try Star(members: 3)
        defer { h.stop() }
        let (a, b, c) = (h.members[0], h.members[1], h.members[2])
        try h.edit(a, day: 0, (0..<5).map { Self.receipt("r-\($0)", "first") })
        try h.rounds(2, day: 0)
        // A member deletes; every member syncs with the owner only, two rounds.
        try h.edit(a, day: 1, ["{\"id\":\"r-1\",\"type\":\"receipt\",\"deleted\":true}"])
        try h.rounds(2, day: 1)
        for s in h.all { #expect(try Star.has(s, "r-1") && !Star.isLive(s, "r-1")) }
        // Not before the horizon.
        for s in h.all { #expect(try h.gc(s, day: 90).int("purged") == 0) }
        // At +91 days the owner purges it, and every member drops it at its next sync.
        try h.purgeAtOwner(day: 92, expected: 1)
        for s in h.all { #expect(try !Star.has(s, "r-1")) }

        // Another delete while C is away: it is held back everywhere, by C.
        try h.edit(b, day: 100, ["{\"id\":\"r-2\",\"type\":\"receipt\",\"deleted\":true}"])
        try h.rounds(2, day: 100, skipping: [c])
        let cID = try Household.device(c)
        for s in [h.owner, a, b] {
            let r = try h.gc(s, day: 195)
            #expect(r.int("purged") == 0, "\(s): \(r.serialized)")
            #expect(Star.heldBackBy(r).contains(cID), "\(s == h.owner ? "owner" : s == a ? "A" : "B") names C as holding back: \(r.serialized)")
            #expect(try Star.has(s, "r-2"))
        }
        // C comes back and syncs; the owner purges it, and every member drops it.
        try h.rounds(2, day: 196)
        try h.purgeAtOwner(day: 196, expected: 1)
        for s in h.all { #expect(Star.heldBackBy(try h.gc(s, day: 196)).isEmpty) }
        try h.rounds(1, day: 197)
        let digests = try h.all.map { try Household.digest($0) }
        #expect(Set(digests).count == 1, "every store holds the same records")
        for s in h.all { #expect(try !Star.has(s, "r-2") && Star.isLive(s, "r-3")) }
    }

    @Test func aRestoredOldBackupDoesNotResurrectAndKeepsItsNewEdits() throws {
        let h = try Star(members: 2)
        defer { h.stop() }
        let (a, b) = (h.members[0], h.members[1])
        try h.edit(a, day: 0, (0..<5).map { Self.receipt("r-\($0)", "first") })
        try h.rounds(2, day: 0)
        // A consistent copy taken while the owner's serve holds the store open.
        let copy = h.dir.file("a-backup.db")
        let bk = try Tools.run("merge-records", ["--db", a, "--backup", copy])
        #expect(bk.status == 0, "\(bk.err)")
        #expect(bk.json?.int("records") == 5)
        // B deletes r-3; it reaches everyone and is purged everywhere.
        try h.edit(b, day: 1, ["{\"id\":\"r-3\",\"type\":\"receipt\",\"deleted\":true}"])
        // A syncs before B in each round: A learns that everyone has it on its third contact.
        try h.rounds(3, day: 1)
        try h.purgeAtOwner(day: 92, expected: 1)
        // A's store is restored from the old copy, which still has r-3 live; then A edits.
        try Household.restore(a, from: copy)
        #expect(try Star.isLive(a, "r-3"))
        try h.edit(a, day: 93, [Self.receipt("x-1", "after the restore"), Self.receipt("r-0", "edited after the restore")])
        let r = try h.sync(a, day: 93)
        #expect(r.status == 0, "\(r.err)")
        #expect(r.json?.int("records", "purged") ?? 0 >= 1, "the restored store dropped what the family purged: \(r.out)")
        try h.rounds(2, day: 93)
        for s in h.all {
            #expect(try !Star.has(s, "r-3"), "\(s): a purged record came back")
            #expect(try Star.isLive(s, "x-1"), "\(s): the restored store's new edit is kept")
        }
        #expect(try Store(path: b).db.scalarText("SELECT line FROM records WHERE id = 'r-0'")?.contains("edited after the restore") == true)
        #expect(Set(try h.all.map { try Household.digest($0) }).count == 1)
    }

    /// Member to member, purges hold as with the owner (docs/protocol.md
    /// §4.5): a member restored from an old copy that syncs with another
    /// member before the owner brings nothing back (the other member keeps the
    /// owner's signed purge records and passes them on), and its new edits are kept.
    @Test func aRestoredMemberSyncingWithAnotherMemberFirstBringsNothingBack() throws {
        let h = try Star(members: 2)
        defer { h.stop() }
        let (a, b) = (h.members[0], h.members[1])
        try h.edit(a, day: 0, (0..<5).map { Self.receipt("r-\($0)", "first") })
        try h.rounds(2, day: 0)
        let copy = h.dir.file("a-backup.db")
        #expect(try Tools.run("merge-records", ["--db", a, "--backup", copy]).status == 0)
        try h.edit(b, day: 1, ["{\"id\":\"r-3\",\"type\":\"receipt\",\"deleted\":true}"])
        try h.rounds(3, day: 1)
        try h.purgeAtOwner(day: 92, expected: 1)
        try Household.restore(a, from: copy)
        #expect(try Star.isLive(a, "r-3"))
        try h.edit(a, day: 93, [Self.receipt("x-1", "after the restore")])
        // A syncs with B (B serves) before it reaches the owner again.
        let bServe = try ServeProcess(db: b, dir: h.dir, name: "b-serve", extra: ["--now", h.day(93)])
        let r = try Tools.run("peer-sync", ["connect", "--db", a, "--now", h.day(93), bServe.address])
        bServe.stop()
        #expect(r.status == 0, "\(r.err)")
        #expect(try !Star.has(b, "r-3"), "B took back a record it purged")
        #expect(try !Star.has(a, "r-3"), "A kept what B purged")
        #expect(r.json?.int("records", "purged") ?? 0 >= 1, "\(r.out)")
        #expect(try Star.isLive(b, "x-1"), "B has A's edit from after the restore")
        try h.rounds(2, day: 93)
        for s in h.all {
            #expect(try !Star.has(s, "r-3"), "\(s): a purged record came back")
            #expect(try Star.isLive(s, "x-1"), "\(s): the restored store's new edit is kept")
        }
        #expect(Set(try h.all.map { try Household.digest($0) }).count == 1)
    }

    /// The owner's own store restored from its own --backup, taken before a
    /// revocation, an edit of the owner's, and a delete the family purged.
    @Test func theOwnersStoreRestoredFromItsOwnOldCopyBringsNothingBackAndKeepsCounting() throws {
        let h = try Star(members: 3)
        defer { h.stop() }
        let (a, b, c) = (h.members[0], h.members[1], h.members[2])
        try h.edit(a, day: 0, (0..<5).map { Self.receipt("r-\($0)", "first") })
        try h.rounds(2, day: 0)
        let copy = h.dir.file("owner-backup.db")
        let bk = try Tools.run("merge-records", ["--db", h.owner, "--backup", copy])
        #expect(bk.status == 0, "\(bk.err)")
        // After the copy: the owner edits, revokes C, and B's delete of r-3 is purged everywhere.
        try h.edit(h.owner, day: 1, [Self.receipt("o-1", "the owner's, after its backup")])
        let cID = try Household.device(c)
        let rv = try Tools.run("peer-sync", ["revoke", "--db", h.owner, "--now", h.day(1), cID])
        #expect(rv.status == 0, "\(rv.err)")
        let revokedAt = try #require(rv.json?["revokedAt"]?.stringValue)
        h.members = [a, b]
        try h.edit(b, day: 1, ["{\"id\":\"r-3\",\"type\":\"receipt\",\"deleted\":true}"])
        try h.rounds(3, day: 1)
        try h.purgeAtOwner(day: 92, expected: 1)
        let memberVersions = try [a, b].map { try Star.rosterVersion($0) }
        let memberEpoch = try Store(path: a).familyEpoch

        // The owner's store is restored from the copy: r-3 live, C current, the roster and key of before.
        h.stopServe()
        try Household.restore(h.owner, from: copy)
        #expect(try Star.isLive(h.owner, "r-3") && !Star.has(h.owner, "o-1"))
        #expect(try Store(path: h.owner).device(cID)?.revokedAt == nil)
        try h.edit(h.owner, day: 93, [Self.receipt("o-2", "the owner's, after the restore"), Self.receipt("r-0", "edited after the restore")])
        try h.rounds(2, day: 93)

        for s in [h.owner, a, b] {
            #expect(try !Star.has(s, "r-3"), "\(s): a purged record came back")
            #expect(try Star.isLive(s, "o-1"), "\(s): the owner's edit from after its backup is back")
            #expect(try Star.isLive(s, "o-2"), "\(s): the owner's edit from after the restore is kept")
            #expect(try Store(path: s).db.scalarText("SELECT line FROM records WHERE id = 'r-0'")?.contains("edited after the restore") == true, "\(s)")
        }
        #expect(Set(try [h.owner, a, b].map { try Household.digest($0) }).count == 1)
        // The owner took its own later decisions back: C stays revoked at the owner's time, and the
        // roster counter and the family key's epoch continue above the members'.
        let o = try Store(path: h.owner)
        #expect(try o.device(cID)?.revokedAt?.rfc3339 == revokedAt)
        #expect(try o.familyEpoch > memberEpoch)
        #expect(try Star.rosterVersion(h.owner) >= memberVersions.max()!)
        let refused = try h.sync(c, day: 93)
        #expect(refused.status == 77, "the revoked device stays out: \(refused.err)")
        // The members accept the owner's next roster: a new device's admission reaches them.
        let e = h.dir.file("e.db")
        #expect(try h.join(e, day: 94).status == 0)
        let eID = try Household.device(e)
        try h.rounds(1, day: 94)
        for s in [a, b] {
            let st = try Store(path: s)
            #expect(try st.device(eID) != nil, "\(s) applied the owner's roster made after the restore")
            #expect(try Star.rosterVersion(s) > memberVersions.max()!)
            #expect(try st.familyEpoch == o.familyEpoch, "\(s) holds the owner's new family key")
        }
    }

    /// §4.6, §7.4 "Authorship": the owner's store restored from a copy taken
    /// before a member's last edits, whose author then never syncs again (its
    /// device lost). Another member hands them back, and the owner takes
    /// them, and its own lost edit: each carries its author's tag, so a relay
    /// of it is not a version the relaying member made up.
    @Test func aRestoredOwnerTakesAGoneMembersEditsFromTheMemberThatRelaysThem() throws {
        let h = try Star(members: 2)
        defer { h.stop() }
        let (gone, relay) = (h.members[0], h.members[1])
        try h.rounds(1, day: 0)
        let copy = h.dir.file("owner-backup.db")
        let bk = try Tools.run("merge-records", ["--db", h.owner, "--backup", copy])
        #expect(bk.status == 0, "\(bk.err)")
        try h.edit(gone, day: 1, [Self.receipt("g-1", "the gone member's"), Self.receipt("g-2", "the gone member's")])
        try h.edit(h.owner, day: 1, [Self.receipt("o-1", "the owner's, after its backup")])
        try h.rounds(2, day: 1)
        h.members = [relay]
        h.stopServe()
        try Household.restore(h.owner, from: copy)
        #expect(try !Star.has(h.owner, "g-1") && !Star.has(h.owner, "o-1"))
        let server = try h.server(day: 2)
        let before = server.summaries.count
        let r = try h.sync(relay, day: 2)
        #expect(r.status == 0, "\(r.err)")
        let summary = try #require(server.summary(after: before))
        #expect(summary.int("records", "unattributed") == 0, "\(summary)")
        for id in ["g-1", "g-2", "o-1"] { #expect(try Star.isLive(h.owner, id), "\(id) is back on the owner") }
        try h.rounds(1, day: 2)
        #expect(try Household.digest(h.owner) == Household.digest(relay))
    }

    /// §7.4 "Authorship": records imported on a member under another device's
    /// name stay on that member, and merge-records says so as it imports them;
    /// the owner does not take them from the member. Stamped, such a record
    /// is the member's own edit, and reaches the owner.
    @Test func recordsImportedOnAMemberInAnotherDevicesNameStayThere() throws {
        let h = try Star(members: 1)
        defer { h.stop() }
        let m = h.members[0]
        let file = h.dir.file("theirs.ndjson")
        try (#"{"id":"x-1","type":"receipt","modifiedAt":"\#(h.day(0))","deviceId":"D","deleted":false,"data":{}}"# + "\n")
            .write(toFile: file, atomically: true, encoding: .utf8)
        let r = try Tools.run("merge-records", ["--db", m, "--now", h.now(m, day: 0), file])
        #expect(r.status == 0, "\(r.err)")
        #expect(r.err.contains("1 record of \(file) names another device as author and carries no authorship tag"), "\(r.err)")
        let server = try h.server(day: 0)
        let before = server.summaries.count
        #expect(try h.sync(m, day: 0).status == 0)
        #expect(server.summary(after: before)?.int("records", "unattributed") == 1)
        #expect(try !Star.has(h.owner, "x-1") && Star.has(m, "x-1"))
        try h.edit(m, day: 0, [Self.receipt("x-1", "stamped here")])
        #expect(try h.sync(m, day: 0).status == 0)
        #expect(try Star.isLive(h.owner, "x-1"))
        #expect(try Household.digest(h.owner) == Household.digest(m))
    }

    /// §4.6: a device admitted after the owner's copy was taken is unknown to
    /// the restored owner. Its refusal says what to do, and its own store
    /// joins again with a new offer: nothing of it is lost.
    @Test func aDeviceAdmittedAfterTheOwnersCopyJoinsAgainWithItsOwnStore() throws {
        let h = try Star(members: 2)
        defer { h.stop() }
        let (a, b) = (h.members[0], h.members[1])
        try h.edit(a, day: 0, (0..<3).map { Self.receipt("r-\($0)", "first") })
        try h.rounds(1, day: 0)
        let copy = h.dir.file("owner-backup.db")
        #expect(try Tools.run("merge-records", ["--db", h.owner, "--backup", copy]).status == 0)
        let e = h.dir.file("e.db")
        let joined = try h.join(e, day: 1)
        #expect(joined.status == 0, "\(joined.err)")
        let eID = try Household.device(e)
        h.members.append(e)
        try h.edit(e, day: 1, [Self.receipt("e-1", "E's, synced before the restore")])
        try h.rounds(2, day: 1)
        for s in [a, b] { #expect(try Store(path: s).device(eID) != nil && Star.isLive(s, "e-1"), "\(s) knows E") }
        // A current member's store offered a new admission: the owner refuses, nothing changes.
        let before = try Household.fingerprint(e)
        let twice = try h.join(e, day: 1)
        #expect(twice.status == 77 && twice.err.contains("already in the family"), "\(twice.err)")
        #expect(try Household.fingerprint(e) == before)

        // The owner's store is restored from the copy: E's admission is not in it.
        h.stopServe()
        try Household.restore(h.owner, from: copy)
        try h.edit(e, day: 2, [Self.receipt("e-2", "E's, after the restore")])
        let beforeRefusal = try Household.fingerprint(e)
        let unknown = try h.sync(e, day: 2)
        #expect(unknown.status == 77)
        #expect(unknown.err.contains("holds no key for this device") && unknown.err.contains("new offer (pair-qr)")
                && unknown.err.contains("'peer-sync join'"), "\(unknown.err)")
        #expect(try Household.fingerprint(e) == beforeRefusal, "an unauthenticated refusal changes nothing")
        // What the refusal says: a new offer, redeemed by E's own store.
        let again = try h.join(e, day: 2)
        #expect(again.status == 0, "\(again.err)")
        try h.rounds(2, day: 2)
        for s in h.all {
            for id in ["r-0", "e-1", "e-2"] { #expect(try Star.isLive(s, id), "\(s) has \(id)") }
            #expect(try Store(path: s).device(eID)?.revokedAt == nil, "\(s) holds E as a current member")
        }
        #expect(Set(try h.all.map { try Household.digest($0) }).count == 1)
    }

    /// §4.6: the owner's copy taken before any device joined holds the
    /// family's roster key (made with the family), so the restored owner
    /// signs as the members expect. Every member is unknown to it and joins
    /// again with its own store; the members apply the restored owner's
    /// statements, and a device revoked since the copy stays out.
    @Test func anOwnerRestoredFromACopyOlderThanEveryAdmissionSignsAsBefore() throws {
        let h = try Star(members: 0)
        defer { h.stop() }
        let copy = h.dir.file("owner-backup.db")
        #expect(try Tools.run("merge-records", ["--db", h.owner, "--backup", copy]).status == 0)
        let rosterKey = try #require(try Store(path: h.owner).secret("roster_signing_key")?.copiedBytes, "the roster key is made with the family")
        for i in 0..<3 {
            let m = h.dir.file("m\(i).db")
            #expect(try h.join(m, day: 0).status == 0)
            h.members.append(m)
        }
        let (a, b, c) = (h.members[0], h.members[1], h.members[2])
        try h.edit(a, day: 0, [Self.receipt("a-1", "A's")])
        try h.rounds(2, day: 0)
        let cID = try Household.device(c)
        #expect(try Tools.run("peer-sync", ["revoke", "--db", h.owner, "--now", h.day(1), cID]).status == 0)
        h.members = [a, b]
        try h.rounds(2, day: 1)
        let versions = try [a, b].map { try Star.rosterVersion($0) }
        let epoch = try Store(path: a).familyEpoch

        h.stopServe()
        try Household.restore(h.owner, from: copy)
        #expect(try Store(path: h.owner).secret("roster_signing_key")?.copiedBytes == rosterKey)
        for m in [a, b] {
            let r = try h.sync(m, day: 2)
            #expect(r.status == 77 && r.err.contains("'peer-sync join'"), "\(r.err)")
            let j = try h.join(m, day: 2)
            #expect(j.status == 0, "\(j.err)")
        }
        try h.rounds(2, day: 2)
        let o = try Store(path: h.owner)
        #expect(try Star.rosterVersion(h.owner) > versions.max()!, "the owner counts on above the members' statements")
        #expect(try o.familyEpoch > epoch, "the owner moved to a key above the one C may hold")
        for s in [a, b] {
            let st = try Store(path: s)
            #expect(try Star.rosterVersion(s) == Star.rosterVersion(h.owner), "\(s) applied the restored owner's statement")
            #expect(try st.familyEpoch == o.familyEpoch)
            #expect(try st.device(cID) == nil || st.device(cID)?.revokedAt != nil, "\(s): C is not a current member")
            #expect(try Star.isLive(s, "a-1"))
        }
        #expect(try h.sync(c, day: 2).status == 77, "C stays out")
        #expect(Set(try h.all.map { try Household.digest($0) }).count == 1)
    }

    @Test func aLyingMemberCannotRevokeOrAddDevices() throws {
        let h = try Star(members: 3, maxDevices: 5)
        defer { h.stop() }
        let (a, victim, liar) = (h.members[0], h.members[1], h.members[2])
        let victimID = try Household.device(victim)
        try h.rounds(1, day: 0)
        // The liar controls its own store: it marks the victim revoked, adds
        // phantom devices, and rewrites the roster statement it holds.
        let ls = try Store(path: liar)
        try ls.db.run("UPDATE devices SET revoked_at = 1 WHERE device_id = ?", [.text(victimID)])
        for _ in 0..<3 {
            try ls.db.run("INSERT INTO devices (device_id, role, joined_at) VALUES (?, 'member', 0)", [.text(try randomUUID())])
        }
        let forged = try #require(try ls.meta("roster_statement")).replacingOccurrences(of: "\"revokedAt\":null}", with: "\"revokedAt\":\"2026-01-01T00:00:00.000Z\"}")
        try ls.db.run("UPDATE meta SET value = ? WHERE key = 'roster_statement'", [.text(forged)])
        try ls.db.run("UPDATE meta SET value = '999' WHERE key = 'roster_version'")
        // It syncs with the owner, and serves another member.
        #expect(try h.sync(liar, day: 1).status == 0)
        let liarServe = try ServeProcess(db: liar, dir: h.dir, name: "liar", extra: ["--now", h.day(1)])
        let x = try Tools.run("peer-sync", ["connect", "--db", a, "--now", h.day(1), liarServe.address])
        liarServe.stop()
        #expect(x.status == 0, "\(x.err)")
        // Nobody believes it: the victim is not revoked, the family does not fill.
        for s in [h.owner, a] {
            let st = try Store(path: s)
            #expect(try st.device(victimID)?.revokedAt == nil, "\(s) kept the victim")
            #expect(try st.activeDeviceCount() == 4, "\(s) added no phantom")
        }
        let v = try h.sync(victim, day: 1)
        #expect(v.status == 0, "the owner does not refuse the victim: \(v.err)")
        // A fifth device still finds a place.
        let e = try h.join(h.dir.file("e.db"), day: 1)
        #expect(e.status == 0, "\(e.err)")
        // Garbage collection is not held back by phantoms: a delete purges once all have synced.
        try h.edit(a, day: 2, [Self.receipt("r-1", "x")])
        try h.edit(a, day: 2, ["{\"id\":\"r-1\",\"type\":\"receipt\",\"deleted\":true}"])
        h.members.append(h.dir.file("e.db"))
        try h.rounds(2, day: 2)
        let r = try h.gc(h.owner, day: 95)
        #expect(r.int("purged") == 1, "\(r.serialized)")
    }

    @Test func aRevokedStoreRejoinsWithOneRevocationTimeEverywhere() throws {
        let h = try Star(members: 2)
        defer { h.stop() }
        let (a, b) = (h.members[0], h.members[1])
        try h.edit(b, day: 0, [Self.receipt("b-1", "from b")])
        try h.rounds(1, day: 0)
        let bID = try Household.device(b)
        let rv = try Tools.run("peer-sync", ["revoke", "--db", h.owner, "--now", h.day(3), bID])
        #expect(rv.status == 0, "\(rv.err)")
        let revokedAt = try #require(rv.json?["revokedAt"]?.stringValue)
        #expect(revokedAt == h.day(3))
        let again = try Tools.run("peer-sync", ["revoke", "--db", h.owner, "--now", h.day(4), bID])
        #expect(again.status == 0 && again.json?["alreadyRevoked"]?.boolValue == true && again.json?["revokedAt"]?.stringValue == revokedAt)
        // A hears it from the owner; B is told on an authenticated session, and says how to come back.
        #expect(try h.sync(a, day: 5).status == 0)
        try h.edit(b, day: 5, [Self.receipt("b-2", "while revoked")])
        let refused = try h.sync(b, day: 5)
        #expect(refused.status == 77)
        #expect(refused.err.contains("peer-sync join"), "\(refused.err)")
        for s in [h.owner, a, b] {
            #expect(try Store(path: s).device(bID)?.revokedAt?.rfc3339 == revokedAt, "\(s) holds the owner's revocation time")
        }
        let later = try h.sync(b, day: 6)
        #expect(later.status == 77 && later.err.contains("peer-sync join"), "\(later.err)")
        // A new offer: B's store joins again, and its records merge both ways.
        let j = try h.join(b, day: 7)
        #expect(j.status == 0, "\(j.err)")
        #expect(try Store(path: b).isSelfRevoked == false)
        try h.edit(a, day: 7, [Self.receipt("a-1", "from a")])
        try h.rounds(2, day: 7)
        for s in h.all {
            for id in ["b-1", "b-2", "a-1"] { #expect(try Star.isLive(s, id), "\(s) has \(id)") }
        }
        #expect(Set(try h.all.map { try Household.digest($0) }).count == 1)
    }
}
