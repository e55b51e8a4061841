import Foundation
import Testing
import FamilySync

/// A member that turns against the household, driven frame by frame with its
/// own keys (read from its own store) against a running `peer-sync serve`:
/// every value it sends is judged by its role and bounds (docs/protocol.md
/// §4.7), and no session it holds can stall the owner (§10).
@Suite struct HostileMemberTests {
    /// The member's HELLO with `epoch` as the member says it.
    static func hello(_ member: String, ofOwner owner: String, epoch: String) throws -> [UInt8] {
        let fam = try Store(path: owner).family()!
        let me = try Store(path: member).deviceID
        let text = "{\"protocol\":\(SyncProtocol.version),\"device\":\"\(me)\",\"family\":\"\(fam.id)\",\"role\":\"member\",\"clock\":\"\(Timestamp.current().rfc3339)\",\"epoch\":\(epoch),\"after\":0,\"sent\":0,\"software\":\"hostile\"}"
        return RawPeer.frame(0x01, Array(text.utf8))
    }

    /// Reads frames until ERROR (its text) or the end of the connection (nil),
    /// sending a PING every half second meanwhile, as a member that only
    /// keeps the session alive does.
    static func pingUntilError(_ peer: RawPeer, within seconds: TimeInterval) throws -> String? {
        let end = Date().addingTimeInterval(seconds)
        while Date() < end {
            try peer.send(RawPeer.frame(0x31, []))
            do {
                guard let f = try peer.readFrame(timeout: 0.5) else { return nil }
                if f.type == 0x3F { return String(decoding: f.payload, as: UTF8.self) }
            } catch is HarnessError {
                continue  // nothing whole within half a second: ping again
            }
        }
        throw HarnessError("no ERROR within \(seconds) s")
    }

    /// §4.7, §7.1: a HELLO `epoch` past the protocol's bound, or further above
    /// the owner's own than a restore can explain, is a protocol error naming
    /// the field. serve keeps running, the owner's key stays where it was,
    /// and the member's next honest sync completes.
    @Test func anEpochOutOfRangeIsAProtocolErrorNamingTheFieldAndChangesNothing() throws {
        let dir = TempDir()
        let (owner, member, server) = try PeerSyncFaultTests.pair(dir)
        defer { server.stop() }
        let epochBefore = try Store(path: owner).familyEpoch
        let keyBefore = try Store(path: owner).familySecret()?.copiedBytes
        for epoch in ["9223372036854775807", "\(Int64(1) << 62)", "\(SyncLimits.maxEpoch + 1)", "\(epochBefore + SyncLimits.maxEpochLead + 1)"] {
            // The serve may still be ending the last connection's session: told BUSY, a member comes back.
            var reply: [UInt8]?
            for _ in 0..<100 where reply == nil {
                let peer = try RawPeer.member(member, ofOwner: owner, port: server.port)
                defer { peer.drop() }
                try peer.send(try Self.hello(member, ofOwner: owner, epoch: epoch))
                var busy = false
                while let f = try peer.readFrame(timeout: 30) {
                    if f.type == 0x3F { reply = f.payload; break }
                    if f.type == 0x04 { busy = true; break }
                }
                guard busy else { break }
                usleep(50_000)
            }
            let error = try #require(reply, "epoch \(epoch): no ERROR")
            #expect(String(decoding: error, as: UTF8.self).contains("HELLO field 'epoch'"), "epoch \(epoch): \(String(decoding: error, as: UTF8.self))")
            #expect(server.process.isRunning, "serve ended on epoch \(epoch)")
        }
        let o = try Store(path: owner)
        #expect(try o.familyEpoch == epochBefore)
        #expect(try o.familySecret()?.copiedBytes == keyBefore)
        let r = try Tools.run("peer-sync", ["connect", "--db", member, server.address], timeout: 60)
        #expect(r.status == 0, "\(r.err)")
    }

