import FamilySync

/// The result of parsing a command line against a CommandSpec.
public struct ParsedArguments: Sendable {
    /// The command and subcommand names, e.g. ["peer-sync", "serve"].
    public var commandPath: [String]
    public var spec: CommandSpec
    var values: [String: [String]] = [:]
    public var positionals: [String] = []

    func flag(_ long: String) -> Bool { values[long] != nil }
    /// The option's value (the last one given), or its declared default.
    func value(_ long: String) -> String? { values[long]?.last }
    func values(_ long: String) -> [String] { values[long] ?? [] }
    func isSet(_ long: String) -> Bool { values[long] != nil }

    /// The value of the positional argument declared as `name`.
    public func argument(_ name: String) -> String? { arguments(name).first }
    public func arguments(_ name: String) -> [String] {
        var i = 0
        for a in spec.arguments {
            if a.repeating {
                let rest = Array(positionals.dropFirst(i))
                return a.name == name ? rest : []
            }
            if a.name == name { return i < positionals.count ? [positionals[i]] : [] }
            i += 1
        }
        return []
    }

    // MARK: Typed values; a bad one is a usage error naming the option.
    // Lookups by name stay inside this module: commands ask through their
    // `OptionName` cases (OptionName.swift).

    func timestamp(_ long: String) throws -> Timestamp? {
        guard let v = value(long) else { return nil }
        guard let t = Timestamp(rfc3339: v) else {
            throw ToolError.usage("--\(long): '\(v)' is not an RFC 3339 time (like 2026-11-30T10:00:00Z)")
        }
        return t
    }

    /// A duration option; zero is refused unless `allowZero` (then a bare `0` is accepted too).
    func timeSpan(_ long: String, default d: TimeSpan, allowZero: Bool = false) throws -> TimeSpan {
        guard let v = value(long) else { return d }
        if allowZero && v == "0" { return TimeSpan(milliseconds: 0) }
        switch TimeSpan.parse(v) {
        case let .success(t) where t.milliseconds > 0 || allowZero:
            return t
        case .success:
            throw ToolError.usage("--\(long): '\(v)' is no time at all; it must be more than 0 (like 30s, 10m)")
        case .failure(.tooLong):
            throw ToolError.usage("--\(long): '\(v)' is longer than any time can be apart (at most \(TimeSpan.longest.milliseconds / 604_800_000)w)")
        default:
            throw ToolError.usage("--\(long): '\(v)' is not a duration (like \(allowZero ? "0s" : "30s"), 10m, 12h, 90d)")
        }
    }

    func int(_ long: String, default d: Int, range: ClosedRange<Int>) throws -> Int {
        guard let v = value(long) else { return d }
        guard let n = Int(v), range.contains(n) else {
            throw ToolError.usage("--\(long): '\(v)' is not a whole number from \(range.lowerBound) to \(range.upperBound)")
        }
        return n
    }

    func choice(_ long: String, default d: String) throws -> String {
        guard let v = value(long) else { return d }
        if let spec = spec.option(named: long), case let .values(allowed) = spec.completion, !allowed.contains(v) {
            throw ToolError.usage("--\(long): '\(v)' is not one of \(allowed.joined(separator: ", "))")
        }
        return v
    }
}

/// A hand-written parser for the conventions every tool shares: `--opt value`,
/// `--opt=value`, `-o value`, `-ovalue`, bundled short flags, `--` to end
/// options, `-` as an ordinary argument (standard input).
public enum ArgumentParser {
    public static func parse(_ argv: [String], spec root: CommandSpec) throws -> ParsedArguments {
        var spec = root
        var path = [root.name]
        var args = argv[...]
        // A subcommand comes first, before any of its options.
        if !root.subcommands.isEmpty, let first = args.first, !first.hasPrefix("-") {
            guard let sub = root.subcommands.first(where: { $0.name == first }) else {
                throw ToolError.usage("unknown command '\(first)' (one of: \(root.subcommands.map(\.name).joined(separator: ", ")))")
            }
            spec = sub
            path.append(sub.name)
            args = args.dropFirst()
        }
        do {
            return try parseOptions(args, spec: spec, path: path)
        } catch var e as ToolError {
            // The usage shown with the error is the subcommand's (serve's, not peer-sync's).
            e.commandPath = path
            throw e
        }
    }

