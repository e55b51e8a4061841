import Testing
@testable import FamilySync

/// The record contract's validation: every malformed, truncated, oversized and
/// hostile line names its field and problem.
@Suite struct RecordScannerTests {
    static let ok = #"{"id":"r-1","type":"receipt","modifiedAt":"2026-11-30T10:00:00.000Z","deviceId":"D1","deleted":false"#

    @Test func validRecordKeepsItsBytes() throws {
        let line = #"{ "type":"receipt", "id":"r-1" ,"x":[1,2.5e3,-0.1,{"k":null}],"modifiedAt":"2026-11-30T10:00:00.000Z","deviceId":"D1","deleted":false,"data":{"a":"ü\n\u00e9"},"photos":[]}"#
        let r = try Record(line: line)
        #expect(r.id == "r-1")
        #expect(r.type == "receipt")
        #expect(r.deviceID == "D1")
        #expect(r.deleted == false)
        #expect(r.modifiedAt == RT.t("2026-11-30T10:00:00Z"))
        #expect(r.line == line)
    }

    @Test func escapedFieldsAreDecoded() throws {
        let r = try Record(line: #"{"i\u0064":"r\u002d1","type":"t","modifiedAt":"2026-11-30T10:00:00.000Z","deviceId":"\u00e9","deleted":true}"#)
        #expect(r.id == "r-1")
        #expect(r.deviceID == "é")
        #expect(r.deleted)
    }

    @Test func nonCanonicalTimeIsRewrittenInPlace() throws {
        let r = try Record(line: #"{"id":"a","type":"t","modifiedAt":"2026-11-30T12:00:00.1234+02:00","deviceId":"D","deleted":false,"z":1}"#)
        #expect(r.line == #"{"id":"a","type":"t","modifiedAt":"2026-11-30T10:00:00.123Z","deviceId":"D","deleted":false,"z":1}"#)
    }

    @Test func photosAreRead() throws {
        let h = String(repeating: "ab", count: 32)
        let r = try Record(line: Self.ok + #","photos":["\#(h)", "\#(h)"]}"#)
        #expect(r.photos == [h, h])
    }

    @Test(arguments: [
        ("", "empty line"),
        ("   ", "empty line"),
        ("[1,2]", "not a JSON object"),
        ("\"text\"", "not a JSON object"),
        ("nonsense", "not JSON: invalid literal at byte 1"),
        ("{", "not JSON: unexpected end of line at byte 2"),
        (#"{"id":"a""#, "not JSON: unexpected end of line at byte 10"),
        (#"{"id":"a}"#, "id: unterminated string at byte 10"),
        (#"{"id":"a"} x"#, "not JSON: unexpected data after the object at byte 12"),
        (#"{"id" "a"}"#, "not JSON: expected ':' at byte 7"),
        (#"{"type":"t","modifiedAt":"2026-11-30T10:00:00Z","deviceId":"D","deleted":false}"#, "id: missing"),
        (#"{"id":"","type":"t","modifiedAt":"2026-11-30T10:00:00Z","deviceId":"D","deleted":false}"#, "id: empty"),
        (#"{"id":7,"type":"t","modifiedAt":"2026-11-30T10:00:00Z","deviceId":"D","deleted":false}"#, "id: not a string"),
        (#"{"id":"a","modifiedAt":"2026-11-30T10:00:00Z","deviceId":"D","deleted":false}"#, "type: missing"),
        (#"{"id":"a","type":null,"modifiedAt":"2026-11-30T10:00:00Z","deviceId":"D","deleted":false}"#, "type: not a string"),
        (#"{"id":"a","type":"t","deviceId":"D","deleted":false}"#, "modifiedAt: missing"),
        (#"{"id":"a","type":"t","modifiedAt":"yesterday","deviceId":"D","deleted":false}"#, "modifiedAt: not an RFC 3339 time: \"yesterday\""),
        (#"{"id":"a","type":"t","modifiedAt":"2026-02-30T10:00:00Z","deviceId":"D","deleted":false}"#, "modifiedAt: not an RFC 3339 time: \"2026-02-30T10:00:00Z\""),
        (#"{"id":"a","type":"t","modifiedAt":"2026-11-30T10:00:00Z","deleted":false}"#, "deviceId: missing"),
        (#"{"id":"a","type":"t","modifiedAt":"2026-11-30T10:00:00Z","deviceId":"","deleted":false}"#, "deviceId: empty"),
        (#"{"id":"a","type":"t","modifiedAt":"2026-11-30T10:00:00Z","deviceId":"D"}"#, "deleted: missing"),
        (#"{"id":"a","type":"t","modifiedAt":"2026-11-30T10:00:00Z","deviceId":"D","deleted":"no"}"#, "deleted: not true or false"),
        (#"{"id":"a","type":"t","modifiedAt":"2026-11-30T10:00:00Z","deviceId":"D","deleted":0}"#, "deleted: not true or false"),
        (ok + #","data":[1]}"#, "data: not an object"),
        (ok + #","photos":"abc"}"#, "photos: not an array"),
        (ok + #","photos":["abc"]}"#, "photos[0]: not a lowercase SHA-256 hex string"),
        (ok + #","photos":["\#(String(repeating: "A", count: 64))"]}"#, "photos[0]: not a lowercase SHA-256 hex string"),
        (ok + #","photos":[null]}"#, "photos[0]: not a lowercase SHA-256 hex string"),
        (ok + #","id":"b"}"#, "id: appears twice"),
        (ok + #","x":1,"x":2}"#, "x: appears twice"),
        (ok + #","x":1,"\u0078":2}"#, "x: appears twice"),
        (ok + #","data":{"a":01}}"#, "data: expected ',' or '}' at byte 115"),
        (ok + #","data":{"a":1.}}"#, "data: invalid number at byte 116"),
        (ok + #","data":{"a":"\x"}}"#, "data: invalid escape at byte 115"),
        (ok + #","data":{"a":"\ud800"}}"#, "data: unpaired surrogate at byte 121"),
        (ok + #","data":{"a":tru}}"#, "data: invalid literal at byte 114"),
        (ok + ",\"data\":{\"a\":\"tab\there\"}}", "data: control character in string at byte 118"),
    ])
    func rejects(line: String, expected: String) {
        #expect(throws: RecordError.self) { try Record(line: line) }
        do { _ = try Record(line: line) } catch {
            #expect(error.description == expected)
        }
    }

    /// design.md §2, the one grammar of a record line (files and the wire):
    /// the keys of every object are unique, `data` and what it nests
    /// included, however they are spelled; whitespace is space or tab, so a
    /// CR between tokens is refused wherever it stands.
    @Test(arguments: [
        (ok + #","data":{"total":"1","total":"2"}}"#, "data", "key 'total' appears twice in one object"),
        (ok + #","data":{"a":1,"\u0061":2}}"#, "data", "key 'a' appears twice in one object"),
        (ok + #","data":{"x":{"k":1,"j":2,"k":3}}}"#, "data", "key 'k' appears twice in one object"),
        (ok + #","extra":[{"k":1,"k":1}]}"#, "extra", "key 'k' appears twice in one object"),
        (ok + ",\"data\":{" + (0...40).map { "\"k\($0)\":\($0)" }.joined(separator: ",") + ",\"k7\":0}}", "data", "key 'k7' appears twice in one object"),
        (ok + ",\r\"data\":null}", nil, "not JSON: a CR (0x0D) between tokens, which a record line never holds"),
        (ok + ",\"data\":{\"a\":\r1}}", "data", "a CR (0x0D) between tokens, which a record line never holds"),
        (ok + ",\"data\":{\"a\":1\r}}", "data", "a CR (0x0D) between tokens, which a record line never holds"),
    ] as [(String, String?, String)])
    func oneGrammarForEveryObjectInTheLine(line: String, field: String?, problem: String) {
        do {
            _ = try Record(line: line)
            Issue.record("accepted: \(line)")
        } catch {
            #expect(error.field == field)
            #expect(error.problem.hasPrefix(problem), "\(error.problem)")
        }
    }

    /// The same key in two different objects, and many distinct keys, are fine.
    @Test func keysRepeatOnlyAcrossObjects() throws {
        let many = (0...200).map { "\"k\($0)\":{\"v\":\($0)}" }.joined(separator: ",")
        for line in [Self.ok + #","data":{"a":{"v":1},"b":{"v":2},"v":3}}"#, Self.ok + ",\"data\":{\(many)}}", Self.ok + ",\t\"data\":{ \"a\" :\t1 }}"] {
            #expect(throws: Never.self) { try Record(line: line) }
        }
    }

    @Test func rejectsInvalidUTF8() {
        for bad: [UInt8] in [[0xC3], [0xC0, 0xAF], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80], [0xFF], [0xE2, 0x82]] {
            var bytes = Array(#"{"id":"a","type":"t","modifiedAt":"2026-11-30T10:00:00Z","deviceId":"D","deleted":false,"data":{"a":""#.utf8)
            bytes += bad
            bytes += Array("\"}}".utf8)
            let err = bytes.withUnsafeBufferPointer { b -> RecordError? in
                do throws(RecordError) { _ = try RecordScanner.scan(b.baseAddress!, start: 0, end: b.count); return nil } catch { return error }
            }
            #expect(err?.field == "data")
            #expect(err?.problem.hasPrefix("invalid UTF-8 in string") == true)
        }
    }

    @Test func deepNestingIsRefused() {
        let deep = String(repeating: "[", count: 100) + String(repeating: "]", count: 100)
        #expect(throws: RecordError(field: "data", "nesting deeper than 64 at byte 176")) {
            try Record(line: Self.ok + ",\"data\":{\"x\":\(deep)}}")
        }
        // Just inside the limit is fine.
        let fits = String(repeating: "[", count: 60) + String(repeating: "]", count: 60)
        #expect(throws: Never.self) { try Record(line: Self.ok + ",\"data\":{\"x\":\(fits)}}") }
    }

    @Test func oversizedLineIsRefused() {
        let big = Self.ok + ",\"data\":{\"x\":\"" + String(repeating: "a", count: Record.maxLineBytes) + "\"}}"
        #expect(throws: RecordError(field: nil, "line longer than \(Record.maxLineBytes) bytes")) { try Record(line: big) }
    }

    @Test func localEditsMayOmitTheVersion() throws {
        let r = try Record(line: #"{"id":"a","type":"t","data":{}}"#, mode: .localEdit)
        #expect(r.id == "a")
        #expect(throws: RecordError(field: "modifiedAt", "missing")) { try Record(line: #"{"id":"a","type":"t","data":{}}"#) }
        let stamped = r.restamped(RT.t("2026-11-30T10:00:00Z"), deviceID: "ME")
        #expect(stamped.line == #"{"id":"a","type":"t","data":{},"modifiedAt":"2026-11-30T10:00:00.000Z","deviceId":"ME","deleted":false}"#)
        #expect(try Record(line: stamped.line).deviceID == "ME")
    }
}
