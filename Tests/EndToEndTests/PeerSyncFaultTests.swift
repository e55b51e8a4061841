import Foundation
import Testing
import FamilySync

/// The eight fault scenarios, each with real processes on 127.0.0.1.
@Suite struct PeerSyncFaultTests {
    /// An owner serving and one member joined; returns the paths and the running server.
    static func pair(_ dir: TempDir, ownerRecords: Int = 0, ownerPhotos: Int = 0, serveExtra: [String] = []) throws -> (owner: String, member: String, server: ServeProcess) {
        let owner = dir.file("owner.db"), member = dir.file("member.db")
        let offer = try Household.owner(owner)
        if ownerRecords > 0 {
            try Household.addRecords(owner, prefix: "o", count: ownerRecords, photos: (0..<ownerPhotos).map { Household.photo($0) })
        }
        let server = try ServeProcess(db: owner, dir: dir, extra: serveExtra)
        let j = try Household.join(member, server: server, offer: offer)
        guard j.status == 0 else { throw HarnessError("join failed: \(j.err)") }
        return (owner, member, server)
    }

    // 1. The serving side can no longer provide a photo.
    @Test func photoDeletedAfterManifestIsUnavailable() throws {
        let dir = TempDir()
        let (owner, member, server) = try Self.pair(dir)
        defer { server.stop() }
        try Household.addRecords(owner, prefix: "p", count: 3, photos: (0..<3).map { Household.photo(1000 + $0) })
        let gone = Hex.encode(SHA256.hash(Household.photo(1001)))
        try Store(path: owner).db.run("DELETE FROM photos WHERE sha256 = ?", [.text(gone)])

        let r = try Tools.run("peer-sync", ["connect", "--db", member, server.address], timeout: 60)
        #expect(r.status == 0, "\(r.err)")
        let s = try #require(r.json)
        #expect(s.int("photos", "received") == 2)
        #expect(s.int("photos", "unavailable") == 1)
        #expect(s.int("photos", "wanted") == 1)
        #expect(s["lastSynced"]?.stringValue != nil)
        let ownerID = try Household.device(owner)
        #expect(try Store(path: member).device(ownerID)?.lastSyncedAt != nil)
        #expect(try Store(path: member).wantedPhotos(after: "", limit: 10) == [gone])

        // Wanted again next time: once the owner has it back, it arrives.
        _ = try Store(path: owner).addPhoto(Household.photo(1001), now: Timestamp.current())
        let again = try Tools.run("peer-sync", ["connect", "--db", member, server.address], timeout: 60)
        #expect(again.status == 0, "\(again.err)")
        #expect(again.json?.int("photos", "received") == 1)
        #expect(again.json?.int("photos", "wanted") == 0)
    }

    // 2. A peer that silently skips photos: the per-wave timeout ends the wait.
    @Test func silentPeerTimesOutPerWave() throws {
        let dir = TempDir()
        let (owner, member, first) = try Self.pair(dir)
        first.stop()
        try Household.addRecords(owner, prefix: "s", count: 25, photos: (0..<25).map { Household.photo(2000 + $0) })
        let server = try ServeProcess(db: owner, dir: dir, name: "silent", extra: ["--fault-inject-skip-photo-replies"])
        defer { server.stop() }
        let events = dir.file("connect.events")
        let r = try Tools.run("peer-sync", ["connect", "--db", member, "--wave-timeout", "1s", "--events", events, server.address], timeout: 60)
        #expect(r.status == 0, "\(r.err)")
        let s = try #require(r.json)
        #expect(s.int("records", "received") == 25)
        #expect(s.int("photos", "received") == 0)
        #expect(s.int("photos", "unavailable") == 25)
        #expect(s.int("photos", "waves") == 2)
        #expect(s["lastSynced"]?.stringValue != nil)
        let timeouts = String(decoding: FileManager.default.contents(atPath: events) ?? Data(), as: UTF8.self)
            .split(separator: "\n").filter { $0.contains("\"event\":\"wave-timeout\"") }
        #expect(timeouts.count == 2)
        #expect(try Store(path: member).wantedPhotoCount() == 25)
    }

