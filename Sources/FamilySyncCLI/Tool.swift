import FoundationEssentials
import Glibc
import FamilySync
import SystemGlue

/// What a tool's body gets: its parsed arguments, stdout, the clock, the
/// store, and a way to say things on stderr.
public final class ToolContext {
    public let name: String
    public let args: ParsedArguments
    public let out = OutputStream.stdout
    /// The current time: `--now` if given, else the system clock.
    public let now: Timestamp
    public let quiet: Bool
    private var openedStore: Store?

    init(name: String, args: ParsedArguments) throws {
        self.name = name
        self.args = args
        self.now = try args.timestamp(SharedOption.now) ?? Timestamp.current()
        self.quiet = args.flag(SharedOption.quiet)
        if args.value(SharedOption.db) == "" { throw ToolError.usage("--db: the path is empty") }
    }

    /// The store path from `--db`, `$FAMILY_SYNC_DB` or the per-user default.
    public var storePath: String { args.value(SharedOption.db) ?? Store.defaultPath() }

    /// Whether a store was named, by `--db` or by `$FAMILY_SYNC_DB`: a tool
    /// with a store mode and a storeless one takes either as the store mode.
    public var storeNamed: Bool {
        args.isSet(SharedOption.db) || !(ProcessInfo.processInfo.environment["FAMILY_SYNC_DB"] ?? "").isEmpty
    }

    /// Opens the store, once; with `create`, a missing one is made and
    /// stderr says so (a mistyped --db must not pass for a store in silence),
    /// at once or, with `announceLater`, when `announceCreatedStore()` is called.
    public func store(create: Bool = true, announceLater: Bool = false) throws -> Store {
        if let s = openedStore { return s }
        let existed = create ? FileManager.default.fileExists(atPath: storePath) : true
        let s = try Store(path: storePath, create: create)
        if let m = s.looserModeFixed {
            warn("store \(storePath) was mode \(String(m, radix: 8)), readable by others; it holds the family's keys, so it is 0600 now")
        }
        if s.photosForgotten > 0 {
            warn("store \(storePath) had no photo file or pack (\(s.photoFilePath), \(s.photoPackPath)): the \(s.photosForgotten) photos it held are wanted again from its peers")
        }
        openedStore = s
        if !existed {
            createdStore = true
            if !announceLater { announceCreatedStore() }
        }
        return s
    }

    /// What a tool that stops at a safe point after SIGINT or SIGTERM kept,
    /// given the error it stopped with (nil: it returned): said on the one
    /// line `tool: interrupted (SIGINT); …` (see `Interruption`).
    public var keptAfterStop: (((any Error)?) -> String)?

    /// Whether this run made the store it opened.
    public private(set) var createdStore = false
    private var announcedCreation = false

    /// Says `created a new store at PATH` on stderr, once, when this run made it.
    public func announceCreatedStore() {
        guard createdStore, !announcedCreation else { return }
        announcedCreation = true
        warn("created a new store at \(storePath)")
    }

    /// Closes the store opened by `store()` when it belongs to no family (a
    /// join that never got that far). Returns whether it did.
    public func closeStoreIfNotJoined() -> Bool {
        guard let s = openedStore else { return true }
        guard (try? s.family()) == nil else { return false }
        openedStore = nil  // the last reference: the connection closes here
        return true
    }

    /// Closes the store opened by `store()`, if any, syncing first what this
    /// tool wrote (each commit was synced already; this is the check that
    /// says so): a failed sync or close is the tool's error.
    func closeStore() throws {
        guard let s = openedStore else { return }
        openedStore = nil
        if s.db.hasWritten { try s.makeDurable() }
        try s.close()
    }

    /// What the tool says of `error` and the status it exits with (`ErrorMapping.swift`).
    public func failure(_ error: any Error) -> ToolError { ToolError(error, command: args.commandPath) }

    /// A diagnostic on stderr as `tool: message`, on a line of its own: a
    /// progress line being shown is cleared first (the next redraw brings it back).
    public func warn(_ message: String) {
        if showsProgress { line.clear() }
        StandardStreams.writeError("\(name): \(message)\n")
    }

    /// Progress goes to stderr only when it is a terminal and not `--quiet`.
    public var showsProgress: Bool { !quiet && isatty(2) == 1 }

    private lazy var line = ProgressLine(fd: 2)

