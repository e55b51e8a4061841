import FamilySync
import FamilySyncCLI

/// The command-line parser: the first byte picks the tool, the rest is argv
/// split at NUL bytes. Every declared option's value is then read through
/// the typed accessors the tools use.
enum CLIFuzzEntries {
    static let specs = AllTools.specs

    static func arguments(_ data: UnsafeRawBufferPointer) {
        guard let first = data.first else { return }
        let spec = specs[Int(first) % specs.count]
        let argv = data.dropFirst().split(separator: 0, omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
        guard let args = try? ArgumentParser.parse(argv, spec: spec) else { return }
        for opt in args.spec.allOptions where opt.takesValue {
            _ = try? args.timestamp(opt)
            _ = try? args.timeSpan(opt, default: .seconds(1))
            _ = try? args.int(opt, default: 0, range: 0...Int.max)
            _ = try? args.choice(opt, default: "")
            _ = args.values(opt)
        }
        for a in args.spec.arguments { _ = args.arguments(a.name) }
    }
}
