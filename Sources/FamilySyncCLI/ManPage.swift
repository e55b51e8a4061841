import FoundationEssentials
import Glibc
import FamilySync

/// The mdoc(7) man page of a tool, generated from its declaration so it
/// cannot drift from the parser.
public enum ManPage {
    /// What survives a power cut, the same on every tool's page (docs/design.md, "Durable before done").
    static let powerCuts = """
        Nothing a tool reports done is lost to a power cut. A command that \
        writes to the store (a stamp, an apply, a photo, an offer, a \
        revocation, a rename, tombstone-gc, a backup, a saved proof) exits 0 \
        only once its write is on disk, also while peer-sync serve holds the \
        store. A sync sends its DONE only once what it received is on disk, \
        so a peer moves its cursor only past what this device holds, and \
        connect and join report synced only once their cursors are on disk; a \
        cut in the middle of a session loses at most that session's progress, \
        which the next sync sends again. Output files are synced and renamed \
        into place with their folder synced. A failed sync or close of the \
        store is an error (exit 74), never exit 0.
        """

    public static func render(_ spec: CommandSpec) -> String {
        var m: [String] = []
        m.append(".Dd \(FamilySyncInfo.manualDate)")
        m.append(".Dt \(spec.name.uppercased()) 1")
        m.append(".Os")
        m.append(".Sh NAME")
        m.append(".Nm \(spec.name)")
        m.append(".Nd \(escape(spec.abstract))")
        m.append(".Sh SYNOPSIS")
        if spec.subcommands.isEmpty {
            m += synopsis(spec, subcommand: nil)
        } else {
            for s in spec.subcommands { m += synopsis(s, subcommand: s.name) }
            m.append(".Nm")
            m.append(".Op Fl h | -help | -version")
        }
        m.append(".Sh DESCRIPTION")
        m += paragraphs(spec.discussion.isEmpty ? spec.abstract : spec.discussion)
        if !spec.arguments.isEmpty {
            m.append(".Pp")
            m.append("Arguments:")
            m += argumentList(spec.arguments)
        }
        m.append(".Sh OPTIONS")
        m += optionList(spec.visibleOptions)
        for s in spec.subcommands {
            m.append(".Ss \(s.name)")
            m += paragraphs(s.discussion.isEmpty ? s.abstract : s.discussion)
            if !s.arguments.isEmpty { m += argumentList(s.arguments) }
            let own = s.options.filter { !$0.hidden }
            if !own.isEmpty { m += optionList(own) }
        }
        for (title, body) in spec.extraSections {
            m.append(".Sh \(title.uppercased())")
            m += paragraphs(body)
        }
        m.append(".Sh POWER CUTS")
        m += paragraphs(powerCuts)
        m.append(".Sh EXIT STATUS")
        m.append(".Bl -tag -width Ds")
        for s in ExitStatus.allCases {
            m.append(".It \(s.rawValue)")
            m += sentences(s.meaning.prefix(1).uppercased() + s.meaning.dropFirst() + ".")
        }
        m.append(".El")
        let allExamples = spec.examples + spec.subcommands.flatMap(\.examples)
        if !allExamples.isEmpty {
            m.append(".Sh EXAMPLES")
            for (i, e) in allExamples.enumerated() {
                if i > 0 { m.append(".Pp") }
                m += sentences(e.title)
                m.append(".Bd -literal -offset indent")
                for line in e.command.split(separator: "\n", omittingEmptySubsequences: false) { m.append(escapeLiteral(String(line))) }
                m.append(".Ed")
            }
        }
        let see = spec.seeAlso.sorted { a, b in
            let sa = a.split(separator: "(").last ?? "", sb = b.split(separator: "(").last ?? ""
            return sa != sb ? sa < sb : a < b
        }
        if !see.isEmpty {
            m.append(".Sh SEE ALSO")
            for (i, ref) in see.enumerated() {
                let parts = ref.split(separator: "(")
                let name = parts[0], section = parts.count > 1 ? parts[1].dropLast() : "1"
                m.append(".Xr \(name) \(section)" + (i < see.count - 1 ? " ," : ""))
            }
        }
        return m.joined(separator: "\n") + "\n"
    }

