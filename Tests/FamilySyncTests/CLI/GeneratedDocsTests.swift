import Foundation
import Testing
@testable import FamilySync
@testable import FamilySyncCLI

/// Help, man pages and completions come from the one declaration of each
/// tool; these tests fail when a checked-in file drifts from it (run
/// `make man` to regenerate) or when a file would not load.
@Suite struct GeneratedDocsTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().path
    static let specs = AllTools.specs.map { ($0.name, $0) }
    static var names: [String] { AllTools.specs.map(\.name) }

    static func read(_ rel: String) -> String? { try? String(contentsOfFile: root + "/" + rel, encoding: .utf8) }

    static func files(for tool: String) -> [(String, String)] {
        guard let spec = AllTools.specs.first(where: { $0.name == tool }) else { return [] }
        return [("man/man1/\(tool).1", ManPage.render(spec)),
                ("completions/bash/\(tool)", Completions.render(spec, shell: "bash")!),
                ("completions/zsh/_\(tool)", Completions.render(spec, shell: "zsh")!),
                ("completions/fish/\(tool).fish", Completions.render(spec, shell: "fish")!)]
    }

    @Test(arguments: names)
    func checkedInFilesMatchDeclaration(tool: String) {
        for (rel, generated) in Self.files(for: tool) {
            let onDisk = Self.read(rel)
            #expect(onDisk == generated, "\(rel) differs from the declaration of \(tool); run 'make man'")
        }
    }

    /// Every visible option of every (sub)command appears in help, man page and
    /// each completion script, and nothing else does.
    @Test(arguments: names)
    func everyOptionEverywhere(tool: String) throws {
        let spec = try #require(AllTools.specs.first { $0.name == tool })
        let commands = spec.subcommands.isEmpty ? [spec] : spec.subcommands
        let declared = Set(commands.flatMap { $0.visibleOptions.map(\.long) })
        let man = Self.read("man/man1/\(tool).1") ?? ""
        let manOptions = Set(man.matches(of: /Fl -([a-z][a-z0-9-]*)/).map { String($0.1) })
        #expect(manOptions == declared, "man page options differ")
        for (rel, _) in Self.files(for: tool).dropFirst() {
            let text = Self.read(rel) ?? ""
            let found: Set<String>
            if rel.hasSuffix(".fish") {
                found = Set(text.matches(of: /\s-l ([a-z][a-z0-9-]*)/).map { String($0.1) })
            } else {
                found = Set(text.matches(of: /--([a-z][a-z0-9-]*)/).map { String($0.1) })
            }
            #expect(found == declared, "\(rel) options differ: \(found.symmetricDifference(declared))")
        }
        // Each command's help names all its options, and no other option but
        // one of a sibling command it refers to (connect --via's example runs serve --stdio).
        for c in commands {
            let help = HelpText.render(c, path: [tool] + (c.name == tool ? [] : [c.name]))
            let inHelp = Set(help.matches(of: /--([a-z][a-z0-9-]*)/).map { String($0.1) })
            let own = Set(c.visibleOptions.map(\.long))
            #expect(own.isSubset(of: inHelp), "\(c.name): options its help does not name: \(own.subtracting(inHelp))")
            #expect(inHelp.subtracting(own).isSubset(of: declared), "\(c.name): options no command has: \(inHelp.subtracting(own).subtracting(declared))")
        }
    }

    static func run(_ argv: [String]) -> (Int32, String)? {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = argv
        let pipe = Pipe()
        p.standardOutput = pipe
        p.standardError = pipe
        do { try p.run() } catch { return nil }
        let out = pipe.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return (p.terminationStatus, String(decoding: out, as: UTF8.self))
    }

    static func have(_ tool: String) -> Bool {
        ["/usr/bin/", "/bin/", "/usr/local/bin/"].contains { FileManager.default.isExecutableFile(atPath: $0 + tool) }
    }

    @Test(arguments: names.map { "man/man1/\($0).1" } + ["man/man7/family-sync.7"])
    func manPageLintsClean(page: String) throws {
        try #require(Self.have("mandoc"), "mandoc is installed by 'make test'")
        let r = try #require(Self.run(["mandoc", "-Tlint", "-W", "warning", Self.root + "/" + page]))
        #expect(r.0 == 0, "\(r.1)")
        #expect(r.1.isEmpty, "\(r.1)")
    }

    /// Runs argv and returns its status and standard error alone.
    static func stderrOf(_ argv: [String]) -> (Int32, String)? {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = argv
        let err = Pipe(), out = Pipe()
        p.standardOutput = out
        p.standardError = err
        do { try p.run() } catch { return nil }
        DispatchQueue.global().async { _ = out.fileHandleForReading.readDataToEndOfFile() }
        let e = err.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return (p.terminationStatus, String(decoding: e, as: UTF8.self))
    }

    /// What a reader sees: man(1) through groff at 80 columns, and mandoc's
    /// terminal output, both without a single warning ("can't break line").
    @Test(arguments: names.map { "man/man1/\($0).1" } + ["man/man7/family-sync.7"])
    func manPageRendersCleanAt80Columns(page: String) throws {
        try #require(Self.have("man") && Self.have("mandoc"), "man-db and mandoc are installed by 'make test'")
        let groff = try #require(Self.stderrOf(["MANWIDTH=80", "MAN_DISABLE_SECCOMP=1", "man", "--warnings", "-E", "UTF-8", "-l", Self.root + "/" + page]))
        #expect(groff.0 == 0 && groff.1.isEmpty, "man -l \(page): \(groff.1)")
        let mandoc = try #require(Self.stderrOf(["mandoc", "-Tutf8", "-W", "warning", "-O", "width=80", Self.root + "/" + page]))
        #expect(mandoc.0 == 0 && mandoc.1.isEmpty, "mandoc \(page): \(mandoc.1)")
    }

    @Test(arguments: names)
    func completionScriptsLoad(tool: String) throws {
        for (shell, rel) in [("bash", "completions/bash/\(tool)"), ("zsh", "completions/zsh/_\(tool)"), ("fish", "completions/fish/\(tool).fish")] {
            try #require(Self.have(shell), "\(shell) is installed by 'make test'")
            let r = try #require(Self.run([shell, "-n", Self.root + "/" + rel]))
            #expect(r.0 == 0, "\(shell) -n \(rel): \(r.1)")
        }
        // bash: the function is really registered for the tool.
        let r = try #require(Self.run(["bash", "-c", "source \(Self.root)/completions/bash/\(tool) && complete -p \(tool)"]))
        #expect(r.0 == 0 && r.1.contains(tool), "\(r.1)")
    }
}
