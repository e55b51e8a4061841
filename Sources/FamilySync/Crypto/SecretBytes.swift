import FoundationEssentials
import Glibc

/// Key material with one owner: the bytes live in storage this object
/// allocated and nothing else points at, and they are zeroed there before
/// the storage is released. An `[UInt8]` cannot promise that: any copy of it
/// may share or duplicate the buffer (copy-on-write), so zeroing one copy
/// leaves the others. A class, so passing it around never copies the bytes.
public final class SecretBytes: @unchecked Sendable, Equatable {
    private let storage: UnsafeMutableRawBufferPointer
    public let count: Int

    /// Copies `bytes` in. The caller should not keep the source longer than it must.
    public init(_ bytes: some Collection<UInt8>) {
        count = bytes.count
        storage = .allocate(byteCount: max(count, 1), alignment: 16)
        storage.initializeMemory(as: UInt8.self, repeating: 0)
        var i = 0
        for b in bytes { storage[i] = b; i += 1 }
    }

    /// `count` bytes written in place by `fill` (a key derivation, a random draw),
    /// so they never exist anywhere else.
    public init(count: Int, fill: (UnsafeMutableRawBufferPointer) throws -> Void) rethrows {
        self.count = count
        storage = .allocate(byteCount: max(count, 1), alignment: 16)
        storage.initializeMemory(as: UInt8.self, repeating: 0)
        do { try fill(UnsafeMutableRawBufferPointer(rebasing: storage[0..<count])) } catch {
            SecretBytes.wipe(storage)
            storage.deallocate()
            throw error
        }
    }

    deinit {
        SecretBytes.wipe(storage)
        storage.deallocate()
    }

    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeRawBufferPointer(rebasing: storage[0..<count]))
    }

    /// A copy as an array, for tests that compare keys. The product reads
    /// key bytes in place through `withUnsafeBytes`.
    public var copiedBytes: [UInt8] { withUnsafeBytes { Array($0) } }

    /// Compares in time that depends only on the lengths.
    public static func == (a: SecretBytes, b: SecretBytes) -> Bool {
        guard a.count == b.count else { return false }
        var diff: UInt8 = 0
        for i in 0..<a.count { diff |= a.storage[i] ^ b.storage[i] }
        return diff == 0
    }

    /// explicit_bzero: a store the compiler may not drop as dead.
    static func wipe(_ p: UnsafeMutableRawBufferPointer) {
        guard let base = p.baseAddress else { return }
        explicit_bzero(base, p.count)
    }
}
