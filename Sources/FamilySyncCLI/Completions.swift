import Foundation
import FamilySync

/// Completion scripts for bash, zsh and fish, generated from the declaration.
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

    static func funcName(_ spec: CommandSpec) -> String { "_" + spec.name.replacingOccurrences(of: "-", with: "_") }

    // MARK: bash

    static func bash(_ spec: CommandSpec) -> String {
        let fn = funcName(spec)
        var s = "# bash completion for \(spec.name)\n"
        s += "\(fn)() {\n"
        s += "    local cur=\"${COMP_WORDS[COMP_CWORD]}\" prev=\"${COMP_WORDS[COMP_CWORD-1]}\"\n"
        if spec.subcommands.isEmpty {
            s += bashBody(spec, indent: "    ")
        } else {
            let names = spec.subcommands.map(\.name).joined(separator: " ")
            s += "    if [[ $COMP_CWORD -eq 1 ]]; then\n"
            s += "        COMPREPLY=($(compgen -W \"\(names) --help --version\" -- \"$cur\"))\n"
            s += "        return\n"
            s += "    fi\n"
            s += "    case \"${COMP_WORDS[1]}\" in\n"
            for sub in spec.subcommands {
                s += "    \(sub.name))\n"
                s += bashBody(sub, indent: "        ")
                s += "        ;;\n"
            }
            s += "    esac\n"
        }
        s += "}\n"
        s += "complete -o filenames -F \(fn) \(spec.name)\n"
        return s
    }

    static func bashBody(_ spec: CommandSpec, indent: String) -> String {
        var s = "\(indent)case \"$prev\" in\n"
        for o in spec.visibleOptions where o.takesValue {
            let names = (["--\(o.long)"] + (o.short.map { ["-\($0)"] } ?? [])).joined(separator: "|")
            s += "\(indent)\(names))\n"
            switch o.completion {
            case .file: s += "\(indent)    COMPREPLY=($(compgen -f -- \"$cur\")); return ;;\n"
            case .directory: s += "\(indent)    COMPREPLY=($(compgen -d -- \"$cur\")); return ;;\n"
            case let .values(v): s += "\(indent)    COMPREPLY=($(compgen -W \"\(v.joined(separator: " "))\" -- \"$cur\")); return ;;\n"
            case .none: s += "\(indent)    COMPREPLY=(); return ;;\n"
            }
        }
        s += "\(indent)esac\n"
        let words = spec.visibleOptions.flatMap { o in ["--\(o.long)"] + (o.short.map { ["-\($0)"] } ?? []) }
        s += "\(indent)if [[ \"$cur\" == -* ]]; then\n"
        s += "\(indent)    COMPREPLY=($(compgen -W \"\(words.joined(separator: " "))\" -- \"$cur\"))\n"
        s += "\(indent)    return\n"
        s += "\(indent)fi\n"
        if spec.arguments.contains(where: { $0.completion == .file }) {
            s += "\(indent)COMPREPLY=($(compgen -f -- \"$cur\"))\n"
        }
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

    static func zshSpecs(_ spec: CommandSpec) -> [String] {
        var out: [String] = []
        for o in spec.visibleOptions {
            let help = zshEscape(o.help)
            var action = ""
            if o.takesValue {
                switch o.completion {
                case .file: action = ":\(o.valueName):_files"
                case .directory: action = ":\(o.valueName):_files -/"
                case let .values(v): action = ":\(o.valueName):(\(v.joined(separator: " ")))"
                case .none: action = ":\(o.valueName): "
                }
            }
            let rep = o.kind == .repeating ? "*" : ""
            if let sh = o.short {
                out.append("'\(rep)(-\(sh) --\(o.long))'{-\(sh),--\(o.long)}'\(o.takesValue && o.kind != .flag ? "=" : "")[\(help)]\(action)'")
            } else {
                out.append("'\(rep)--\(o.long)\(o.takesValue ? "=" : "")[\(help)]\(action)'")
            }
        }
        for a in spec.arguments {
            let action = a.completion == .file ? "_files" : " "
            out.append("'\(a.repeating ? "*" : "")\(a.optional && !a.repeating ? "::" : ":")\(zshEscape(a.name)):\(action)'")
        }
        return out
    }

    static func zsh(_ spec: CommandSpec) -> String {
        let fn = funcName(spec)
        var s = "#compdef \(spec.name)\n# zsh completion for \(spec.name)\n\n"
        if spec.subcommands.isEmpty {
            s += "\(fn)() {\n    _arguments -s \\\n"
            s += zshSpecs(spec).map { "        \($0)" }.joined(separator: " \\\n") + "\n}\n"
        } else {
            s += "\(fn)() {\n    local line state\n"
            s += "    _arguments -C \\\n        '(- *)'{-h,--help}'[Show help information and exit.]' \\\n        '(- *)--version[Show the version and exit.]' \\\n"
            s += "        '1:command:->command' \\\n        '*::arg:->args'\n"
            s += "    case $state in\n    command)\n        local -a commands\n        commands=(\n"
            for sub in spec.subcommands { s += "            '\(sub.name):\(zshEscape(sub.abstract))'\n" }
            s += "        )\n        _describe 'command' commands ;;\n    args)\n        case $line[1] in\n"
            for sub in spec.subcommands {
                s += "        \(sub.name))\n            _arguments -s \\\n"
                s += zshSpecs(sub).map { "                \($0)" }.joined(separator: " \\\n") + " ;;\n"
            }
            s += "        esac ;;\n    esac\n}\n"
        }
        s += "\n\(fn) \"$@\"\n"
        return s
    }

    // MARK: fish

    static func fishEscape(_ s: String) -> String {
        "'" + s.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "'", with: "\\'") + "'"
    }

    static func fishOptions(_ spec: CommandSpec, tool: String, condition: String?) -> [String] {
        var out: [String] = []
        for o in spec.visibleOptions {
            var line = "complete -c \(tool)"
            if let condition { line += " -n \(fishEscape(condition))" }
            if let sh = o.short { line += " -s \(sh)" }
            line += " -l \(o.long)"
            if o.takesValue {
                switch o.completion {
                case .file: line += " -r -F"
                case .directory: line += " -r -a '(__fish_complete_directories)'"
                case let .values(v): line += " -x -a \(fishEscape(v.joined(separator: " ")))"
                case .none: line += " -x"
                }
            }
            line += " -d \(fishEscape(o.help))"
            out.append(line)
        }
        return out
    }

    static func fish(_ spec: CommandSpec) -> String {
        var lines = ["# fish completion for \(spec.name)"]
        if spec.subcommands.isEmpty {
            lines += fishOptions(spec, tool: spec.name, condition: nil)
        } else {
            lines.append("complete -c \(spec.name) -f")
            for sub in spec.subcommands {
                lines.append("complete -c \(spec.name) -n '__fish_use_subcommand' -a \(sub.name) -d \(fishEscape(sub.abstract))")
            }
            lines.append("complete -c \(spec.name) -n '__fish_use_subcommand' -s h -l help -d 'Show help information and exit.'")
            lines.append("complete -c \(spec.name) -n '__fish_use_subcommand' -l version -d 'Show the version and exit.'")
            for sub in spec.subcommands {
                lines += fishOptions(sub, tool: spec.name, condition: "__fish_seen_subcommand_from \(sub.name)")
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }
}