    private static func parseOptions(_ argv: ArraySlice<String>, spec: CommandSpec, path: [String]) throws -> ParsedArguments {
        var args = argv
        var result = ParsedArguments(commandPath: path, spec: spec)
        var onlyPositionals = false
        while let arg = args.popFirst() {
            if onlyPositionals || arg == "-" || !arg.hasPrefix("-") {
                result.positionals.append(arg)
                continue
            }
            if arg == "--" { onlyPositionals = true; continue }
            if arg.hasPrefix("--") {
                let body = arg.dropFirst(2)
                let name: String, inline: String?
                if let eq = body.firstIndex(of: "=") {
                    name = String(body[..<eq])
                    inline = String(body[body.index(after: eq)...])
                } else {
                    name = String(body)
                    inline = nil
                }
                guard let opt = spec.option(named: name) else {
                    throw ToolError.usage("unknown option '--\(name)'" + suggestion(for: name, in: spec))
                }
                try take(opt, inline: inline, rest: &args, into: &result, shown: "--\(name)")
                continue
            }
            // Short options, possibly bundled: -qv, -o FILE, -oFILE.
            var chars = arg.dropFirst()[...]
            while let c = chars.popFirst() {
                guard let opt = spec.option(short: c) else { throw ToolError.usage("unknown option '-\(c)'") }
                if opt.takesValue {
                    let inline = chars.isEmpty ? nil : String(chars)
                    try take(opt, inline: inline, rest: &args, into: &result, shown: "-\(c)")
                    break
                }
                result.values[opt.long, default: []].append("")
            }
        }
        // Help and version short-circuit validation.
        if result.flag("help") || result.flag("version") || result.isSet("generate-manpage") || result.isSet("generate-completion") {
            return result
        }
        try checkPositionals(result, spec: spec)
        return result
    }

    private static func take(_ opt: OptionSpec, inline: String?, rest: inout ArraySlice<String>,
                             into result: inout ParsedArguments, shown: String) throws {
        if !opt.takesValue {
            if inline != nil { throw ToolError.usage("option '\(shown)' takes no value") }
            result.values[opt.long, default: []].append("")
            return
        }
        let v: String
        if let inline { v = inline } else {
            guard let next = rest.popFirst() else { throw ToolError.usage("option '\(shown)' needs a value (\(opt.valueName))") }
            v = next
        }
        if case let .values(allowed) = opt.completion, !allowed.contains(v) {
            throw ToolError.usage("option '\(shown)': '\(v)' is not one of \(allowed.joined(separator: ", "))")
        }
        if opt.kind == .repeating {
            result.values[opt.long, default: []].append(v)
        } else {
            result.values[opt.long] = [v]
        }
    }

    private static func checkPositionals(_ r: ParsedArguments, spec: CommandSpec) throws {
        if !spec.subcommands.isEmpty && r.commandPath.count == 1 {
            throw ToolError.usage("missing command (one of: \(spec.subcommands.map(\.name).joined(separator: ", ")))")
        }
        let required = spec.arguments.filter { !$0.optional }
        if r.positionals.count < required.count {
            throw ToolError.usage("missing argument \(required[r.positionals.count].name)")
        }
        let repeating = spec.arguments.contains { $0.repeating } || spec.options.contains { $0.takesArguments && r.isSet($0.long) }
        if !repeating && r.positionals.count > spec.arguments.count {
            let extra = r.positionals[spec.arguments.count]
            throw ToolError.usage("unexpected argument '\(extra)'")
        }
    }

    private static func suggestion(for name: String, in spec: CommandSpec) -> String {
        let close = spec.visibleOptions.map(\.long).filter { editDistance($0, name) <= 2 }
        return close.isEmpty ? "" : " (did you mean '--\(close[0])'?)"
    }

    static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        if a.isEmpty { return b.count }
        var prev = Array(0...b.count)
        for i in 1...a.count {
            var cur = [i] + Array(repeating: 0, count: b.count)
            for j in 1...max(b.count, 1) where j <= b.count {
                cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            prev = cur
        }
        return prev[b.count]
    }
}
