import Foundation
import Testing
import FamilySync

/// A root → intermediate → leaf PKI made with the `openssl` command line,
/// shaped like Apple's (marker OIDs, P-384 CA keys, P-256 leaf), and tokens
/// signed with `openssl dgst`: built independently of the code under test.
final class OpenSSLPKI: @unchecked Sendable {
    let dir = TempDir()
    /// When the certificates were made; proofs are signed just after.
    let madeAt = Timestamp.current()
    var rootPEM: String { dir.file("root.pem") }
    var rootDER: String { dir.file("root.der") }

    static let shared = try! OpenSSLPKI()

    static func openssl(_ args: [String], in dir: String) throws {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["openssl"] + args
        p.currentDirectoryURL = URL(fileURLWithPath: dir)
        let err = Pipe()
        p.standardError = err
        p.standardOutput = FileHandle.nullDevice
        try p.run()
        let msg = err.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        guard p.terminationStatus == 0 else {
            throw CocoaError(.executableLoad, userInfo: [NSLocalizedDescriptionKey: "openssl \(args.joined(separator: " ")): \(String(decoding: msg, as: UTF8.self))"])
        }
    }

    init() throws {
        let d = dir.path
        func run(_ a: [String]) throws { try OpenSSLPKI.openssl(a, in: d) }
        _ = dir.write("int.ext", "basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign,cRLSign\n1.2.840.113635.100.6.2.1=DER:05:00\n")
        _ = dir.write("leaf.ext", "basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\n1.2.840.113635.100.6.11.1=DER:05:00\n")
        try run(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-384", "-out", "root.key"])
        try run(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-384", "-out", "int.key"])
        try run(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", "leaf.key"])
        try run(["req", "-x509", "-new", "-key", "root.key", "-sha384", "-subj", "/O=family-sync e2e/CN=E2E Root", "-days", "3650",
                 "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign", "-out", "root.pem"])
        try run(["x509", "-in", "root.pem", "-outform", "DER", "-out", "root.der"])
        try run(["req", "-new", "-key", "int.key", "-subj", "/O=family-sync e2e/CN=E2E Intermediate", "-out", "int.csr"])
        try run(["x509", "-req", "-in", "int.csr", "-CA", "root.pem", "-CAkey", "root.key", "-set_serial", "2", "-days", "3000",
                 "-sha384", "-extfile", "int.ext", "-out", "int.pem"])
        try run(["req", "-new", "-key", "leaf.key", "-subj", "/O=family-sync e2e/CN=E2E Leaf", "-out", "leaf.csr"])
        try run(["x509", "-req", "-in", "leaf.csr", "-CA", "int.pem", "-CAkey", "int.key", "-set_serial", "3", "-days", "1000",
                 "-sha384", "-extfile", "leaf.ext", "-out", "leaf.pem"])
    }

    /// The base64 DER inside a PEM file, as x5c carries it.
    func x5c(_ name: String) throws -> String {
        try String(contentsOfFile: dir.file(name), encoding: .utf8).split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined()
    }

    static func b64url(_ bytes: some Sequence<UInt8>) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    /// A token with this header and payload JSON text, signed by the leaf key
    /// (ECDSA from `openssl dgst`, turned from DER into raw r‖s).
    func token(header: String? = nil, payload: String) throws -> String {
        let h = try header ?? #"{"alg":"ES256","x5c":["\#(x5c("leaf.pem"))","\#(x5c("int.pem"))","\#(x5c("root.pem"))"]}"#
        let input = OpenSSLPKI.b64url(h.utf8) + "." + OpenSSLPKI.b64url(payload.utf8)
        let name = "input-\(UUID().uuidString)"
        _ = dir.write(name, input)
        try OpenSSLPKI.openssl(["dgst", "-sha256", "-sign", "leaf.key", "-out", name + ".sig", name], in: dir.path)
        let der = Array(try Data(contentsOf: URL(fileURLWithPath: dir.file(name + ".sig"))))
        return input + "." + OpenSSLPKI.b64url(OpenSSLPKI.raw(der))
    }

    static func raw(_ der: [UInt8]) -> [UInt8] {
        var i = 2
        func int() -> [UInt8] {
            let len = Int(der[i + 1])
            var v = Array(der[(i + 2)..<(i + 2 + len)])
            i += 2 + len
            while v.count > 32 { v.removeFirst() }
            return [UInt8](repeating: 0, count: 32 - v.count) + v
        }
        return int() + int()
    }

    /// A transaction signed a minute after the certificates were made.
    func transaction(expiresIn days: Int64 = 30, bundle: String = "com.example.family", product: String = "family.monthly",
                     environment: String = "Production", extra: String = "") -> (json: String, signed: Timestamp, expires: Timestamp) {
        let signed = madeAt.adding(.minutes(1))
        let expires = signed.adding(.days(days))
        let json = #"{"transactionId":"1","bundleId":"\#(bundle)","productId":"\#(product)","signedDate":\#(signed.milliseconds),"expiresDate":\#(expires.milliseconds),"environment":"\#(environment)"\#(extra)}"#
        return (json, signed, expires)
    }
}

@Suite struct JWSVerifyTests {
    let pki = OpenSSLPKI.shared
    var base: [String] { ["--root", pki.rootPEM, "--bundle-id", "com.example.family", "--product", "family.monthly"] }
    var now: Timestamp { pki.madeAt.adding(.days(1)) }

    static let vectors = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("FamilySyncTests/Vectors/apple-test").path

    func json(_ line: String) throws -> JSONValue { try JSONParser.parse(line) }

    @Test func validProofExitsZero() throws {
        let tx = pki.transaction()
        let t = try pki.token(payload: tx.json)
        let r = try Tools.run("jws-verify", base + ["--now", now.rfc3339], input: t + "\n")
        #expect(r.status == 0, "\(r.err)")
        #expect(r.err.isEmpty)
        #expect(r.lines.count == 1)
        let v = try json(r.lines[0])
        #expect(v["valid"] == .bool(true))
        #expect(v["entitledUntil"] == .string(tx.expires.rfc3339))
        #expect(v["transaction"]?["productId"] == .string("family.monthly"))
        #expect(v["reason"] == nil && v["detail"] == nil)
        // The same root as DER, and as a file argument rather than stdin.
        let file = pki.dir.write("one.jws", t)
        let d = try Tools.run("jws-verify", ["--root", pki.rootDER, "--bundle-id", "com.example.family", "--now", now.rfc3339, file])
        #expect(d.status == 0 && d.out == r.out)
    }

    /// The tools do not read the system's OpenSSL configuration: one that
    /// asks for every algorithm from a FIPS provider, which this machine does
    /// not have, stops `openssl dgst` (the control) but not a proof's check.
    @Test func theSystemsOpenSSLConfigurationIsNotRead() throws {
        let conf = pki.dir.write("fips-only.cnf", """
            openssl_conf = openssl_init
            [openssl_init]
            alg_section = evp_properties
            [evp_properties]
            default_properties = fips=yes

            """)
        let control = try Tools.run("/usr/bin/openssl", ["dgst", "-sha256", conf], env: ["OPENSSL_CONF": conf])
        #expect(control.status != 0, "openssl read the configuration and could not fetch SHA-256: \(control.out)")
        let t = try pki.token(payload: pki.transaction().json)
        let r = try Tools.run("jws-verify", base + ["--now", now.rfc3339], input: t + "\n", env: ["OPENSSL_CONF": conf])
        #expect(r.status == 0, "\(r.err)")
        #expect(try json(r.lines.first ?? "")["valid"] == .bool(true), "\(r.out)")
    }

    /// A tool starts without OpenSSL's error texts and loads them when an
    /// error is put into words: the library and the reason, not "lib(6)".
    @Test func anOpenSSLErrorIsPutIntoWords() throws {
        let bad = pki.dir.write("not-a-root.der", "0\u{03}abc")
        let r = try Tools.run("jws-verify", ["--root", bad, "--bundle-id", "com.example.family"], input: "x\n")
        #expect(r.status != 0)
        #expect(r.err.contains("asn1 encoding routines") && r.err.contains("too long"), "\(r.err)")
        #expect(!r.err.contains("lib(") && !r.err.contains("reason("), "\(r.err)")
    }

    @Test func batchAnswersEveryLineInOrder() throws {
        let good = try pki.token(payload: pki.transaction().json)
        var parts = good.split(separator: ".").map(String.init)
        parts[1] = OpenSSLPKI.b64url(pki.transaction(product: "family.yearly").json.utf8)
        let tampered = parts.joined(separator: ".")
        let none = OpenSSLPKI.b64url(#"{"alg":"none"}"#.utf8) + "." + OpenSSLPKI.b64url(pki.transaction().json.utf8) + "."
        let wrongBundle = try pki.token(payload: pki.transaction(bundle: "com.other").json)
        let sandbox = try pki.token(payload: pki.transaction(environment: "Sandbox").json)
        let expired = try pki.token(payload: pki.transaction(expiresIn: 0).json)
        let truncated = String(good.prefix(good.count / 2))  // cut inside the header
        let input = [good, tampered, "", "garbage", none, "  " + good + "\r", wrongBundle, sandbox, expired, truncated].joined(separator: "\n") + "\n"
        let r = try Tools.run("jws-verify", base + ["--now", now.rfc3339], input: input)
        #expect(r.status == 1)
        #expect(r.err.isEmpty)
        let reasons = try r.lines.map { try json($0)["reason"]?.stringValue ?? "valid" }
        #expect(reasons == ["valid", "bad-signature", "malformed", "malformed", "unsupported-algorithm", "valid",
                            "wrong-bundle", "wrong-environment", "expired", "malformed"])
        #expect(try json(r.lines[6])["detail"] == .string("bundleId is \"com.other\", expected \"com.example.family\""))
        // Sandbox passes with --allow-sandbox; it is a separate run with the same tokens.
        let s = try Tools.run("jws-verify", base + ["--allow-sandbox", "--now", now.rfc3339], input: sandbox)
        #expect(s.status == 0)
    }

    /// A batch longer than the reader's buffer: every line still answered, in order.
    @Test func longBatchFromOneLeaf() throws {
        let tokens = try (0..<4).map { i in try pki.token(payload: pki.transaction(extra: #","n":\#(i)"#).json) }
        let lines = (0..<2400).map { tokens[$0 % 4] }
        let r = try Tools.run("jws-verify", base + ["--now", now.rfc3339], input: lines.joined(separator: "\n"))
        #expect(r.status == 0, "\(r.err)")
        #expect(r.lines.count == 2400)
        let ns = try r.lines.map { try json($0)["transaction"]?["n"]?.int64Value ?? -1 }
        #expect(ns == (0..<2400).map { Int64($0 % 4) })
    }

    @Test func expiryIsJudgedAtNow() throws {
        let tx = pki.transaction(expiresIn: 30)
        let t = try pki.token(payload: tx.json)
        let before = try Tools.run("jws-verify", base + ["--now", tx.expires.subtracting(.seconds(1)).rfc3339], input: t)
        #expect(before.status == 0)
        let at = try Tools.run("jws-verify", base + ["--now", tx.expires.rfc3339], input: t)
        #expect(at.status == 1)
        #expect(try json(at.lines[0])["reason"] == .string("expired"))
        #expect(try json(at.lines[0])["detail"]?.stringValue?.contains(tx.expires.rfc3339) == true)
    }

    @Test func bundledAppleRootIsTheDefaultAnchor() throws {
        let t = try pki.token(payload: pki.transaction().json)
        let r = try Tools.run("jws-verify", ["--bundle-id", "com.example.family", "--now", now.rfc3339], input: t)
        #expect(r.status == 1)
        #expect(try json(r.lines[0])["reason"] == .string("untrusted-chain"))
    }

    @Test func applesFixtures() throws {
        let root = JWSVerifyTests.vectors + "/testCA.der"
        let args = ["--root", root, "--bundle-id", "com.example", "--allow-sandbox", "--now", "2026-11-30T10:00:00Z"]
        let files = ["transactionInfo", "wrongBundleId", "missingX5CHeaderClaim", "xcode-signed-transaction"].map { JWSVerifyTests.vectors + "/\($0).jws" }
        let input = try files.map { try String(contentsOfFile: $0, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines) }.joined(separator: "\n")
        let r = try Tools.run("jws-verify", args, input: input)
        #expect(r.status == 1)
        #expect(try r.lines.map { try json($0)["reason"]?.stringValue ?? "valid" } == ["valid", "wrong-bundle", "untrusted-chain", "untrusted-chain"])
        let n = try Tools.run("jws-verify", args + ["--type", "notification", JWSVerifyTests.vectors + "/testNotification.jws"])
        let notification = try json(n.lines.first ?? "")["notification"]
        #expect(n.status == 0 && n.lines.count == 1 && notification != nil)
        let ri = try Tools.run("jws-verify", args + ["--type", "renewal-info", JWSVerifyTests.vectors + "/renewalInfo.jws"])
        let renewal = try json(ri.lines.first ?? "")["renewalInfo"]
        #expect(ri.status == 0 && renewal != nil)
    }

    @Test func hostileInputGetsVerdicts() throws {
        var input = Data(String(repeating: "A", count: 3 << 20).utf8)  // a 3 MB line
        input.append(0x0A)
        input.append(contentsOf: (0..<5000).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ 7) })  // binary, with newlines
        let r = try Tools.run("jws-verify", base, stdin: input)
        #expect(r.status == 1)
        #expect(r.err.isEmpty)
        let verdicts = try r.lines.map { try json($0) }
        #expect(verdicts.count == 1 + input.suffix(5000).filter { $0 == 0x0A }.count + (input.last == 0x0A ? 0 : 1))
        #expect(verdicts.allSatisfy { $0["reason"] == .string("malformed") })
        #expect(verdicts[0]["detail"] == .string("line is 3145728 bytes; a token is at most 65536"))
    }

    @Test(arguments: [
        ([] as [String], "give --bundle-id ID"),
        (["--bundle-id", ""], "--bundle-id: the bundle ID is empty"),
        (["--bundle-id", "x", "--type", "receipt"], "'receipt' is not one of transaction, renewal-info, notification"),
        (["--bundle-id", "x", "--now", "soon"], "--now: 'soon' is not an RFC 3339 time"),
        (["--bundle-id", "x", "a", "b"], "unexpected argument 'b'"),
    ])
    func usageErrors(args: [String], message: String) throws {
        let r = try Tools.run("jws-verify", args, input: "")
        #expect(r.status == 64)
        #expect(r.out.isEmpty)
        #expect(r.err.hasPrefix("jws-verify: "))
        #expect(r.err.contains(message), "\(r.err)")
        #expect(r.err.contains("See 'jws-verify --help'"))
    }

    @Test func inputAndRootErrors() throws {
        let missing = try Tools.run("jws-verify", ["--bundle-id", "x", pki.dir.file("nope.jws")])
        #expect(missing.status == 66 && missing.err.contains("nope.jws: No such file or directory"))
        let empty = try Tools.run("jws-verify", ["--bundle-id", "x"], input: "")
        #expect(empty.status == 65 && empty.err == "jws-verify: <stdin>: no token to verify (empty input)\n")
        let noRoot = try Tools.run("jws-verify", ["--root", pki.dir.file("none.pem"), "--bundle-id", "x"], input: "a")
        #expect(noRoot.status == 66 && noRoot.err.contains("--root \(pki.dir.file("none.pem")): No such file"))
        let junk = pki.dir.write("junk.pem", "-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n")
        let badRoot = try Tools.run("jws-verify", ["--root", junk, "--bundle-id", "x"], input: "a")
        #expect(badRoot.status == 65 && badRoot.err.contains("--root \(junk): not a DER or PEM certificate"))
        #expect(badRoot.out.isEmpty)
        let der = try Data(contentsOf: URL(fileURLWithPath: pki.rootDER))
        let cut = pki.dir.file("cut.der")
        try der.prefix(der.count - 10).write(to: URL(fileURLWithPath: cut))
        let truncated = try Tools.run("jws-verify", ["--root", cut, "--bundle-id", "x"], input: "a")
        #expect(truncated.status == 65 && truncated.err.contains("--root \(cut): not a DER or PEM certificate"))
        let big = pki.dir.file("big.der")
        try Data(count: 2 << 20).write(to: URL(fileURLWithPath: big))
        let huge = try Tools.run("jws-verify", ["--root", big, "--bundle-id", "x"], input: "a")
        #expect(huge.status == 65 && huge.err.contains("larger than 1048576 bytes"))
    }

    @Test func failedWriteExits74() throws {
        guard FileManager.default.isWritableFile(atPath: "/dev/full") else { return }
        let t = try pki.token(payload: pki.transaction().json)
        let p = Process()
        p.executableURL = URL(fileURLWithPath: Tools.path("jws-verify"))
        p.arguments = base + ["--now", now.rfc3339, pki.dir.write("w.jws", t)]
        p.standardOutput = FileHandle(forWritingAtPath: "/dev/full")
        let err = Pipe()
        p.standardError = err
        try p.run()
        let e = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        #expect(p.terminationStatus == 74)
        #expect(e.contains("jws-verify: write error on standard output"))
    }

    // MARK: Store mode

    func kept(_ db: String) throws -> (proofs: [KeptProof], policy: ProofPolicy?) {
        let s = try Store(path: db, create: false)
        return (try s.keptProofs(), try s.proofPolicy())
    }

    @Test func saveThenCheckAtLaunch() throws {
        let d = TempDir()
        let db = d.file("owner.db")
        let tx = pki.transaction()
        let t = try pki.token(payload: tx.json)

        // Checking a store that does not exist is "no store" (66), never a new store that answers "free".
        let fresh = try Tools.run("jws-verify", ["--db", db, "--root", pki.rootPEM, "--now", now.rfc3339])
        #expect(fresh.status == 66)
        #expect(fresh.err.contains("no store at \(db)"))
        #expect(fresh.out.isEmpty)
        #expect(!FileManager.default.fileExists(atPath: db))

        let save = try Tools.run("jws-verify", ["--db", db, "--save"] + base + ["--now", now.rfc3339], input: t + "\n")
        #expect(save.status == 0, "\(save.err)")
        #expect(try json(save.lines[0])["valid"] == .bool(true))
        let k = try kept(db)
        #expect(k.proofs.map(\.jws) == [t] && k.proofs[0].source == "local")
        #expect(k.policy == ProofPolicy(bundleID: "com.example.family", products: ["family.monthly"], allowSandbox: false))

        // Every launch: no bundle options needed, the settings are the store's.
        let check = try Tools.run("jws-verify", ["--db", db, "--root", pki.rootPEM, "--now", now.rfc3339])
        #expect(check.status == 0, "\(check.err)")
        #expect(check.out == #"{"entitled":true,"until":"\#(tx.expires.rfc3339)","reason":null,"source":"local"}"# + "\n")
        // FAMILY_SYNC_DB names the store too.
        let env = try Tools.run("jws-verify", ["--save", "--root", pki.rootPEM, "--now", now.rfc3339], input: t, env: ["FAMILY_SYNC_DB": db])
        #expect(env.status == 0)

        let after = try Tools.run("jws-verify", ["--db", db, "--root", pki.rootPEM, "--now", tx.expires.rfc3339])
        #expect(after.status == 1)
        let v = try json(after.lines[0])
        #expect(v["entitled"] == .bool(false) && v["reason"] == .string("expired") && v["source"] == .string("local"))
        #expect(v["detail"]?.stringValue?.contains(tx.expires.rfc3339) == true)

        // Without --root, the root given at --save is the store's: still premium.
        let kept = try Tools.run("jws-verify", ["--db", db, "--now", now.rfc3339])
        #expect(kept.status == 0, "\(kept.out) \(kept.err)")
        // With Apple's root pinned instead, nobody is premium.
        let appleRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("FamilySyncTests/Vectors/AppleRootCA-G3.cer").path
        let apple = try Tools.run("jws-verify", ["--db", db, "--now", now.rfc3339, "--root", appleRoot])
        let reason = try json(apple.lines.first ?? "")["reason"]
        #expect(apple.status == 1 && reason == .string("untrusted-chain"))
    }

    @Test func invalidSaveChangesNothing() throws {
        let d = TempDir()
        let db = d.file("owner.db")
        let good = try pki.token(payload: pki.transaction().json)
        #expect(try Tools.run("jws-verify", ["--db", db, "--save"] + base + ["--now", now.rfc3339], input: good).status == 0)
        let before = try kept(db)

        let wrong = try pki.token(payload: pki.transaction(bundle: "com.other").json)
        let another = try pki.token(payload: pki.transaction(extra: #","transactionId2":"x""#).json)
        let truncated = String(good.prefix(good.count / 2))
        for input in [another + "\n" + wrong, "garbage", "", String(repeating: "x", count: 200_000), truncated, another + "\n" + truncated] {
            let r = try Tools.run("jws-verify", ["--db", db, "--save", "--root", pki.rootPEM, "--bundle-id", "com.changed", "--now", now.rfc3339], input: input)
            #expect(r.status == (input.isEmpty ? 65 : 1), "\(r.err)")
            if !input.isEmpty { #expect(r.err.hasPrefix("jws-verify: nothing saved: <stdin>:"), "\(r.err)") }
            let after = try kept(db)
            #expect(after.proofs == before.proofs)
            #expect(after.policy == before.policy)
        }
    }

    @Test(arguments: [
        (["--type", "notification"], "a store keeps and checks transactions only"),
        (["--product", "p"], "--product and --allow-sandbox change the store's settings only together with --bundle-id"),
        (["some.jws"], "FILE is read only with --save"),
    ])
    func storeUsageErrors(args: [String], message: String) throws {
        let d = TempDir()
        let r = try Tools.run("jws-verify", ["--db", d.file("s.db")] + args)
        #expect(r.status == 64 && r.err.contains(message), "\(r.err)")
        #expect(!FileManager.default.fileExists(atPath: d.file("s.db")))
    }

    @Test func saveNeedsSettingsOnce() throws {
        let d = TempDir()
        let t = try pki.token(payload: pki.transaction().json)
        let r = try Tools.run("jws-verify", ["--db", d.file("s.db"), "--save", "--root", pki.rootPEM], input: t)
        #expect(r.status == 64 && r.err.contains("give --bundle-id ID"))
        #expect(!FileManager.default.fileExists(atPath: d.file("s.db")))
    }

    @Test func unreadableStoreIsAnErrorNotFree() throws {
        let d = TempDir()
        let notADB = d.write("text.db", "just text\n")
        let r = try Tools.run("jws-verify", ["--db", notADB])
        #expect(r.status == 65 && r.out.isEmpty && r.err.contains("is not a family-sync store"))
        #expect(try String(contentsOfFile: notADB, encoding: .utf8) == "just text\n")

        // A kept proof damaged on disk.
        let db = d.file("s.db")
        #expect(try Tools.run("jws-verify", ["--db", db, "--save"] + base + ["--now", now.rfc3339], input: pki.token(payload: pki.transaction().json)).status == 0)
        let s = try Store(path: db)
        try s.db.run("UPDATE proofs SET jws = 'x.y.z'")
        let c = try Tools.run("jws-verify", ["--db", db, "--root", pki.rootPEM, "--now", now.rfc3339])
        #expect(c.status == 65, "\(c.err)")
        #expect(c.out.isEmpty)
        #expect(c.err.contains("cannot be read"))
    }
}
