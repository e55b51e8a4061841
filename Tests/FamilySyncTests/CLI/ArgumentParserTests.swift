import Testing
@testable import FamilySync
@testable import FamilySyncCLI

@Suite struct ArgumentParserTests {
    static let spec = CommandSpec(
        name: "tool", abstract: "A tool for tests.",
        options: [
            CommonOptions.db, CommonOptions.now, CommonOptions.quiet,
            OptionSpec("output", short: "o", valueName: "FILE", help: "Write here.", completion: .file),
            OptionSpec("root", kind: .repeating, valueName: "CERT", help: "A root."),
            OptionSpec("format", valueName: "F", help: "Format.", completion: .values(["png", "svg"])),
            .flag("verbose", short: "v", help: "More."),
        ],
        arguments: [ArgumentSpec("FILE", help: "Input.", repeating: true, default: "-")])

    static let sub = CommandSpec(
        name: "multi", abstract: "Subcommands.",
        subcommands: [
            CommandSpec(name: "serve", abstract: "Serve.", options: [OptionSpec("listen", valueName: "ADDR", help: "Where.")]),
            CommandSpec(name: "join", abstract: "Join.", arguments: [ArgumentSpec("OFFER", help: "Offer.", optional: false)]),
        ])

    func parse(_ a: [String], _ s: CommandSpec = spec) throws -> ParsedArguments { try ArgumentParser.parse(a, spec: s) }

    @Test func longForms() throws {
        let r = try parse(["--db", "a.db", "--output=x.png", "--root", "r1", "--root=r2", "in1", "in2"])
        #expect(r.value("db") == "a.db")
        #expect(r.value("output") == "x.png")
        #expect(r.values("root") == ["r1", "r2"])
        #expect(r.arguments("FILE") == ["in1", "in2"])
        #expect(!r.flag("quiet"))
    }

    @Test func shortForms() throws {
        let r = try parse(["-qv", "-ofile.png", "-o", "last.png"])
        #expect(r.flag("quiet") && r.flag("verbose"))
        #expect(r.value("output") == "last.png")
        let bundledValue = try parse(["-qofile"])
        #expect(bundledValue.flag("quiet") && bundledValue.value("output") == "file")
    }

    @Test func dashIsStdinAndDoubleDashEndsOptions() throws {
        let r = try parse(["-", "--", "--not-an-option", "-q"])
        #expect(r.positionals == ["-", "--not-an-option", "-q"])
        #expect(!r.flag("quiet"))
    }

    @Test func emptyValueAndEqualsInValue() throws {
        let r = try parse(["--db=", "--output=a=b"])
        #expect(r.value("db") == "")
        #expect(r.value("output") == "a=b")
    }

    @Test(arguments: [
        (["--zzzzzz"], "unknown option '--zzzzzz'"),
        (["--verbos"], "unknown option '--verbos' (did you mean '--verbose'?)"),
        (["-x"], "unknown option '-x'"),
        (["--db"], "option '--db' needs a value (PATH)"),
        (["-o"], "option '-o' needs a value (FILE)"),
        (["--quiet=yes"], "option '--quiet' takes no value"),
        (["--format", "gif"], "option '--format': 'gif' is not one of png, svg"),
    ])
    func usageErrors(args: [String], message: String) {
        #expect(throws: ToolError.self) { try parse(args) }
        do { _ = try parse(args) } catch let e as ToolError {
            #expect(e.status == .usage)
            #expect(e.message == message)
        } catch { Issue.record("unexpected \(error)") }
    }

    @Test func subcommands() throws {
        let r = try parse(["serve", "--listen", "127.0.0.1:1"], Self.sub)
        #expect(r.commandPath == ["multi", "serve"])
        #expect(r.value("listen") == "127.0.0.1:1")
        #expect(throws: ToolError.self) { try parse(["join"], Self.sub) }  // missing OFFER
        #expect(throws: ToolError.self) { try parse(["frobnicate"], Self.sub) }
        #expect(throws: ToolError.self) { try parse([], Self.sub) }
        #expect(throws: ToolError.self) { try parse(["join", "a", "b"], Self.sub) }
        let help = try parse(["--help"], Self.sub)
        #expect(help.flag("help"))
    }

    @Test func typedValues() throws {
        let r = try parse(["--now", "2026-11-30T10:00:00+01:00"])
        #expect(try r.timestamp("now")?.rfc3339 == "2026-11-30T09:00:00.000Z")
        let bad = try parse(["--now", "noon"])
        #expect(throws: ToolError.self) { try bad.timestamp("now") }
        let n = try parse(["--output", "12"])
        #expect(try n.int("output", default: 1, range: 1...20) == 12)
        #expect(throws: ToolError.self) { try n.int("output", default: 1, range: 1...10) }
    }

    @Test func helpShowsDefaultsAndEveryVisibleOption() {
        let h = HelpText.render(Self.spec, path: ["tool"])
        #expect(h.hasPrefix("OVERVIEW: A tool for tests."))
        #expect(h.contains("USAGE: tool "))
        #expect(h.contains("ARGUMENTS:"))
        #expect(h.contains("(default: -)"))
        for o in Self.spec.visibleOptions { #expect(h.contains("--\(o.long)")) }
        #expect(!h.contains("generate-manpage"))
    }
}
