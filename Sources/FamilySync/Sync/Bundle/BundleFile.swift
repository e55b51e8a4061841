import Glibc

/// Every limit of a bundle file (docs/protocol.md §12b), named once.
public enum BundleLimits {
    /// The clear header's JSON.
    public static let headerBytes = 1024
    /// Plaintext per sealed chunk.
    public static let chunkBytes = 1 << 20
    /// The smallest `--max-bytes` a part may be given: one record batch and
    /// a photo chunk fit, with room.
    public static let minPartBytes: Int64 = 4 << 20
    /// Parts one bundle may be cut into.
    public static let maxParts = 10_000
    /// Photo hashes a bundle may say its writer wants.
    public static let maxWanted = 1000
    /// The largest bundle number a header or head may carry (far below
    /// Int64.max, so a writer numbering above a lying reader's cannot overflow).
    static let maxNumber: Int64 = 1 << 53
}

/// Why a bundle is not applied. The store is as it was.
public struct BundleError: Error, CustomStringConvertible, Sendable {
    public enum Kind: Sendable {
        /// Not a bundle, cut off, changed, or its contents break the protocol (65).
        case malformed
        /// Applied here already (65).
        case replayed
        /// Older than a bundle from the same device applied here already (65).
        case stale
        /// For another device or family, from a device this store does not
        /// know or has revoked, or sealed with a key this device lacks (77).
        case notForUs
        /// A session or another bundle holds the store's one session slot (75).
        case busy
        /// The command cannot do this (a device that is not a current peer, --max-bytes too small) (64).
        case usage
    }
    public var kind: Kind
    public var message: String
    /// The device that wrote the bundle, when the refusal knows it (a replayed or stale part).
    public var from: String?
    public init(_ kind: Kind, _ message: String, from: String? = nil) {
        self.kind = kind
        self.message = message
        self.from = from
    }
    public var description: String { message }
}

/// The clear header, authenticated with every chunk: who wrote the part,
/// for whom, under which key, and which part of which bundle it is.
struct BundleHeader: Equatable {
    static let magic = Array("family-sync bundle 1\n".utf8)
    enum KeyKind: String { case device, family }
    var family: String
    var from: String
    var to: String
    var key: KeyKind
    var epoch: Int64
    /// Random, 32 hex digits: this part's own name (replays are told by it).
    var id: String
    /// The writer's bundle number for this peer (1, 2, …), the same in every part of one bundle.
    var write: Int64
    var part: Int64
    /// 16 hex digits derived from the part's key (BundleKeys.check): a reader
    /// holding another key says so, instead of taking the part for a changed one.
    var check = ""

    var json: JSONValue {
        .object([("family", .string(family)), ("from", .string(from)), ("to", .string(to)), ("key", .string(key.rawValue)),
                 ("epoch", .int(epoch)), ("id", .string(id)), ("write", .int(write)), ("part", .int(part)), ("check", .string(check))])
    }

    init(family: String, from: String, to: String, key: KeyKind, epoch: Int64, id: String, write: Int64, part: Int64) {
        (self.family, self.from, self.to, self.key, self.epoch, self.id, self.write, self.part) = (family, from, to, key, epoch, id, write, part)
    }

    init(_ bytes: [UInt8]) throws(ProtocolError) {
        let r = try FieldReader(Frame(.hello, bytes)).renamed("bundle header")
        family = try r.uuid("family")
        from = try r.uuid("from")
        to = try r.uuid("to")
        guard let k = KeyKind(rawValue: try r.string("key", maxBytes: 16)) else { throw ProtocolError("bundle header field 'key': not 'device' or 'family'") }
        key = k
        epoch = try r.int("epoch")
        id = try r.string("id", maxBytes: 32)
        guard id.utf8.count == 32, id.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }) else { throw ProtocolError("bundle header field 'id': not 32 lower-case hex digits") }
        write = try r.int("write", min: 1, max: BundleLimits.maxNumber)
        part = try r.int("part", min: 1, max: Int64(BundleLimits.maxParts))
        check = try r.string("check", maxBytes: 16)
    }
}

extension FieldReader {
    /// The same fields, named `name` in errors.
    func renamed(_ name: String) -> FieldReader { FieldReader(name: name, value: value) }
}

/// The key a part is sealed with: HKDF over the pair's device key (owner ↔
/// member) or the family key of the header's epoch (member ↔ member), bound
/// to the family, both devices in their roles and the part's id (§12b).
enum BundleKeys {
    static let salt = Array("family-sync/1 bundle".utf8)

