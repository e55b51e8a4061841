import Testing
@testable import FamilySync

@Suite struct JSONTests {
    @Test(arguments: [
        #"{"a":1,"b":[true,false,null],"c":{"d":"e"}}"#,
        #"{"z":1,"a":2}"#,
        #"["\u00e9",-0.5e10,"\ud83d\ude00"]"#,
        #""plain""#,
    ])
    func roundTripKeepsOrder(text: String) throws {
        let v = try JSONParser.parse(text)
        let again = try JSONParser.parse(v.serialized)
        #expect(v == again)
        if text.hasPrefix("{\"z\"") { #expect(v.serialized == text) }
    }

    @Test(arguments: ["", "{", "[1,]", "{\"a\"}", "{\"a\":1,}", "01", "1.", "\"\\x\"", "\"\u{01}\"", "nul", "[1] 2",
                      "{\"a\":1,\"a\":2}", "\"\\ud800\"", String(repeating: "[", count: 100) + String(repeating: "]", count: 100)])
    func rejects(text: String) {
        #expect(throws: JSONParseError.self) { try JSONParser.parse(text) }
    }

    @Test func rejectsInvalidUTF8() {
        #expect(throws: JSONParseError.self) { try JSONParser.parse([0x22, 0xFF, 0x22]) }
    }

    @Test func escapesControlCharacters() {
        #expect(JSONValue.string("a\u{0}\n\"\\").serialized == #""a\u0000\n\"\\""#)
    }
}
