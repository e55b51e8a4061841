import Glibc

/// Every limit of a bundle file (docs/protocol.md §12b), named once.
public enum BundleLimits {
    /// The header's JSON, padded with spaces to exactly this before it is
    /// sealed, so every header is the same size whatever its numbers.
    public static let headerBytes = 512
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

/// The header, sealed under a key the writer and the reader hold (so it
/// names nobody in clear) and authenticated with every chunk: who wrote the
/// part, for whom, under which key, and which part of which bundle it is.
struct BundleHeader: Equatable {
    static let magic = Array("family-sync bundle 2\n".utf8)
    /// Format 1, of protocol version 3, whose header was in clear.
    static let previousMagic = Array("family-sync bundle 1\n".utf8)
    /// The sealed header as it is in the file: nonce, padded JSON, tag.
    static let sealedBytes = AES256GCM.nonceBytes + BundleLimits.headerBytes + AES256GCM.tagBytes
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

    var json: JSONValue {
        .object([("family", .string(family)), ("from", .string(from)), ("to", .string(to)), ("key", .string(key.rawValue)),
                 ("epoch", .int(epoch)), ("id", .string(id)), ("write", .int(write)), ("part", .int(part))])
    }

    init(family: String, from: String, to: String, key: KeyKind, epoch: Int64, id: String, write: Int64, part: Int64) {
        (self.family, self.from, self.to, self.key, self.epoch, self.id, self.write, self.part) = (family, from, to, key, epoch, id, write, part)
    }

    /// Reads the header's JSON from its padded plaintext (trailing spaces dropped).
    init(_ padded: [UInt8]) throws(ProtocolError) {
        var end = padded.count
        while end > 0, padded[end - 1] == 0x20 { end -= 1 }
        let r = try FieldReader(Frame(.hello, Array(padded[0..<end]))).renamed("bundle header")
        family = try r.uuid("family")
        from = try r.uuid("from")
        to = try r.uuid("to")
        guard let k = KeyKind(rawValue: try r.string("key", maxBytes: 16)) else { throw ProtocolError("bundle header field 'key': not 'device' or 'family'") }
        key = k
        epoch = try r.int("epoch", max: SyncLimits.maxEpoch)
        id = try r.string("id", maxBytes: 32)
        guard RandomName.isValid(id) else { throw ProtocolError("bundle header field 'id': not 32 lower-case hex digits") }
        write = try r.int("write", min: 1, max: BundleLimits.maxNumber)
        part = try r.int("part", min: 1, max: Int64(BundleLimits.maxParts))
    }

    /// The secret this header is sealed under, as `HeldKey` names it: the
    /// member's device key of the pair (whichever end the owner is), or the
    /// family key of `epoch`.
    func heldKind(owner: String) -> HeldKey.Kind {
        key == .device ? .device(member: from == owner ? to : from) : .family(epoch: epoch)
    }
}

extension FieldReader {
    /// The same fields, named `name` in errors.
    func renamed(_ name: String) -> FieldReader { FieldReader(name: name, value: value) }
}

/// The key a part's chunks are sealed with: HKDF over the pair's device key
/// (owner ↔ member) or the family key of the header's epoch (member ↔
/// member), bound to the family, both devices in their roles and the part's id (§12b).
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

    /// Chunk `index`'s nonce: its number (8 bytes, big-endian), then 1 for the last chunk, else 0 (4 bytes).
    static func nonce(_ index: UInt64, last: Bool) -> [UInt8] {
        (0..<8).map { UInt8(truncatingIfNeeded: index >> (56 - 8 * UInt64($0))) } + [0, 0, 0, last ? 1 : 0]
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

    /// `held` is the secret the header is sealed under (its kind as the header says, `heldKind`).
    init(path: String, header: BundleHeader, held: HeldKey) throws {
        self.path = path
        self.header = header
        key = try BundleKeys.key(header, secret: held.secret)
        var h = Array(header.json.serialized.utf8)
        precondition(h.count <= BundleLimits.headerBytes, "bundle header over its limit")
        h += [UInt8](repeating: 0x20, count: BundleLimits.headerBytes - h.count)
        aad = BundleHeader.magic + (try AES256GCM.sealWithFreshNonce(h, key: try held.sealingKey(family: header.family, for: .bundleHeader), aad: BundleHeader.magic))
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

/// Reads a part: its sealed header first, opened with whichever key this
/// device holds that it was sealed under, then the plaintext a chunk at a
/// time, each authenticated before a byte of it is used. A chunk out of
/// order, a missing last chunk or bytes after it are a changed or cut-off
/// part, never a shorter one.
final class BundleOpener {
    let path: String
    let header: BundleHeader
    /// The secret that opened the header.
    let held: HeldKey
    private let aad: [UInt8]
    private let fd: Int32
    private let chunksStart: Int
    private var offset: Int
    private var index: UInt64 = 0
    private let key: SecretBytes
    private(set) var finished = false

    /// Opens the header with `keys` (`Store.heldKeys`, derived for bundle headers).
    init(path: String, keys: TrialKeys) throws {
        self.path = path
        fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw FileError(.cannotOpen, path: path, code: errno) }
        let m = BundleHeader.magic.count
        var first = [UInt8](repeating: 0, count: m + BundleHeader.sealedBytes)
        let got = BundleOpener.readFully(fd, into: &first, at: 0)
        guard got >= m, Array(first[0..<m]) == BundleHeader.magic else {
            close(fd)
            if got >= m, Array(first[0..<m]) == BundleHeader.previousMagic {
                throw BundleError(.malformed, "\(path): a bundle of format 1, written by family-sync of protocol version 3 or older; this device reads format 2 "
                                  + "(protocol version \(SyncProtocol.version)): update family-sync on the device that wrote it")
            }
            throw BundleError(.malformed, "\(path): not a family-sync bundle (it does not begin with \"family-sync bundle 2\")")
        }
        guard got == first.count else {
            close(fd)
            throw BundleError(.malformed, "\(path): cut off inside its header")
        }
        guard let (held, padded) = try keys.open(Array(first[m...]), aad: BundleHeader.magic) else {
            close(fd)
            throw BundleError(.notForUs, "\(path): not for this device: no key it holds opens the part (a bundle for another device or family; or one of the "
                              + "two stores was restored from a copy or paired again since it was written, or one holds a family key the other does not: "
                              + "a session between them, or a bundle from this device first, sets it right)")
        }
        do {
            header = try BundleHeader(padded)
            let key = try BundleKeys.key(header, secret: held.secret)
            self.key = key
        } catch {
            close(fd)
            throw BundleError(.malformed, "\(path): \(error)")
        }
        self.held = held
        aad = first
        chunksStart = first.count
        offset = chunksStart
    }

    deinit { close(fd) }

    /// Back to the first chunk, for a second pass.
    func rewind() {
        offset = chunksStart
        index = 0
        finished = false
    }

    /// The next chunk's plaintext, or nil after the last.
    func nextChunk() throws -> [UInt8]? {
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