    static func key(_ h: BundleHeader, secret: SecretBytes) throws -> SecretBytes {
        var fields = [h.key == .device ? "device-key" : "family-key", h.family]
        if h.key == .family { fields.append(String(h.epoch)) }
        fields += [h.from, h.to, h.id]
        var info: [UInt8] = Array("bundle".utf8)
        for f in fields { info.append(0); info += Array(f.utf8) }
        return try hkdfSHA256(secret: secret, salt: salt, info: info, length: AES256GCM.keyBytes)
    }

    /// The header's `check`: 8 bytes from the part's key, in hex.
    static func check(_ key: SecretBytes) throws -> String {
        Hex.encode(try hkdfSHA256(secret: key, salt: Array("family-sync/1 bundle-check".utf8), info: [], length: 8).copiedBytes)
    }

    /// Chunk `index`'s nonce: its number (8 bytes, big-endian), then 1 for the last chunk, else 0 (4 bytes).
    static func nonce(_ index: UInt64, last: Bool) -> [UInt8] {
        (0..<8).map { UInt8(truncatingIfNeeded: index >> (56 - 8 * UInt64($0))) } + [0, 0, 0, last ? 1 : 0]
    }

    /// The secret a header names, as this store holds it; nil when it holds none.
    static func secret(for h: BundleHeader, store: Store, family: FamilyInfo, me: String) throws -> SecretBytes? {
        let other = h.from == me ? h.to : h.from
        switch h.key {
        case .device:
            return family.role == .owner ? try store.memberDeviceKey(other) : try store.ownDeviceKey()
        case .family:
            guard h.epoch == (try store.familyEpoch) else { return nil }
            return try store.familySecret()
        }
    }
}

/// Writes one part: the magic line, the header, then the plaintext frames
/// sealed a chunk at a time. The file is written beside its name and
/// renamed into place once synced, so a part on disk is always whole.
final class BundleSealer {
    let header: BundleHeader
    private let key: SecretBytes
    private let aad: [UInt8]
    private let fd: Int32
    let path: String
    private let temporary: String
    private var pending: [UInt8] = []
    private var index: UInt64 = 0
    /// Plaintext bytes so far.
    private(set) var plaintextBytes: Int64 = 0

    init(path: String, header given: BundleHeader, secret: SecretBytes) throws {
        self.path = path
        key = try BundleKeys.key(given, secret: secret)
        var header = given
        header.check = try BundleKeys.check(key)
        self.header = header
        let h = Array(header.json.serialized.utf8)
        precondition(h.count <= BundleLimits.headerBytes, "bundle header over its limit")
        aad = BundleHeader.magic + [UInt8(h.count >> 8), UInt8(h.count & 0xFF)] + h
        temporary = path + ".part-\(getpid())"
        fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw FileError(.cannotOpen, path: path, code: errno) }
        try writeAll(aad)
    }

    deinit {
        if fd >= 0 { close(fd) }
        unlink(temporary)
    }

    /// Appends one frame's bytes to the plaintext.
    func append(_ type: FrameType, _ payload: [UInt8]) throws {
        Frame.appendHeader(type, length: payload.count, to: &pending)
        pending += payload
        plaintextBytes += Int64(Frame.headerBytes + payload.count)
        while pending.count > BundleLimits.chunkBytes { try seal(Array(pending[0..<BundleLimits.chunkBytes]), last: false); pending.removeFirst(BundleLimits.chunkBytes) }
    }

    /// Seals what is left as the last chunk, syncs and puts the part in place.
    func finish() throws {
        try seal(pending, last: true)
        pending.withUnsafeMutableBytes { _ = $0.initializeMemory(as: UInt8.self, repeating: 0) }
        pending = []
        guard fsync(fd) == 0 else { throw FileError(.writeFailed, path: path, code: errno) }
        guard rename(temporary, path) == 0 else { throw FileError(.writeFailed, path: path, code: errno) }
        let e = FileIO.syncFolder(of: path)
        guard e == 0 else { throw FileError(.writeFailed, path: path, code: e) }
    }

    private func seal(_ chunk: [UInt8], last: Bool) throws {
        let sealed = try chunk.withUnsafeBytes { try AES256GCM.seal($0, key: key, nonce: BundleKeys.nonce(index, last: last), aad: aad) }
        index += 1
        let n = UInt32(sealed.count)
        try writeAll([UInt8(n >> 24), UInt8((n >> 16) & 0xFF), UInt8((n >> 8) & 0xFF), UInt8(n & 0xFF)] + sealed)
    }

    private func writeAll(_ bytes: [UInt8]) throws {
        let e = FileIO.writeAll(fd, bytes)
        guard e == 0 else { throw FileError(.writeFailed, path: path, code: e) }
    }
}

