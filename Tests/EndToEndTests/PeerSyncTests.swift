import Foundation
import Testing
import FamilySync
import FamilySyncCLI

// MARK: - Harness: real processes on loopback, bounded in time, cleaned up.

/// A `peer-sync serve` running in the background on 127.0.0.1 with an
/// ephemeral port, its stdout, stderr and events in files. Killed (SIGKILL)
/// when the value goes away if it is still running.
final class ServeProcess {
    private let run: BackgroundRun
    let dir: TempDir
    let name: String
    let events: String
    private(set) var port: UInt16 = 0

    var process: Process { run.process }
    var stdoutPath: String { run.stdoutPath }
    var stderrPath: String { run.stderrPath }

    /// Starts `peer-sync serve --db DB --listen 127.0.0.1:0 --events …` and waits for its 'listening' event.
    init(db: String, dir: TempDir, name: String = "serve", extra: [String] = [], env: [String: String] = [:]) throws {
        self.dir = dir
        self.name = name
        events = dir.file("\(name).events")
        _ = FileManager.default.createFile(atPath: events, contents: nil)
        run = try BackgroundRun("peer-sync", ["serve", "--db", db, "--listen", "127.0.0.1:0", "--events", events] + extra, dir: dir, name: name, env: env)
        guard let e = waitForEvent("listening", timeout: 20), let addr = e["address"]?.stringValue,
              let p = addr.split(separator: ":").last.flatMap({ UInt16($0) }) else {
            stop()
            throw HarnessError("serve did not start listening: \(String(decoding: FileManager.default.contents(atPath: stderrPath) ?? Data(), as: UTF8.self))")
        }
        port = p
    }

    var address: String { "127.0.0.1:\(port)" }
    var pid: Int32 { process.processIdentifier }

    func eventLines() -> [JSONValue] {
        let text = String(decoding: FileManager.default.contents(atPath: events) ?? Data(), as: UTF8.self)
        return text.split(separator: "\n").compactMap { try? JSONParser.parse(String($0)) }
    }

    /// Waits (bounded) for the `count`-th event named `name`.
    @discardableResult
    func waitForEvent(_ name: String, count: Int = 1, timeout: TimeInterval = 30) -> JSONValue? {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            let matching = eventLines().filter { $0["event"]?.stringValue == name }
            if matching.count >= count { return matching[count - 1] }
            if !process.isRunning { return nil }
            usleep(20_000)
        }
        return nil
    }

    /// Waits (bounded) for the process to exit on its own.
    func waitForExit(timeout: TimeInterval = 60) -> Int32? {
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { usleep(20_000) }
        if process.isRunning { return nil }
        return process.terminationStatus
    }

    /// SIGTERM, then SIGKILL if it has not gone within five seconds.
    @discardableResult
    func stop() -> Int32 {
        if process.isRunning {
            kill(process.processIdentifier, SIGTERM)
            let deadline = Date().addingTimeInterval(5)
            while process.isRunning && Date() < deadline { usleep(20_000) }
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        }
        process.waitUntilExit()
        return process.terminationStatus
    }

    var out: String { String(decoding: FileManager.default.contents(atPath: stdoutPath) ?? Data(), as: UTF8.self) }
    var err: String { String(decoding: FileManager.default.contents(atPath: stderrPath) ?? Data(), as: UTF8.self) }
    var summaries: [JSONValue] { out.split(separator: "\n").compactMap { try? JSONParser.parse(String($0)) } }

    /// The newest session summary once there are more than `previous`,
    /// waiting (bounded): the server writes it after its own closing
    /// handshake, which can come just after the client has exited.
    func summary(after previous: Int, timeout: TimeInterval = 30) -> JSONValue? {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            let all = summaries
            if all.count > previous { return all.last }
            usleep(20_000)
        }
        return nil
    }
}

struct HarnessError: Error, CustomStringConvertible {
    var description: String
    init(_ d: String) { description = d }
}

/// Stores for a household, made through the core API (the tools that make
/// offers and stamp edits are other commands; these tests are about peer-sync).
enum Household {
    static let now = Timestamp.current()

