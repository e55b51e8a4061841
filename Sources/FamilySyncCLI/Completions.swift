import FoundationEssentials
import Glibc
import FamilySync

/// Completion scripts for bash, zsh and fish, generated from the declaration.
///
/// Every shell completes `--opt value` and `--opt=value` alike (the value
/// after `=`: files for path options, the choices of an enum option). A
/// value listed by the tool itself (`CompletionKind.listing`, the device IDs
/// of `peer-sync revoke`) comes from running the tool on the store named on
/// the line (`--db PATH` or `--db=PATH`), else on its own default store; its
/// standard error is discarded, so a line without a store completes nothing
/// and says nothing, and the listing command opens stores without creating one.
public enum Completions {
    public static let shells = ["bash", "zsh", "fish"]

    public static func render(_ spec: CommandSpec, shell: String) -> String? {
        switch shell {
        case "bash": return bash(spec)
        case "zsh": return zsh(spec)
        case "fish": return fish(spec)
        default: return nil
        }
    }

    static func funcName(_ spec: CommandSpec) -> String { "_" + spec.name.replacing("-", with: "_") }

    /// The store option a listing forwards, when the command declares it.
    static let storeOption = CommonOptions.db.long

    static func usesListing(_ spec: CommandSpec) -> Bool {
        let commands = spec.subcommands.isEmpty ? [spec] : spec.subcommands
        return commands.contains { c in c.arguments.contains { if case .listing = $0.completion { true } else { false } } }
    }

    /// A listing's arguments as shell words (they are declared names, never user text).
    static func listingWords(_ args: [String]) -> String { args.joined(separator: " ") }

    // MARK: bash

    static func bash(_ spec: CommandSpec) -> String {
        let fn = funcName(spec)
        var s = "# bash completion for \(spec.name)\n"
        if usesListing(spec) {
            s += """
            # Prints the first field of each line '\(spec.name) ARGS' prints for the
            # store named on the line (--db PATH, --db=PATH), else its default store.
            \(fn)_listing() {
                local i w db=()
                for ((i = 1; i < COMP_CWORD; i++)); do
                    w="${COMP_WORDS[i]}"
                    if [[ $w == --\(storeOption) ]]; then
                        if [[ ${COMP_WORDS[i+1]} == "=" ]]; then w="${COMP_WORDS[i+2]}"; else w="${COMP_WORDS[i+1]}"; fi
                    elif [[ $w == --\(storeOption)=* ]]; then w="${w#--\(storeOption)=}"
                    else continue
                    fi
                    w="${w#[\\"\\']}"; w="${w%[\\"\\']}"
                    db=(--\(storeOption) "${w/#\\~/$HOME}")
                done
                local line
                command \(spec.name) "$@" "${db[@]}" 2>/dev/null </dev/null | while IFS= read -r line; do printf '%s\\n' "${line%%$'\\t'*}"; done
            }

            """
        }
        s += "\(fn)() {\n"
        s += "    local cur=\"${COMP_WORDS[COMP_CWORD]}\" prev=\"${COMP_WORDS[COMP_CWORD-1]}\" pre=\"\"\n"
        s += "    # An option's value after '=': the '=' is a word of its own when COMP_WORDBREAKS holds it\n"
        s += "    # (the default), else the value shares the option's word.\n"
        s += "    if [[ $cur == \"=\" ]]; then cur=\"\"\n"
        s += "    elif [[ $prev == \"=\" && $COMP_CWORD -ge 2 ]]; then prev=\"${COMP_WORDS[COMP_CWORD-2]}\"\n"
        s += "    elif [[ $cur == --*=* ]]; then prev=\"${cur%%=*}\"; pre=\"$prev=\"; cur=\"${cur#*=}\"\n"
        s += "    fi\n"
        if spec.subcommands.isEmpty {
            s += bashBody(spec, tool: spec, first: 1, indent: "    ")
        } else {
            let names = spec.subcommands.map(\.name).joined(separator: " ")
            s += "    if [[ $COMP_CWORD -eq 1 ]]; then\n"
            s += "        COMPREPLY=($(compgen -W \"\(names) --help --version\" -- \"$cur\"))\n"
            s += "        return\n"
            s += "    fi\n"
            s += "    case \"${COMP_WORDS[1]}\" in\n"
            for sub in spec.subcommands {
                s += "    \(sub.name))\n"
                s += bashBody(sub, tool: spec, first: 2, indent: "        ")
                s += "        ;;\n"
            }
            s += "    esac\n"
        }
        s += "}\n"
        s += "complete -o filenames -F \(fn) \(spec.name)\n"
        return s
    }

