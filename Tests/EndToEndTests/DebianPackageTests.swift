import Foundation
import Testing
import FamilySync

/// The Debian package `make deb` builds, which `make test` names in
/// $FAMILY_SYNC_DEB and whose tree the rest of this suite runs the tools
/// from: what is in it, what it depends on, and how much it installs.
@Suite struct DebianPackageTests {
    static let deb: String? = {
        guard let d = ProcessInfo.processInfo.environment["FAMILY_SYNC_DEB"], !d.isEmpty else { return nil }
        return d
    }()

    /// The most the two binaries may take installed, together.
    static let maxInstalledToolBytes = 60_000_000

    static let binaries = ["family-sync", "family-sync-qr"]

    static func dpkgDeb(_ args: [String]) throws -> String {
        let r = try Tools.run("/usr/bin/dpkg-deb", args)
        #expect(r.status == 0, "dpkg-deb \(args.joined(separator: " ")): \(r.err)")
        return r.out
    }

    /// The package unpacked into a fresh folder.
    static func unpacked() throws -> TempDir {
        let dir = TempDir()
        _ = try dpkgDeb(["-x", deb!, dir.path])
        return dir
    }

    @Test(.disabled(if: deb == nil, "FAMILY_SYNC_DEB names no package (make test builds one)"))
    func itHoldsTheToolsManPagesCompletionsAndUserUnitsAndNothingElse() throws {
        // `dpkg-deb -c` lists "mode owner/group size date time ./path[ -> target]".
        var entries: [String: (mode: String, owner: String, target: String?)] = [:]
        for line in try Self.dpkgDeb(["-c", Self.deb!]).split(separator: "\n") {
            let f = line.split(separator: " ", omittingEmptySubsequences: true)
            guard f.count >= 6 else { continue }
            let rest = f[5...].joined(separator: " ")
            let parts = rest.components(separatedBy: " -> ")
            let path = String(parts[0].dropFirst())  // "./usr/…" → "/usr/…"
            entries[path] = (String(f[0]), String(f[1]), parts.count > 1 ? parts[1] : nil)
        }
        var files: Set<String> = []
        for (tool, binary) in Tools.carriers {
            #expect(entries["/usr/bin/\(tool)"]?.target == "../libexec/family-sync/\(binary)", "\(tool)")
            files.formUnion(["/usr/bin/\(tool)", "/usr/share/man/man1/\(tool).1.gz",
                             "/usr/share/bash-completion/completions/\(tool)",
                             "/usr/share/zsh/vendor-completions/_\(tool)",
                             "/usr/share/fish/vendor_completions.d/\(tool).fish"])
        }
        for b in Self.binaries {
            #expect(entries["/usr/libexec/family-sync/\(b)"]?.mode == "-rwxr-xr-x", "\(b)")
            files.insert("/usr/libexec/family-sync/\(b)")
        }
        files.formUnion(["/usr/share/man/man7/family-sync.7.gz", "/usr/share/doc/family-sync/copyright",
                         "/usr/share/doc/family-sync/changelog.gz"])
        files.formUnion(["peer-sync.service", "peer-sync-stdio.socket", "peer-sync-stdio@.service", "tombstone-gc.service", "tombstone-gc.timer"].map { "/usr/lib/systemd/user/" + $0 })
        let packed = Set(entries.filter { !$0.value.mode.hasPrefix("d") }.keys)
        #expect(packed == files, "missing: \(files.subtracting(packed).sorted()); extra: \(packed.subtracting(files).sorted())")
        #expect(entries.values.allSatisfy { $0.owner == "root/root" })
    }

