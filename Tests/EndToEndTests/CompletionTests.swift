import Foundation
import Testing
import FamilySync

/// The generated completion scripts, loaded in real shells and asked what
/// they offer: bash through its completion function with COMP_WORDS and
/// COMP_CWORD as bash sets them, zsh through its completion system in a
/// pseudo-terminal (Support/zsh-complete.zsh), fish through `complete -C`.
/// The scripts run the built tools (on PATH), as an installed script would.
@Suite(.serialized) struct CompletionTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path
    static let zshDriver = URL(fileURLWithPath: #filePath).deletingLastPathComponent().path + "/Support/zsh-complete.zsh"

    /// An environment where only `extra` names a store: PATH finds the built
    /// tools, and the default store lives in an empty folder of `dir`.
    static func env(_ dir: TempDir, _ extra: [String: String] = [:]) -> [String: String] {
        let xdg = dir.file("xdg")
        try? FileManager.default.createDirectory(atPath: xdg, withIntermediateDirectories: true)
        var e = ["PATH": Tools.binDir + ":/usr/bin:/bin", "XDG_DATA_HOME": xdg, "HOME": dir.path]
        for (k, v) in extra { e[k] = v }
        return e
    }

    /// bash: `words` as COMP_WORDS (the last is the word being completed), in `cwd`.
    static func bash(_ tool: String, _ words: [String], cwd: String, env: [String: String]) throws -> (Set<String>, String) {
        let quoted = words.map { "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'" }.joined(separator: " ")
        let fn = "_" + tool.replacingOccurrences(of: "-", with: "_")
        let script = """
        cd '\(cwd)' && source '\(root)/completions/bash/\(tool)' || exit 9
        COMP_WORDS=(\(quoted)); COMP_CWORD=\(words.count - 1)
        \(fn) '\(tool)' "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
        printf '%s\\n' "${COMPREPLY[@]}"
        """
        let r = try Tools.run("/bin/bash", ["--norc", "--noprofile", "-c", script], env: env, timeout: 60)
        #expect(r.status == 0, "bash: \(r.err)")
        return (Set(r.lines), r.err)
    }

    /// zsh: what the completion system offers after typing `line` and TAB.
    static func zsh(_ line: String, cwd: String, env: [String: String]) throws -> (Set<String>, String) {
        let r = try Tools.run("/bin/sh", ["-c", "cd \"$1\" && exec zsh -f \"$2\" \"$3\" \"$4\"", "sh", cwd, zshDriver, root + "/completions/zsh", line],
                              env: env, timeout: 60)
        #expect(r.status == 0, "zsh completion of '\(line)' did not finish: \(r.err)")
        return (Set(r.lines), r.err)
    }

    /// fish: `complete -C line`, values only (fish puts a description after a tab).
    static func fish(_ tool: String, _ line: String, cwd: String, env: [String: String]) throws -> (Set<String>, String) {
        let r = try Tools.run("/bin/sh", ["-c", "cd \"$1\" && exec fish --no-config -c 'source $argv[1]; complete -C $argv[2]' \"$2\" \"$3\"",
                                          "sh", cwd, root + "/completions/fish/\(tool).fish", line], env: env, timeout: 60)
        #expect(r.status == 0, "fish: \(r.err)")
        return (Set(r.lines.map { String($0.split(separator: "\t", maxSplits: 1).first ?? "") }), r.err)
    }

    static func haveShells() -> Bool {
        ["/usr/bin/zsh", "/usr/bin/fish", "/bin/bash"].allSatisfy { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// An owner with three members, the third revoked.
    static func family(_ dir: TempDir) throws -> (owner: String, members: [String], revoked: String) {
        let owner = dir.file("owner.db")
        let offer = try Household.owner(owner)
        let server = try ServeProcess(db: owner, dir: dir)
        defer { server.stop() }
        var ids: [String] = []
        for (i, name) in ["a.db", "b.db", "c.db"].enumerated() {
            let j = try Household.join(dir.file(name), server: server, offer: i == 0 ? offer : try Household.offer(owner),
                                       extra: i == 0 ? ["--name", "Anna's phone"] : [])
            #expect(j.status == 0, "\(j.err)")
            ids.append(try Household.device(dir.file(name)))
        }
        let r = try Tools.run("peer-sync", ["revoke", "--db", owner, ids[2]])
        #expect(r.status == 0, "\(r.err)")
        return (owner, Array(ids.prefix(2)), ids[2])
    }

    @Test func revokeCompletesTheStoresDeviceIDsInEveryShell() throws {
        try #require(Self.haveShells(), "bash, zsh and fish are installed by 'make test'")
        let dir = TempDir()
        let fam = try Self.family(dir)
        let expected = Set(fam.members)
        let env = Self.env(dir)
        let owner = fam.owner

        // The store on the line, in each way it can be written; bash sees
        // `--db=PATH` as three words by default (COMP_WORDBREAKS holds '=').
        for words in [["peer-sync", "revoke", "--db", owner, ""], ["peer-sync", "revoke", "--db", "=", owner, ""],
                      ["peer-sync", "revoke", "--db=\(owner)", ""]] {
            let (got, err) = try Self.bash("peer-sync", words, cwd: dir.path, env: env)
            #expect(got == expected, "bash \(words)")
            #expect(err.isEmpty)
        }
        for line in ["peer-sync revoke --db \(owner) ", "peer-sync revoke --db=\(owner) "] {
            let (z, zerr) = try Self.zsh(line, cwd: dir.path, env: env)
            #expect(z == expected, "zsh '\(line)'")
            #expect(zerr.isEmpty)
            let (f, ferr) = try Self.fish("peer-sync", line, cwd: dir.path, env: env)
            #expect(f == expected, "fish '\(line)'")
            #expect(ferr.isEmpty)
        }
        // A prefix narrows it; the owner's own device and the revoked one are never offered.
        let first = fam.members[0], prefix = String(fam.members[0].prefix(8))
        #expect(try Self.bash("peer-sync", ["peer-sync", "revoke", "--db", owner, prefix], cwd: dir.path, env: env).0 == [first])
        #expect(try Self.zsh("peer-sync revoke --db \(owner) \(prefix)", cwd: dir.path, env: env).0 == [first])
        #expect(try Self.fish("peer-sync", "peer-sync revoke --db \(owner) \(prefix)", cwd: dir.path, env: env).0 == [first])

        // rename DEVICE NAME: the IDs for DEVICE only, nothing offered for NAME.
        #expect(try Self.bash("peer-sync", ["peer-sync", "rename", "--db", "=", owner, ""], cwd: dir.path, env: env).0 == expected)
        #expect(try Self.zsh("peer-sync rename --db=\(owner) ", cwd: dir.path, env: env).0 == expected)
        #expect(try Self.fish("peer-sync", "peer-sync rename --db=\(owner) ", cwd: dir.path, env: env).0 == expected)
        #expect(try Self.bash("peer-sync", ["peer-sync", "rename", "--db", owner, first, ""], cwd: dir.path, env: env).0.subtracting([""]).isEmpty)
        #expect(try Self.zsh("peer-sync rename --db \(owner) \(first) ", cwd: dir.path, env: env).0.isEmpty)
        #expect(try Self.fish("peer-sync", "peer-sync rename --db \(owner) \(first) ", cwd: dir.path, env: env).0.isEmpty)
        // fish shows each device's name beside its ID.
        let described = try Tools.run("/bin/sh", ["-c", "exec fish --no-config -c 'source $argv[1]; complete -C $argv[2]' \"$0\" \"$1\"",
                                                  Self.root + "/completions/fish/peer-sync.fish", "peer-sync revoke --db \(owner) "], env: env)
        #expect(described.lines.contains("\(first)\tAnna's phone"), "\(described.out)")

        // No --db on the line: $FAMILY_SYNC_DB names the store.
        let viaEnv = Self.env(dir, ["FAMILY_SYNC_DB": owner])
        #expect(try Self.bash("peer-sync", ["peer-sync", "revoke", ""], cwd: dir.path, env: viaEnv).0 == expected)
        #expect(try Self.zsh("peer-sync revoke ", cwd: dir.path, env: viaEnv).0 == expected)
        #expect(try Self.fish("peer-sync", "peer-sync revoke ", cwd: dir.path, env: viaEnv).0 == expected)

        // Nothing shown is secret: the listing is the IDs and nothing else.
        let listing = try Tools.run("peer-sync", ["status", "--device-ids", "--db", owner])
        #expect(listing.status == 0)
        #expect(Set(listing.lines.map { String($0.split(separator: "\t").first ?? "") }) == expected)
        #expect(listing.lines.contains("\(first)\tAnna's phone"))
    }

    @Test func noStoreCompletesNothingSilentlyAndCreatesNone() throws {
        try #require(Self.haveShells(), "bash, zsh and fish are installed by 'make test'")
        let dir = TempDir()
        let env = Self.env(dir)
        let missing = dir.file("nowhere/none.db")
        for words in [["peer-sync", "revoke", ""], ["peer-sync", "revoke", "--db", missing, ""]] {
            let (got, err) = try Self.bash("peer-sync", words, cwd: dir.path, env: env)
            #expect(got.subtracting([""]).isEmpty, "bash \(words): \(got)")
            #expect(err.isEmpty, "\(err)")
        }
        for line in ["peer-sync revoke ", "peer-sync revoke --db \(missing) "] {
            let (z, zerr) = try Self.zsh(line, cwd: dir.path, env: env)
            #expect(z.isEmpty, "zsh '\(line)': \(z)")
            #expect(zerr.isEmpty)
            let (f, ferr) = try Self.fish("peer-sync", line, cwd: dir.path, env: env)
            #expect(f.isEmpty, "fish '\(line)': \(f)")
            #expect(ferr.isEmpty)
        }
        // Neither the default store nor the one named was made (fish keeps its own files in XDG_DATA_HOME/fish).
        #expect(!FileManager.default.fileExists(atPath: dir.file("xdg/family-sync")))
        #expect(!FileManager.default.fileExists(atPath: missing))
        #expect(!FileManager.default.fileExists(atPath: dir.file("nowhere")))
    }

    @Test func optionEqualsValueCompletesTheValue() throws {
        try #require(Self.haveShells(), "bash, zsh and fish are installed by 'make test'")
        let dir = TempDir()
        let env = Self.env(dir)
        _ = dir.write("owner.db", "")
        _ = dir.write("other.txt", "")
        // A path option: files after '='.
        #expect(try Self.bash("peer-sync", ["peer-sync", "status", "--db", "=", "ow"], cwd: dir.path, env: env).0 == ["owner.db"])
        #expect(try Self.bash("peer-sync", ["peer-sync", "status", "--db", "="], cwd: dir.path, env: env).0.isSuperset(of: ["owner.db", "other.txt"]))
        #expect(try Self.bash("peer-sync", ["peer-sync", "status", "--db=ow"], cwd: dir.path, env: env).0 == ["--db=owner.db"])
        #expect(try Self.zsh("peer-sync status --db=ow", cwd: dir.path, env: env).0 == ["owner.db"])
        #expect(try Self.fish("peer-sync", "peer-sync status --db=ow", cwd: dir.path, env: env).0 == ["--db=owner.db"])
        // A file argument: files (fish completes no file for peer-sync otherwise).
        #expect(try Self.fish("peer-sync", "peer-sync join --db x.db ow", cwd: dir.path, env: env).0 == ["owner.db"])
        #expect(try Self.bash("peer-sync", ["peer-sync", "join", "ow"], cwd: dir.path, env: env).0 == ["owner.db"])
        #expect(try Self.zsh("peer-sync join ow", cwd: dir.path, env: env).0 == ["owner.db"])
        // An enum option: its choices after '=', and after a space.
        let formats: Set<String> = ["png", "svg", "terminal", "text"]
        #expect(try Self.bash("pair-qr", ["pair-qr", "--format", "="], cwd: dir.path, env: env).0 == formats)
        #expect(try Self.bash("pair-qr", ["pair-qr", "--format", "=", "t"], cwd: dir.path, env: env).0 == ["terminal", "text"])
        #expect(try Self.bash("pair-qr", ["pair-qr", "--format=t"], cwd: dir.path, env: env).0 == ["--format=terminal", "--format=text"])
        #expect(try Self.bash("pair-qr", ["pair-qr", "--format", "t"], cwd: dir.path, env: env).0 == ["terminal", "text"])
        #expect(try Self.zsh("pair-qr --format=", cwd: dir.path, env: env).0 == formats)
        #expect(try Self.zsh("pair-qr --format t", cwd: dir.path, env: env).0 == ["terminal", "text"])
        #expect(try Self.fish("pair-qr", "pair-qr --format=", cwd: dir.path, env: env).0 == Set(formats.map { "--format=" + $0 }))
        #expect(try Self.fish("pair-qr", "pair-qr --format t", cwd: dir.path, env: env).0 == ["terminal", "text"])
        // A subcommand's enum: jws-verify --type=.
        let kinds = Set(SignedPayloadKind.allCases.map(\.rawValue))
        #expect(try Self.zsh("jws-verify --type=", cwd: dir.path, env: env).0 == kinds)
        #expect(try Self.bash("jws-verify", ["jws-verify", "--type", "="], cwd: dir.path, env: env).0 == kinds)
        #expect(try Self.fish("jws-verify", "jws-verify --type=", cwd: dir.path, env: env).0 == Set(kinds.map { "--type=" + $0 }))
    }
}