    /// An owner's store with a family, and an open offer for it (its QR text).
    static func owner(_ path: String, ttl: TimeSpan = .minutes(10), maxDevices: Int? = nil) throws -> String {
        let s = try Store(path: path)
        let offer = try s.makeOffer(ttl: ttl, address: nil, now: Timestamp.current())
        if let m = maxDevices { try s.setSetting("max_devices", String(m)) }
        return offer.text
    }

    static func offer(_ path: String, ttl: TimeSpan = .minutes(10)) throws -> String {
        try Store(path: path).makeOffer(ttl: ttl, address: nil, now: Timestamp.current()).text
    }

    /// Adds `count` records written by this store's device (ids prefixed with `prefix`), optionally naming photos.
    static func addRecords(_ path: String, prefix: String, count: Int, photos: [[UInt8]] = [], at: Timestamp = Timestamp.current()) throws {
        let s = try Store(path: path)
        var hashes: [String] = []
        try s.write {
            for p in photos { hashes.append(try s.addPhoto(p, now: at)) }
        }
        var recs: [Record] = []
        for i in 0..<count {
            let ph = i < hashes.count ? ",\"photos\":[\"\(hashes[i])\"]" : ""
            let line = "{\"id\":\"\(prefix)-\(i)\",\"type\":\"receipt\",\"modifiedAt\":\"\(at.rfc3339)\",\"deviceId\":\"X\",\"deleted\":false,\"data\":{\"amount\":\(i),\"note\":\"\(prefix) item \(i)\"}\(ph)}"
            recs.append(try Record(line: line))
        }
        _ = try s.applyLocalEdits(recs, now: at)
    }

    /// Deterministic photo bytes.
    static func photo(_ seed: Int, size: Int = 4096) -> [UInt8] {
        var x = UInt64(truncatingIfNeeded: seed) &* 0x9E37_79B9_7F4A_7C15 | 1
        return (0..<size).map { _ in x ^= x << 13; x ^= x >> 7; x ^= x << 17; return UInt8(truncatingIfNeeded: x) }
    }

    static func digest(_ path: String) throws -> String { try Store(path: path).recordStateDigest() }
    static func recordCount(_ path: String) throws -> Int64 { try Store(path: path).db.scalarInt("SELECT count(*) FROM records") ?? 0 }
    /// Photos the store holds whose bytes are in its photo file and hash to their name.
    static func photoCount(_ path: String) throws -> Int64 {
        let s = try Store(path: path)
        let st = try s.db.prepare("SELECT sha256 FROM photos")
        defer { st.reset() }
        var n: Int64 = 0
        while try st.step() {
            let h = st.text(0)
            if let b = try s.photo(h), Hex.encode(SHA256.hash(b)) == h { n += 1 }
        }
        return n
    }
    /// Puts a store back from a `merge-records --backup` copy, as the README
    /// says: the store, its photo file and its pack, every other file beside it gone.
    static func restore(_ store: String, from copy: String) throws {
        for suffix in [""] + Store.companionSuffixes { unlink(store + suffix) }
        for suffix in ["", "-photos", "-photos-pack"] { try FileManager.default.copyItem(atPath: copy + suffix, toPath: store + suffix) }
    }
    static func device(_ path: String) throws -> String { try Store(path: path).deviceID }

