import FoundationEssentials
import Glibc

/// The three dot-separated segments of a compact JWS, as byte ranges of the
/// token; nothing is decoded yet. Only the compact serialization is a proof
/// (StoreKit's `jwsRepresentation`); the JSON serialization is refused.
public struct CompactJWS: Sendable, Equatable {
    public var header: Range<Int>
    public var payload: Range<Int>
    public var signature: Range<Int>

    /// The bytes the signature covers: `header.payload`.
    public var signingInput: Range<Int> { header.lowerBound..<payload.upperBound }

    /// The longest token read. A StoreKit transaction is about 4 KB (three
    /// certificates ride in the header); 64 KiB leaves room to grow while a
    /// hostile multi-megabyte line is refused before any decoding.
    public static let maxBytes = 65_536

    /// Splits a token (surrounding whitespace already removed).
    public static func split(_ token: UnsafeRawBufferPointer) -> Result<CompactJWS, ProofFailure> {
        let n = token.count
        if n == 0 { return .failure(ProofFailure(.malformed, "empty line: no token")) }
        if n > maxBytes {
            return .failure(ProofFailure(.malformed, "token is \(n) bytes; a proof is at most \(maxBytes)"))
        }
        if token[0] == UInt8(ascii: "{") {
            return .failure(ProofFailure(.malformed, "a JSON object, not a compact JWS: only the compact serialization header.payload.signature is accepted"))
        }
        var dots: [Int] = []
        var from = 0
        // Never nil: an empty token was refused above.
        let base = token.baseAddress!
        while dots.count <= 2, from < n, let p = memchr(base + from, Int32(UInt8(ascii: ".")), n - from) {
            let i = base.distance(to: UnsafeRawPointer(p))
            dots.append(i)
            from = i + 1
        }
        guard dots.count == 2 else {
            let segments = dots.count > 2 ? "more than 3" : String(dots.count + 1)
            return .failure(ProofFailure(.malformed, "\(segments) dot-separated segments; a compact JWS has exactly 3"))
        }
        return .success(CompactJWS(header: 0..<dots[0], payload: (dots[0] + 1)..<dots[1], signature: (dots[1] + 1)..<n))
    }
}
