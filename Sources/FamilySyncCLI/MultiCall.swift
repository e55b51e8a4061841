import FamilySync
import Glibc

/// One installed binary carries several tools and runs the one it is called
/// as: `/usr/bin/jws-verify` is a link to it. Six statically linked copies of
/// the Swift runtime would be most of the installed size; one copy is shared.
public enum MultiCall {
    /// A tool the binary carries: its declaration and its body.
    public struct Entry {
        let spec: CommandSpec
        let body: (ToolContext) throws -> ExitStatus
        public init(_ spec: CommandSpec, _ body: @escaping (ToolContext) throws -> ExitStatus) {
            self.spec = spec
            self.body = body
        }
    }

    /// Runs the tool named by the last component of argv[0]; else, when called
    /// by its own `program` name, the one named by the first argument
    /// (`family-sync jws-verify TOKEN`), which is how it runs before installing.
    public static func main(program: String, _ tools: [Entry]) -> Never {
        let argv = CommandLine.arguments
        let called = PathText.lastComponent(argv.first ?? program)
        if let t = tools.first(where: { $0.spec.name == called }) {
            Tool.main(t.spec, arguments: Array(argv.dropFirst()), t.body)
        }
        if argv.count > 1, let t = tools.first(where: { $0.spec.name == argv[1] }) {
            Tool.main(t.spec, arguments: Array(argv.dropFirst(2)), t.body)
        }
        let names = tools.map(\.spec.name)
        let usage = "Usage: \(program) TOOL [ARGUMENT...]\n  TOOL is one of: \(names.joined(separator: ", ")).\n"
            + "  Installed, each tool is a link named after it to this program.\n"
        func answer(_ text: String) -> Never {
            let out = OutputStream.stdout
            do { try out.write(text); try out.flush() } catch { exit(ExitStatus.ioError.rawValue) }
            exit(ExitStatus.success.rawValue)
        }
        switch argv.dropFirst().first {
        case "--help", "-h": answer(usage)
        case "--version": answer("\(program) (family-sync) \(FamilySyncInfo.version)\n")
        case let given?: StandardStreams.writeError("\(program): '\(given)' is not a tool this program carries\n" + usage)
        case nil: StandardStreams.writeError("\(program): name a tool\n" + usage)
        }
        exit(ExitStatus.usage.rawValue)
    }
}