    /// A whole-store fingerprint: records, photos, devices, offers, secrets, meta, proofs.
    static func fingerprint(_ path: String) throws -> String {
        let s = try Store(path: path)
        let tables: [(String, [String])] = [
            ("records", ["id", "type", "modified_at", "device_id", "deleted", "line", "seq"]), ("photos", ["sha256", "size"]),
            ("devices", ["device_id", "role", "revoked_at", "last_addr", "last_synced_at", "sent_seq", "recv_seq"]),
            ("offers", ["nonce", "used_at", "used_by", "closed_at"]), ("secrets", ["name", "hex(value)"]), ("meta", ["key", "value"]), ("proofs", ["jws"]),
        ]
        var h = SHA256()
        for (table, cols) in tables {
            let st = try s.db.prepare("SELECT " + cols.map { "quote(\($0))" }.joined(separator: "||'|'||") + " FROM \(table) ORDER BY 1")
            while try st.step() { h.update(st.text(0)); h.update([0x0A]) }
            st.reset()
        }
        // And the photos' bytes, as the photo file beside the store says where they are in the pack.
        let files = try Database(path: path + "-photos")
        let pack = try Data(contentsOf: URL(fileURLWithPath: path + "-photos-pack"))
        let st = try files.prepare("SELECT sha256, offset, size FROM photo_pack ORDER BY 1")
        while try st.step() {
            let (offset, size) = (Int(st.int64(1)), Int(st.int64(2)))
            h.update(st.text(0) + "|")
            h.update(offset + size <= pack.count ? Array(pack[offset..<(offset + size)]) : Array("missing".utf8))
            h.update([0x0A])
        }
        st.reset()
        return Hex.encode(h.finalize())
    }

    /// Joins `member` to the family served by `server` with `offerText`.
    static func join(_ member: String, server: ServeProcess, offer: String, extra: [String] = []) throws -> ToolResult {
        try Tools.run("peer-sync", ["join", "--db", member, "--connect", server.address] + extra, input: offer + "\n")
    }
}

extension ToolResult {
    var json: JSONValue? { lines.last.flatMap { try? JSONParser.parse($0) } }
}

extension JSONValue {
    func at(_ path: String...) -> JSONValue? {
        var v: JSONValue? = self
        for k in path { v = v?[k] }
        return v
    }
    func int(_ path: String...) -> Int64? {
        var v: JSONValue? = self
        for k in path { v = v?[k] }
        return v?.int64Value
    }
}

// MARK: - The basic flow

@Suite(.serialized) struct PeerSyncTests {
    @Test func joinThenSyncBothWaysWithPhotos() throws {
        let dir = TempDir()
        let owner = dir.file("owner.db"), kid = dir.file("kid.db")
        let offer = try Household.owner(owner)
        try Household.addRecords(owner, prefix: "o", count: 30, photos: (0..<25).map { Household.photo($0) })
        let server = try ServeProcess(db: owner, dir: dir)
        defer { server.stop() }

        let j = try Household.join(kid, server: server, offer: offer)
        #expect(j.status == 0, "\(j.err)")
        let js = try #require(j.json)
        #expect(js["joined"]?.boolValue == true)
        #expect(js.int("records", "received") == 30)
        #expect(js.int("photos", "received") == 25)
        #expect(js.int("photos", "waves") == 2)
        #expect(js.at("digest", "equal")?.boolValue == true)
        #expect(try Household.digest(kid) == Household.digest(owner))

        // The member edits and attaches photos; a plain connect sends them back.
        try Household.addRecords(kid, prefix: "k", count: 5, photos: (100..<103).map { Household.photo($0) })
        let c = try Tools.run("peer-sync", ["connect", "--db", kid, server.address])
        #expect(c.status == 0, "\(c.err)")
        let cs = try #require(c.json)
        #expect(cs.int("records", "sent") == 5)
        #expect(cs.int("records", "received") == 0)
        #expect(cs.at("digest", "equal")?.boolValue == true)
        #expect(try Household.digest(kid) == Household.digest(owner))
        #expect(try Household.photoCount(owner) == 28)

        // Sync Now: no address, the peer reached before.
        let n = try Tools.run("peer-sync", ["connect", "--db", kid])
        #expect(n.status == 0, "\(n.err)")
        #expect(n.json?.int("records", "sent") == 0)
        #expect(n.json?.int("records", "received") == 0)

        let st = try Tools.run("peer-sync", ["status", "--db", kid])
        #expect(st.status == 0)
        let sj = try #require(st.json)
        #expect(sj["role"]?.stringValue == "member")
        #expect(sj.at("photos", "wanted")?.int64Value == 0)
        #expect(sj["devices"]?.arrayValue?.count == 2)
    }
}

