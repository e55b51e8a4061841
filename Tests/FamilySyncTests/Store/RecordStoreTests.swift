import Foundation
import Testing
@testable import FamilySync

/// The store's record path: summaries, all-or-nothing, stamping, photo
/// references and the change cursor.
@Suite struct RecordStoreTests {
    static let a = "2026-11-30T10:00:00.000Z", b = "2026-11-30T10:00:00.001Z"

    @Test func summaryCountsEachOutcome() throws {
        let (store, dir) = try RT.store()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let held = [RT.line("new-later", Self.a, "D1"), RT.line("older", Self.b, "D1"), RT.line("same", Self.a, "D1"),
                    RT.line("dead", Self.a, "D1", deleted: true), RT.line("live", Self.a, "D1")]
        _ = try RT.apply(store, held.joined(separator: "\n"))
        let incoming = [RT.line("new-later", Self.b, "D2"), RT.line("older", Self.a, "D2"), RT.line("same", Self.a, "D1"),
                        RT.line("dead", Self.a, "D1"), RT.line("live", Self.b, "D1", deleted: true),
                        RT.line("future", "2030-01-01T00:00:00Z", "D3"), RT.line("brand-new", Self.a, "D3")]
        let s = try RT.apply(store, incoming.joined(separator: "\n"))
        #expect(s.received == 7)
        #expect(s.applied == 5)  // new-later, dead (resurrected), live (deleted), future, brand-new
        #expect(s.keptLocal == 1)
        #expect(s.unchanged == 1)
        #expect(s.clamped == 1)
        #expect(s.resurrected == 1)
        #expect(s.deleted == 1)
        #expect(s.json.serialized == #"{"received":7,"applied":5,"keptLocal":1,"unchanged":1,"clamped":1,"resurrected":1,"deleted":1,"purged":0}"#)
        // The clamped version is stored clamped.
        #expect(try RT.export(store).contains(RT.line("future", "2026-12-01T00:05:00.000Z", "D3")))
    }