    static func bashReply(_ kind: CompletionKind, tool: CommandSpec) -> String {
        switch kind {
        case .file: return "mapfile -t COMPREPLY < <(compgen -P \"$pre\" -f -- \"$cur\")"
        case .directory: return "mapfile -t COMPREPLY < <(compgen -P \"$pre\" -d -- \"$cur\")"
        case let .values(v): return "mapfile -t COMPREPLY < <(compgen -P \"$pre\" -W \"\(v.joined(separator: " "))\" -- \"$cur\")"
        case .listing: return "mapfile -t COMPREPLY < <(compgen -P \"$pre\" -W \"$(\(funcName(tool))_listing \(listingWords(CompletionKind.listingArguments)))\" -- \"$cur\")"
        case .none: return "COMPREPLY=()"
        }
    }

    /// The options of `spec` that take a value, as the shell sees their names.
    static func valueOptionWords(_ spec: CommandSpec) -> [String] {
        spec.visibleOptions.filter(\.takesValue).flatMap { o in ["--\(o.long)"] + (o.short.map { ["-\($0)"] } ?? []) }
    }

    static func bashBody(_ spec: CommandSpec, tool: CommandSpec, first: Int, indent: String) -> String {
        var s = "\(indent)case \"$prev\" in\n"
        for o in spec.visibleOptions where o.takesValue {
            let names = (["--\(o.long)"] + (o.short.map { ["-\($0)"] } ?? [])).joined(separator: "|")
            s += "\(indent)\(names))\n"
            s += "\(indent)    \(bashReply(o.completion, tool: tool)); return ;;\n"
        }
        s += "\(indent)esac\n"
        let words = spec.visibleOptions.flatMap { o in ["--\(o.long)"] + (o.short.map { ["-\($0)"] } ?? []) }
        s += "\(indent)if [[ -z $pre && \"$cur\" == -* ]]; then\n"
        s += "\(indent)    COMPREPLY=($(compgen -W \"\(words.joined(separator: " "))\" -- \"$cur\"))\n"
        s += "\(indent)    return\n"
        s += "\(indent)fi\n"
        guard spec.arguments.contains(where: { $0.completion != .none }) else { return s }
        func reply(_ a: ArgumentSpec) -> String { bashReply(a.completion, tool: tool).replacing("-P \"$pre\" ", with: "") }
        if spec.arguments.count == 1 {
            return s + "\(indent)\(reply(spec.arguments[0]))\n"
        }
        // Which argument the word is: the words before it that are neither
        // options nor an option's value ('--opt = value' when '=' is split off).
        let takes = valueOptionWords(spec)
        s += "\(indent)local i n=0\n"
        s += "\(indent)for ((i = \(first); i < COMP_CWORD; i++)); do\n"
        s += "\(indent)    case \"${COMP_WORDS[i]}\" in\n"
        if !takes.isEmpty {
            s += "\(indent)    \(takes.joined(separator: "|"))) ((i++)); [[ ${COMP_WORDS[i]} == \"=\" ]] && ((i++)) ;;\n"
        }
        s += "\(indent)    -*) [[ ${COMP_WORDS[i+1]} == \"=\" ]] && ((i += 2)) ;;\n"
        s += "\(indent)    *) ((n++)) ;;\n"
        s += "\(indent)    esac\n"
        s += "\(indent)done\n"
        s += "\(indent)case $n in\n"
        for (i, a) in spec.arguments.enumerated() where a.completion != .none {
            s += "\(indent)\(a.repeating ? "*" : String(i))) \(reply(a)) ;;\n"
        }
        s += "\(indent)esac\n"
        return s
    }

    // MARK: zsh

    static func zshEscape(_ s: String) -> String {
        var t = ""
        for c in s {
            switch c {
            case "[", "]", ":", "\\": t += "\\" + String(c)
            case "'": t += "'\\''"
            default: t.append(c)
            }
        }
        return t
    }

    static func zshAction(_ kind: CompletionKind, tool: CommandSpec) -> String {
        switch kind {
        case .file: return "_files"
        case .directory: return "_files -/"
        case let .values(v): return "(\(v.joined(separator: " ")))"
        case .listing: return "{\(funcName(tool))_listing \(listingWords(CompletionKind.listingArguments))}"
        case .none: return " "
        }
    }

