import Foundation
import Testing
import FamilySyncFuzz

/// Replays, without libFuzzer, every checked-in seed and every input a fuzzer
/// once crashed on, through the same entry points `make fuzz` runs: a
/// finding that comes back crashes this test.
@Suite struct FuzzReplayTests {
    static let fuzzing = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Fuzzing")

    static func inputs(_ folder: String, _ target: String) -> [URL] {
        let dir = fuzzing.appendingPathComponent(folder).appendingPathComponent(target)
        let names = (try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []
        return names.filter { !$0.hasPrefix(".") && $0 != "README.md" }.sorted().map { dir.appendingPathComponent($0) }
    }

    @Test(arguments: FuzzTargets.all.map(\.name))
    func seedsAndFindingsReplay(target: String) throws {
        let t = try #require(FuzzTargets.named(target))
        let seeds = FuzzReplayTests.inputs("Corpus", target)
        #expect(!seeds.isEmpty, "no seed corpus for \(target)")
        for url in seeds + FuzzReplayTests.inputs("Regressions", target) {
            let bytes = try [UInt8](Data(contentsOf: url))
            bytes.withUnsafeBytes { t.run($0) }
        }
    }

    @Test func everyCorpusFolderIsATarget() throws {
        for folder in ["Corpus", "Regressions"] {
            let dir = FuzzReplayTests.fuzzing.appendingPathComponent(folder).path
            for name in (try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? [] where !name.hasPrefix(".") && name != "README.md" {
                #expect(FuzzTargets.named(name) != nil, "\(folder)/\(name) names no fuzz target")
            }
        }
    }

    /// Every target survives the inputs a fuzzer tries first.
    @Test(arguments: FuzzTargets.all.map(\.name))
    func edgeInputs(target: String) throws {
        let t = try #require(FuzzTargets.named(target))
        for input: [UInt8] in [[], [0], [0xFF], [UInt8](repeating: 0x7B, count: 100), [UInt8](repeating: 0, count: 4096), Array("{}".utf8), Array("[".utf8)] {
            input.withUnsafeBytes { t.run($0) }
        }
    }
}
