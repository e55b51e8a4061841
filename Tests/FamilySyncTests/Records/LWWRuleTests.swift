import Testing
@testable import FamilySync

/// Every rule of docs/design.md §3's last-writer-wins, as a table. Each case runs
/// through the pure merge and through the store, which must agree.
@Suite struct LWWRuleTests {
    struct Case: CustomTestStringConvertible, Sendable {
        var name: String
        var local: String
        var remote: String
        /// The line expected to be kept.
        var kept: String
        var rule: LWW.Rule
        var testDescription: String { name }
    }

    static let now = "2026-12-01T00:00:00Z"
    static let a = "2026-11-30T10:00:00.000Z", b = "2026-11-30T10:00:00.001Z"

    static let cases: [Case] = [
        Case(name: "later remote wins", local: RT.line("r", a, "D1"), remote: RT.line("r", b, "D1", data: #"{"v":2}"#),
             kept: RT.line("r", b, "D1", data: #"{"v":2}"#), rule: .laterWins),
        Case(name: "later local wins", local: RT.line("r", b, "D1"), remote: RT.line("r", a, "D2", data: #"{"v":2}"#),
             kept: RT.line("r", b, "D1"), rule: .laterWins),
        Case(name: "a later tombstone wins", local: RT.line("r", a, "D1"), remote: RT.line("r", b, "D1", deleted: true),
             kept: RT.line("r", b, "D1", deleted: true), rule: .laterWins),
        Case(name: "tie: live remote beats local tombstone", local: RT.line("r", a, "D9", deleted: true), remote: RT.line("r", a, "D1"),
             kept: RT.line("r", a, "D1"), rule: .liveBeatsTombstone),
        Case(name: "tie: live local beats remote tombstone", local: RT.line("r", a, "D1"), remote: RT.line("r", a, "D9", deleted: true),
             kept: RT.line("r", a, "D1"), rule: .liveBeatsTombstone),
        Case(name: "tie: greater remote device wins", local: RT.line("r", a, "D1"), remote: RT.line("r", a, "D2", data: #"{"v":2}"#),
             kept: RT.line("r", a, "D2", data: #"{"v":2}"#), rule: .greaterDevice),
        Case(name: "tie: greater local device wins", local: RT.line("r", a, "D2"), remote: RT.line("r", a, "D1", data: #"{"v":2}"#),
             kept: RT.line("r", a, "D2"), rule: .greaterDevice),
        Case(name: "tie: device compared by bytes, lower case above upper", local: RT.line("r", a, "Z"), remote: RT.line("r", a, "a"),
             kept: RT.line("r", a, "a"), rule: .greaterDevice),
        Case(name: "tie: device compared by UTF-8 bytes, é above z", local: RT.line("r", a, "é"), remote: RT.line("r", a, "z"),
             kept: RT.line("r", a, "é"), rule: .greaterDevice),
        Case(name: "tie: a longer device with the same prefix wins", local: RT.line("r", a, "D1"), remote: RT.line("r", a, "D10"),
             kept: RT.line("r", a, "D10"), rule: .greaterDevice),
        Case(name: "tombstone ties go to the greater device", local: RT.line("r", a, "D1", deleted: true), remote: RT.line("r", a, "D2", deleted: true),
             kept: RT.line("r", a, "D2", deleted: true), rule: .greaterDevice),
        Case(name: "same version keeps the held one", local: RT.line("r", a, "D1", data: #"{"held":1}"#), remote: RT.line("r", a, "D1", data: #"{"other":1}"#),
             kept: RT.line("r", a, "D1", data: #"{"held":1}"#), rule: .sameVersion),
        Case(name: "clamp: a remote far in the future is pulled back and stored so",
             local: RT.line("r", "2026-12-01T00:04:00.000Z", "D9"), remote: RT.line("r", "2030-01-01T00:00:00.000Z", "D1"),
             kept: RT.line("r", "2026-12-01T00:05:00.000Z", "D1"), rule: .laterWins),
        Case(name: "clamp: a clamped remote loses to a later local (local is never clamped)",
             local: RT.line("r", "2026-12-01T00:06:00.000Z", "D1"), remote: RT.line("r", "2030-01-01T00:00:00.000Z", "D9"),
             kept: RT.line("r", "2026-12-01T00:06:00.000Z", "D1"), rule: .laterWins),
        Case(name: "clamp: exactly now + 5 minutes is not clamped", local: RT.line("r", a, "D1"),
             remote: RT.line("r", "2026-12-01T00:05:00.000Z", "D1", data: #"{"edge":1}"#),
             kept: RT.line("r", "2026-12-01T00:05:00.000Z", "D1", data: #"{"edge":1}"#), rule: .laterWins),
        Case(name: "clamp then tie: the clamped remote ties a local at now + 5 minutes and the device decides",
             local: RT.line("r", "2026-12-01T00:05:00.000Z", "D1"), remote: RT.line("r", "2027-01-01T00:00:00.000Z", "D2"),
             kept: RT.line("r", "2026-12-01T00:05:00.000Z", "D2"), rule: .greaterDevice),
        Case(name: "times compare in UTC whatever the offset",
             local: RT.line("r", "2026-11-30T11:00:00.002+01:00", "D1"), remote: RT.line("r", "2026-11-30T10:00:00.001Z", "D2"),
             kept: RT.line("r", "2026-11-30T10:00:00.002Z", "D1"), rule: .laterWins),
        Case(name: "sub-millisecond digits are truncated, so these tie",
             local: RT.line("r", "2026-11-30T10:00:00.0019Z", "D2"), remote: RT.line("r", "2026-11-30T10:00:00.001Z", "D1"),
             kept: RT.line("r", "2026-11-30T10:00:00.001Z", "D2"), rule: .greaterDevice),
        Case(name: "the winner is verbatim: spacing, key order, number text and unknown fields",
             local: RT.line("r", a, "D1"),
             remote: #"{ "zzz":{"n":1.50E+3,"s":"\u00e9"} , "deleted":false,"deviceId":"D1","modifiedAt":"2026-11-30T10:00:00.001Z","type":"receipt","id":"r" }"#,
             kept: #"{ "zzz":{"n":1.50E+3,"s":"\u00e9"} , "deleted":false,"deviceId":"D1","modifiedAt":"2026-11-30T10:00:00.001Z","type":"receipt","id":"r" }"#,
             rule: .laterWins),
        Case(name: "Unicode ids and data", local: RT.line("收据-ü", a, "D1", data: #"{"note":"Grüße 🎂"}"#),
             remote: RT.line("收据-ü", b, "D1", data: #"{"note":"日本語 ✓"}"#),
             kept: RT.line("收据-ü", b, "D1", data: #"{"note":"日本語 ✓"}"#), rule: .laterWins),
        Case(name: "an escaped id is the same id", local: RT.line("é", a, "D1"),
             remote: #"{"id":"\u00e9","type":"receipt","modifiedAt":"2026-11-30T10:00:00.001Z","deviceId":"D1","deleted":false}"#,
             kept: #"{"id":"\u00e9","type":"receipt","modifiedAt":"2026-11-30T10:00:00.001Z","deviceId":"D1","deleted":false}"#, rule: .laterWins),
    ]

    @Test(arguments: cases)
    func pureMerge(c: Case) throws {
        #expect(try RT.merge(c.local, c.remote, now: Self.now) == c.kept + "\n")
        let why = try RT.explain(c.local, c.remote, now: Self.now)
        #expect(why.count == 1)
        #expect(why.first?.1 == c.rule)
    }

    @Test(arguments: cases)
    func storeApply(c: Case) throws {
        let (store, dir) = try RT.store()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        _ = try RT.apply(store, c.local, now: "2027-06-01T00:00:00Z")  // held as is: no clamp applies
        var rules: [LWW.Rule] = []
        _ = try store.applyRemote([try Record(line: c.remote)], now: RT.t(Self.now)) { _, rule, _ in rules.append(rule) }
        #expect(try RT.export(store) == c.kept + "\n")
        #expect(rules == [c.rule])
    }

    @Test func onlyOneVersionIsNew() throws {
        let why = try RT.explain(RT.line("a", Self.a, "D"), RT.line("b", Self.a, "D"))
        #expect(why.map(\.0) == ["a", "b"])
        #expect(why.map(\.1) == [.new, .new])
        #expect(why.map(\.2) == [false, true])
    }

    @Test func outputIsSortedByIdBytes() throws {
        let ids = ["b", "a", "Z", "é", "z", "日本", "a0", "", "aa", "\u{7F}"].filter { !$0.isEmpty }
        let local = ids.prefix(5).map { RT.line($0, Self.a, "D") }.joined(separator: "\n")
        let remote = ids.dropFirst(5).map { RT.line($0, Self.a, "D") }.joined(separator: "\n")
        let out = try RT.merge(local, remote).split(separator: "\n").map { try Record(line: String($0)).id }
        #expect(out == ids.sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) })
    }

    @Test func duplicatesInOneInputFollowTheRule() throws {
        // A change log: three versions of r in LOCAL, in any order; the latest wins.
        let v1 = RT.line("r", "2026-11-30T10:00:00.000Z", "D1")
        let v2 = RT.line("r", "2026-11-30T11:00:00.000Z", "D1", deleted: true)
        let v3 = RT.line("r", "2026-11-30T11:00:00.000Z", "D1", data: #"{"edit":"after delete"}"#)
        for order in [[v1, v2, v3], [v3, v2, v1], [v2, v3, v1]] {
            #expect(try RT.merge(order.joined(separator: "\n"), "") == v3 + "\n")
            #expect(try RT.merge("", order.joined(separator: "\n")) == v3 + "\n")
        }
        // The same version twice inside one input: the first one read is held.
        let same1 = RT.line("s", Self.a, "D1", data: #"{"first":1}"#), same2 = RT.line("s", Self.a, "D1", data: #"{"second":1}"#)
        #expect(try RT.merge(same1 + "\n" + same2, "") == same1 + "\n")
    }

    @Test func clampAppliesToRemoteOnly() throws {
        let future = RT.line("r", "2031-01-01T00:00:00.000Z", "D1")
        #expect(try RT.merge(future, "") == future + "\n")
        #expect(try RT.merge("", future) == RT.line("r", "2026-12-01T00:05:00.000Z", "D1") + "\n")
    }

    @Test func blankLinesAndCRLFAreAccepted() throws {
        let l = RT.line("a", Self.a, "D") + "\r\n\n   \n" + RT.line("b", Self.a, "D") + "\r\n"
        #expect(try RT.merge(l, "") == RT.line("a", Self.a, "D") + "\n" + RT.line("b", Self.a, "D") + "\n")
    }

    @Test func badLineNamesFileLineAndField() throws {
        let good = RT.line("a", Self.a, "D")
        let bad = #"{"id":"b","type":"t","modifiedAt":"2026-11-30T10:00:00Z","deviceId":"D","deleted":"yes"}"#
        let remote = try #require(throws: RecordLineError.self) { try RT.merge(good, good + "\n\n" + bad) }
        #expect(remote.file == "REMOTE" && remote.line == 3 && remote.problem.field == "deleted")
        #expect(remote.description == "REMOTE:3: deleted: not true or false")
        // Both inputs bad: the first in input order (LOCAL) is the one reported.
        let local = try #require(throws: RecordLineError.self) { try RT.merge(bad, "also bad") }
        #expect(local.file == "LOCAL" && local.line == 1)
        #expect(local.description == "LOCAL:1: deleted: not true or false")
    }
}

import Foundation
