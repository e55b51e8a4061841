import Foundation
import Testing
import FamilySync

/// Households whose devices' clocks disagree, and devices that go away and
/// come back (docs/protocol.md §4.3–§4.5, revision 3): no clock and no rejoin
/// loses an edit, keeps a delete from happening, purges too early, brings a
/// purged record back or leaves the stores different. Every device runs the
/// release tools with its own clock (`Star.clockOffset`, `--now`).
@Suite(.serialized) struct HouseholdClockTests {
    static func receipt(_ id: String, _ note: String) -> String { "{\"id\":\"\(id)\",\"type\":\"receipt\",\"data\":{\"note\":\"\(note)\"}}" }
    static func deletion(_ id: String) -> String { "{\"id\":\"\(id)\",\"type\":\"receipt\",\"deleted\":true}" }

    static func line(_ store: String, _ id: String) throws -> String? {
        try Store(path: store).db.scalarText("SELECT line FROM records WHERE id = ?", [.text(id)])
    }

    /// Every record a store holds, as stored: id, line, time, author, deleted.
    static func dump(_ store: String, author: String? = nil) throws -> String {
        let filter = author.map { "WHERE device_id = '\($0)'" } ?? ""
        return try Store(path: store).db.scalarText("""
            SELECT group_concat(id || ' ' || modified_at || ' ' || device_id || ' ' || deleted || ' ' || line, char(10))
            FROM (SELECT * FROM records \(filter) ORDER BY id)
            """) ?? ""
    }

    /// Two rounds, then one more in which every session must report equal
    /// digests; then every store's digest must be the same.
    static func converge(_ h: Star, day d: Int, _ what: String) throws {
        try h.rounds(2, day: d)
        for m in h.members {
            let r = try h.sync(m, day: d)
            #expect(r.status == 0, "\(what): \(r.err)")
            #expect(r.json?.at("digest", "equal")?.boolValue == true, "\(what): \(m) still differs from the owner: \(r.out)")
        }
        #expect(Set(try h.all.map { try Household.digest($0) }).count == 1, "\(what): every store holds the same records")
    }

    static let days200 = TimeSpan.days(200)

    /// A member and an owner that agree on receipt `r`, the owner's clock then set back a month;
    /// its serve stopped, so the next session starts one with that clock.
    static func ownerSetBack() throws -> (Star, String) {
        let h = try Star(members: 1)
        try h.edit(h.owner, day: 0, [Self.receipt("r", "first")])
        try h.rounds(1, day: 0)
        h.stopServe()
        h.clockOffset[h.owner] = .days(-30)
        return (h, h.members[0])
    }

    /// Writes a bundle from `from` to `to` on day 1 and applies it there.
    static func carry(_ h: Star, _ from: String, _ to: String, _ name: String) throws {
        let out = h.dir.file(name)
        let b = try Tools.run("peer-sync", ["bundle", "--db", from, "--to", try Household.device(to), "-o", out, "--now", h.now(from, day: 1)])
        #expect(b.status == 0, "bundle \(name): \(b.err)")
        let parts = (b.json?["parts"]?.arrayValue ?? []).compactMap(\.stringValue)
        let u = try Tools.run("peer-sync", ["unbundle", "--db", to, "--now", h.now(to, day: 1)] + parts)
        #expect(u.status == 0, "unbundle \(name): \(u.err)")
    }

