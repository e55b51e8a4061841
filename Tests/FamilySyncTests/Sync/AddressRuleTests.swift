import Testing
@testable import FamilySync

/// The one address rule (`HostPort(validating:)`), which the CLI, pairing
/// offers and the socket layer share: what one accepts, the others accept.
@Suite struct AddressRuleTests {
    @Test(arguments: ["127.0.0.1:7433", "owner.local:1", "OWNER-IPAD.LOCAL:7433", "::1:80", "[::1]:80", "fe80::1:7433",
                      "::ffff:192.168.1.2:7433", "a:65535",
                      "fe80::1%eth0:7433", "[fe80::1%eth0]:7433"])
    func addressesParse(text: String) throws {
        let a = try HostPort(validating: text)
        #expect(a.isConnectable)
        #expect(HostPort(parsing: a.description) == a)
        // A pairing offer accepts exactly what the rule accepts, and writes it so the rule reads it back.
        let offerForm = try PairingOffer.validateAddress(text)
        #expect(!offerForm.contains("["))
        #expect(try HostPort(validating: offerForm) == HostPort(host: a.host.lowercased(), port: a.port))
    }

    @Test(arguments: ["", "host", "host:", ":80", "host:0x50", "host:65536", "host:-1", "host:+80", "host: 80", "host:123456"])
    func notHostPort(text: String) {
        #expect(throws: HostPort.Problem.notHostPort) { try HostPort(validating: text) }
        let e = #expect(throws: PairingError.self) { try PairingOffer.validateAddress(text) }
        #expect(e?.kind == .addressNotHostPort && e?.source == text)
    }

    @Test(arguments: ["a b:1", "host_name.local:80", "[owner.local]:80", "fe80::zz:80", "[]:80", "ho%st:1", "h\u{e9}te:1",
                      "fe80::1%:80", "fe80::1%eth 0:80", "fe80::1%aaaaaaaaaaaaaaaa:80", "fe80::1%eth0%x:80", "fe80::1%et/h:80"])
    func badHosts(text: String) throws {
        #expect(throws: HostPort.Problem.badHost) { try HostPort(validating: text) }
        let e = try #require(throws: PairingError.self) { try PairingOffer.validateAddress(text) }
        #expect(e.kind == .addressBadCharacters)
        #expect(e.description.contains("cannot carry"))
    }

    @Test func hostLengthIsBounded() throws {
        let longest = String(repeating: "a", count: HostPort.maxHostBytes)
        #expect(try HostPort(validating: longest + ":1").host == longest)
        #expect(throws: HostPort.Problem.badHost) { try HostPort(validating: longest + "a:1") }
    }

    /// Port 0 is a listening address (any free port), never a peer's.
    @Test func portZeroListensButCannotBeReached() throws {
        let a = try HostPort(validating: "127.0.0.1:0")
        #expect(!a.isConnectable)
        let e = #expect(throws: PairingError.self) { try PairingOffer.validateAddress("127.0.0.1:0") }
        #expect(e?.kind == .addressNotHostPort)
        #expect(throws: (any Error).self) { try PairingOffer(text: "FS1/00000000-0000-0000-0000-000000000000/\(String(repeating: "A", count: 32))/4102444800/127.0.0.1:0") }
    }

    @Test func anOfferWritesIPv6WithoutBrackets() throws {
        let o = try PairingOffer.make(family: "00000000-0000-0000-0000-000000000000", ttl: .minutes(1), address: "[FE80::1]:7433",
                                      now: Timestamp(milliseconds: 1_700_000_000_000))
        #expect(o.address == "fe80::1:7433")
        #expect(o.text.hasSuffix("/FE80::1:7433"))
        #expect(try PairingOffer(text: o.text).address == "fe80::1:7433")
    }
}
