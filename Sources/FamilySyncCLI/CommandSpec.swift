import FamilySync

/// How a shell should complete a value.
public enum CompletionKind: Sendable, Equatable {
    case none
    case file
    case directory
    case values([String])
    /// The first field of each line the tool itself prints when run with
    /// `listingArguments` (and the line's --db): values only the store knows.
    /// No payload: an array held by a second payload case is stored with the
    /// enum's tag in its pointer's spare bits, which LeakSanitizer cannot
    /// follow, so every tool would report that constant as leaked at exit.
    case listing

    /// What a `.listing` runs: the store's other devices, one per line.
    public static let listingArguments = ["status", "--device-ids"]
}

/// One option, declared once; help, man page, completions and the parser all
/// read this declaration, so none of them can drift from the others.
public struct OptionSpec: Sendable {
    public enum Kind: Sendable { case flag, value, repeating }

    public var long: String
    public var short: Character?
    public var kind: Kind
    public var valueName: String
    public var help: String
    public var defaultValue: String?
    public var completion: CompletionKind
    /// Kept out of help, man pages and completions (generator switches).
    public var hidden: Bool
    /// When given, the command's positional arguments are more values of
    /// this option (`--add-photo photos/*.jpg`), however many the shell makes.
    public var takesArguments: Bool = false

    public init(_ long: String, short: Character? = nil, kind: Kind = .value, valueName: String = "VALUE",
                help: String, default defaultValue: String? = nil, completion: CompletionKind = .none, hidden: Bool = false) {
        self.long = long
        self.short = short
        self.kind = kind
        self.valueName = valueName
        self.help = help
        self.defaultValue = defaultValue
        self.completion = completion
        self.hidden = hidden
    }

    public static func flag(_ long: String, short: Character? = nil, help: String, hidden: Bool = false) -> OptionSpec {
        OptionSpec(long, short: short, kind: .flag, valueName: "", help: help, hidden: hidden)
    }

    public var takesValue: Bool { kind != .flag }
}

/// A positional argument.
public struct ArgumentSpec: Sendable {
    public var name: String
    public var help: String
    public var optional: Bool
    public var repeating: Bool
    public var defaultValue: String?
    public var completion: CompletionKind

    public init(_ name: String, help: String, optional: Bool = true, repeating: Bool = false,
                default defaultValue: String? = nil, completion: CompletionKind = .file) {
        self.name = name
        self.help = help
        self.optional = optional
        self.repeating = repeating
        self.defaultValue = defaultValue
        self.completion = completion
    }
}

public struct Example: Sendable {
    public var title: String
    public var command: String
    public init(_ title: String, _ command: String) {
        self.title = title
        self.command = command
    }
}

/// A command (a tool, or one of its subcommands) declared as data.
public struct CommandSpec: Sendable {
    public var name: String
    /// One line: the man page's NAME description and help's OVERVIEW.
    public var abstract: String
    /// Paragraphs for DESCRIPTION, separated by blank lines.
    public var discussion: String
    public var options: [OptionSpec]
    public var arguments: [ArgumentSpec]
    public var subcommands: [CommandSpec]
    public var examples: [Example]
    public var seeAlso: [String]
    /// Extra man page sections (title, body paragraphs), e.g. FILES or PROTOCOL.
    public var extraSections: [(String, String)]

    public init(name: String, abstract: String, discussion: String = "", options: [OptionSpec] = [],
                arguments: [ArgumentSpec] = [], subcommands: [CommandSpec] = [], examples: [Example] = [],
                seeAlso: [String] = [], extraSections: [(String, String)] = []) {
        self.name = name
        self.abstract = abstract
        self.discussion = discussion
        self.options = options
        self.arguments = arguments
        self.subcommands = subcommands
        self.examples = examples
        self.seeAlso = seeAlso
        self.extraSections = extraSections
    }

    /// The options every command has, appended after its own.
    public static let builtinOptions: [OptionSpec] = [
        .flag("help", short: "h", help: "Show help information and exit."),
        .flag("version", help: "Show the version and exit."),
        OptionSpec("generate-manpage", kind: .flag, valueName: "", help: "Print the mdoc man page.", hidden: true),
        OptionSpec("generate-completion", valueName: "SHELL", help: "Print a completion script.", completion: .values(["bash", "zsh", "fish"]), hidden: true),
    ]

    public var allOptions: [OptionSpec] { options + CommandSpec.builtinOptions }
    public var visibleOptions: [OptionSpec] { allOptions.filter { !$0.hidden } }

    public func option(named long: String) -> OptionSpec? { allOptions.first { $0.long == long } }
    public func option(short: Character) -> OptionSpec? { allOptions.first { $0.short == short } }
}

/// Options shared by several tools, declared once.
public enum CommonOptions {
    public static let db = OptionSpec("db", valueName: "PATH",
        help: "The store. It must exist: a missing one is status 66 (no store at PATH), never created.",
        default: "$FAMILY_SYNC_DB, else $XDG_DATA_HOME/family-sync/store.db", completion: .file)
    /// --db for the commands that make a missing store (join, pair-qr's offer, merge-records' imports).
    public static let newDB = OptionSpec("db", valueName: "PATH",
        help: "The store. A missing one is created, and standard error says so (created a new store at PATH).",
        default: db.defaultValue, completion: .file)
    public static let now = OptionSpec("now", valueName: "TIME",
        help: "Use TIME (RFC 3339) as the current time, for tests and replays.")
    public static let quiet = OptionSpec.flag("quiet", short: "q", help: "Show no progress on standard error.")
}
