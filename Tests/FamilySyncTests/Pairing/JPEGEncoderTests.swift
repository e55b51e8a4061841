import Testing
@testable import FamilySyncImaging

/// The JPEG encoder's failure after its output buffer has grown: the path
/// where a buffer libjpeg had reallocated used to leak (and the first one
/// was freed twice). Under `make test-asan` LeakSanitizer checks that the
/// grown buffer is freed.
@Suite struct JPEGEncoderTests {
    /// Seeded noise: it does not compress, so its JPEG outgrows the encoder's
    /// first 4 KiB buffer several times over.
    static let side = 256
    static let noise: [UInt8] = {
        var rng = SplitMix64(seed: 7)
        return (0..<(side * side)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
    }()

    static func encode(cap: Int?, progressive: Bool = false) throws -> [UInt8] {
        try JPEGCodec.encode(pixels: noise, width: side, height: side, quality: 95, progressive: progressive, maxOutputBytes: cap)
    }

    @Test(arguments: [false, true])
    func anEncodeThatFailsAfterItsBufferGrewThrowsAndLeavesNothing(progressive: Bool) throws {
        let full = try Self.encode(cap: nil, progressive: progressive)
        // 4 KiB, grown to 8 KiB, then 16 KiB and on: a cap of 10,000 bytes lets
        // the first growth happen and fails the second.
        #expect(full.count > 16_384)
        for _ in 0..<20 {
            let e = #expect(throws: ImageError.self) { try Self.encode(cap: 10_000, progressive: progressive) }
            guard case let .encodeFailed(m)? = e else { Issue.record("not an encode failure: \(String(describing: e))"); return }
            #expect(m.contains("larger than 10000 bytes"), "\(m)")
        }
        // A cap the output fits under changes nothing.
        #expect(try Self.encode(cap: 1 << 20, progressive: progressive) == full)
        #expect(try JPEGCodec.decode(full).width == Self.side)
    }
}
