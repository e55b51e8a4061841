import Foundation
import Testing
import FamilySync

/// Commands that only read never create a store or a folder: a mistyped
/// --db is "no store at PATH" (66), and a refused join leaves nothing behind.
@Suite struct NoAccidentalStoreTests {
    /// Each command line is run against a path inside a folder that does not exist, and against a missing file in an existing folder.
    static let readers: [(String, [String])] = [
        ("peer-sync", ["status"]),
        ("peer-sync", ["connect", "127.0.0.1:9"]),
        ("peer-sync", ["serve", "--listen", "127.0.0.1:0"]),
        ("peer-sync", ["revoke", "ABCDEF01"]),
        ("jws-verify", []),
        ("jws-verify", ["--bundle-id", "com.example"]),
        ("merge-records", ["--export"]),
        ("merge-records", ["--export", "--since", "0"]),
        ("tombstone-gc", ["--dry-run"]),
        ("tombstone-gc", []),
        ("pair-qr", ["--list"]),
        ("pair-qr", ["--close", "all"]),
    ]

    @Test(arguments: readers)
    func readOnlyCommandsCreateNothing(tool: String, args: [String]) throws {
        let tmp = TempDir()
        for db in [tmp.file("typo.db"), tmp.file("nodir/x.db")] {
            var argv = args
            // The subcommand comes first.
            let insertAt = tool == "peer-sync" ? 1 : 0
            argv.insert(contentsOf: ["--db", db], at: insertAt)
            let r = try Tools.run(tool, argv, timeout: 30)
            #expect(r.status == 66, "\(tool) \(argv): \(r.status) \(r.err)")
            #expect(r.err.contains("no store at \(db)"), "\(r.err)")
            #expect(r.out.isEmpty)
        }
        let left = try FileManager.default.contentsOfDirectory(atPath: tmp.path)
        #expect(left.isEmpty, "\(tool) \(args) left \(left)")
    }

    /// A join the server refuses (an offer it never made) and a join nobody
    /// answers leave no store, no -wal or -shm, and no folder.
    @Test func refusedOrFailedJoinLeavesNothing() throws {
        let dir = TempDir()
        let owner = dir.file("owner.db")
        _ = try Household.owner(owner)
        let server = try ServeProcess(db: owner, dir: dir)
        defer { server.stop() }
        // An offer for the right family, but a nonce the owner never issued.
        let real = try PairingOffer(text: try Household.offer(owner))
        let forged = PairingOffer(family: real.family, nonce: String(repeating: "A", count: PairingOffer.nonceLength),
                                  expiresAt: real.expiresAt, address: nil)
        let tmp = TempDir()
        let kid = tmp.file("kids/kid.db")
        let r = try Tools.run("peer-sync", ["join", "--db", kid, "--connect", server.address], input: forged.text + "\n")
        #expect(r.status == 77, "\(r.err)")
        #expect(r.err.contains("nothing was stored"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: tmp.path).isEmpty)

        let closed = try PeerSyncTests.closedPort()
        let u = try Tools.run("peer-sync", ["join", "--db", kid, "--connect", "127.0.0.1:\(closed)"], input: real.text + "\n")
        #expect(u.status == 69, "\(u.err)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: tmp.path).isEmpty)

        // A store that existed before a refused join is kept as it was.
        let existing = tmp.file("kept.db")
        _ = try Store(path: existing)
        let before = try Household.fingerprint(existing)
        let k = try Tools.run("peer-sync", ["join", "--db", existing, "--connect", server.address], input: forged.text + "\n")
        #expect(k.status == 77)
        #expect(try Household.fingerprint(existing) == before)
    }
}