    /// §7.4 "Authorship", §4.7: a member originates versions only under its own
    /// device ID. With its own keys it hands the owner, in one batch, versions
    /// of the owner's records "by" the owner, one "by" a made-up device ID at
    /// the very time of the owner's version (the greater ID would win the
    /// tie), another member's record "by" that member, a new record "by" the
    /// owner, and one record of its own. The owner takes only its own: the
    /// summary counts the others as unattributed and the log says so, the
    /// owner's records are as they were, and the honest member's next sync
    /// brings it none of them.
    @Test func aMemberCannotWriteVersionsInAnotherDevicesName() throws {
        let dir = TempDir()
        let (owner, hostile, server) = try PeerSyncFaultTests.pair(dir)
        defer { server.stop() }
        let honest = dir.file("honest.db")
        let joined = try Household.join(honest, server: server, offer: try Household.offer(owner))
        #expect(joined.status == 0, "\(joined.err)")
        for (store, lines) in [(owner, #"{"id":"o-1","type":"note","data":{"v":0}}"# + "\n" + #"{"id":"o-2","type":"note","data":{"v":0}}"#),
                               (honest, #"{"id":"m-1","type":"note","data":{"v":0}}"#)] {
            let r = try Tools.run("merge-records", ["--db", store, "--stamp"], input: lines + "\n")
            #expect(r.status == 0, "\(r.err)")
        }
        for m in [honest, hostile] {
            let r = try Tools.run("peer-sync", ["connect", "--db", m, server.address], timeout: 60)
            #expect(r.status == 0, "\(r.err)")
        }
        func held(_ store: String) throws -> [String: String] {
            let r = try Tools.run("merge-records", ["--db", store, "--export"])
            #expect(r.status == 0, "\(r.err)")
            return Dictionary(uniqueKeysWithValues: try r.lines.map { (try Record(line: $0).id, $0) })
        }
        let before = try held(owner)
        let honestBefore = try held(honest)

        // What the member knows from its own store: the owner's ID, the other member's, the owner's o-2.
        let mine = try Store(path: hostile)
        let (me, ownerID) = (try mine.deviceID, try #require(try mine.family()).ownerDevice)
        let other = try #require(try mine.devices().first { $0.deviceID != me && $0.deviceID != ownerID }).deviceID
        let tie = try Record(line: try #require(before["o-2"])).modifiedAt
        let later = Timestamp.current().adding(.seconds(30)).rfc3339
        func version(_ id: String, by device: String, at time: String) -> String {
            #"{"id":"\#(id)","type":"note","modifiedAt":"\#(time)","deviceId":"\#(device)","deleted":false,"data":{"v":"forged"}}"#
        }
        let batch = [version("o-1", by: ownerID, at: later),
                     version("o-2", by: "FFFFFFFF-FFFF-4FFF-8FFF-FFFFFFFFFFFF", at: tie.rfc3339),
                     version("m-1", by: other, at: later),
                     version("new-1", by: ownerID, at: later),
                     version("h-1", by: me, at: later)].joined(separator: "\n") + "\n"
        let summaries = server.summaries.count
        let peer = try RawPeer.member(hostile, ofOwner: owner, port: server.port)
        defer { peer.drop() }
        let (hello, family) = try RawPeer.opening(hostile, ofOwner: owner)
        try peer.send(hello + family + RawPeer.frame(0x10, Array(batch.utf8)) + RawPeer.frame(0x11, Array("{\"count\":5,\"after\":0}".utf8)))
        // The owner's records, then its DONE; ours says what crossed, and the session ends as any does.
        var received = 0
        while let f = try peer.readFrame(timeout: 30), f.type != 0x30 {
            if f.type == 0x3F { Issue.record("ERROR: \(String(decoding: f.payload, as: UTF8.self))"); return }
            if f.type == 0x10 { received += f.payload.filter { $0 == 0x0A }.count }
        }
        let done = "{\"records\":{\"sent\":5,\"received\":\(received),\"applied\":\(received)},\"photos\":{\"sent\":0,\"received\":0,\"unavailable\":0},"
            + "\"digest\":\"\(String(repeating: "0", count: 64))\",\"upTo\":0}"
        try peer.send(RawPeer.frame(0x30, Array(done.utf8)))

        let summary = try #require(server.summary(after: summaries), "the owner's summary of the session")
        #expect(summary.int("records", "received") == 5)
        #expect(summary.int("records", "unattributed") == 4, "\(summary)")
        #expect(summary.int("records", "applied") == 1)
        #expect(server.err.contains("4 versions from \(me) named another device as their author"), "\(server.err)")
        let after = try held(owner)
        for id in ["o-1", "o-2", "m-1"] { #expect(after[id] == before[id], "\(id) on the owner: \(after[id] ?? "none")") }
        #expect(after["new-1"] == nil)
        #expect(after["h-1"]?.contains(#""deviceId":"\#(me)""#) == true, "the member's own version is taken")
        let r = try Tools.run("peer-sync", ["connect", "--db", honest, server.address], timeout: 60)
        #expect(r.status == 0, "\(r.err)")
        let honestAfter = try held(honest)
        for id in ["o-1", "o-2", "m-1"] { #expect(honestAfter[id] == honestBefore[id], "\(id) on the honest member") }
        #expect(honestAfter["new-1"] == nil)
    }

    /// §10: a member that says HELLO and then only pings loses the session
    /// at the quiet limit, with an ERROR that says so; the owner's slot is
    /// free for the next member at once.
    @Test func aMemberThatOnlyPingsLosesTheSessionAtTheQuietLimit() throws {
        let dir = TempDir()
        let (owner, member, server) = try PeerSyncFaultTests.pair(dir, serveExtra: ["--quiet-limit", "2s"])
        defer { server.stop() }
        let peer = try RawPeer.member(member, ofOwner: owner, port: server.port)
        defer { peer.drop() }
        try peer.send(try Self.hello(member, ofOwner: owner, epoch: "0"))
        let error = try #require(try Self.pingUntilError(peer, within: 60))
        #expect(error.contains("no progress") && error.contains("keepalives"), "\(error)")
        let ended = try #require(server.waitForEvent("ended", count: 1))
        #expect(ended["outcome"]?.stringValue == "protocol-error")
        let r = try Tools.run("peer-sync", ["connect", "--db", member, server.address], timeout: 60)
        #expect(r.status == 0, "\(r.err)")
    }

    /// §10: a member that keeps a session going with a trickle of work (a
    /// photo request now and then) holds it no longer than the session
    /// limit; the next member's sync then completes.
    @Test func aTrickleOfWorkHoldsTheSessionNoLongerThanItsLimit() throws {
        let dir = TempDir()
        let (owner, member, server) = try PeerSyncFaultTests.pair(dir, serveExtra: ["--session-limit", "3s"])
        defer { server.stop() }
        let peer = try RawPeer.member(member, ofOwner: owner, port: server.port)
        defer { peer.drop() }
        let (_, family) = try RawPeer.opening(member, ofOwner: owner)
        try peer.send(try Self.hello(member, ofOwner: owner, epoch: "0") + family)
        let request = RawPeer.frame(0x20, Array("{\"photos\":[\"\(String(repeating: "ab", count: 32))\"]}".utf8))
        let end = Date().addingTimeInterval(60)
        var error: String?
        trickle: while Date() < end {
            try peer.send(request)
            do {
                while let f = try peer.readFrame(timeout: 0.5) {
                    if f.type == 0x3F { error = String(decoding: f.payload, as: UTF8.self); break trickle }
                }
                break  // closed without ERROR
            } catch is HarnessError {
                continue
            }
        }
        let text = try #require(error, "the session was not ended")
        #expect(text.contains("reached its limit"), "\(text)")
        let r = try Tools.run("peer-sync", ["connect", "--db", member, server.address], timeout: 60)
        #expect(r.status == 0, "\(r.err)")
    }
}