    @Test(.disabled(if: deb == nil, "FAMILY_SYNC_DEB names no package (make test builds one)"))
    func itsControlDataNamesTheReleaseAndThePackagesOfEveryLibraryTheBinariesLink() throws {
        let control = try Self.dpkgDeb(["-f", Self.deb!, "Package", "Version", "Architecture", "Depends"])
        func field(_ name: String) -> String? {
            control.split(separator: "\n").first { $0.hasPrefix(name + ": ") }.map { String($0.dropFirst(name.count + 2)) }
        }
        #expect(field("Package") == "family-sync")
        #expect(field("Version") == FamilySyncInfo.version)
        #expect(field("Architecture") == "amd64")
        #expect(URL(fileURLWithPath: Self.deb!).lastPathComponent == "family-sync_\(FamilySyncInfo.version)_amd64.deb")
        let depends = Set((field("Depends") ?? "").components(separatedBy: ", ").map { $0.split(separator: " ").first.map(String.init) ?? "" })
        let dir = try Self.unpacked()
        var needed: Set<String> = []
        for b in Self.binaries {
            let r = try Tools.run("/usr/bin/readelf", ["-d", dir.path + "/usr/libexec/family-sync/" + b])
            for line in r.lines where line.contains("(NEEDED)") {
                if let open = line.firstIndex(of: "["), let close = line.lastIndex(of: "]") {
                    needed.insert(String(line[line.index(after: open)..<close]))
                }
            }
        }
        #expect(!needed.isEmpty)
        // No Swift runtime is needed on the machine: it is linked in.
        #expect(needed.filter { $0.hasPrefix("libswift") || $0.hasPrefix("libFoundation") || $0.hasPrefix("libdispatch") }.isEmpty, "\(needed.sorted())")
        // Each library is found through the package that ships it, and that package is a dependency.
        for lib in needed.sorted() {
            let path = try Tools.run("/bin/sh", ["-c", "ldconfig -p | awk -v l=\"$0\" '$1 == l && /x86-64/ { print $NF; exit }'", lib]).out
                .trimmingCharacters(in: .whitespacesAndNewlines)
            guard !path.isEmpty else { Issue.record("\(lib): not in the linker cache"); continue }
            // dpkg knows a file by the path its package ships it at: with /usr merged, /lib is /usr/lib.
            let real = URL(fileURLWithPath: path).resolvingSymlinksInPath().path
            let candidates = [path, real].flatMap { [$0, $0.hasPrefix("/usr/") ? String($0.dropFirst(4)) : "/usr" + $0] }
            var pkg = ""
            for c in candidates where pkg.isEmpty {
                let owner = try Tools.run("/usr/bin/dpkg", ["-S", c])
                if owner.status == 0 { pkg = owner.out.split(separator: ":").first.map(String.init) ?? "" }
            }
            #expect(depends.contains(pkg), "\(lib) is in \(pkg), which Depends does not name: \(depends.sorted())")
        }
    }

    @Test(.disabled(if: deb == nil, "FAMILY_SYNC_DEB names no package (make test builds one)"))
    func theSixToolsInstallInAtMost60MBStrippedAndAreTheOnesThisSuiteRan() throws {
        let dir = try Self.unpacked()
        var total = 0
        for b in Self.binaries {
            let path = dir.path + "/usr/libexec/family-sync/" + b
            total += try #require(FileManager.default.attributesOfItem(atPath: path)[.size] as? Int)
            let sections = try Tools.run("/usr/bin/readelf", ["-S", "-W", path]).out
            #expect(!sections.contains(".symtab") && !sections.contains(".debug_"), "\(b) is not stripped")
            // The suite's tools are the package's, byte for byte.
            let ran = URL(fileURLWithPath: Tools.binDir).deletingLastPathComponent().appendingPathComponent("libexec/family-sync/" + b).path
            #expect(FileManager.default.contentsEqual(atPath: path, andPath: ran), "\(ran) is not the packed \(b)")
        }
        #expect(total <= Self.maxInstalledToolBytes, "the binaries take \(total) bytes")
        // The links work from where the package puts them.
        for (tool, _) in Tools.carriers {
            let r = try Tools.run(dir.path + "/usr/bin/" + tool, ["--version"])
            #expect(r.out == "\(tool) (family-sync) \(FamilySyncInfo.version)\n", "\(tool): \(r.err)")
        }
    }
}