    /// Redraws the one progress line: `tool: message`, cut to the terminal's width.
    public func progress(_ message: String) {
        guard showsProgress else { return }
        line.show("\(name): \(message)")
    }

    /// Clears the progress line, leaving nothing behind.
    public func endProgress() {
        guard showsProgress else { return }
        line.clear()
    }

    /// A line that stays on a terminal (serve's "listening on …"), written
    /// above the progress line; nothing when standard error is not a terminal
    /// or with `--quiet`.
    public func log(_ message: String) {
        guard showsProgress else { return }
        line.log("\(name): \(message)")
    }
}

/// Runs a tool: parses arguments, answers --help/--version and the generator
/// switches, runs the body, maps errors to the exit table, and makes sure a
/// failed stdout write is an error.
public enum Tool {
    public static func main(_ spec: CommandSpec, arguments: [String] = Array(CommandLine.arguments.dropFirst()),
                            _ body: (ToolContext) throws -> ExitStatus) -> Never {
        fs_openssl_set_up()
        // One malloc arena: a tool runs a thread or two at a time (a session
        // and its photo writer), and a second arena is memory each keeps for
        // itself (measured: half a megabyte of a join's peak).
        fs_one_malloc_arena()
        signal(SIGPIPE, SIG_IGN)
        Interruption.install(tool: spec.name)
        StandardInput.claimIfClosed()
        StandardStreams.occupyClosedDescriptors()
        let status = run(spec, arguments: arguments, body)
        exit(status.rawValue)
    }

    static func run(_ spec: CommandSpec, arguments: [String], _ body: (ToolContext) throws -> ExitStatus) -> ExitStatus {
        let name = spec.name
        let out = OutputStream.stdout
        // A diagnostic that cannot be written is dropped; the status still tells.
        func say(_ m: String) { StandardStreams.writeError("\(name): \(m)\n") }
        var parsed: ParsedArguments?
        var context: ToolContext?
        do {
            let args = try ArgumentParser.parse(arguments, spec: spec)
            parsed = args
            if args.flag(SharedOption.help) {
                try out.write(HelpText.render(args.spec, path: args.commandPath))
            } else if args.flag(SharedOption.version) {
                try out.write("\(name) (family-sync) \(FamilySyncInfo.version)\n")
            } else if args.isSet(SharedOption.generateManpage) {
                try out.write(ManPage.render(spec))
            } else if let shell = args.value(SharedOption.generateCompletion) {
                try out.write(Completions.render(spec, shell: shell) ?? "")
            } else {
                let ctx = try ToolContext(name: name, args: args)
                context = ctx
                let status = try body(ctx)
                // A store that cannot be closed cleanly is an error, not exit 0.
                try ctx.closeStore()
                try out.flush()
                // A tool that stopped at a safe point after a signal.
                if let sig = Interruption.signal { return interrupted(sig, ctx, error: nil) }
                return status
            }
            try out.flush()
            return .success
        } catch {
            // Whatever was written before the failure still goes out, if it can.
            try? out.flush()
            if let ctx = context, let sig = Interruption.signal { return interrupted(sig, ctx, error: error) }
            // The reader of standard output went away (`| head -1`): nothing to say to anyone.
            if let f = error as? FileError, f.kind == .writeFailed, f.code == EPIPE, f.path == "standard output" { return .closedPipe }
            let e = ToolError(error, command: parsed?.commandPath ?? [name])
            say(e.message)
            if e.status == .usage {
                let path = parsed?.commandPath ?? e.commandPath ?? [name]
                let s = parsed?.spec ?? path.dropFirst().reduce(spec) { s, sub in s.subcommands.first { $0.name == sub } ?? s }
                StandardStreams.writeError("Usage: \(HelpText.usageLine(s, path: path))\n  See '\(path.joined(separator: " ")) --help'.\n")
            }
            return e.status
        }
    }

    /// The one line after a signal (what the tool kept, in its words) and 130 or 143.
    static func interrupted(_ sig: Int32, _ ctx: ToolContext, error: (any Error)?) -> ExitStatus {
        ctx.endProgress()
        let kept = ctx.keptAfterStop?(error) ?? error.map { ToolError($0, command: ctx.args.commandPath).message } ?? "stopped"
        StandardStreams.writeError(Interruption.line(tool: ctx.name, signal: sig, kept: kept) + "\n")
        return sig == SIGINT ? .interrupted : .terminated
    }
}
