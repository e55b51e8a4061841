import Foundation
import Testing
import FamilySync

/// Device names: a member names itself at join, the owner renames, the
/// owner's signed roster carries the names to the family, and they show in
/// status, tombstone-gc's heldBackBy and serve's log lines. A name from a
/// peer is hostile: it can never put an escape sequence or a line of its
/// own on a terminal or in a log.
@Suite(.serialized) struct DeviceNameTests {
    static func status(_ db: String) throws -> JSONValue {
        let r = try Tools.run("peer-sync", ["status", "--db", db])
        #expect(r.status == 0, "\(r.err)")
        return try #require(r.json)
    }

    /// Each device's name in `db`'s status, by device ID (NSNull-free: a missing name is "").
    static func names(_ db: String) throws -> [String: String] {
        var out: [String: String] = [:]
        for d in try status(db)["devices"]?.arrayValue ?? [] {
            out[d["device"]?.stringValue ?? "?"] = d["name"]?.stringValue ?? ""
        }
        return out
    }

    @Test func joinNameRenameAndTheFamilySeesTheOwnersNames() throws {
        let dir = TempDir()
        let owner = dir.file("owner.db"), a = dir.file("a.db"), b = dir.file("b.db")
        let offer = try Household.owner(owner)
        let server = try ServeProcess(db: owner, dir: dir)
        defer { server.stop() }
        let ja = try Household.join(a, server: server, offer: offer, extra: ["--name", "Anna's phone"])
        #expect(ja.status == 0, "\(ja.err)")
        let jb = try Household.join(b, server: server, offer: try Household.offer(owner))
        #expect(jb.status == 0, "\(jb.err)")
        let ownerID = try Household.device(owner), aID = try Household.device(a), bID = try Household.device(b)

        // The owner keeps the name A gave; A knows its own; B has none yet.
        #expect(try Self.names(owner) == [ownerID: "", aID: "Anna's phone", bID: ""])
        #expect(try Self.names(a)[aID] == "Anna's phone")
        // serve's log line for each session names the device.
        #expect(server.summary(after: 1) != nil)
        #expect(server.err.contains("session with \(aID) (Anna's phone) at "), "\(server.err)")
        #expect(server.summaries.first?["peerName"]?.stringValue == "Anna's phone")

        // The owner renames B; B learns it from the owner's signed roster, and A's name too.
        let rn = try Tools.run("peer-sync", ["rename", "--db", owner, String(bID.prefix(6)), "Ben's tablet"])
        #expect(rn.status == 0, "\(rn.err)")
        #expect(rn.json?["device"]?.stringValue == bID && rn.json?["name"]?.stringValue == "Ben's tablet" && rn.json?["was"]?.isNull == true,
                "\(rn.out)")
        let seen = server.summaries.count
        let cb = try Tools.run("peer-sync", ["connect", "--db", b, server.address])
        #expect(cb.status == 0, "\(cb.err)")
        #expect(try Self.names(b) == [ownerID: "", aID: "Anna's phone", bID: "Ben's tablet"])
        #expect(server.summary(after: seen)?["peerName"]?.stringValue == "Ben's tablet")
        #expect(server.err.contains("session with \(bID) (Ben's tablet) at "), "\(server.err)")

        // A member cannot rename anyone, itself included: refused, its store as before.
        let before = try Household.fingerprint(a)
        let refused = try Tools.run("peer-sync", ["rename", "--db", a, bID, "Hacked"])
        #expect(refused.status == 77)
        #expect(refused.err.contains("only the owner's device names devices"), "\(refused.err)")
        #expect(try Household.fingerprint(a) == before)
        // A name changed behind a member's back (a hostile member) goes nowhere: the
        // owner never takes a roster, and members take only the owner's signed one.
        try Store(path: a).setDeviceName(bID, "Hacked")
        let ca = try Tools.run("peer-sync", ["connect", "--db", a, server.address])
        #expect(ca.status == 0, "\(ca.err)")
        #expect(try Self.names(owner)[bID] == "Ben's tablet")

        // A renamed device learns its new name from another member that relays the owner's roster.
        #expect(try Tools.run("peer-sync", ["rename", "--db", owner, aID, "Anna's laptop"]).status == 0)
        #expect(try Tools.run("peer-sync", ["connect", "--db", b, server.address]).status == 0)
        server.stop()
        let memberServe = try ServeProcess(db: b, dir: dir, name: "serve-b")
        defer { memberServe.stop() }
        let relayed = try Tools.run("peer-sync", ["connect", "--db", a, memberServe.address])
        #expect(relayed.status == 0, "\(relayed.err)")
        #expect(relayed.json?["peerName"]?.stringValue == "Ben's tablet")
        #expect(try Self.names(a) == [ownerID: "", aID: "Anna's laptop", bID: "Ben's tablet"])