    // 3. A third device during a session: busy (75), and it succeeds afterwards.
    @Test func thirdDeviceGetsBusyThenSucceeds() throws {
        let dir = TempDir()
        let owner = dir.file("owner.db"), a = dir.file("a.db"), b = dir.file("b.db")
        _ = try Household.owner(owner)
        var server = try ServeProcess(db: owner, dir: dir, name: "plain")
        for m in [a, b] {
            let j = try Household.join(m, server: server, offer: try Household.offer(owner))
            #expect(j.status == 0, "\(j.err)")
        }
        server.stop()
        // Photos the silent server never answers keep A's session open for its wave timeout.
        try Household.addRecords(owner, prefix: "h", count: 3, photos: (0..<3).map { Household.photo(3000 + $0) })
        server = try ServeProcess(db: owner, dir: dir, name: "held", extra: ["--fault-inject-skip-photo-replies"])
        defer { server.stop() }
        let first = try BackgroundRun("peer-sync", ["connect", "--db", a, "--wave-timeout", "4s", server.address], dir: dir, name: "a")
        #expect(server.waitForEvent("session") != nil)
        let before = try Household.fingerprint(b)

        let busy = try Tools.run("peer-sync", ["connect", "--db", b, "--wait", "0s", server.address], timeout: 30)
        #expect(busy.status == 75)
        #expect(busy.err.contains("peer-sync: 127.0.0.1:\(server.port) is busy syncing with another device; gave up after"))
        #expect(busy.out.isEmpty)
        #expect(try Household.fingerprint(b) == before)

        // With time to wait, it retries with backoff and gets its turn.
        let later = try Tools.run("peer-sync", ["connect", "--db", b, "--wait", "60s", "--wave-timeout", "1s", server.address], timeout: 90)
        #expect(later.status == 0, "\(later.err)")
        #expect(later.json?.int("records", "received") == 3)
        #expect(first.wait(timeout: 30) == 0)
        #expect(first.json?.int("photos", "unavailable") == 3)
        #expect((server.eventLines().filter { $0["event"]?.stringValue == "busy" }.count) >= 2)
    }

    /// Every record row is whole and every photo matches its hash.
    static func checkStore(_ path: String) throws {
        let s = try Store(path: path)
        #expect(try s.integrityCheck() == "ok")
        let st = try s.db.prepare("SELECT id, type, modified_at, device_id, deleted, line FROM records")
        while try st.step() {
            let r = try Record(line: st.text(5))
            #expect(r.id == st.text(0) && r.type == st.text(1) && r.modifiedAt.milliseconds == st.int64(2) && r.deviceID == st.text(3) && r.deleted == (st.int64(4) != 0))
        }
        st.reset()
        let ph = try s.db.prepare("SELECT sha256 FROM photos")
        while try ph.step() {
            let h = ph.text(0)
            let bytes = try s.photo(h)
            #expect(bytes.map { Hex.encode(SHA256.hash($0)) } == h, "photo \(h) held without its bytes, or with others")
        }
        ph.reset()
    }