    static func zshSpecs(_ spec: CommandSpec, tool: CommandSpec) -> [String] {
        var out: [String] = []
        for o in spec.visibleOptions {
            let help = zshEscape(o.help)
            // `--long=`: the value after '=' or as the next word; `-s+`: right after the letter or the next word.
            let action = o.takesValue ? ":\(zshEscape(o.valueName)):\(zshAction(o.completion, tool: tool))" : ""
            let names = ["--\(o.long)\(o.takesValue ? "=" : "")"] + (o.short.map { ["-\($0)\(o.takesValue ? "+" : "")"] } ?? [])
            if o.kind == .repeating {
                out += names.map { "'*\($0)[\(help)]\(action)'" }
            } else {
                let exclusive = o.short.map { "(-\($0) --\(o.long))" } ?? ""
                out += names.map { "'\(exclusive)\($0)[\(help)]\(action)'" }
            }
        }
        for a in spec.arguments {
            out.append("'\(a.repeating ? "*" : "")\(a.optional && !a.repeating ? "::" : ":")\(zshEscape(a.name)):\(zshAction(a.completion, tool: tool))'")
        }
        return out
    }

    static func zsh(_ spec: CommandSpec) -> String {
        let fn = funcName(spec)
        var s = "#compdef \(spec.name)\n# zsh completion for \(spec.name)\n\n"
        if usesListing(spec) {
            s += """
            # Offers each line '\(spec.name) ARGS' prints (VALUE, a tab, a description)
            # for the store named on the line (--db PATH, --db=PATH), else its default store.
            \(fn)_listing() {
                local -a db found
                local i w line
                for ((i = 1; i < CURRENT; i++)); do
                    w=$words[i]
                    if [[ $w == --\(storeOption) ]]; then w=$words[i+1]
                    elif [[ $w == --\(storeOption)=* ]]; then w=${w#--\(storeOption)=}
                    else continue
                    fi
                    w=${(Q)w}
                    db=(--\(storeOption) "${w/#\\~/$HOME}")
                done
                for line in ${(f)"$(command \(spec.name) "$@" $db 2>/dev/null </dev/null)"}; do
                    if [[ $line == *$'\\t'* ]]; then found+=("${${line%%$'\\t'*}//:/\\\\:}:${line#*$'\\t'}")
                    else found+=("${line//:/\\\\:}")
                    fi
                done
                _describe -t values 'value' found
            }


            """
        }
        if spec.subcommands.isEmpty {
            s += "\(fn)() {\n    _arguments -s \\\n"
            s += zshSpecs(spec, tool: spec).map { "        \($0)" }.joined(separator: " \\\n") + "\n}\n"
        } else {
            s += "\(fn)() {\n    local line state\n"
            s += "    _arguments -C \\\n        '(- *)'{-h,--help}'[Show help information and exit.]' \\\n        '(- *)--version[Show the version and exit.]' \\\n"
            s += "        '1:command:->command' \\\n        '*::arg:->args'\n"
            s += "    case $state in\n    command)\n        local -a commands\n        commands=(\n"
            for sub in spec.subcommands { s += "            '\(sub.name):\(zshEscape(sub.abstract))'\n" }
            s += "        )\n        _describe 'command' commands ;;\n    args)\n        case $line[1] in\n"
            for sub in spec.subcommands {
                s += "        \(sub.name))\n            _arguments -s \\\n"
                s += zshSpecs(sub, tool: spec).map { "                \($0)" }.joined(separator: " \\\n") + " ;;\n"
            }
            s += "        esac ;;\n    esac\n}\n"
        }
        s += "\n\(fn) \"$@\"\n"
        return s
    }

    // MARK: fish

    static func fishEscape(_ s: String) -> String {
        "'" + s.replacing("\\", with: "\\\\").replacing("'", with: "\\'") + "'"
    }

    static func fishFunction(_ spec: CommandSpec) -> String { "__" + spec.name.replacing("-", with: "_") + "_listing" }
    static func fishPosition(_ spec: CommandSpec) -> String { "__" + spec.name.replacing("-", with: "_") + "_argument_is" }

    static func needsPosition(_ spec: CommandSpec) -> Bool {
        (spec.subcommands.isEmpty ? [spec] : spec.subcommands).contains { $0.arguments.count > 1 }
    }