        // The listing the completions use gives ID, tab, name.
        let ids = try Tools.run("peer-sync", ["status", "--device-ids", "--db", owner])
        #expect(Set(ids.lines) == ["\(aID)\tAnna's laptop", "\(bID)\tBen's tablet"])
    }

    @Test func tombstoneGCNamesTheDevicesHoldingBack() throws {
        let dir = TempDir()
        let owner = dir.file("owner.db"), a = dir.file("a.db")
        let offer = try Household.owner(owner)
        let server = try ServeProcess(db: owner, dir: dir)
        defer { server.stop() }
        #expect(try Household.join(a, server: server, offer: offer, extra: ["--name", "Anna's phone"]).status == 0)
        let del = try Tools.run("merge-records", ["--db", owner, "--stamp"], input: #"{"id":"r-1","type":"note","deleted":true}"# + "\n")
        #expect(del.status == 0, "\(del.err)")
        let later = Timestamp(milliseconds: Timestamp.current().milliseconds + 120 * 86_400_000).rfc3339
        let gc = try Tools.run("tombstone-gc", ["--db", owner, "--now", later, "--dry-run"])
        #expect(gc.status == 0, "\(gc.err)")
        let held = try #require(gc.json?["heldBackBy"]?.arrayValue)
        #expect(held.count == 1)
        #expect(held.first?["deviceId"]?.stringValue == (try Household.device(a)))
        #expect(held.first?["name"]?.stringValue == "Anna's phone", "\(gc.out)")
    }

    @Test func namesTypedAreCheckedAndNamesFromPeersAreMadeSafe() throws {
        let dir = TempDir()
        let owner = dir.file("owner.db")
        let offer = try Household.owner(owner)
        let server = try ServeProcess(db: owner, dir: dir)
        defer { server.stop() }

        // Typed: refused with the reason, and nothing is stored or created.
        let limit = DeviceName.maxBytes
        for (name, problem) in [("evil\u{1B}[31m", "control character (U+001B)"), ("two\nlines", "control character (U+000A)"),
                                ("", "empty"), (String(repeating: "é", count: limit / 2 + 1), "longer than \(limit) bytes")] {
            let kid = dir.file("kid-\(problem.count).db")
            let r = try Household.join(kid, server: server, offer: offer, extra: ["--name", name])
            #expect(r.status == 64, "\(name.debugDescription): \(r.err)")
            #expect(r.err.contains("--name: ") && r.err.contains(problem), "\(r.err)")
            #expect(!FileManager.default.fileExists(atPath: kid))
        }
        let bad = try Tools.run("peer-sync", ["rename", "--db", owner, try Household.device(owner), "x\u{9B}2J"])
        #expect(bad.status == 64 && bad.err.contains("NAME: the name holds a control character (U+009B)"), "\(bad.err)")

        // From a peer: a JOIN whose name would clear the screen, retitle the
        // window, fake a log line and reverse the text. The core sends it as given.
        let hostile = "Eve\u{1B}[2J\u{1B}]0;owned\u{07}\npeer-sync: listening on 6.6.6.6\u{202E}enohp"
        let kid = dir.file("eve.db")
        let client = try SyncClient(store: try Store(path: kid), options: SyncOptions(), now: Timestamp.current(), observer: nil,
                                    verifier: try ProofVerifier())
        let parsed = try OfferInput.parse(offer, source: "offer")
        _ = try client.join(offer: parsed, at: HostPort(parsing: server.address), browse: false, wait: .seconds(5), name: hostile)
        let eve = try Household.device(kid)
        let stored = try #require(try Self.names(owner)[eve])
        #expect(!stored.unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) || $0 == "\u{202E}" }, "\(stored.debugDescription)")
        #expect(stored.hasPrefix("Eve\u{FFFD}[2J"), "\(stored.debugDescription)")
        #expect(try Self.names(kid)[eve] == stored, "the member keeps the same safe name")
        // serve's log: one line for that session, no escape anywhere.
        #expect(server.summary(after: 0) != nil)
        #expect(!server.err.unicodeScalars.contains("\u{1B}") && !server.err.unicodeScalars.contains("\u{07}"))
        let lines = server.err.split(separator: "\n")
        #expect(lines.filter { $0.contains("6.6.6.6") }.count == 1 && lines.allSatisfy { $0.hasPrefix("peer-sync: ") }, "\(server.err)")

        // Longer than the limit on the wire: the join is refused and nothing is admitted.
        let long = dir.file("long.db")
        let devicesBefore = try Self.names(owner).count
        let c2 = try SyncClient(store: try Store(path: long), options: SyncOptions(), now: Timestamp.current(), observer: nil,
                                verifier: try ProofVerifier())
        #expect(throws: (any Error).self) {
            _ = try c2.join(offer: try OfferInput.parse(try Household.offer(owner), source: "offer"), at: HostPort(parsing: server.address),
                            browse: false, wait: .seconds(5), name: String(repeating: "n", count: limit + 1))
        }
        #expect(try Self.names(owner).count == devicesBefore)
    }
}