extension PeerSyncTests {
    /// A free loopback port nobody listens on.
    static func closedPort() throws -> UInt16 {
        let l = try TCPSocket.listen(on: HostPort(host: "127.0.0.1", port: 0))
        defer { l.close() }
        return l.localAddress()!.port
    }

    @Test func nobodyListeningIsExit69WithTheStandardMessage() throws {
        let dir = TempDir()
        let owner = dir.file("owner.db"), kid = dir.file("kid.db")
        let offer = try Household.owner(owner)
        let server = try ServeProcess(db: owner, dir: dir)
        #expect(try Household.join(kid, server: server, offer: offer).status == 0)
        server.stop()
        let port = try Self.closedPort()
        let r = try Tools.run("peer-sync", ["connect", "--db", kid, "127.0.0.1:\(port)"], timeout: 30)
        #expect(r.status == 69)
        #expect(r.err == "peer-sync: no peer at 127.0.0.1:\(port) (is 'peer-sync serve' running?)\n")
        #expect(r.out.isEmpty)
        // Sync Now with the only known peer gone: 69 as well, naming it.
        let n = try Tools.run("peer-sync", ["connect", "--db", kid], timeout: 30)
        #expect(n.status == 69)
        #expect(n.err.contains("no peer at \(server.address) (is 'peer-sync serve' running?)"))
        // A join with nobody there.
        let j = try Tools.run("peer-sync", ["join", "--db", dir.file("other.db"), "--connect", "127.0.0.1:\(port)"], input: offer)
        #expect(j.status == 69)
        #expect(j.err == "peer-sync: no peer at 127.0.0.1:\(port) (is 'peer-sync serve' running?)\n")
    }