    static let badInputs: [(String, String)] = [
        ("not json", "3: not JSON: invalid literal at byte 1"),
        (#"{"type":"t","modifiedAt":"2026-11-30T10:00:00Z","deviceId":"D","deleted":false}"#, "3: id: missing"),
        (#"{"id":"x","type":"t","modifiedAt":"2026-13-30T10:00:00Z","deviceId":"D","deleted":false}"#, "3: modifiedAt: not an RFC 3339 time: \"2026-13-30T10:00:00Z\""),
        (#"{"id":"x","type":"t","modifiedAt":"2026-11-30T10:00:00Z","deviceId":"D","deleted":null}"#, "3: deleted: not true or false"),
        (#"{"id":"x","type":"t","modifiedAt":"2026-11-30T10:00:00Z","deviceId":"D","deleted":false,"photos":["xyz"]}"#, "3: photos[0]: not a lowercase SHA-256 hex string"),
        (#"{"id":"x","type":"t","modifiedAt":"2026-11-30T10:00:00Z","deviceId":"D","deleted":false,"data":{"#, "3: data: unexpected end of line at byte 97"),
        ("{\"id\":\"x\",\"data\":\"" + String(repeating: "x", count: Record.maxLineBytes) + "\"}", "3: line longer than 1048576 bytes"),
    ]

    @Test(arguments: badInputs)
    func badLineChangesNothing(bad: String, expected: String) throws {
        let (store, dir) = try RT.store()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        _ = try RT.apply(store, RT.line("kept", Self.a, "D1"))
        let digest = try store.recordStateDigest(), seq = try store.currentChangeSeq
        // Two good lines (one new, one replacing) before the bad one: none of them may stay.
        let input = RT.line("other", Self.a, "D1") + "\n" + RT.line("kept", Self.b, "D1") + "\n" + bad + "\n" + RT.line("after", Self.a, "D1")
        do {
            _ = try RT.apply(store, input)
            Issue.record("a bad line was accepted")
        } catch let e as RecordLineError {
            #expect(e.kind == .line)
            #expect(e.description.hasSuffix(".ndjson:" + expected), "\(e)")
        }
        #expect(try store.recordStateDigest() == digest)
        #expect(try store.currentChangeSeq == seq)
        #expect(try store.recordCounts().live == 1)
    }

    @Test func stampingMakesLocalEdits() throws {
        let (store, dir) = try RT.store()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let me = try store.deviceID
        _ = try RT.apply(store, #"{"id":"r","type":"receipt","data":{"v":1},"x":"kept"}"#, stamping: true, now: "2026-12-01T00:00:00Z")
        #expect(try RT.export(store) == #"{"id":"r","type":"receipt","data":{"v":1},"x":"kept","modifiedAt":"2026-12-01T00:00:00.000Z","deviceId":"\#(me)","deleted":false}"# + "\n")
        // Given values are replaced, not trusted.
        let s = try RT.apply(store, #"{"id":"r","type":"receipt","modifiedAt":"2020-01-01T00:00:00Z","deviceId":"X","deleted":true}"#, stamping: true, now: "2026-12-01T00:00:00Z")
        #expect(s.applied == 1 && s.deleted == 1)
        // Same --now twice: the second edit still supersedes the first, 1 ms later.
        #expect(try RT.export(store) == #"{"id":"r","type":"receipt","modifiedAt":"2026-12-01T00:00:00.001Z","deviceId":"\#(me)","deleted":true}"# + "\n")
        // A held version later than now (a fast clock elsewhere) is superseded too.
        _ = try RT.apply(store, RT.line("f", "2026-12-01T00:04:00.000Z", "OTHER"), now: "2026-12-01T00:00:00Z")
        _ = try RT.apply(store, #"{"id":"f","type":"receipt","data":{"v":2}}"#, stamping: true, now: "2026-12-01T00:00:00Z")
        #expect(try RT.export(store).contains(#""modifiedAt":"2026-12-01T00:04:00.001Z","deviceId":"\#(me)""#))
        // The public API agrees.
        let r = try Record(line: #"{"id":"g","type":"t"}"#, mode: .localEdit)
        _ = try store.applyLocalEdits([r], now: RT.t("2026-12-02T00:00:00Z"))
        #expect(try RT.export(store).contains(#"{"id":"g","type":"t","modifiedAt":"2026-12-02T00:00:00.000Z","deviceId":"\#(me)","deleted":false}"#))
    }

    @Test func photoReferencesFollowTheWinner() throws {
        let (store, dir) = try RT.store()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let bytes: [UInt8] = Array("a receipt photo".utf8)
        let h = Hex.encode(SHA256.hash(bytes))
        let other = String(repeating: "0", count: 64)
        _ = try RT.apply(store, RT.line("r", Self.a, "D1", extra: #","photos":["\#(h)","\#(other)","\#(h)"]"#))
        #expect(try store.wantedPhotos() == [other, h].sorted())
        #expect(try store.addPhoto(bytes, now: RT.t(Self.a)) == h)
        #expect(try store.hasPhoto(h))
        #expect(try store.photo(h) == bytes)
        #expect(try store.wantedPhotos() == [other])
        #expect(try store.addVerifiedPhoto(bytes, sha256: other, now: RT.t(Self.a)) == false)
        // A tombstone drops the references.
        _ = try RT.apply(store, RT.line("r", Self.b, "D1", deleted: true))
        #expect(try store.wantedPhotos() == [])
        #expect(try store.db.scalarInt("SELECT count(*) FROM record_photos") == 0)
    }

    @Test func changesAreExportedFromACursor() throws {
        let (store, dir) = try RT.store()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        _ = try RT.apply(store, [RT.line("c", Self.a, "D"), RT.line("a", Self.a, "D"), RT.line("b", Self.a, "D")].joined(separator: "\n"))
        let start = try store.currentChangeSeq
        #expect(start == 3)
        _ = try RT.apply(store, RT.line("b", Self.b, "D"))
        let (lines, last) = try store.exportRecords(afterSeq: start, limit: 10)
        #expect(lines == [RT.line("b", Self.b, "D")])
        #expect(last == 4)
        #expect(try store.currentChangeSeq == 4)
        // Paging through everything in change order.
        var seen: [String] = []
        var cursor: Int64 = 0
        while true {
            let page = try store.exportRecords(afterSeq: cursor, limit: 2)
            if page.lines.isEmpty { break }
            seen += page.lines.map { try! Record(line: $0).id }
            cursor = page.lastSeq
        }
        #expect(seen.count == 3)
        #expect(Set(seen) == ["a", "b", "c"])
        #expect(seen.last == "b")
        // A version that loses changes nothing, so it is not a change.
        _ = try RT.apply(store, RT.line("a", "2020-01-01T00:00:00Z", "D"))
        #expect(try store.currentChangeSeq == 4)
    }

    @Test func applyRemoteExplainsAndValidates() throws {
        let (store, dir) = try RT.store()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var heard: [(String, LWW.Rule, Bool)] = []
        let recs = try [RT.line("x", Self.a, "D1"), RT.line("x", Self.a, "D2"), RT.line("x", Self.a, "D0")].map { try Record(line: $0) }
        let s = try store.applyRemote(recs, now: RT.t("2026-12-01T00:00:00Z")) { heard.append(($0, $1, $2)) }
        #expect(heard.map(\.1) == [.new, .greaterDevice, .greaterDevice])
        #expect(heard.map(\.2) == [true, true, false])
        #expect(s.applied == 2 && s.keptLocal == 1)
        #expect(try RT.export(store) == RT.line("x", Self.a, "D2") + "\n")
    }
}