    // 4. kill -9 of either side at random moments: both stores stay sound and the next sync converges.
    @Test func killNineAtRandomMomentsThenConverge() throws {
        let dir = TempDir()
        let (owner, member, first) = try Self.pair(dir)
        first.stop()
        try Household.addRecords(owner, prefix: "k", count: 3000, photos: (0..<40).map { Household.photo(4000 + $0, size: 150_000) })
        try Household.addRecords(member, prefix: "m", count: 2000, photos: (0..<20).map { Household.photo(5000 + $0, size: 150_000) })
        let seed: UInt64 = 4
        var rng = SplitMix64(seed: seed)
        let started = Date()
        var runs = 0
        // Bounded by count and by time.
        while runs < 12 && Date().timeIntervalSince(started) < 45 {
            runs += 1
            let server = try ServeProcess(db: owner, dir: dir, name: "k\(runs)", extra: ["--once"])
            let client = try BackgroundRun("peer-sync", ["connect", "--db", member, "--wait", "5s", server.address], dir: dir, name: "c\(runs)")
            usleep(UInt32.random(in: 0...600_000, using: &rng))
            let victim = Bool.random(using: &rng) ? server.pid : client.pid
            kill(victim, SIGKILL)
            // The survivor notices and ends on its own, without hanging. A client killed
            // before its session began leaves `serve --once` rightly waiting for a real one.
            #expect(client.wait(timeout: 60) != nil, "seed \(seed), run \(runs)")
            if victim == server.pid {
                #expect(server.waitForExit(timeout: 60) != nil, "seed \(seed), run \(runs)")
            } else {
                // A server whose session had begun ends it (its peer is gone) and
                // exits; one the client never reached keeps waiting, as it should.
                let exited = server.waitForExit(timeout: 20) != nil
                let hadSession = server.eventLines().contains { $0["event"]?.stringValue == "session" }
                #expect(exited == hadSession, "seed \(seed), run \(runs): exited \(exited), session begun \(hadSession)")
            }
            server.stop()
            try Self.checkStore(owner)
            try Self.checkStore(member)
            // Some edits between runs, on both sides.
            try Household.addRecords(owner, prefix: "k\(runs)", count: 5)
            try Household.addRecords(member, prefix: "m\(runs)", count: 5)
        }
        let server = try ServeProcess(db: owner, dir: dir, name: "final")
        defer { server.stop() }
        let r = try Tools.run("peer-sync", ["connect", "--db", member, server.address], timeout: 120)
        #expect(r.status == 0, "\(r.err)")
        #expect(r.json?.at("digest", "equal")?.boolValue == true)
        #expect(try Household.digest(owner) == Household.digest(member))
        #expect(try Store(path: owner).wantedPhotoCount() == 0)
        #expect(try Store(path: member).wantedPhotoCount() == 0)
        #expect(try Household.photoCount(owner) == 60)
        #expect(try Household.photoCount(member) == 60)
    }

