import Testing
@testable import FamilySync

/// Every parser of outside bytes is linear in its input: an object or line
/// of many keys, or a frame announcing more than a notice may be, costs
/// bounded work and is refused when it breaks a rule.
@Suite struct BoundedParsingTests {
    static func object(keys n: Int, duplicateLast: Bool) -> String {
        var s = "{"
        s.reserveCapacity(n * 12)
        for i in 0..<n {
            if i > 0 { s += "," }
            s += "\"k\(duplicateLast && i == n - 1 ? 0 : i)\":\(i % 10)"
        }
        return s + "}"
    }

    /// 200,000 keys: parsed in one pass; the same with the last key repeating the first is refused.
    @Test func jsonObjectOfManyKeysIsLinear() throws {
        let v = try JSONParser.parse(Self.object(keys: 200_000, duplicateLast: false))
        #expect(v.objectValue?.count == 200_000)
        #expect(throws: JSONParseError.self) { try JSONParser.parse(Self.object(keys: 200_000, duplicateLast: true)) }
        do {
            _ = try JSONParser.parse(Self.object(keys: 200_000, duplicateLast: true))
        } catch let e as JSONParseError {
            #expect(e.message.hasPrefix("duplicate key \"k0\""))
        } catch {
            Issue.record("unexpected \(error)")
        }
    }

    /// A record line near the 1 MiB limit made of unknown keys: accepted;
    /// with one key twice (spelled once with an escape), refused naming it.
    @Test func recordLineOfManyKeysIsLinear() throws {
        let head = #"{"id":"r","type":"t","modifiedAt":"2026-11-30T10:00:00.000Z","deviceId":"D","deleted":false"#
        var many = head
        for i in 0..<90_000 { many += ",\"x\(i)\":1" }
        let r = try Record(line: many + "}")
        #expect(r.id == "r")
        #expect(many.utf8.count < Record.maxLineBytes)
        let dup = many + #","\u0078123":2}"#
        #expect(throws: RecordError.self) { try Record(line: dup) }
        do { _ = try Record(line: dup) } catch {
            #expect(error.field == "x123")
            #expect(error.description.contains("appears twice"))
        }
    }

    /// A decoder limited to notices refuses a 2 MiB frame from its header alone.
    @Test func noticeDecoderRefusesAnOversizedFrameAtItsHeader() {
        var d = FrameDecoder()
        d.maxPayload = Frame.maxNoticeBytes
        var header: [UInt8] = []
        Frame.appendHeader(.busy, length: 2 << 20, to: &header)
        header.withUnsafeBytes { d.append($0) }
        #expect(throws: ProtocolError.self) { _ = try d.next() }
        var ok = FrameDecoder()
        ok.maxPayload = Frame.maxNoticeBytes
        var small: [UInt8] = []
        Frame.appendHeader(.busy, length: 2, to: &small)
        small += Array("{}".utf8)
        small.withUnsafeBytes { ok.append($0) }
        let f = try? ok.next()
        #expect(f?.type == FrameType.busy)
    }
}