    /// By files alone (docs/protocol.md §12b, copies owed): a member that last heard the
    /// owner's clock before it went back a month edits a receipt; the owner pulls the edit
    /// back on arrival and edits the receipt; the member's next file brings the edit, which
    /// wins on both, and the member's own version sent again does not undo it.
    @Test func anOwnerEditOfAMembersPulledBackEditReachesItByFilesAlone() throws {
        let (h, m) = try Self.ownerSetBack()
        defer { h.stop() }
        try h.edit(m, day: 1, [Self.receipt("r", "kid's")])
        try Self.carry(h, m, h.owner, "to-owner-1")
        let pulled = try #require(try Self.line(h.owner, "r"))
        let kids = try Self.line(m, "r")
        #expect(pulled.contains("kid's") && pulled != kids, "the owner pulled the kid's edit back: \(pulled)")
        try h.edit(h.owner, day: 1, [Self.receipt("r", "owner's")])
        // The kid's file crosses the owner's: its own version comes again, and the edit stands.
        try Self.carry(h, m, h.owner, "to-owner-2")
        #expect(try Self.line(h.owner, "r")?.contains("owner's") == true)
        try Self.carry(h, h.owner, m, "to-kid")
        let onKids = try Self.line(m, "r") ?? "none"
        #expect(onKids.contains("owner's"), "the kid's phone: \(onKids)")
        #expect(try Household.digest(m) == Household.digest(h.owner))
    }

    /// The same copy, replaced by the owner's edit before it went back, then a
    /// session instead of a file: the kid's phone sends its own version again,
    /// and the owner's edit, made after it saw that version, wins on both.
    @Test func anOwnerEditOfAMembersPulledBackEditWinsInTheNextSession() throws {
        let (h, m) = try Self.ownerSetBack()
        defer { h.stop() }
        try h.edit(m, day: 1, [Self.receipt("r", "kid's")])
        try Self.carry(h, m, h.owner, "to-owner")
        try h.edit(h.owner, day: 1, [Self.receipt("r", "owner's")])
        let s = try h.sync(m, day: 1)
        #expect(s.status == 0, "sync: \(s.err)")
        #expect(s.json?.at("digest", "equal")?.boolValue == true, "one session agrees: \(s.out)")
        for store in h.all {
            let line = try Self.line(store, "r") ?? "none"
            #expect(line.contains("owner's"), "\(store): \(line)")
        }
        #expect(try Household.digest(m) == Household.digest(h.owner))
    }

