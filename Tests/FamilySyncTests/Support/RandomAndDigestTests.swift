import Testing
@testable import FamilySync

@Suite struct RandomAndDigestTests {
    /// More than one getentropy call's worth (256 bytes), and never the same twice.
    @Test func randomBytesFillEveryByteAndDiffer() throws {
        let a = try secureRandomBytes(1000), b = try secureRandomBytes(1000)
        #expect(a.count == 1000 && b.count == 1000)
        #expect(a != b)
        // A zero-filled tail would mean a chunk was never written: 744 zero bytes at random is impossible.
        #expect(a[256...].contains { $0 != 0 })
        #expect(a[768...].contains { $0 != 0 })
        #expect(try secureRandomBytes(0).isEmpty)
    }

    /// FIPS 180-2's two-block message, fed in uneven pieces: the incremental
    /// digest a received photo is checked with equals the one-shot one.
    @Test func incrementalSHA256MatchesTheVector() {
        let message = Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8)
        let expected = "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
        #expect(Hex.encode(SHA256.hash(message)) == expected)
        var h = SHA256()
        h.update(Array(message[0..<1]))
        h.update(Array(message[1..<1]))
        h.update(Array(message[1..<40]))
        h.update(Array(message[40...]))
        #expect(Hex.encode(h.finalize()) == expected)
    }

    @Test func photoAssemblyHashesWhatArrives() {
        let bytes = Array("abc".utf8)
        let a = PhotoAssembly(hash: "", total: 3, discard: false)
        a.append(bytes[0..<1])
        a.append(bytes[1..<3])
        #expect(a.digestHex() == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(a.chunks.flatMap { $0 } == bytes)
    }
}