    static func synopsis(_ spec: CommandSpec, subcommand: String?) -> [String] {
        var m = [".Nm"]
        if let subcommand { m.append(".Cm \(subcommand)") }
        for o in spec.options where !o.hidden {
            var s = ".Op Fl " + (o.short.map { String($0) } ?? "-\(o.long)")
            if o.takesValue { s += " Ar \(o.valueName)" }
            if o.kind == .repeating { s += " ..." }
            m.append(s)
        }
        for a in spec.arguments {
            var s = a.optional ? ".Op Ar \(a.name)" : ".Ar \(a.name)"
            if a.repeating { s += " ..." }
            m.append(s)
        }
        return m
    }

    static func optionList(_ options: [OptionSpec]) -> [String] {
        var m = [".Bl -tag -width Ds"]
        for o in options {
            var it = ".It"
            if let s = o.short { it += " Fl \(s) ," }
            it += " Fl -\(o.long)"
            if o.takesValue { it += " Ar \(o.valueName)" }
            m.append(it)
            var h = o.help
            if case let .values(v) = o.completion { h += " One of: \(v.joined(separator: ", "))." }
            if let d = o.defaultValue { h += " Default: \(d)." }
            m += sentences(h)
        }
        m.append(".El")
        return m
    }

    static func argumentList(_ args: [ArgumentSpec]) -> [String] {
        var m = [".Bl -tag -width Ds"]
        for a in args {
            m.append(".It Ar \(a.name)")
            m += sentences(a.help + (a.defaultValue.map { " Default: \($0)." } ?? ""))
        }
        m.append(".El")
        return m
    }

    static func paragraphs(_ text: String) -> [String] {
        var m: [String] = []
        for (i, p) in text.components(separatedBy: "\n\n").enumerated() {
            if i > 0 { m.append(".Pp") }
            if p.hasPrefix("    ") {
                m.append(".Bd -literal -offset indent")
                for line in p.split(separator: "\n") { m.append(escapeLiteral(String(line.dropFirst(4)))) }
                m.append(".Ed")
            } else {
                m += sentences(p)
            }
        }
        return m
    }

    /// mdoc wants each sentence on its own line, and short lines.
    static func sentences(_ text: String) -> [String] {
        var m: [String] = []
        var line = ""
        for word in text.split(whereSeparator: { $0 == " " || $0 == "\n" }) {
            if !line.isEmpty && line.count + word.count > 72 { m.append(escape(line)); line = "" }
            line += (line.isEmpty ? "" : " ") + word
            if word.hasSuffix(".") && word.count > 2 && !word.hasSuffix("e.g.") && !word.hasSuffix("i.e.") {
                m.append(escape(line))
                line = ""
            }
        }
        if !line.isEmpty { m.append(escape(line)) }
        return m.map(breakable)
    }

    /// Words longer than this get break points, so no line overflows an
    /// 80-column terminal (groff's "can't break line").
    static let longestUnbrokenWord = 40

    /// Adds troff's zero-width break point `\:` after each ':' , '/' or ','
    /// inside a word too long for one line, e.g. a certificate fingerprint.
    static func breakable(_ line: String) -> String {
        line.split(separator: " ", omittingEmptySubsequences: false).map { word -> String in
            guard word.count > longestUnbrokenWord else { return String(word) }
            var t = ""
            for c in word {
                t.append(c)
                if c == ":" || c == "/" || c == "," { t += "\\:" }
            }
            return t
        }.joined(separator: " ")
    }

    /// Escapes text for a mdoc text line.
    static func escape(_ s: String) -> String {
        var t = s.replacing("\\", with: "\\e")
        if t.hasPrefix(".") || t.hasPrefix("'") { t = "\\&" + t }
        return t
    }
    static func escapeLiteral(_ s: String) -> String { s.isEmpty ? "" : escape(s) }
}