    /// A device away longer than the horizon, revoked meanwhile, joins again:
    /// what it made while away is not taken for purged, and the delete the
    /// family purged while it was gone stays purged, on it too.
    @Test func aRejoiningDeviceKeepsWhatItMadeWhileAway() throws {
        let h = try Star(members: 3)
        defer { h.stop() }
        let (a, b, c) = (h.members[0], h.members[1], h.members[2])
        try h.edit(a, day: 0, (0..<5).map { Self.receipt("r-\($0)", "first") })
        try h.rounds(2, day: 1)
        #expect(try Star.isLive(c, "r-1"))
        // C, offline, makes a record on day 10; B deletes another one on day 20.
        try h.edit(c, day: 10, [Self.receipt("c-1", "made by C while away")])
        try h.edit(b, day: 20, [Self.deletion("r-1")])
        try h.rounds(2, day: 20, skipping: [c])
        let cID = try Household.device(c)
        let rv = try Tools.run("peer-sync", ["revoke", "--db", h.owner, "--now", h.day(95), cID])
        #expect(rv.status == 0, "\(rv.err)")
        h.members = [a, b]
        try h.rounds(2, day: 100)
        try h.purgeAtOwner(day: 112, expected: 1)
        for s in [h.owner, a, b] { #expect(try !Star.has(s, "r-1"), "\(s) purged r-1") }

        // C joins again with a new offer, as its refusal says.
        let j = try h.join(c, day: 121)
        #expect(j.status == 0, "\(j.err)")
        h.members = [a, b, c]
        try Self.converge(h, day: 121, "after C's rejoin")
        for s in h.all {
            #expect(try Star.isLive(s, "c-1"), "\(s): C's record made while away is kept")
            #expect(try !Star.has(s, "r-1"), "\(s): the purged record stays gone")
            #expect(try Star.isLive(s, "r-2"), "\(s)")
        }
    }

    /// Members 2 minutes and a month behind: the owner's versions reach them
    /// as they are (no copy pulled back to a member's clock splits the
    /// family), and a slow member's later edit of another device's record wins.
    @Test func slowMembersConvergeAndTheirLaterEditsWin() throws {
        let h = try Star(members: 3)
        defer { h.stop() }
        let (a, b, c) = (h.members[0], h.members[1], h.members[2])
        h.clockOffset[b] = TimeSpan.minutes(-2)
        h.clockOffset[c] = TimeSpan.days(-30)
        try h.edit(a, day: 1, (0..<3).map { Self.receipt("r-\($0)", "by A") })
        try Self.converge(h, day: 1, "after A's records")
        let aID = try Household.device(a)
        for s in h.all {
            #expect(try Star.isLive(s, "r-0"))
            #expect(try Store(path: s).db.scalarInt("SELECT count(*) FROM records WHERE device_id = ?", [.text(aID)]) == 3, "\(s): A's versions as A made them")
        }
        #expect(try Self.dump(b) == Self.dump(a) && Self.dump(c) == Self.dump(a), "the slow members hold A's versions byte for byte")

        try h.edit(c, day: 2, [Self.receipt("r-1", "C's later edit")])
        try h.edit(b, day: 2, [Self.receipt("r-2", "B's later edit")])
        try Self.converge(h, day: 2, "after the slow members' edits")
        for s in h.all {
            #expect(try Self.line(s, "r-1")?.contains("C's later edit") == true, "\(s): the month-slow member's later edit wins")
            #expect(try Self.line(s, "r-2")?.contains("B's later edit") == true, "\(s): the 2-minutes-slow member's later edit wins")
        }
    }

    /// A member whose clock says 1970 never rewrites the owner's own
    /// versions; its session says how far off its clock is.
    @Test func aMemberIn1970LeavesTheOwnersRecordsAsTheyAre() throws {
        let h = try Star(members: 2)
        defer { h.stop() }
        let (a, b) = (h.members[0], h.members[1])
        try h.edit(h.owner, day: 0, (0..<30).map { Self.receipt("o-\($0)", "the owner's first") })
        try h.edit(a, day: 0, (0..<5).map { Self.receipt("a-\($0)", "A's") })
        try h.rounds(1, day: 0)
        try h.edit(h.owner, day: 1, (20..<60).map { Self.receipt("o-\($0)", "the owner's newest") })
        let ownerID = try Household.device(h.owner)
        let ownersBefore = try Self.dump(h.owner, author: ownerID)
        let allBefore = try Self.dump(h.owner)
        #expect(ownersBefore.split(separator: "\n").count == 60)

        // B's clock battery died: 1970-01-01T01:00Z on day 0.
        h.clockOffset[b] = TimeSpan(milliseconds: 3_600_000 - h.base.milliseconds)
        #expect(h.now(b, day: 1).hasPrefix("1970-01-02"))
        let r = try h.sync(b, day: 1)
        #expect(r.status == 0, "\(r.err)")
        #expect(r.json?.at("clockSkew", "reported")?.boolValue == true, "\(r.out)")
        #expect(abs(r.json?.int("clockSkew", "ms") ?? 0) > TimeSpan.days(365 * 50).milliseconds, "\(r.out)")
        #expect(r.err.contains("the owner's clock is") && r.err.contains("days ahead of this device's"), "stderr says whose clock is off: \(r.err)")
        #expect(try Self.dump(h.owner) == allBefore, "the owner's store is as before, byte for byte")
        #expect(try Self.dump(b, author: ownerID) == ownersBefore, "B holds the owner's versions as the owner made them")
        try h.rounds(2, day: 1)
        #expect(try Self.dump(h.owner, author: ownerID) == ownersBefore)
        #expect(try Self.dump(a) == allBefore, "A holds what the owner holds")

        // B's edit, made with its 1970 clock after it saw the owner's version, wins everywhere.
        try h.edit(b, day: 2, [Self.receipt("o-55", "B's edit in 1970")])
        try Self.converge(h, day: 2, "after B's edit")
        for s in h.all { #expect(try Self.line(s, "o-55")?.contains("B's edit in 1970") == true, "\(s)") }
        let rest = try Self.dump(h.owner, author: ownerID)
        #expect(rest == ownersBefore.split(separator: "\n").filter { !$0.hasPrefix("o-55 ") }.joined(separator: "\n"), "the owner's other versions are untouched")
    }

    /// The owner's clock goes back 30 days (a CMOS reset) after its members
    /// saw a day-1 version: a member's day-4 edit of it still wins, and a
    /// delete still beats the record it deleted, on every device.
    @Test func anOwnerClockBehindLosesNoEditAndNoDelete() throws {
        let h = try Star(members: 2)
        defer { h.stop() }
        let (a, b) = (h.members[0], h.members[1])
        try h.edit(a, day: 1, [Self.receipt("r-1", "day 1"), Self.receipt("r-2", "day 1")])
        try h.rounds(2, day: 1)
        h.clockOffset[h.owner] = TimeSpan.days(-30)
        // A hears the owner's clock before its delete; B does not before its edit.
        #expect(try h.sync(a, day: 3).status == 0)
        try h.edit(b, day: 4, [Self.receipt("r-1", "B's day-4 edit")])
        try h.edit(a, day: 4, [Self.deletion("r-2")])
        try Self.converge(h, day: 4, "with the owner 30 days behind")
        for s in h.all {
            #expect(try Self.line(s, "r-1")?.contains("B's day-4 edit") == true, "\(s): the later edit wins")
            #expect(try Star.has(s, "r-2") && !Star.isLive(s, "r-2"), "\(s): the delete beats the record it deleted")
        }
    }

    /// A member 200 days ahead that knows the family's clock edits y on day
    /// 61 and goes offline; another edits y on day 80: the day-80 edit wins
    /// once the first comes back.
    @Test func anEditMadeWithAFastClockDoesNotBeatALaterEdit() throws {
        let h = try Star(members: 2)
        defer { h.stop() }
        let (a, b) = (h.members[0], h.members[1])
        try h.edit(h.owner, day: 0, [Self.receipt("y", "the owner's")])
        h.clockOffset[a] = Self.days200
        try h.rounds(2, day: 1)
        try h.edit(a, day: 61, [Self.receipt("y", "A's day 61")])
        try h.edit(b, day: 80, [Self.receipt("y", "B's day 80")])
        #expect(try h.sync(b, day: 80).status == 0)
        try Self.converge(h, day: 100, "after A came back")
        for s in h.all { #expect(try Self.line(s, "y")?.contains("B's day 80") == true, "\(s): the later edit wins") }
    }

    /// A member 200 days behind makes a delete that carries an old time: the
    /// owner ages it from when its store got it, purges it after the horizon
    /// by its own clock, and a member's backup from before the delete brings
    /// nothing back.
    @Test func aSlowMembersDeletePurgesByTheOwnersClockAndStaysPurged() throws {
        let h = try Star(members: 2)
        defer { h.stop() }
        let (a, b) = (h.members[0], h.members[1])
        try h.edit(b, day: 0, (0..<3).map { Self.receipt("r-\($0)", "B's") })
        try h.rounds(2, day: 0)
        // A's clock jumps 200 days back; it makes r-3, copies its store, then deletes r-3.
        h.clockOffset[a] = TimeSpan(milliseconds: -Self.days200.milliseconds)
        try h.edit(a, day: 1, [Self.receipt("r-3", "A's, dated 200 days ago")])
        let copy = h.dir.file("a-backup.db")
        let bk = try Tools.run("merge-records", ["--db", a, "--backup", copy])
        #expect(bk.status == 0, "\(bk.err)")
        try h.edit(a, day: 1, [Self.deletion("r-3")])
        try h.rounds(3, day: 1)
        let deletedAt = try #require(try Store(path: h.owner).db.scalarInt("SELECT modified_at FROM records WHERE id = 'r-3' AND deleted = 1"))
        #expect(deletedAt < h.base.adding(.days(-100)).milliseconds, "the tombstone carries A's old time")
        for s in h.all { #expect(try h.gc(s, day: 2).int("purged") == 0, "\(s): a delete one day old is not purged") }
        for s in h.all { #expect(try h.gc(s, day: 90).int("purged") == 0, "\(s): not before the horizon by the owner's clock") }
        try h.purgeAtOwner(day: 92, expected: 1)
        for s in h.all { #expect(try !Star.has(s, "r-3")) }

        // A's store is restored from the copy that has r-3 live.
        try Household.restore(a, from: copy)
        #expect(try Star.isLive(a, "r-3"))
        let r = try h.sync(a, day: 93)
        #expect(r.status == 0, "\(r.err)")
        #expect(r.json?.int("records", "purged") ?? 0 >= 1, "the restored store dropped what the family purged: \(r.out)")
        try Self.converge(h, day: 93, "after A's restore")
        for s in h.all {
            #expect(try !Star.has(s, "r-3"), "\(s): a purged record came back")
            #expect(try Star.isLive(s, "r-0"), "\(s)")
        }
    }

    /// After the owner purged a delete, a member whose clock is months behind
    /// makes new records dated before the purge: they are new ids, never
    /// purged, and reach every store.
    @Test func newRecordsDatedBeforeAPurgeAreTaken() throws {
        let h = try Star(members: 2)
        defer { h.stop() }
        let (a, b) = (h.members[0], h.members[1])
        try h.edit(a, day: 0, (0..<3).map { Self.receipt("r-\($0)", "A's") })
        try h.rounds(2, day: 0)
        try h.edit(a, day: 1, [Self.deletion("r-1")])
        try h.rounds(3, day: 1)
        try h.purgeAtOwner(day: 92, expected: 1)
        // B's clock goes back 120 days: its new records are dated before the purged delete.
        h.clockOffset[b] = TimeSpan.days(-120)
        try h.edit(b, day: 93, (0..<3).map { Self.receipt("n-\($0)", "B's, with a slow clock") })
        let stamped = try #require(try Store(path: b).db.scalarInt("SELECT max(modified_at) FROM records WHERE id LIKE 'n-%'"))
        #expect(stamped < h.base.adding(.days(1)).milliseconds, "B's records are dated before the delete")
        try Self.converge(h, day: 93, "after B's new records")
        for s in h.all {
            for i in 0..<3 { #expect(try Star.isLive(s, "n-\(i)"), "\(s) took n-\(i)") }
            #expect(try !Star.has(s, "r-1"))
        }
    }

    /// Offers are judged by the owner's clock where they are redeemed: a
    /// device 200 days ahead joins (with a warning), and an offer made while
    /// the owner's clock was 30 days fast is refused once the clock is right.
    @Test func offersAreJudgedByTheOwnersClock() throws {
        let h = try Star(members: 1)
        defer { h.stop() }
        let e = h.dir.file("e.db")
        h.clockOffset[e] = Self.days200
        let j = try h.join(e, day: 1)
        #expect(j.status == 0, "a device 200 days ahead joins: \(j.err)")
        #expect(j.err.contains("has passed by this device's clock"), "\(j.err)")
        h.members.append(e)
        try h.edit(e, day: 2, [Self.receipt("e-1", "E's")])
        try Self.converge(h, day: 2, "after E joined")
        #expect(try Star.isLive(h.owner, "e-1"))
        let stamped = try #require(try Store(path: h.owner).db.scalarInt("SELECT modified_at FROM records WHERE id = 'e-1'"))
        #expect(abs(stamped - h.clock(h.owner, day: 2).milliseconds) <= TimeSpan.minutes(5).milliseconds + 1000,
                "E's edit carries the family's clock, not its own")

        // The owner's clock was 30 days fast when it made an offer; by day 2 it is right again.
        let fast = try Store(path: h.owner).makeOffer(ttl: .minutes(10), address: nil, now: h.base.adding(.days(32)))
        let f = h.dir.file("f.db")
        let refused = try Tools.run("peer-sync", ["join", "--db", f, "--now", h.day(2), "--connect", try h.server(day: 2).address], input: fast.text + "\n")
        #expect(refused.status == 77, "\(refused.err)")
        #expect(refused.err.contains("offer expired"), "\(refused.err)")
        let fresh = try Store(path: h.owner).makeOffer(ttl: .minutes(10), address: nil, now: h.clock(h.owner, day: 2))
        let ok = try Tools.run("peer-sync", ["join", "--db", f, "--now", h.day(2), "--connect", try h.server(day: 2).address], input: fresh.text + "\n")
        #expect(ok.status == 0, "an offer made by the right clock is redeemed: \(ok.err)")
    }

    /// A member that sets its own purge floor to the end of time makes nobody
    /// else drop anything or refuse anything.
    @Test func aMembersOwnPurgeFloorAffectsNobodyElse() throws {
        let h = try Star(members: 2)
        defer { h.stop() }
        let (a, b) = (h.members[0], h.members[1])
        try h.edit(h.owner, day: 0, (0..<20).map { Self.receipt("o-\($0)", "the owner's") })
        try h.edit(b, day: 0, (0..<5).map { Self.receipt("b-\($0)", "B's") })
        try h.rounds(2, day: 0)
        let before = try Self.dump(h.owner)
        // 9999-12-31T00:00:00Z, in milliseconds.
        try Store(path: a).db.run("INSERT OR REPLACE INTO meta (key, value) VALUES ('purge_floor', '253402214400000')")
        try Store(path: a).db.run("UPDATE devices SET sent_seq = 0, recv_seq = 0 WHERE role = 'owner'")
        let r = try h.sync(a, day: 1)
        #expect(r.status == 0, "\(r.err)")
        #expect(try Self.dump(h.owner) == before, "the owner dropped nothing")
        try h.edit(b, day: 1, [Self.receipt("n-b", "B's new")])
        try h.edit(a, day: 1, [Self.receipt("n-a", "A's new")])
        try h.edit(h.owner, day: 1, [Self.receipt("n-o", "the owner's new")])
        try h.rounds(2, day: 1)
        for s in [h.owner, b] {
            for id in ["n-a", "n-b", "n-o", "o-0", "b-4"] { #expect(try Star.isLive(s, id), "\(s) has \(id)") }
        }
        #expect(try Household.digest(h.owner) == Household.digest(b))
    }

    /// A member's purge batches not signed by the owner's roster key — signed
    /// by a key of its own, carrying a made-up signature, or unsigned — passed
    /// on when it sends everything, make no store drop anything.
    @Test func aMembersForgedPurgeBatchesDropNothing() throws {
        let h = try Star(members: 2)
        defer { h.stop() }
        let (a, b) = (h.members[0], h.members[1])
        try h.edit(h.owner, day: 0, (0..<5).map { Self.receipt("o-\($0)", "the owner's") })
        try h.edit(a, day: 0, (0..<5).map { Self.receipt("a-\($0)", "A's") })
        try h.rounds(2, day: 0)
        let ownerBefore = try Self.dump(h.owner)
        let aBefore = try Self.dump(a)
        #expect(ownerBefore == aBefore)

        // B writes batches that purge every id at the end of time.
        let family = try #require(try Store(path: h.owner).family()).id
        func entries(_ deletedAt: Int64) -> [UInt8] {
            var out: [UInt8] = []
            for id in (0..<5).map({ "o-\($0)" }) + (0..<5).map({ "a-\($0)" }) {
                let hash = PurgeEntry.hash(id)
                for i in (0..<8).reversed() { out.append(UInt8(truncatingIfNeeded: hash >> (8 * UInt64(i)))) }
                for i in (0..<8).reversed() { out.append(UInt8(truncatingIfNeeded: UInt64(bitPattern: deletedAt) >> (8 * UInt64(i)))) }
            }
            return out
        }
        let ownKey = try Ed25519.generatePrivateKey()
        let signedByB = entries(253_402_214_400_000)
        let message = Array("family-sync/3 purge".utf8) + [0] + Array(family.utf8) + [0] + signedByB
        let batches: [([UInt8], SQLValue)] = [
            (signedByB, .blob(try Ed25519.sign(message, privateKey: ownKey))),
            (entries(253_402_214_400_001), .blob((try SecretBytes.random(count: Ed25519.signatureBytes)).copiedBytes)),
            (entries(253_402_214_400_002), .null),
        ]
        let bs = try Store(path: b)
        for (e, sig) in batches {
            try bs.db.run("INSERT INTO purge_batches (seq, digest, entries, signature) VALUES (0, ?, ?, ?)", [.blob(SHA256.hash(e)), .blob(e), sig])
        }
        // B's store remembers no session with the owner: both send everything.
        try bs.db.run("UPDATE devices SET sent_seq = 0, recv_seq = 0 WHERE role = 'owner'")
        let toOwner = try h.sync(b, day: 1)
        #expect(toOwner.status != 0 && toOwner.err.contains("PURGED batch not signed by the family's owner"), "the owner refuses B's batches: \(toOwner.err)")
        #expect(try Self.dump(h.owner) == ownerBefore, "the owner dropped nothing: \(toOwner.err)")
        #expect(try Store(path: h.owner).purgeRecordCount() == 0, "the owner kept no forged batch")
        #expect(try h.sync(a, day: 1).status == 0)
        #expect(try Self.dump(a) == aBefore, "A dropped nothing")

        // B serves A directly: their first session sends everything, forged batches included.
        let bServe = try ServeProcess(db: b, dir: h.dir, name: "b-serve", extra: ["--now", h.day(1)])
        let direct = try Tools.run("peer-sync", ["connect", "--db", a, "--now", h.day(1), bServe.address])
        bServe.stop()
        #expect(direct.status != 0 && direct.err.contains("PURGED batch not signed by the family's owner"), "A refuses B's batches: \(direct.err)")
        #expect(try Self.dump(a) == aBefore, "A dropped nothing from B's batches: \(direct.err)")
        #expect(try Store(path: a).purgeRecordCount() == 0, "A kept no forged batch")
        #expect(try h.sync(a, day: 1).status == 0)
        #expect(try Self.dump(h.owner) == ownerBefore)
    }

    /// The horizon counts from when the owner's store got a delete, even when
    /// the delete arrived within the hour after the store's last held-since
    /// mark and the store changed no more: a quiet household's delete purges
    /// 90 days later all the same.
    @Test
    func aDeleteInAQuietHouseholdPurgesAfterTheHorizon() throws {
        let h = try Star(members: 2)
        defer { h.stop() }
        let (a, b) = (h.members[0], h.members[1])
        try h.edit(a, day: 0, (0..<3).map { Self.receipt("r-\($0)", "A's") })
        try h.rounds(2, day: 0)
        // The delete reaches the owner minutes after its previous change; nothing changes afterwards.
        try h.edit(b, day: 0, [Self.deletion("r-1")])
        try h.rounds(3, day: 0)
        for s in h.all { #expect(try Star.has(s, "r-1") && !Star.isLive(s, "r-1")) }
        try h.purgeAtOwner(day: 92, expected: 1)
        for s in h.all { #expect(try !Star.has(s, "r-1"), "\(s) purged r-1") }
    }
}
