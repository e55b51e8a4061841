import Foundation
import Testing
import FamilySync

/// The wire as docs/protocol.md describes it, checked against a running
/// `peer-sync serve` with a hand-driven peer on loopback: keepalives in every
/// phase, ERROR followed by close_notify, how a connection that ends inside a
/// frame is judged, strict record batches, identities too long to be ours.
@Suite struct PeerSyncWireTests {
    static let recordLine = "{\"id\":\"w-1\",\"type\":\"t\",\"modifiedAt\":\"2026-01-02T03:04:05.006Z\",\"deviceId\":\"D\",\"deleted\":false}"

    /// §8: a side that has sent nothing for 10 s pings, also while it waits
    /// for the peer's HELLO and for its FAMILY. The frame after the owner's
    /// HELLO, while we say nothing, is a PING (not the end of the session);
    /// the same after its FAMILY.
    @Test func ownerPingsWhileWaitingForHelloAndForFamily() throws {
        let dir = TempDir()
        let (owner, member, server) = try PeerSyncFaultTests.pair(dir)
        defer { server.stop() }
        let peer = try RawPeer.member(member, ofOwner: owner, port: server.port)
        defer { peer.close() }
        let (hello, family) = try RawPeer.opening(member, ofOwner: owner)

        #expect(try peer.readFrame(timeout: 30)?.type == 0x01)  // the owner's HELLO
        #expect(try peer.readFrame(timeout: 30)?.type == 0x31)  // PING: it waits for ours, and says so
        try peer.send(hello)
        #expect(try peer.readFrame(timeout: 30)?.type == 0x02)  // its FAMILY
        #expect(try peer.readFrame(timeout: 30)?.type == 0x31)  // PING while it waits for our FAMILY
        try peer.send(family + RawPeer.frame(0x11, Array("{\"count\":0,\"after\":0}".utf8)))
        // The session goes on as usual: its records come, then (after ours) RECORDS-END.
        #expect(try peer.readUntil(0x11, timeout: 30) != nil)
    }

    /// §6, §11: a protocol error is answered with ERROR and then close_notify,
    /// so the peer can tell a deliberate end from a truncated connection.
    @Test func errorIsFollowedByCloseNotify() throws {
        let dir = TempDir()
        let (owner, member, server) = try PeerSyncFaultTests.pair(dir)
        defer { server.stop() }
        let peer = try RawPeer.member(member, ofOwner: owner, port: server.port)
        defer { peer.drop() }
        try peer.send(RawPeer.frame(0x7E, [1, 2, 3]))
        let error = try #require(try peer.readUntil(0x3F, timeout: 30))
        #expect(String(decoding: error, as: UTF8.self).contains("unknown frame type 0x7e"))
        #expect(try peer.readFrame(timeout: 30) == nil)
        #expect(peer.closedCleanly == true)
    }

    /// §6: a connection closed with close_notify inside a frame is a protocol
    /// error; one that just stops (no TLS close) inside a frame is a vanished peer.
    @Test func endInsideAFrameIsAProtocolErrorOnlyWhenClosedCleanly() throws {
        let dir = TempDir()
        let (owner, member, server) = try PeerSyncFaultTests.pair(dir)
        defer { server.stop() }
        let (hello, family) = try RawPeer.opening(member, ofOwner: owner)
        let partial = Array(RawPeer.frame(0x10, Array((Self.recordLine + "\n").utf8)).prefix(30))
        // A session up to the owner's FAMILY (the owner, with nothing to send, writes nothing more until our
        // RECORDS-END). A session that ended in an error gives the slot back just after its `ended` event, so a
        // connection in between is told BUSY, as while any session runs; like a member, this one tries again.
        func session() throws -> RawPeer {
            for _ in 0..<20 {
                let busyBefore = server.eventLines().filter { $0["event"]?.stringValue == "busy" }.count
                let p = try RawPeer.member(member, ofOwner: owner, port: server.port)
                try p.send(hello + family + partial)
                if try p.readUntil(0x02, timeout: 30) != nil { return p }
                p.drop()
                let busy = server.eventLines().filter { $0["event"]?.stringValue == "busy" }.count
                try #require(busy > busyBefore, "the owner neither sent FAMILY nor said BUSY")
                usleep(50_000)
            }
            throw HarnessError("the owner said BUSY 20 times")
        }

        var peer = try session()
        peer.close()
        var ended = try #require(server.waitForEvent("ended", count: 1))
        #expect(ended["outcome"]?.stringValue == "protocol-error")
        #expect(ended["message"]?.stringValue?.contains("in the middle of a frame") == true)

        peer = try session()
        peer.drop()
        ended = try #require(server.waitForEvent("ended", count: 2))
        #expect(ended["outcome"]?.stringValue == "vanished")
    }