    /// fish completes `--long=value` itself for an option declared with -l and a value.
    static func fishOptions(_ spec: CommandSpec, tool: CommandSpec, condition: String?) -> [String] {
        var out: [String] = []
        for o in spec.visibleOptions {
            var line = "complete -c \(tool.name)"
            if let condition { line += " -n \(fishEscape(condition))" }
            if let sh = o.short { line += " -s \(sh)" }
            line += " -l \(o.long)"
            if o.takesValue {
                switch o.completion {
                case .file: line += " -r -F"
                case .directory: line += " -r -a '(__fish_complete_directories)'"
                case let .values(v): line += " -x -a \(fishEscape(v.joined(separator: " ")))"
                case .listing: line += " -x -a \(fishEscape("(\(fishFunction(tool)) \(listingWords(CompletionKind.listingArguments)))"))"
                case .none: line += " -x"
                }
            }
            line += " -d \(fishEscape(o.help))"
            out.append(line)
        }
        for (i, a) in spec.arguments.enumerated() {
            var line = "complete -c \(tool.name)"
            // Which argument the word is matters only where a command has more than one.
            var conditions = condition.map { [$0] } ?? []
            if spec.arguments.count > 1 {
                let first = tool.subcommands.isEmpty ? 2 : 3
                conditions.append(([fishPosition(tool), String(first), a.repeating ? "\(i)+" : String(i)] + valueOptionWords(spec)).joined(separator: " "))
            }
            if !conditions.isEmpty { line += " -n \(fishEscape(conditions.joined(separator: "; and ")))" }
            switch a.completion {
            case .none: continue
            case .file: line += " -F"
            case .directory: line += " -f -a '(__fish_complete_directories)'"
            case let .values(v): line += " -f -a \(fishEscape(v.joined(separator: " ")))"
            case .listing: line += " -f -a \(fishEscape("(\(fishFunction(tool)) \(listingWords(CompletionKind.listingArguments)))"))"
            }
            out.append(line)
        }
        return out
    }

    static func fish(_ spec: CommandSpec) -> String {
        var lines = ["# fish completion for \(spec.name)"]
        if usesListing(spec) {
            let f = fishFunction(spec)
            lines += [
                "# Prints each line '\(spec.name) ARGS' prints (VALUE, a tab, a description) for",
                "# the store named on the line (--\(storeOption) PATH, --\(storeOption)=PATH), else its default store.",
                "function \(f)",
                "    set --local words (commandline -opc)",
                "    set --local db",
                "    for i in (seq (count $words))",
                "        switch $words[$i]",
                "            case --\(storeOption)",
                "                set db --\(storeOption) $words[(math $i + 1)]",
                "            case '--\(storeOption)=*'",
                "                set db --\(storeOption) (string replace -- --\(storeOption)= '' $words[$i])",
                "        end",
                "    end",
                "    set -q db[2]; and set db[2] (string replace -r '^~(?=/|$)' -- $HOME $db[2])",
                "    command \(spec.name) $argv $db 2>/dev/null </dev/null",
                "end",
            ]
        }
        if needsPosition(spec) {
            lines += [
                "# \(fishPosition(spec)) FIRST N OPTION...: the word being completed is argument N (from 0; N+ for",
                "# N or later) of the words from FIRST on, not counting options and the values of the OPTIONs named.",
                "function \(fishPosition(spec))",
                "    set --local words (commandline -opc)",
                "    set --local n 0",
                "    set --local skip 0",
                "    for w in $words[$argv[1]..-1]",
                "        if test $skip -eq 1",
                "            set skip 0",
                "        else if contains -- $w $argv[3..-1]",
                "            set skip 1",
                "        else if not string match -q -- '-*' $w",
                "            set n (math $n + 1)",
                "        end",
                "    end",
                "    if string match -q -- '*+' $argv[2]",
                "        test $n -ge (string trim -r -c + -- $argv[2])",
                "    else",
                "        test $n -eq $argv[2]",
                "    end",
                "end",
            ]
        }
        if spec.subcommands.isEmpty {
            lines += fishOptions(spec, tool: spec, condition: nil)
        } else {
            lines.append("complete -c \(spec.name) -f")
            for sub in spec.subcommands {
                lines.append("complete -c \(spec.name) -n '__fish_use_subcommand' -a \(sub.name) -d \(fishEscape(sub.abstract))")
            }
            lines.append("complete -c \(spec.name) -n '__fish_use_subcommand' -s h -l help -d 'Show help information and exit.'")
            lines.append("complete -c \(spec.name) -n '__fish_use_subcommand' -l version -d 'Show the version and exit.'")
            for sub in spec.subcommands {
                lines += fishOptions(sub, tool: spec, condition: "__fish_seen_subcommand_from \(sub.name)")
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }
}