    @Test func eventsAreNDJSONAndSecretsNeverShow() throws {
        let dir = TempDir()
        let owner = dir.file("owner.db"), kid = dir.file("kid.db")
        let offer = try Household.owner(owner)
        try Household.addRecords(owner, prefix: "e", count: 3, photos: [Household.photo(1)])
        let server = try ServeProcess(db: owner, dir: dir)
        let events = dir.file("join.events")
        let j = try Household.join(kid, server: server, offer: offer, extra: ["--events", events])
        #expect(j.status == 0, "\(j.err)")
        let st = try Tools.run("peer-sync", ["status", "--db", kid])
        server.stop()
        let lines = String(decoding: FileManager.default.contents(atPath: events) ?? Data(), as: UTF8.self).split(separator: "\n")
        let parsed = lines.compactMap { try? JSONParser.parse(String($0)) }
        #expect(parsed.count == lines.count)
        #expect(parsed.allSatisfy { $0["event"]?.stringValue != nil && $0["time"]?.stringValue != nil })
        let names = parsed.compactMap { $0["event"]?.stringValue }
        for n in ["joined", "hello", "phase", "wave", "done-sent", "done-received", "synced"] { #expect(names.contains(n), "\(n)") }

        // No key, nonce or secret anywhere a user could see it.
        let o = try Store(path: owner), k = try Store(path: kid)
        var secrets = [try #require(try o.familySecret()), try #require(try k.ownDeviceKey())].map { $0.withUnsafeBytes { Hex.encode($0) } }
        secrets.append(try PairingOffer(text: offer).nonce)
        let visible = [j.out, j.err, st.out, st.err, server.out, server.err,
                       String(decoding: FileManager.default.contents(atPath: events) ?? Data(), as: UTF8.self),
                       String(decoding: FileManager.default.contents(atPath: server.events) ?? Data(), as: UTF8.self)].joined()
        for s in secrets { #expect(!visible.lowercased().contains(s.lowercased())) }
        // The stores holding them are 0600.
        for p in [owner, kid] {
            let mode = (try FileManager.default.attributesOfItem(atPath: p)[.posixPermissions] as? Int) ?? 0
            #expect(mode & 0o077 == 0, "\(p) is \(String(mode, radix: 8))")
        }
    }

    @Test(arguments: [
        ("", 66, "<stdin>: no offer found"),
        ("garbage\n", 65, "<stdin>:1: field 'version': not a family-sync pairing offer"),
        ("{\"qr\":5}\n", 65, "<stdin>:1: field 'qr': missing"),
        ("{\"qr\":\n", 65, "<stdin>:1: not JSON"),
        ("FS1/6A1C1D2E-0F3A-4B5C-8D6E-7F8091A2B3C4/SHORT/4102444800/\n", 65, "<stdin>:1: field 'nonce'"),
        ("FS1/6A1C1D2E-0F3A-4B5C-8D6E-7F8091A2B3C4/ABCDEFGHIJKLMNOPQRSTUVWXYZ234567/4102444800/\n", 64, "the offer carries no address: give --connect HOST:PORT"),
    ])
    func badOffersAreRefusedBeforeConnecting(input: String, status: Int32, message: String) throws {
        let dir = TempDir()
        let db = dir.file("kid.db")
        let r = try Tools.run("peer-sync", ["join", "--db", db], input: input)
        #expect(r.status == status)
        #expect(r.err.hasPrefix("peer-sync: " + message), "\(r.err)")
        #expect(r.out.isEmpty)
        if FileManager.default.fileExists(atPath: db) { #expect(try Store(path: db).family() == nil) }
    }

    @Test func oversizedOfferInputIsRefused() throws {
        let dir = TempDir()
        let r = try Tools.run("peer-sync", ["join", "--db", dir.file("kid.db")], input: String(repeating: "A", count: OfferInput.maxBytes + 10))
        #expect(r.status == 65)
        #expect(r.err.contains("longer than \(OfferInput.maxBytes) bytes"))
    }

    @Test(arguments: [
        (["connect", "nohost"], "HOST:PORT: 'nohost' is not HOST:PORT"),
        (["connect", "h:99999"], "HOST:PORT: 'h:99999' is not HOST:PORT"),
        (["serve", "--listen", "x"], "--listen: 'x' is not HOST:PORT"),
        (["connect", "--wave-timeout", "0s", "h:1"], "--wave-timeout: '0s' is no time at all; it must be more than 0"),
        (["connect", "--wait", "soon", "h:1"], "--wait: 'soon' is not a duration"),
        (["revoke"], "missing argument DEVICE"),
        (["frobnicate"], "unknown command 'frobnicate'"),
        ([], "missing command"),
    ])
    func usageErrors(args: [String], message: String) throws {
        let dir = TempDir()
        let r = try Tools.run("peer-sync", args.count > 0 && args[0] != "frobnicate" ? [args[0], "--db", dir.file("s.db")] + args.dropFirst() : args)
        #expect(r.status == 64)
        #expect(r.err.hasPrefix("peer-sync: " + message), "\(r.err)")
        #expect(r.err.contains("See 'peer-sync"))
    }

    @Test func unwritableEventsFileIsAnIOError() throws {
        let dir = TempDir()
        _ = try Store(path: dir.file("s.db"))
        let r = try Tools.run("peer-sync", ["connect", "--db", dir.file("s.db"), "--events", dir.file("no/such/dir/ev"), "127.0.0.1:9"])
        #expect(r.status == 74)
        #expect(r.err.hasPrefix("peer-sync: --events: cannot open \(dir.file("no/such/dir/ev"))"))
    }

    @Test func statusOfAStoreWithoutAFamily() throws {
        let dir = TempDir()
        _ = try Store(path: dir.file("new.db"))
        let r = try Tools.run("peer-sync", ["status", "--db", dir.file("new.db")])
        #expect(r.status == 0)
        let s = try #require(r.json)
        #expect(s["family"]?.isNull == true)
        #expect(s["devices"]?.arrayValue?.isEmpty == true)
        let c = try Tools.run("peer-sync", ["connect", "--db", dir.file("new.db"), "127.0.0.1:9"])
        #expect(c.status == 66)
        #expect(c.err.contains("belongs to no family yet"))
        let v = try Tools.run("peer-sync", ["serve", "--db", dir.file("new.db"), "--listen", "127.0.0.1:0"])
        #expect(v.status == 66)
    }

    @Test func revokeChecksWhoAndWhat() throws {
        let dir = TempDir()
        let owner = dir.file("owner.db"), kid = dir.file("kid.db")
        let offer = try Household.owner(owner)
        let server = try ServeProcess(db: owner, dir: dir)
        #expect(try Household.join(kid, server: server, offer: offer).status == 0)
        server.stop()
        let before = try Household.fingerprint(owner)
        var r = try Tools.run("peer-sync", ["revoke", "--db", kid, try Household.device(owner)])
        #expect(r.status == 77)
        #expect(r.err.contains("only the owner's device revokes devices"))
        r = try Tools.run("peer-sync", ["revoke", "--db", owner, "FFFFFFFF"])
        #expect(r.status == 65)
        #expect(r.err.contains("no device of this family starts with 'FFFFFFFF'"))
        r = try Tools.run("peer-sync", ["revoke", "--db", owner, try Household.device(owner)])
        #expect(r.status == 64)
        r = try Tools.run("peer-sync", ["revoke", "--db", owner, "AB"])
        #expect(r.status == 64)
        #expect(try Household.fingerprint(owner) == before)
        let id = try Household.device(kid)
        r = try Tools.run("peer-sync", ["revoke", "--db", owner, id.lowercased()])
        #expect(r.status == 0, "\(r.err)")
        #expect(r.json?["revoked"]?.stringValue == id)
        #expect(r.json?["devices"]?.int64Value == 1)
        r = try Tools.run("peer-sync", ["revoke", "--db", owner, id])
        #expect(r.status == 0)
        #expect(r.json?["alreadyRevoked"]?.boolValue == true)
        #expect(r.json?["epoch"]?.int64Value == 1)
    }
}

extension PeerSyncTests {
    /// The owner's proof travels on every contact; a member keeps it only if it verifies.
    @Test func proofTravelsAndIsVerifiedOnArrival() throws {
        let pki = OpenSSLPKI.shared
        let now = pki.madeAt.adding(.days(1)).rfc3339
        let dir = TempDir()
        let owner = dir.file("owner.db"), kid = dir.file("kid.db"), other = dir.file("other.db")
        // The clock here is a day on (the proof is judged then): offers live two days.
        let offer = try Household.owner(owner, ttl: .days(2))
        let tx = pki.transaction()
        let token = try pki.token(payload: tx.json)
        let save = try Tools.run("jws-verify", ["--db", owner, "--save", "--root", pki.rootPEM, "--bundle-id", "com.example.family",
                                                "--product", "family.monthly", "--now", now], input: token + "\n")
        #expect(save.status == 0, "\(save.err)")
        let server = try ServeProcess(db: owner, dir: dir, extra: ["--root", pki.rootPEM, "--now", now])
        defer { server.stop() }

        let j = try Household.join(kid, server: server, offer: offer, extra: ["--root", pki.rootPEM, "--now", now])
        #expect(j.status == 0, "\(j.err)")
        #expect(j.json?.at("proof", "received", "state")?.stringValue == "kept")
        #expect(j.json?.at("proof", "received", "until")?.stringValue == tx.expires.rfc3339)
        #expect(server.summary(after: 0)?.at("proof", "sent")?.boolValue == true)
        // The member re-checks at launch: premium, by the owner's proof and policy.
        let ownerID = try Household.device(owner)
        let check = try Tools.run("jws-verify", ["--db", kid, "--root", pki.rootPEM, "--now", now])
        #expect(check.status == 0, "\(check.err)")
        #expect(check.out == #"{"entitled":true,"until":"\#(tx.expires.rfc3339)","reason":null,"source":"peer:\#(ownerID)"}"# + "\n")
        // Next contact: the same proof each way is already known.
        let before = server.summaries.count
        let again = try Tools.run("peer-sync", ["connect", "--db", kid, "--root", pki.rootPEM, "--now", now, server.address])
        #expect(again.status == 0, "\(again.err)")
        #expect(again.json?.at("proof", "received", "state")?.stringValue == "known")
        #expect(again.json?.at("proof", "sent")?.boolValue == true)
        #expect(server.summary(after: before)?.at("proof", "received", "state")?.stringValue == "known")
        let st = try #require(try Tools.run("peer-sync", ["status", "--db", kid, "--root", pki.rootPEM, "--now", now]).json)
        #expect(st.at("proof", "entitled")?.boolValue == true)
        #expect(st.at("proof", "held")?.int64Value == 1)

        // A device that trusts only Apple's root rejects the demo proof and stays free.
        let j2 = try Household.join(other, server: server, offer: try Household.offer(owner, ttl: .days(2)), extra: ["--now", now])
        #expect(j2.status == 0, "\(j2.err)")
        #expect(j2.json?.at("proof", "received", "state")?.stringValue == "rejected")
        #expect(j2.json?.at("proof", "received", "reason")?.stringValue == "untrusted-chain")
        #expect(try Store(path: other).keptProofs().isEmpty)

        // Revoked: told so by the owner, the member drops to free.
        #expect(try Tools.run("peer-sync", ["revoke", "--db", owner, try Household.device(kid), "--now", now]).status == 0)
        let r = try Tools.run("peer-sync", ["connect", "--db", kid, "--root", pki.rootPEM, "--now", now, server.address])
        #expect(r.status == 77)
        #expect(r.err.contains("this device drops to free"))
        let free = try Tools.run("jws-verify", ["--db", kid, "--root", pki.rootPEM, "--now", now])
        #expect(free.status == 1)
        #expect(free.out.contains("\"reason\":\"no-proof\""))
    }
}

/// Any tool running in the background with stdout and stderr in files.
final class BackgroundRun {
    let process = Process()
    let stdoutPath: String
    let stderrPath: String

    init(_ tool: String, _ args: [String], dir: TempDir, name: String, env extra: [String: String] = [:]) throws {
        stdoutPath = dir.file("\(name).out")
        stderrPath = dir.file("\(name).err")
        for p in [stdoutPath, stderrPath] { _ = FileManager.default.createFile(atPath: p, contents: nil) }
        process.executableURL = URL(fileURLWithPath: Tools.path(tool))
        process.arguments = args
        var env = ProcessInfo.processInfo.environment
        env.removeValue(forKey: "FAMILY_SYNC_DB")
        for (k, v) in extra { env[k] = v }
        process.environment = env
        process.standardOutput = FileHandle(forWritingAtPath: stdoutPath)
        process.standardError = FileHandle(forWritingAtPath: stderrPath)
        process.standardInput = FileHandle.nullDevice
        try process.run()
    }

    /// Foundation keeps a Process (and its file handles) alive until
    /// `waitUntilExit` has seen it end; polling `isRunning` is not enough, so
    /// this always ends with it.
    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }

    var pid: Int32 { process.processIdentifier }

    /// The exit status, or nil if it did not end within `timeout` (it is then killed).
    func wait(timeout: TimeInterval = 60) -> Int32? {
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { usleep(10_000) }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            return nil
        }
        return process.terminationStatus
    }

    var out: String { String(decoding: FileManager.default.contents(atPath: stdoutPath) ?? Data(), as: UTF8.self) }
    var err: String { String(decoding: FileManager.default.contents(atPath: stderrPath) ?? Data(), as: UTF8.self) }
    var json: JSONValue? { out.split(separator: "\n").last.flatMap { try? JSONParser.parse(String($0)) } }
}

/// A root given once is kept: the store judges by it from then on, and a
/// proof rejected during a session is said on standard error.
@Suite(.serialized) struct TrustRootTests {
    @Test func aRootGivenAtSaveAndJoinIsKeptAndUsedThereafter() throws {
        let pki = OpenSSLPKI.shared
        let now = pki.madeAt.adding(.days(1)).rfc3339
        let dir = TempDir()
        let owner = dir.file("owner.db"), kid = dir.file("kid.db"), other = dir.file("other.db")
        let offer = try Household.owner(owner, ttl: .days(2))
        let tx = pki.transaction()
        let save = try Tools.run("jws-verify", ["--db", owner, "--save", "--root", pki.rootPEM, "--bundle-id", "com.example.family",
                                                "--product", "family.monthly", "--now", now], input: try pki.token(payload: tx.json) + "\n")
        #expect(save.status == 0, "\(save.err)")
        #expect(try Store(path: owner).setting(Store.trustRootsSetting)?.hasPrefix("-----BEGIN CERTIFICATE-----") == true)
        // From here on no command names the root again.
        let ownerCheck = try Tools.run("jws-verify", ["--db", owner, "--now", now])
        #expect(ownerCheck.status == 0, "\(ownerCheck.out) \(ownerCheck.err)")
        let server = try ServeProcess(db: owner, dir: dir, extra: ["--now", now])
        defer { server.stop() }
        let j = try Household.join(kid, server: server, offer: offer, extra: ["--root", pki.rootPEM, "--now", now])
        #expect(j.status == 0, "\(j.err)")
        #expect(j.json?.at("proof", "received", "state")?.stringValue == "kept")
        #expect(server.summary(after: 0)?.at("proof", "sent")?.boolValue == true)
        let check = try Tools.run("jws-verify", ["--db", kid, "--now", now])
        #expect(check.status == 0, "\(check.out) \(check.err)")
        let again = try Tools.run("peer-sync", ["connect", "--db", kid, "--now", now, server.address])
        #expect(again.status == 0, "\(again.err)")
        #expect(again.json?.at("proof", "received", "state")?.stringValue == "known")
        #expect(again.err.isEmpty, "\(again.err)")
        #expect(server.summary(after: 1)?.at("proof", "received", "state")?.stringValue == "known")
        let st = try #require(try Tools.run("peer-sync", ["status", "--db", kid, "--now", now]).json)
        #expect(st.at("proof", "entitled")?.boolValue == true)
        // --root on the command line still wins for that command: Apple's root alone rejects the demo proof.
        let appleRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("FamilySyncTests/Vectors/AppleRootCA-G3.cer").path
        let apple = try Tools.run("jws-verify", ["--db", kid, "--now", now, "--root", appleRoot])
        #expect(apple.status == 1, "\(apple.out) \(apple.err)")
        #expect(apple.out.contains("untrusted-chain"), "\(apple.out)")

        // A device that was never given the root rejects the proof, and says so on stderr (exit still 0: the sync happened).
        let j2 = try Household.join(other, server: server, offer: try Household.offer(owner, ttl: .days(2)), extra: ["--now", now])
        #expect(j2.status == 0, "\(j2.err)")
        #expect(j2.json?.at("proof", "received", "state")?.stringValue == "rejected")
        #expect(j2.err.contains("peer-sync: the peer's proof was rejected (untrusted-chain: "), "\(j2.err)")
        #expect(j2.err.contains("give --root CERT once"), "\(j2.err)")
        #expect(try Store(path: other).setting(Store.trustRootsSetting) == nil)
        let free = try Tools.run("jws-verify", ["--db", other, "--now", now])
        #expect(free.status == 1)
    }

    /// A join that fails keeps nothing, the root included.
    @Test func aFailedJoinKeepsNoRoot() throws {
        let pki = OpenSSLPKI.shared
        let dir = TempDir()
        let kid = dir.file("kid.db")
        let r = try Tools.run("peer-sync", ["join", "--db", kid, "--root", pki.rootPEM, "--connect", "127.0.0.1:\(try PeerSyncTests.closedPort())"],
                              input: "FS1/6A1C1D2E-0F3A-4B5C-8D6E-7F8091A2B3C4/ABCDEFGHIJKLMNOPQRSTUVWXYZ234567/4102444800/\n")
        #expect(r.status == 69, "\(r.err)")
        if FileManager.default.fileExists(atPath: kid) { #expect(try Store(path: kid).setting(Store.trustRootsSetting) == nil) }
    }
}