    /// §5.1: the session slot is free once both DONEs have crossed. A device
    /// connecting while the last session is still closing (here a peer that
    /// holds its connection open after DONE, so the owner waits out its close)
    /// is not told BUSY: its session starts when that closing ends.
    @Test func aConnectWhileTheLastSessionClosesIsNotToldBusy() throws {
        let dir = TempDir()
        let (owner, member, server) = try PeerSyncFaultTests.pair(dir)
        defer { server.stop() }
        let (hello, family) = try RawPeer.opening(member, ofOwner: owner)
        let peer = try RawPeer.member(member, ofOwner: owner, port: server.port)
        defer { peer.drop() }
        try peer.send(hello + family + RawPeer.frame(0x11, Array("{\"count\":0,\"after\":0}".utf8)))
        _ = try #require(try peer.readUntil(0x30, timeout: 30), "the owner's DONE")
        let done = "{\"records\":{\"sent\":0,\"received\":0,\"applied\":0},\"photos\":{\"sent\":0,\"received\":0,\"unavailable\":0},"
            + "\"digest\":\"\(String(repeating: "0", count: 64))\",\"upTo\":0}"
        try peer.send(RawPeer.frame(0x30, Array(done.utf8)))
        let sessions = server.eventLines().filter { $0["event"]?.stringValue == "session" }.count
        let r = try Tools.run("peer-sync", ["connect", "--db", member, server.address], timeout: 60)
        #expect(r.status == 0, "\(r.err)")
        let busy = server.eventLines().filter { $0["event"]?.stringValue == "busy" }.count
        #expect(busy == 0, "the serve said BUSY \(busy) times")
        let after = server.eventLines().filter { $0["event"]?.stringValue == "session" }.count
        #expect(after == sessions + 1)
    }