    // 5. Wrong secret, unknown device, revoked device, replayed or expired nonce: refused, nothing exchanged.
    @Test func refusalsExchangeNothing() throws {
        let dir = TempDir()
        let (owner, member, server) = try Self.pair(dir, ownerRecords: 5)
        defer { server.stop() }
        try Household.addRecords(owner, prefix: "secret", count: 2)

        // Wrong secret: the member's device key no longer matches the owner's copy.
        let wrong = dir.file("wrong.db")
        try FileManager.default.copyItem(atPath: member, toPath: wrong)
        try Store(path: wrong).setOwnDeviceKey(try SecretBytes.random(count: 32))
        var ownerBefore = try Household.fingerprint(owner)
        var before = try Household.fingerprint(wrong)
        var r = try Tools.run("peer-sync", ["connect", "--db", wrong, server.address])
        #expect(r.status == 77)
        #expect(r.err.contains("does not accept this device's key"))
        #expect(r.out.isEmpty)
        #expect(try Household.fingerprint(wrong) == before)
        #expect(try Household.fingerprint(owner) == ownerBefore)

        // Unknown device: a copy of the member's store under another device ID.
        let clone = dir.file("clone.db")
        try FileManager.default.copyItem(atPath: member, toPath: clone)
        try Store(path: clone).db.run("UPDATE meta SET value = ? WHERE key = 'device_id'", [.text(try randomUUID())])
        before = try Household.fingerprint(clone)
        r = try Tools.run("peer-sync", ["connect", "--db", clone, server.address])
        #expect(r.status == 77)
        #expect(r.err.contains("does not know device"))
        #expect(r.err.contains("(unknown-device)"))
        #expect(try Household.fingerprint(clone) == before)
        #expect(try Household.fingerprint(owner) == ownerBefore)

        // Replayed nonce: a used offer admits nobody else; the joining store gets nothing.
        let offer = try Household.offer(owner)
        let second = dir.file("second.db"), third = dir.file("third.db")
        #expect(try Household.join(second, server: server, offer: offer).status == 0)
        ownerBefore = try Household.fingerprint(owner)
        r = try Household.join(third, server: server, offer: offer)
        #expect(r.status == 77)
        #expect(r.err.contains("offer already used"))
        #expect(try Store(path: third).family() == nil)
        #expect(try Household.recordCount(third) == 0)
        #expect(try Household.fingerprint(owner) == ownerBefore)

        // Expired nonce, judged by the owner (the joining device's clock says it is still open).
        let short = try Household.offer(owner, ttl: .seconds(1))
        usleep(1_200_000)
        let past = Timestamp.current().subtracting(.minutes(1)).rfc3339
        r = try Household.join(third, server: server, offer: short, extra: ["--now", past])
        #expect(r.status == 77)
        #expect(r.err.contains("offer expired"))
        #expect(try Store(path: third).family() == nil)
        // ...and with this device's clock agreeing: it only says so, and the owner refuses.
        r = try Household.join(third, server: server, offer: short)
        #expect(r.status == 77)
        #expect(r.err.contains("has passed by this device's clock"), "\(r.err)")
        #expect(r.err.contains("offer expired"))

        // Unknown nonce: a well-formed offer the owner never made.
        let fam = try #require(try Store(path: owner).family())
        let forged = "FS1/\(fam.id)/\(Base32.encode(try secureRandomBytes(20)))/\(Timestamp.current().milliseconds / 1000 + 600)/"
        r = try Household.join(third, server: server, offer: forged)
        #expect(r.status == 77)
        #expect(r.err.contains("unknown offer"))
        #expect(try Store(path: third).family() == nil)

        // Revoked device: refused, told so on an authenticated session, and it drops to free.
        let secondID = try Household.device(second)
        try Store(path: second).db.run("INSERT INTO proofs (jws, source, saved_at) VALUES ('aaa.bbb.ccc', 'test', 0)")
        let rv = try Tools.run("peer-sync", ["revoke", "--db", owner, String(secondID.prefix(8))])
        #expect(rv.status == 0, "\(rv.err)")
        #expect(rv.json?.int("epoch") == 1)
        ownerBefore = try Household.fingerprint(owner)
        r = try Tools.run("peer-sync", ["connect", "--db", second, server.address])
        #expect(r.status == 77)
        #expect(r.err.contains("was revoked"))
        #expect(try Household.fingerprint(owner) == ownerBefore)
        let st = try #require(try Tools.run("peer-sync", ["status", "--db", second]).json)
        #expect(st["revoked"]?.boolValue == true)
        #expect(st.at("proof", "held")?.int64Value == 0)
        // Afterwards it is refused before it even connects.
        r = try Tools.run("peer-sync", ["connect", "--db", second, server.address])
        #expect(r.status == 77)
        #expect(r.err.contains("this device was revoked"))

        // serve told each refusal over an authenticated session on its own
        // (the used offer, the revoked device); the keyless ones (the wrong
        // key, the unknown device, the unknown offer) are summed up, written when serve stops.
        server.stop()
        let events = server.eventLines()
        func reason(_ e: JSONValue) -> String? { e["reason"]?.stringValue }
        let alone = events.filter { $0["event"]?.stringValue == "refused" }
        #expect(alone.allSatisfy { $0["authenticated"]?.boolValue == true }, "\(alone)")
        #expect(Set(alone.compactMap(reason)) == ["offer-used", "offer-expired", "revoked"], "\(alone)")
        #expect(!events.contains { $0["event"]?.stringValue == "rejected" })
        let keyless = events.filter { $0["event"]?.stringValue == "keyless" }
        func counted(_ r: String) -> Int64 { keyless.compactMap { $0.at("reasons", r)?.int64Value }.reduce(0, +) }
        #expect(counted("bad-key") == 1, "\(keyless)")
        #expect(counted("unknown-device") == 1, "\(keyless)")
        #expect(counted("unknown-offer") == 1, "\(keyless)")
    }

