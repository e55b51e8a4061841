import Glibc

/// The one source of random bytes (keys, nonces, IDs): straight from the
/// kernel's CSPRNG through getentropy(3), which is getrandom(2). It blocks
/// only until the pool is first seeded, keeps no state of its own to go
/// wrong across a fork, and fails closed: no randomness, no key.
public func secureRandomBytes(_ count: Int) throws -> [UInt8] {
    var out = [UInt8](repeating: 0, count: count)
    try out.withUnsafeMutableBytes { try fillSecureRandom($0) }
    return out
}

/// Fills `buffer` from the kernel's CSPRNG (the one source above).
func fillSecureRandom(_ buffer: UnsafeMutableRawBufferPointer) throws {
    /// getentropy returns at most 256 bytes a call.
    let chunk = 256
    var filled = 0
    while filled < buffer.count {
        let n = min(chunk, buffer.count - filled)
        // Never nil: the loop runs only while the buffer has bytes left.
        guard getentropy(buffer.baseAddress! + filled, n) == 0 else {
            throw SystemError("getentropy")
        }
        filled += n
    }
}

extension SecretBytes {
    /// `count` bytes from the one random source, drawn straight into their owner.
    public static func random(count: Int) throws -> SecretBytes {
        try SecretBytes(count: count) { out in try fillSecureRandom(out) }
    }
}

/// A random RFC 4122 version 4 UUID in upper case, the form device and family
/// IDs take.
public func randomUUID() throws -> String {
    var b = try secureRandomBytes(16)
    b[6] = (b[6] & 0x0F) | 0x40
    b[8] = (b[8] & 0x3F) | 0x80
    return DeviceIDBytes.decode(b[...])
}

/// A random name a peer only compares: 16 random bytes as 32 lower-case hex
/// digits (a resume chain, docs/protocol.md §7.4b; a bundle write, §12b).
enum RandomName {
    static func make() throws -> String { Hex.encode(try secureRandomBytes(16)) }

    /// Whether `s` has the form (what a peer sends is checked before it is kept).
    static func isValid(_ s: String) -> Bool {
        Hex.isLowercase(s.utf8, digits: 32)
    }
}