/// Reads a part: its clear header first (to find the key), then the
/// plaintext a chunk at a time, each authenticated before a byte of it is
/// used. A chunk out of order, a missing last chunk or bytes after it are
/// a changed or cut-off part, never a shorter one.
final class BundleOpener {
    let path: String
    let header: BundleHeader
    private let aad: [UInt8]
    private let fd: Int32
    private let chunksStart: Int
    private var offset: Int
    private var index: UInt64 = 0
    private var key: SecretBytes?
    private(set) var finished = false

    init(path: String) throws {
        self.path = path
        fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw FileError(.cannotOpen, path: path, code: errno) }
        let m = BundleHeader.magic.count
        var first = [UInt8](repeating: 0, count: m + 2)
        let got = BundleOpener.readFully(fd, into: &first, at: 0)
        guard got == first.count, Array(first[0..<m]) == BundleHeader.magic else {
            close(fd)
            throw BundleError(.malformed, "\(path): not a family-sync bundle (it does not begin with \"family-sync bundle 1\")")
        }
        let length = Int(first[m]) << 8 | Int(first[m + 1])
        guard length > 0, length <= BundleLimits.headerBytes else {
            close(fd)
            throw BundleError(.malformed, "\(path): bundle header of \(length) bytes (the limit is \(BundleLimits.headerBytes))")
        }
        var h = [UInt8](repeating: 0, count: length)
        guard BundleOpener.readFully(fd, into: &h, at: m + 2) == length else {
            close(fd)
            throw BundleError(.malformed, "\(path): cut off inside its header")
        }
        do { header = try BundleHeader(h) } catch {
            close(fd)
            throw BundleError(.malformed, "\(path): \(error)")
        }
        aad = first + h
        chunksStart = m + 2 + length
        offset = chunksStart
    }

    deinit { close(fd) }

    /// Derives the part's key from `secret`; false when it is not the key the part was sealed with.
    func unlock(_ secret: SecretBytes) throws -> Bool {
        let k = try BundleKeys.key(header, secret: secret)
        guard try BundleKeys.check(k) == header.check else { return false }
        key = k
        return true
    }

    /// Back to the first chunk, for a second pass.
    func rewind() {
        offset = chunksStart
        index = 0
        finished = false
    }

    /// The next chunk's plaintext, or nil after the last.
    func nextChunk() throws -> [UInt8]? {
        guard let key else { preconditionFailure("bundle read before it was unlocked") }
        var lengthBytes = [UInt8](repeating: 0, count: 4)
        let got = BundleOpener.readFully(fd, into: &lengthBytes, at: offset)
        if finished {
            guard got == 0 else { throw BundleError(.malformed, "\(path): bytes after its last chunk (changed or joined to another file)") }
            return nil
        }
        guard got == 4 else { throw BundleError(.malformed, "\(path): cut off (chunk \(index + 1) and its end are missing)") }
        let length = Int(lengthBytes[0]) << 24 | Int(lengthBytes[1]) << 16 | Int(lengthBytes[2]) << 8 | Int(lengthBytes[3])
        guard length >= AES256GCM.tagBytes, length <= BundleLimits.chunkBytes + AES256GCM.tagBytes else {
            throw BundleError(.malformed, "\(path): chunk \(index + 1) declares \(length) bytes (at most \(BundleLimits.chunkBytes + AES256GCM.tagBytes))")
        }
        var sealed = [UInt8](repeating: 0, count: length)
        guard BundleOpener.readFully(fd, into: &sealed, at: offset + 4) == length else {
            throw BundleError(.malformed, "\(path): cut off inside chunk \(index + 1)")
        }
        offset += 4 + length
        for last in [false, true] {
            if let plain = try sealed.withUnsafeBytes({ try AES256GCM.open($0, key: key, nonce: BundleKeys.nonce(index, last: last), aad: aad) }) {
                index += 1
                finished = last
                return plain
            }
        }
        throw BundleError(.malformed, "\(path): chunk \(index + 1) does not authenticate (changed, cut, out of order, or sealed with another key)")
    }

    private static func readFully(_ fd: Int32, into buf: inout [UInt8], at offset: Int) -> Int {
        var done = 0
        while done < buf.count {
            // Never nil: the loop runs only while the buffer has bytes left.
            let n = buf.withUnsafeMutableBytes { pread(fd, $0.baseAddress! + done, $0.count - done, off_t(offset + done)) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { break }
            done += n
        }
        return done
    }
}
