import FamilySync

/// The options of one tool, each named once as a case whose raw value is the
/// long option. Commands read their options only through these cases, so a
/// misspelt option does not compile; `OptionNameTests` holds every tool's
/// cases to its declaration (each declared option has a case, each case is
/// declared), and a lookup of an option the running (sub)command does not
/// declare, or of a flag as a value, stops with a precondition failure.
public protocol OptionName: RawRepresentable, CaseIterable, Sendable where RawValue == String {}

/// Options the shared command-line code reads for every tool.
public enum SharedOption: String, OptionName {
    case db, now, quiet, root, help, version
    case generateManpage = "generate-manpage"
    case generateCompletion = "generate-completion"
}

extension ParsedArguments {
    /// The declaration of `o` for the running command (nil: a shared option it does not declare).
    private func declared<O: OptionName>(_ o: O, flag: Bool) -> OptionSpec? {
        let d = spec.option(named: o.rawValue)
        precondition(d != nil || O.self == SharedOption.self, "--\(o.rawValue) is not an option of \(commandPath.joined(separator: " "))")
        if let d { precondition((d.kind == .flag) == flag, "--\(o.rawValue) is \(flag ? "not a flag" : "a flag")") }
        return d
    }

    /// Whether the running (sub)command declares `o`: for code shared by
    /// subcommands that declare different options.
    public func declares<O: OptionName>(_ o: O) -> Bool { spec.option(named: o.rawValue) != nil }

    public func flag<O: OptionName>(_ o: O) -> Bool { _ = declared(o, flag: true); return flag(o.rawValue) }
    /// The option's value (the last one given).
    public func value<O: OptionName>(_ o: O) -> String? { _ = declared(o, flag: false); return value(o.rawValue) }
    public func values<O: OptionName>(_ o: O) -> [String] { _ = declared(o, flag: false); return values(o.rawValue) }
    /// Given at all (a flag, or an option with any value).
    public func isSet<O: OptionName>(_ o: O) -> Bool {
        precondition(declares(o) || O.self == SharedOption.self, "--\(o.rawValue) is not an option of \(commandPath.joined(separator: " "))")
        return isSet(o.rawValue)
    }
    public func timestamp<O: OptionName>(_ o: O) throws -> Timestamp? { _ = declared(o, flag: false); return try timestamp(o.rawValue) }
    public func timeSpan<O: OptionName>(_ o: O, default d: TimeSpan, allowZero: Bool = false) throws -> TimeSpan {
        _ = declared(o, flag: false)
        return try timeSpan(o.rawValue, default: d, allowZero: allowZero)
    }
    public func int<O: OptionName>(_ o: O, default d: Int, range: ClosedRange<Int>) throws -> Int {
        _ = declared(o, flag: false)
        return try int(o.rawValue, default: d, range: range)
    }
    public func choice<O: OptionName>(_ o: O, default d: String) throws -> String { _ = declared(o, flag: false); return try choice(o.rawValue, default: d) }
}

extension ParsedArguments {
    // Lookups by a declaration in hand (code that walks a command's options,
    // such as the fuzzer's): the declaration itself is the typed name.
    public func flag(_ o: OptionSpec) -> Bool { flag(o.long) }
    public func value(_ o: OptionSpec) -> String? { value(o.long) }
    public func values(_ o: OptionSpec) -> [String] { values(o.long) }
    public func isSet(_ o: OptionSpec) -> Bool { isSet(o.long) }
    public func timestamp(_ o: OptionSpec) throws -> Timestamp? { try timestamp(o.long) }
    public func timeSpan(_ o: OptionSpec, default d: TimeSpan) throws -> TimeSpan { try timeSpan(o.long, default: d) }
    public func int(_ o: OptionSpec, default d: Int, range: ClosedRange<Int>) throws -> Int { try int(o.long, default: d, range: range) }
    public func choice(_ o: OptionSpec, default d: String) throws -> String { try choice(o.long, default: d) }
}