    /// §7.4: each record line ends with 0x0A; no blank line, no CR, nothing
    /// around the object, a canonical modifiedAt no later than the receiver's
    /// clock allows. Any of these ends the session and nothing of the batch is kept.
    @Test(arguments: [
        ("no final line feed", "\(recordLine)", "does not end with a line feed"),
        ("blank line", "\(recordLine)\n\n", "line 3 (record 3): empty line"),
        ("carriage return", "\(recordLine)\r\n", "ends with a carriage return"),
        ("leading space", " \(recordLine)\n", "bytes before or after the record object"),
        ("non-canonical time", "\(recordLine.replacingOccurrences(of: "05.006Z", with: "05.006+00:00"))\n", "modifiedAt: not in canonical form"),
        // The record grammar of design.md §2, the same as merge-records': no CR between tokens, no key twice in data.
        ("CR between tokens", "\(recordLine.replacingOccurrences(of: ",\"type\"", with: ",\r\"type\""))\n", "a CR (0x0D) between tokens"),
        ("key twice in data", "\(recordLine.dropLast()),\"data\":{\"total\":\"1\",\"total\":\"2\"}}\n", "data: key 'total' appears twice in one object"),
    ])
    func recordBatchesAreStrict(_ name: String, _ payload: String, _ message: String) throws {
        let dir = TempDir()
        let (owner, member, server) = try PeerSyncFaultTests.pair(dir)
        defer { server.stop() }
        let before = try Household.digest(owner)
        let (hello, family) = try RawPeer.opening(member, ofOwner: owner)
        let good = "{\"id\":\"w-0\",\"type\":\"t\",\"modifiedAt\":\"2026-01-02T03:04:05.006Z\",\"deviceId\":\"D\",\"deleted\":false}\n"
        let peer = try RawPeer.member(member, ofOwner: owner, port: server.port)
        defer { peer.drop() }
        try peer.send(hello + family + RawPeer.frame(0x10, Array((good + payload).utf8)))
        let error = try #require(try peer.readUntil(0x3F, timeout: 30), "\(name)")
        let text = String(decoding: error, as: UTF8.self)
        #expect(text.contains(message), "\(name): \(text)")
        #expect(try Household.digest(owner) == before, "\(name)")
        #expect(try Household.recordCount(owner) == 0)
    }

    /// §6: a PING's payload is ignored, wherever the PING comes: the session
    /// goes on to its end as if the PING had been empty.
    @Test func aPingWithAPayloadIsSkipped() throws {
        let dir = TempDir()
        let (owner, member, server) = try PeerSyncFaultTests.pair(dir)
        defer { server.stop() }
        let (hello, family) = try RawPeer.opening(member, ofOwner: owner)
        let peer = try RawPeer.member(member, ofOwner: owner, port: server.port)
        defer { peer.drop() }
        let ping = RawPeer.frame(0x31, Array("not empty".utf8))
        // A record of the member's own (one in another device's name would need that device's tag, §7.4).
        let own = Self.recordLine.replacingOccurrences(of: "\"deviceId\":\"D\"", with: "\"deviceId\":\"\(try Household.device(member))\"")
        try peer.send(ping + hello + ping + family + ping + RawPeer.frame(0x10, Array((own + "\n").utf8)))
        try peer.send(ping + RawPeer.frame(0x11, Array("{\"count\":1,\"after\":0}".utf8)))
        _ = try #require(try peer.readUntil(0x11, timeout: 30))
        // No ERROR comes: the owner sends its DONE, and has applied our record.
        _ = try #require(try peer.readUntil(0x30, timeout: 30))
        #expect(try Household.recordCount(owner) == 1)
    }

    /// §9: a JOIN the owner cannot read is answered with ERROR, then
    /// close_notify; nothing is written and the offer stays open, so the
    /// same offer then admits the device.
    @Test func aJoinAnsweredByErrorLeavesTheOfferOpen() throws {
        let dir = TempDir()
        let owner = dir.file("owner.db"), member = dir.file("member.db")
        _ = try Household.owner(owner)
        let offer = try Store(path: owner).makeOffer(ttl: .minutes(10), address: nil, now: Timestamp.current())
        let server = try ServeProcess(db: owner, dir: dir)
        defer { server.stop() }
        let devicesBefore = try Store(path: owner).devices().count
        let peer = try RawPeer(port: server.port, identity: try SessionIdentity.pairing(offer), key: try SessionKeys.pairingPSK(nonce: offer.nonce, family: offer.family))
        try peer.send(RawPeer.frame(0x05, Array("{\"protocol\":\(SyncProtocol.version),\"clock\":\"2026-12-01T10:00:00.000Z\"}".utf8)))
        let error = try #require(try peer.readUntil(0x3F, timeout: 30))
        #expect(String(decoding: error, as: UTF8.self).contains("JOIN field 'device': missing"))
        #expect(try peer.readFrame(timeout: 30) == nil)
        #expect(peer.closedCleanly == true)
        #expect(try Store(path: owner).devices().count == devicesBefore)
        let j = try Household.join(member, server: server, offer: offer.text)
        #expect(j.status == 0, "\(j.err)")
    }

    /// §5.1: while a session runs, every other connection is told BUSY,
    /// whatever its identity (one that would be refused, a pairing one, one
    /// that is not ours at all): the server decides nothing else about it.
    @Test func everyIdentityIsToldBusyWhileASessionRuns() throws {
        let dir = TempDir()
        let (owner, member, server) = try PeerSyncFaultTests.pair(dir)
        defer { server.stop() }
        let fam = try Store(path: owner).family()!
        let offer = try Store(path: owner).makeOffer(ttl: .minutes(10), address: nil, now: Timestamp.current())
        let (hello, _) = try RawPeer.opening(member, ofOwner: owner)
        let holder = try RawPeer.member(member, ofOwner: owner, port: server.port)
        defer { holder.drop() }
        try holder.send(hello)
        #expect(server.waitForEvent("session") != nil)
        let stranger = "EEEEEEEE-EEEE-4EEE-8EEE-EEEEEEEEEEEE"
        let unknownOffer = PairingOffer(family: fam.id, nonce: "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", expiresAt: offer.expiresAt, address: nil)
        let identities: [(String, [UInt8], SecretBytes)] = [
            ("not an identity", Array("hello there".utf8), try SecretBytes.random(count: 32)),
            ("a version-3 identity", SessionIdentity.previousVersionText(family: fam.id, client: stranger, server: fam.ownerDevice, epoch: 0), try SecretBytes.random(count: 32)),
            ("another family", try SessionIdentity.sync(client: stranger, server: fam.ownerDevice)
                .sealed(family: stranger, under: HeldKey(.family(epoch: 0), secret: try SecretBytes.random(count: 32))), try SecretBytes.random(count: 32)),
            ("an unknown device", try SessionIdentity.sync(client: stranger, server: fam.ownerDevice)
                .sealed(family: fam.id, under: HeldKey(.device(member: stranger), secret: try SecretBytes.random(count: 32))), try SecretBytes.random(count: 32)),
            ("an unknown offer", try SessionIdentity.pairing(unknownOffer), try SecretBytes.random(count: 32)),
            ("an open offer", try SessionIdentity.pairing(offer), try SessionKeys.pairingPSK(nonce: offer.nonce, family: offer.family)),
        ]
        for (name, identity, key) in identities {
            let p = try RawPeer(port: server.port, identity: identity, key: key)
            defer { p.drop() }
            #expect(try p.readFrame(timeout: 30)?.type == 0x04, "\(name)")
        }
    }

    /// §5.1: a ClientHello that offers no PSK at all gets the notice
    /// `bad-identity` (here from OpenSSL's own client, without -psk).
    @Test func aClientHelloWithoutAPSKGetsBadIdentity() throws {
        let dir = TempDir()
        let (_, _, server) = try PeerSyncFaultTests.pair(dir)
        defer { server.stop() }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["openssl", "s_client", "-connect", server.address, "-tls1_3", "-quiet"]
        let input = Pipe(), output = Pipe()
        p.standardInput = input
        p.standardOutput = output
        p.standardError = FileHandle.nullDevice
        try p.run()
        let client = p
        DispatchQueue.global().asyncAfter(deadline: .now() + 30) { if client.isRunning { client.terminate() } }
        let out = output.fileHandleForReading.readDataToEndOfFile()  // until the server closes
        try? input.fileHandleForWriting.close()
        p.waitUntilExit()
        let text = String(decoding: out, as: UTF8.self)
        #expect(text.contains("\"reason\":\"bad-identity\""), "\(text)")
        #expect(out.count > 5 && out[out.startIndex + 4] == 0x03)  // one REFUSED frame
    }

    /// §3.3, §10: an identity longer than 200 bytes is not ours: the notice
    /// `bad-identity`, whatever its length (OpenSSL-based peers may cap at 256).
    @Test(arguments: [201, 300, 600])
    func longIdentitiesGetBadIdentity(_ length: Int) throws {
        let dir = TempDir()
        let (owner, _, server) = try PeerSyncFaultTests.pair(dir)
        defer { server.stop() }
        _ = owner
        var identity = Array("FS4 ".utf8)
        identity += [UInt8](repeating: UInt8(ascii: "a"), count: length - identity.count)
        let peer = try RawPeer(port: server.port, identity: identity, key: SecretBytes(try secureRandomBytes(32)))
        defer { peer.drop() }
        #expect(!peer.conn.isAuthenticated)
        let f = try #require(try peer.readFrame(timeout: 30))
        #expect(f.type == 0x03)
        #expect(String(decoding: f.payload, as: UTF8.self).contains("\"reason\":\"bad-identity\""))
    }

    /// §7.2: the records a side sends are the set fixed at the peer's HELLO,
    /// less those the peer's own records replaced with the peer's bytes before
    /// they went out (they would only go back where they came from): the
    /// member, whose versions all win, sends the whole set every time; the
    /// owner at most the set, and both end holding the same.
    @Test func recordsSentIsTheSetFixedAtHelloLessThePeersOwn() throws {
        let dir = TempDir()
        let (owner, member, first) = try PeerSyncFaultTests.pair(dir)
        first.stop()
        // Both sides edit the same ids; the member's versions are later and win.
        // The records are large, so each side's sending waits on the other.
        let count = 1500
        let t = Timestamp.current()
        for (path, at) in [(owner, t), (member, t.adding(TimeSpan(milliseconds: 1)))] {
            let s = try Store(path: path)
            let pad = String(repeating: "x", count: 8000)
            let recs = try (0..<count).map { i in
                try Record(line: "{\"id\":\"s-\(i)\",\"type\":\"note\",\"modifiedAt\":\"\(at.rfc3339)\",\"deviceId\":\"X\",\"deleted\":false,\"data\":{\"pad\":\"\(pad)\"}}")
            }
            _ = try s.applyLocalEdits(recs, now: at)
        }
        for run in 0..<2 {
            let o = dir.file("o\(run).db"), m = dir.file("m\(run).db")
            for (from, to) in [(owner, o), (member, m)] {
                for suffix in [""] + Store.companionSuffixes where FileManager.default.fileExists(atPath: from + suffix) {
                    try FileManager.default.copyItem(atPath: from + suffix, toPath: to + suffix)
                }
            }
            let server = try ServeProcess(db: o, dir: dir, name: "run\(run)", extra: ["--once"])
            defer { server.stop() }
            let r = try Tools.run("peer-sync", ["connect", "--db", m, server.address], timeout: 120)
            #expect(r.status == 0, "\(r.err)")
            let client = try #require(r.json)
            let served = try #require(server.summary(after: 0))
            #expect(client.int("records", "sent") == Int64(count), "run \(run)")
            let servedSent = try #require(served.int("records", "sent"))
            #expect(servedSent <= Int64(count), "run \(run)")
            #expect(client.int("records", "received") == servedSent)
            #expect(client.int("records", "applied") == 0, "run \(run): an owner version beat the member's later one")
            #expect(client.at("digest", "equal")?.boolValue == true)
        }
    }
}
