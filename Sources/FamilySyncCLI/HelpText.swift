import FamilySync

/// `--help` text: OVERVIEW, USAGE, ARGUMENTS, OPTIONS (with defaults),
/// SUBCOMMANDS. Generated from the declaration.
public enum HelpText {
    public static func usageLine(_ spec: CommandSpec, path: [String]) -> String {
        var parts = [path.joined(separator: " ")]
        if !spec.subcommands.isEmpty {
            parts.append("<command>")
            parts.append("[<options>]")
            return parts.joined(separator: " ")
        }
        for o in spec.options where !o.hidden {
            parts.append(synopsis(o))
        }
        for a in spec.arguments {
            var s = a.name + (a.repeating ? "..." : "")
            if a.optional { s = "[\(s)]" }
            parts.append(s)
        }
        return parts.joined(separator: " ")
    }

    static func synopsis(_ o: OptionSpec) -> String {
        let flag = o.short.map { "-\($0)" } ?? "--\(o.long)"
        let body = o.takesValue ? "\(flag) \(o.valueName)" : flag
        return o.kind == .repeating ? "[\(body)]..." : "[\(body)]"
    }

    static func optionLabel(_ o: OptionSpec) -> String {
        var names = o.short.map { "-\($0), " } ?? ""
        names += "--\(o.long)"
        if o.takesValue { names += " \(o.valueName)" }
        return names
    }

    public static func render(_ spec: CommandSpec, path: [String]) -> String {
        var out = "OVERVIEW: \(spec.abstract)\n"
        if !spec.discussion.isEmpty {
            out += "\n" + wrap(spec.discussion.components(separatedBy: "\n\n").first ?? "", indent: 0) + "\n"
        }
        out += "\nUSAGE: \(usageLine(spec, path: path))\n"
        if !spec.arguments.isEmpty {
            out += "\nARGUMENTS:\n"
            for a in spec.arguments {
                var h = a.help
                if let d = a.defaultValue { h += " (default: \(d))" }
                out += row(a.name, h)
            }
        }
        out += "\nOPTIONS:\n"
        for o in spec.visibleOptions {
            var h = o.help
            if let d = o.defaultValue { h += " (default: \(d))" }
            if case let .values(v) = o.completion { h += " (values: \(v.joined(separator: ", ")))" }
            out += row(optionLabel(o), h)
        }
        if !spec.subcommands.isEmpty {
            out += "\nCOMMANDS:\n"
            for s in spec.subcommands { out += row(s.name, s.abstract) }
            out += "\n  See '\(path.joined(separator: " ")) <command> --help' for a command's options.\n"
        }
        return out
    }

    static func row(_ label: String, _ help: String) -> String {
        let width = 26
        let lead = "  " + label
        let body = wrap(help, indent: width + 2)
        if lead.count < width { return lead + String(repeating: " ", count: width + 2 - lead.count) + body.drop(while: { $0 == " " }) + "\n" }
        return lead + "\n" + body + "\n"
    }

    /// Wraps text at 80 columns with the given indent on every line.
    static func wrap(_ text: String, indent: Int) -> String {
        let pad = String(repeating: " ", count: indent)
        var lines: [String] = []
        var line = pad
        for word in text.split(whereSeparator: { $0 == " " || $0 == "\n" }) {
            if line.count > indent && line.count + 1 + word.count > 80 {
                lines.append(line)
                line = pad
            }
            line += (line.count > indent ? " " : "") + word
        }
        lines.append(line)
        return lines.joined(separator: "\n")
    }
}