    // 5b. Revocation locks the device out of members too: the family key moves on.
    @Test func revokedDeviceCannotReachMembersAfterTheKeyMoves() throws {
        let dir = TempDir()
        let owner = dir.file("owner.db"), a = dir.file("a.db"), b = dir.file("b.db"), r = dir.file("r.db")
        _ = try Household.owner(owner)
        let server = try ServeProcess(db: owner, dir: dir)
        defer { server.stop() }
        for m in [a, b, r] { #expect(try Household.join(m, server: server, offer: try Household.offer(owner)).status == 0) }
        // Before the revocation, members sync with each other.
        let aServe = try ServeProcess(db: a, dir: dir, name: "a1")
        var x = try Tools.run("peer-sync", ["connect", "--db", r, aServe.address])
        #expect(x.status == 0, "\(x.err)")
        aServe.stop()

        #expect(try Tools.run("peer-sync", ["revoke", "--db", owner, try Household.device(r)]).status == 0)
        // A learns the new key and the revocation from the owner.
        x = try Tools.run("peer-sync", ["connect", "--db", a, server.address])
        #expect(x.status == 0, "\(x.err)")
        #expect(try Store(path: a).familyEpoch == 1)
        #expect(try Store(path: a).device(try Household.device(r))?.revokedAt != nil)

        let aServe2 = try ServeProcess(db: a, dir: dir, name: "a2")
        defer { aServe2.stop() }
        let before = try Household.fingerprint(a)
        // The revoked device: refused, and A gives it nothing.
        x = try Tools.run("peer-sync", ["connect", "--db", r, aServe2.address])
        #expect(x.status == 77)
        #expect(x.err.contains("was revoked"))
        #expect(try Household.fingerprint(a) == before)
        // Even under a fresh device ID, its old family key opens nothing.
        try Store(path: r).db.run("UPDATE meta SET value = ? WHERE key = 'device_id'", [.text(try randomUUID())])
        x = try Tools.run("peer-sync", ["connect", "--db", r, aServe2.address])
        #expect(x.status == 77)
        #expect(x.err.contains("older family key"), "\(x.err)")
        #expect(try Household.fingerprint(a) == before)
        // B missed the change: A sends it to the owner first, then they sync.
        x = try Tools.run("peer-sync", ["connect", "--db", b, aServe2.address])
        #expect(x.status == 77)
        #expect(x.err.contains("(stale-key)"))
        #expect(try Tools.run("peer-sync", ["connect", "--db", b, server.address]).status == 0)
        x = try Tools.run("peer-sync", ["connect", "--db", b, aServe2.address])
        #expect(x.status == 0, "\(x.err)")
    }

    // 5c. A family holds four devices by default; a revocation frees a place.
    @Test func fifthDeviceIsRefusedUntilARevocation() throws {
        let dir = TempDir()
        let owner = dir.file("owner.db")
        _ = try Household.owner(owner)
        let server = try ServeProcess(db: owner, dir: dir)
        defer { server.stop() }
        var members: [String] = []
        for i in 0..<3 {
            let m = dir.file("m\(i).db")
            let j = try Household.join(m, server: server, offer: try Household.offer(owner))
            #expect(j.status == 0, "\(j.err)")
            members.append(m)
        }
        let offer = try Household.offer(owner)
        let fifth = dir.file("fifth.db")
        var r = try Household.join(fifth, server: server, offer: offer)
        #expect(r.status == 77)
        #expect(r.err.contains("the family is full (4 of 4 devices)"))
        #expect(try Store(path: fifth).family() == nil)
        #expect(try Tools.run("peer-sync", ["revoke", "--db", owner, try Household.device(members[0])]).status == 0)
        // The same offer was not consumed by the refusal.
        r = try Household.join(fifth, server: server, offer: offer)
        #expect(r.status == 0, "\(r.err)")
    }

    // 6. Hostile clients: the session ends with a protocol error, the server keeps serving, stores unchanged.
    @Test func hostileClientsCannotHurtTheServer() throws {
        let dir = TempDir()
        let (owner, member, server) = try Self.pair(dir, ownerRecords: 10)
        defer { server.stop() }
        try Household.addRecords(member, prefix: "m", count: 3)
        let ownerBefore = try Household.fingerprint(owner)
        let target = HostPort(host: "127.0.0.1", port: server.port)

        // Random bytes instead of a TLS handshake.
        for size in [0, 1, 5, 300, 70_000] {
            let s = try TCPSocket.connect(to: target, timeout: .seconds(5))
            var junk = try secureRandomBytes(size)
            if size == 5 { junk = [0x16, 0x03, 0x01, 0xFF, 0xFF] }  // a TLS record header promising more than comes
            _ = junk.withUnsafeBytes { write(s.fd, $0.baseAddress, $0.count) }
            s.close()
        }

        // Authenticated clients (they hold the member's key) that then break the protocol.
        let fam = try #require(try Store(path: owner).family())
        let me = try Household.device(member)
        let key = try SessionKeys.devicePSK(deviceKey: try #require(try Store(path: member).ownDeviceKey()), family: fam.id, client: me, server: fam.ownerDevice)
        let identity = SessionIdentity.sync(family: fam.id, client: me, server: fam.ownerDevice, epoch: 0).bytes
        let hello = "{\"protocol\":\(SyncProtocol.version),\"device\":\"\(me)\",\"family\":\"\(fam.id)\",\"role\":\"member\",\"clock\":\"\(Timestamp.current().rfc3339)\",\"epoch\":0,\"after\":0,\"sent\":0}"
        let family = "{\"owner\":\"\(fam.ownerDevice)\",\"epoch\":0,\"maxDevices\":4,\"devices\":[],\"proof\":null}"
        func frame(_ t: UInt8, _ p: [UInt8]) -> [UInt8] {
            let n = UInt32(p.count)
            return [UInt8(n >> 24), UInt8(n >> 16 & 0xFF), UInt8(n >> 8 & 0xFF), UInt8(n & 0xFF), t] + p
        }
        let opening = frame(0x01, Array(hello.utf8)) + frame(0x02, Array(family.utf8))
        let cases: [(String, [UInt8])] = [
            ("oversized", [0x7F, 0xFF, 0xFF, 0xFF, 0x01]),
            ("unknown-type", frame(0x7E, [1, 2, 3])),
            ("truncated", Array(frame(0x01, Array(hello.utf8)).prefix(20))),
            ("not-json", frame(0x01, Array("{not json".utf8))),
            ("records-first", frame(0x10, Array("{}\n".utf8))),
            ("bad-hello-field", frame(0x01, Array(hello.replacingOccurrences(of: "\"protocol\":\(SyncProtocol.version)", with: "\"protocol\":\"one\"").utf8))),
            ("bad-record", opening + frame(0x10, Array("{\"id\":\"x\",\"type\":\"t\",\"modifiedAt\":\"never\",\"deviceId\":\"d\",\"deleted\":false}\n".utf8))),
            ("unrequested-photo", opening + frame(0x21, [UInt8](repeating: 7, count: 48))),
            ("random", try secureRandomBytes(4000)),
        ]
        let ctx = try TLSContext(role: .client)
        for (name, bytes) in cases {
            // The server may still be ending the previous hostile session: until it has, the answer is BUSY (unauthenticated).
            var s = try TCPSocket.connect(to: target, timeout: .seconds(5))
            var conn = try TLSConnection(client: s, context: ctx, identity: identity, key: key)
            try conn.handshake(deadline: Deadline(after: .seconds(10)))
            for _ in 0..<300 where !conn.isAuthenticated {
                s.close()
                usleep(50_000)
                s = try TCPSocket.connect(to: target, timeout: .seconds(5))
                conn = try TLSConnection(client: s, context: ctx, identity: identity, key: key)
                try conn.handshake(deadline: Deadline(after: .seconds(10)))
            }
            #expect(conn.isAuthenticated, "\(name)")
            var off = 0
            while off < bytes.count {
                let r = try bytes.withUnsafeBytes { try conn.write(UnsafeRawBufferPointer(rebasing: $0[off...])) }
                if case let .bytes(n) = r { off += n } else { _ = try s.wait(for: Int16(POLLOUT), deadline: Deadline(after: .seconds(5))) }
            }
            _ = conn.shutdown(deadline: Deadline(after: .seconds(5)))
            s.close()
        }
        // Every hostile session ended with an error event; the server is still serving.
        let r = try Tools.run("peer-sync", ["connect", "--db", member, server.address])
        #expect(r.status == 0, "\(r.err)")
        #expect(r.json?.int("records", "sent") == 3)
        let ended = server.eventLines().filter { $0["event"]?.stringValue == "ended" }
        #expect(ended.count == cases.count)
        #expect(server.err.contains("exceeds the limit of \(Frame.maxPayloadBytes)"))
        #expect(server.err.contains("unknown frame type 0x7e"))
        #expect(server.err.contains("RECORDS line 1"))
        // Nothing the hostile clients sent was kept: the only change is the real member's sync.
        let o = try Store(path: owner)
        #expect(try o.db.scalarInt("SELECT count(*) FROM records WHERE id = 'x'") == 0)
        #expect(ownerBefore != (try Household.fingerprint(owner)))
        #expect(try Household.recordCount(owner) == 13)
    }

    // 7. A peer whose clock is a year ahead: it pulls its records back to the
    // owner's limit before sending and keeps them so (docs/protocol.md §7.4),
    // so both hold the same versions, and later edits win on both sides.
    @Test func clockAYearAheadConvergesAndLaterEditsWinEverywhere() throws {
        let dir = TempDir()
        let (owner, member, server) = try Self.pair(dir)
        defer { server.stop() }
        let future = Timestamp.current().adding(.days(365))
        try Household.addRecords(member, prefix: "f", count: 4, at: future)
        var before = server.summaries.count
        var r = try Tools.run("peer-sync", ["connect", "--db", member, "--now", future.rfc3339, server.address])
        #expect(r.status == 0, "\(r.err)")
        let s = try #require(r.json)
        #expect(s.at("clockSkew", "reported")?.boolValue == true)
        #expect((s.int("clockSkew", "ms") ?? 0) < -364 * 86_400_000)
        #expect(r.err.contains("the owner's clock is 364 days behind this device's") || r.err.contains("the owner's clock is 365 days behind this device's"), "\(r.err)")
        #expect(s.int("records", "clamped") == 4)
        #expect(s.at("digest", "equal")?.boolValue == true)
        let ownerSummary = try #require(server.summary(after: before))
        #expect(ownerSummary.at("clockSkew", "reported")?.boolValue == true)
        #expect(ownerSummary.int("records", "clamped") == 0)
        #expect(ownerSummary.at("digest", "equal")?.boolValue == true)
        let limit = Timestamp.current().adding(.minutes(6)).milliseconds
        for path in [owner, member] {
            #expect(try Store(path: path).db.scalarInt("SELECT max(modified_at) FROM records") ?? Int64.max <= limit)
        }
        #expect(try Household.digest(owner) == Household.digest(member))

        func writer(_ path: String, _ id: String) throws -> String? {
            try Store(path: path).db.scalarText("SELECT device_id FROM records WHERE id = ?", [.text(id)])
        }
        /// A local edit that changes the record's content (an unchanged one is no new version).
        func edit(_ path: String, _ ids: [String], note: String, at: Timestamp = Timestamp.current()) throws {
            let recs = try ids.map { try Record(line: "{\"id\":\"\($0)\",\"type\":\"receipt\",\"modifiedAt\":\"\(at.rfc3339)\",\"deviceId\":\"X\",\"deleted\":false,\"data\":{\"note\":\"\(note)\"}}") }
            _ = try Store(path: path).applyLocalEdits(recs, now: at)
        }
        // A later edit on the owner (correct clock) wins on both sides.
        try edit(owner, ["f-0"], note: "owner's edit")
        before = server.summaries.count
        r = try Tools.run("peer-sync", ["connect", "--db", member, "--now", future.adding(.minutes(1)).rfc3339, server.address])
        #expect(r.status == 0, "\(r.err)")
        #expect(r.json?.at("digest", "equal")?.boolValue == true)
        let ownerID = try Household.device(owner), memberID = try Household.device(member)
        #expect(try writer(owner, "f-0") == ownerID)
        #expect(try writer(member, "f-0") == ownerID)
        _ = server.summary(after: before)

        // A later edit on the member (its clock still ahead) wins too: it is stamped by the family's
        // clock, which the member measured in its last session, so nothing needs pulling back.
        try edit(member, ["f-0", "f-1"], note: "member's edit", at: future.adding(.minutes(2)))
        r = try Tools.run("peer-sync", ["connect", "--db", member, "--now", future.adding(.minutes(3)).rfc3339, server.address])
        #expect(r.status == 0, "\(r.err)")
        #expect(r.json?.int("records", "clamped") == 0)
        #expect(r.json?.at("digest", "equal")?.boolValue == true)
        for id in ["f-0", "f-1"] {
            #expect(try writer(owner, id) == memberID)
            #expect(try writer(member, id) == memberID)
        }
        #expect(try Household.digest(owner) == Household.digest(member))
    }

    // 8. Four devices syncing pairwise in random order converge, with every photo.
    @Test func fourDevicesConvergeInRandomOrder() throws {
        let dir = TempDir()
        let owner = dir.file("d0.db")
        _ = try Household.owner(owner)
        let server = try ServeProcess(db: owner, dir: dir)
        var stores = [owner]
        for i in 1...3 {
            let m = dir.file("d\(i).db")
            let j = try Household.join(m, server: server, offer: try Household.offer(owner))
            #expect(j.status == 0, "\(j.err)")
            stores.append(m)
        }
        server.stop()
        for (i, s) in stores.enumerated() {
            try Household.addRecords(s, prefix: "d\(i)", count: 40, photos: (0..<6).map { Household.photo(8000 + i * 10 + $0) })
            // Concurrent edits of the same ids from every device: LWW must pick the same winner everywhere.
            try Household.addRecords(s, prefix: "shared", count: 5, at: Timestamp.current().adding(TimeSpan(milliseconds: Int64(i % 2))))
        }
        let seed: UInt64 = 10
        var rng = SplitMix64(seed: seed)
        func converged() throws -> Bool {
            let d = try stores.map { try Household.digest($0) }
            guard Set(d).count == 1 else { return false }
            return try stores.allSatisfy { try Store(path: $0).wantedPhotoCount() == 0 }
        }
        var sessions = 0
        while sessions < 40, !(try converged()) {  // random pairs converge in about 8; 40 leaves no room for flakiness
            let a = Int.random(in: 0..<4, using: &rng)
            var b = Int.random(in: 0..<3, using: &rng)
            if b >= a { b += 1 }
            sessions += 1
            let srv = try ServeProcess(db: stores[b], dir: dir, name: "s\(sessions)", extra: ["--once"])
            let r = try Tools.run("peer-sync", ["connect", "--db", stores[a], srv.address], timeout: 60)
            #expect(r.status == 0, "seed \(seed): d\(a) → d\(b): \(r.err)")
            #expect(srv.waitForExit(timeout: 30) == 0)
        }
        #expect(try converged(), "seed \(seed): not converged after \(sessions) sessions")
        for s in stores {
            #expect(try Household.photoCount(s) == 24)
            #expect(try Household.recordCount(s) == 165)
        }
    }
}
