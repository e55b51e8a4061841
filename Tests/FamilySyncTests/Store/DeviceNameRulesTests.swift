import Foundation
import Testing
@testable import FamilySync

/// docs/protocol.md §4.1, device names: the 64-byte limit holds as received
/// (longer is refused), the stored name is the received one made safe
/// (Cc, Cf but U+200D, Zl, Zp, Co, Cn each become U+FFFD, then white space
/// is trimmed, then whole characters go from the end while it is over 64 bytes), and a
/// statement entry without a name clears the name held for that device,
/// except the receiving member's own.
@Suite struct DeviceNameRulesTests {
    @Test func namesAreMadeSafeCharacterByCharacter() {
        #expect(DeviceName.neutralised("  Anna\u{9B}31m\u{1B}\u{7F} ") == "Anna\u{FFFD}31m\u{FFFD}\u{FFFD}")
        #expect(DeviceName.neutralised("a\u{2028}b\u{2029}c\u{202E}d\u{200B}e\u{E000}f") == "a\u{FFFD}b\u{FFFD}c\u{FFFD}d\u{FFFD}e\u{FFFD}f")
        // The zero-width joiner of an emoji sequence stays.
        #expect(DeviceName.neutralised("👩\u{200D}👧 tablet") == "👩\u{200D}👧 tablet")
        // Replaced first, then trimmed: a tab is a control character, spaces are not.
        #expect(DeviceName.neutralised(" \t ") == "\u{FFFD}")
        // Nothing left: no name.
        #expect(DeviceName.neutralised("   ") == nil)
        // 64 bytes as received, grown by replacement (1 byte to 3), cut by whole characters from the end to at most 64.
        let grown = DeviceName.neutralised(String(repeating: "a", count: 62) + "\u{1}b")
        #expect(grown == String(repeating: "a", count: 62))
    }

    @Test func joinNamesLongerThan64BytesAsReceivedAreAProtocolError() throws {
        func join(_ name: String) -> Frame {
            Frame(.join, Array(JSONValue.object([("protocol", .int(Int64(SyncProtocol.version))), ("device", .string("11111111-2222-4333-8444-555555555555")),
                                                ("clock", .string("2026-12-01T10:00:00.000Z")), ("name", .string(name))]).serialized.utf8))
        }
        #expect(try JoinMessage(join(String(repeating: "é", count: 32))).name == String(repeating: "é", count: 32))
        expectProtocolError("JOIN field 'name': longer than 64 bytes") { _ = try JoinMessage(join(String(repeating: "é", count: 32) + "x")) }
        #expect(try JoinMessage(join("   ")).name == nil)
    }

    /// The owner names no one; a new statement (a second admission) reaches
    /// the member: the owner's name it held goes, its own name stays.
    @Test func anEntryWithoutANameClearsAllButTheMembersOwn() throws {
        let h = try InProcessHousehold(members: 1, start: Timestamp(rfc3339: "2026-12-01T10:00:00.000Z")!)
        let m = h.members[0]
        let s = try Store(path: m.path)
        try s.write {
            try s.setDeviceName(m.id, "Mine")
            try s.setDeviceName(h.owner.id, "Boss")
        }
        _ = try h.admit(name: "m1")
        try h.sync(m)
        let after = try Store(path: m.path)
        #expect(try after.device(m.id)?.name == "Mine")
        #expect(try after.device(h.owner.id)?.name == nil)
    }
}
