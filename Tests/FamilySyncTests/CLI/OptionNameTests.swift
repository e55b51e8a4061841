import Testing
@testable import FamilySync
@testable import FamilySyncCLI

/// Each tool reads its options through the cases of its `Option` enum; these
/// tests hold the cases to the declarations, so the enum cannot drift from
/// what help, man pages and the parser know.
@Suite struct OptionNameTests {
    static let tools: [(spec: CommandSpec, cases: [String])] = [
        (JWSVerifyCommand.spec, JWSVerifyCommand.Option.allCases.map(\.rawValue)),
        (PairQRCommand.spec, PairQRCommand.Option.allCases.map(\.rawValue)),
        (PairScanCommand.spec, PairScanCommand.Option.allCases.map(\.rawValue)),
        (MergeRecordsCommand.spec, MergeRecordsCommand.Option.allCases.map(\.rawValue)),
        (PeerSyncCommand.spec, PeerSyncCommand.Option.allCases.map(\.rawValue)),
        (TombstoneGCCommand.spec, TombstoneGCCommand.Option.allCases.map(\.rawValue)),
    ]

    static func declared(_ spec: CommandSpec) -> Set<String> {
        Set(([spec] + spec.subcommands).flatMap { $0.options.map(\.long) })
    }

    @Test(arguments: 0..<6)
    func everyDeclaredOptionHasACaseAndEveryCaseIsDeclared(tool: Int) {
        let (spec, cases) = Self.tools[tool]
        #expect(Set(cases).count == cases.count, "\(spec.name): a case named twice")
        #expect(Set(cases) == Self.declared(spec), "\(spec.name): cases \(Set(cases).symmetricDifference(Self.declared(spec)).sorted()) do not match the declaration")
    }



    /// The options the shared code reads are declared by some tool, or are built in.
    @Test func sharedOptionsAreDeclared() {
        let all = Self.tools.reduce(into: Set(CommandSpec.builtinOptions.map(\.long))) { $0.formUnion(Self.declared($1.spec)) }
        for o in SharedOption.allCases { #expect(all.contains(o.rawValue), "--\(o.rawValue)") }
    }

    @Test func aLookupReadsTheOptionGiven() throws {
        let r = try ArgumentParser.parse(["--older-than", "30d", "--dry-run", "--db", "s.db"], spec: TombstoneGCCommand.spec)
        #expect(r.flag(TombstoneGCCommand.Option.dryRun))
        #expect(!r.flag(TombstoneGCCommand.Option.verbose))
        #expect(try r.timeSpan(TombstoneGCCommand.Option.olderThan, default: .days(1)) == .days(30))
        #expect(r.value(SharedOption.db) == "s.db")
        #expect(r.value(SharedOption.root) == nil)  // shared code asks, tombstone-gc does not declare it
    }
}
