import Foundation
import Testing
import FamilySync

/// Looking at data: export filters, and why two devices disagree.
@Suite struct LookingAtDataTests {
    static func rec(_ id: String, type: String = "receipt", at: String = "2026-11-01T00:00:00Z", device: String = "A",
                    deleted: Bool = false, data: String = "{}") -> String {
        "{\"id\":\"\(id)\",\"type\":\"\(type)\",\"modifiedAt\":\"\(at)\",\"deviceId\":\"\(device)\",\"deleted\":\(deleted),\"data\":\(deleted ? "null" : data)}"
    }

    static func ids(_ r: ToolResult) -> [String] { r.lines.compactMap { try? JSONParser.parse($0)["id"]?.stringValue } }

    @Test func exportFiltersByIDTypeAndLiveOrDeleted() throws {
        let dir = TempDir()
        let db = dir.file("s.db")
        let input = [Self.rec("r-1"), Self.rec("r-2", deleted: true), Self.rec("b-1", type: "budget"), Self.rec("b-2", type: "budget", deleted: true),
                     Self.rec("r-3")].joined(separator: "\n") + "\n"
        #expect(try Tools.run("merge-records", ["--db", db], input: input).status == 0)
        func export(_ args: [String]) throws -> [String] {
            let r = try Tools.run("merge-records", ["--db", db, "--export"] + args)
            #expect(r.status == 0, "\(r.err)")
            return Self.ids(r)
        }
        #expect(try export([]) == ["b-1", "b-2", "r-1", "r-2", "r-3"])
        #expect(try export(["--type", "receipt"]) == ["r-1", "r-2", "r-3"])
        #expect(try export(["--type", "receipt", "--live"]) == ["r-1", "r-3"])
        #expect(try export(["--deleted"]) == ["b-2", "r-2"])
        #expect(try export(["--id", "r-3", "--id", "b-1"]) == ["b-1", "r-3"])
        #expect(try export(["--id=r-2", "--live"]) == [])
        #expect(try export(["--type", "budget", "--since", "0"]) == ["b-1", "b-2"])
        // Filters need --export, and --live excludes --deleted.
        for bad in [["--type", "receipt"], ["--export", "--live", "--deleted"], ["--id", "x", "--stamp"]] {
            let r = try Tools.run("merge-records", ["--db", db] + bad, input: "")
            #expect(r.status == 64, "\(bad): \(r.err)")
        }
    }

    @Test func diffSaysForEachDifferingIDWhichWinsAndByWhichRule() throws {
        let dir = TempDir()
        let owner = dir.file("owner.db")
        let ownerSide = [Self.rec("same"), Self.rec("later", at: "2026-11-01T00:00:00Z", data: "{\"v\":1}"),
                         Self.rec("tie-live", at: "2026-11-02T00:00:00Z", device: "A", deleted: true),
                         Self.rec("tie-device", at: "2026-11-03T00:00:00Z", device: "A", data: "{\"v\":\"a\"}"),
                         Self.rec("stuck", at: "2026-11-04T00:00:00Z", device: "A", data: "{\"v\":1}"),
                         Self.rec("only-owner")]
        let kidSide = [Self.rec("same"), Self.rec("later", at: "2026-11-05T00:00:00Z", device: "B", data: "{\"v\":2}"),
                       Self.rec("tie-live", at: "2026-11-02T00:00:00Z", device: "B"),
                       Self.rec("tie-device", at: "2026-11-03T00:00:00Z", device: "B", data: "{\"v\":\"b\"}"),
                       Self.rec("stuck", at: "2026-11-04T00:00:00Z", device: "A", data: "{\"v\":2}"),
                       Self.rec("only-kid")]
        #expect(try Tools.run("merge-records", ["--db", owner], input: ownerSide.joined(separator: "\n") + "\n").status == 0)
        let kidExport = dir.write("kid.ndjson", kidSide.joined(separator: "\n") + "\n")
        let r = try Tools.run("merge-records", ["--diff", owner, kidExport])
        #expect(r.status == 1, "\(r.err)")
        let lines = try r.lines.map { try JSONParser.parse($0) }
        let byID = Dictionary(uniqueKeysWithValues: lines.map { ($0["id"]!.stringValue!, $0) })
        #expect(lines.map { $0["id"]!.stringValue! } == ["later", "only-kid", "only-owner", "stuck", "tie-device", "tie-live"], "sorted, 'same' left out")
        func verdict(_ id: String) -> (JSONValue?, String?) { (byID[id]?["winner"], byID[id]?["rule"]?.stringValue) }
        #expect(verdict("later") == (.string("b"), "later-wins"))
        #expect(verdict("tie-live") == (.string("b"), "live-beats-tombstone"))
        #expect(verdict("tie-device") == (.string("b"), "greater-device"))
        #expect(verdict("only-owner") == (.string("a"), "new"))
        #expect(verdict("only-kid") == (.string("b"), "new"))
        // Same time, device and deleted, other bytes: each keeps its own; syncing never makes them agree.
        #expect(verdict("stuck") == (.null, "same-version"))
        #expect(byID["later"]?["a"]?["data"]?["v"]?.int64Value == 1 && byID["later"]?["b"]?["data"]?["v"]?.int64Value == 2)
        #expect(byID["only-kid"]?["a"] == .null)

        // Two stores work alike, and a store against its own export agrees (exit 0, nothing printed).
        let kid = dir.file("kid.db")
        #expect(try Tools.run("merge-records", ["--db", kid, kidExport]).status == 0)
        let stores = try Tools.run("merge-records", ["--diff", owner, kid])
        #expect(stores.status == 1 && stores.out == r.out, "\(stores.err)")
        let own = dir.write("own.ndjson", "")
        #expect(try Tools.run("merge-records", ["--db", owner, "--export"], stdoutPath: own).status == 0)
        let agree = try Tools.run("merge-records", ["--diff", owner, own])
        #expect(agree.status == 0 && agree.out.isEmpty, "\(agree.out)\(agree.err)")
        // And the verdict is what a sync really does: merging the kid's records into the owner's store.
        let apply = try Tools.run("merge-records", ["--db", owner, kidExport])
        #expect(apply.status == 0)
        let after = try Tools.run("merge-records", ["--diff", owner, kidExport])
        let left = Self.ids(after)
        #expect(left == ["only-owner", "stuck"], "\(after.out)")
    }

    @Test func diffUsageAndBadInput() throws {
        let dir = TempDir()
        let bad = dir.write("bad.ndjson", "{\"id\":1}\n")
        let good = dir.write("good.ndjson", Self.rec("x") + "\n")
        #expect(try Tools.run("merge-records", ["--diff", good]).status == 64)
        #expect(try Tools.run("merge-records", ["--diff", "-", "-"]).status == 64)
        #expect(try Tools.run("merge-records", ["--diff", "--db", dir.file("s.db"), good, good]).status == 64)
        let r = try Tools.run("merge-records", ["--diff", good, bad])
        #expect(r.status == 65)
        #expect(r.err.hasPrefix("merge-records: \(bad):1: "), "\(r.err)")
        #expect(try Tools.run("merge-records", ["--diff", good, dir.file("missing")]).status == 66)
    }
}
