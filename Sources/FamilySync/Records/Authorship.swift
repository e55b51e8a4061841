/// Who made a version (docs/protocol.md §7.4 "Authorship", docs/design.md §2).
/// A version's author tags it where it makes it: the line's last field,
///
///     …,"authorship":"<32 lowercase hex>"}
///
/// an HMAC-SHA256 (the first 16 bytes) over every byte of the line before
/// that field, under the author's *authorship key*. A member's key is derived
/// from its device key, so only the member and the owner hold it; the
/// owner's from its roster key, which only the owner holds. So the owner can
/// tell, of every version a member hands it, whether the device it names
/// made it, and a member can tell so of the versions that name itself.
///
/// A version pulled back to an earlier time by a device other than its
/// author (the owner's bound, a member's, merge-records' clamp) keeps its tag
/// and says which time the author gave it:
///
///     …,"authorship":"<32 lowercase hex>/<the author's modifiedAt>"}
///
/// The tag is then checked over the line with that time put back, and holds
/// only while the version's time is no later than it: a relay can make a
/// version older (which only makes it lose more often, as not relaying it
/// would), never newer, never another version.
public enum Authorship {
    /// The field's name, and the bytes that open it as the line's last member.
    public static let field = "authorship"
    static let opening: [UInt8] = Array(",\"authorship\":\"".utf8)
    /// Bytes of HMAC kept in a tag (128 bits).
    public static let tagBytes = 16
    /// Hex digits of a tag.
    static let tagDigits = 2 * tagBytes
    /// The canonical `modifiedAt` text (YYYY-MM-DDTHH:MM:SS.sssZ).
    static let timeDigits = 24
    /// From the member's comma to the line's closing brace: a plain tag, and one with the author's time.
    static let plainTail = opening.count + tagDigits + 2
    static let datedTail = opening.count + tagDigits + 1 + timeDigits + 2

    /// The salt of every authorship key (HKDF, docs/protocol.md §3.4).
    static let salt = Array("family-sync/4 authorship".utf8)

    /// A device's authorship key. Only its author and the owner hold a member's;
    /// only the owner holds its own.
    public final class Key: @unchecked Sendable {
        let secret: SecretBytes
        init(_ secret: SecretBytes) { self.secret = secret }

        /// The tag of a version whose line, up to its tag, is `message`.
        func tag(_ message: UnsafeRawBufferPointer) -> [UInt8] {
            Array(hmacSHA256(key: secret, message: message).prefix(Authorship.tagBytes))
        }
    }

    /// A member's key: HKDF(IKM = its device key D(m), salt, info = "member" ‖ family ‖ device).
    public static func memberKey(deviceKey: SecretBytes, family: String, device: String) throws -> Key {
        Key(try hkdfSHA256(secret: deviceKey, salt: salt, info: SessionKeys.info(["member", family, device]), length: SessionKeys.keyBytes))
    }

    /// The owner's key: HKDF(IKM = its roster signing key's 32-byte seed, salt, info = "owner" ‖ family ‖ owner device).
    /// Every copy of the owner's store holds the roster key, so a restored one checks its own tags.
    public static func ownerKey(rosterKey: SecretBytes, family: String, owner: String) throws -> Key {
        Key(try hkdfSHA256(secret: rosterKey, salt: salt, info: SessionKeys.info(["owner", family, owner]), length: SessionKeys.keyBytes))
    }

    /// Appends the tag member and the closing brace to `out`, whose bytes
    /// from `from` on are the line so far (its members, without the brace).
    static func appendTag(_ key: Key, to out: inout [UInt8], from: Int) {
        let tag = out.withUnsafeBytes { key.tag(UnsafeRawBufferPointer(rebasing: $0[from...])) }
        out += opening
        out += Array(Hex.encode(tag).utf8)
        out += [0x22, 0x7D]
    }

    /// Appends a kept tag (its 32 hex digits at `digits`) with the author's time
    /// (24 bytes at `time`), and the closing brace: the line of a version pulled back.
    static func appendKeptTag(digits: UnsafePointer<UInt8>, authorTime time: UnsafePointer<UInt8>, to out: inout [UInt8]) {
        out += opening
        out.append(contentsOf: UnsafeBufferPointer(start: digits, count: tagDigits))
        out.append(UInt8(ascii: "/"))
        out.append(contentsOf: UnsafeBufferPointer(start: time, count: timeDigits))
        out += [0x22, 0x7D]
    }

    /// Whether `r` (a scanned line at `base`) carries a tag that `key` made:
    /// over the line up to the tag, with the author's time put back when it
    /// came pulled back, and only while its time is no later than that.
    static func verifies(_ base: UnsafePointer<UInt8>, _ r: RecordScan, key: Key) -> Bool {
        guard r.tagAt >= 0 else { return false }
        var expected = [UInt8](repeating: 0, count: tagBytes)
        let hexOK = expected.withUnsafeMutableBytes {
            Hex.decode(UnsafeBufferPointer(start: base + r.tagAt + opening.count, count: tagDigits), into: $0)
        }
        guard hexOK else { return false }
        let body = UnsafeRawBufferPointer(start: base + r.start, count: r.tagAt - r.start)
        let mac: [UInt8]
        if let authored = r.tagAuthorTime {
            // The author's line: its time in place of the pulled-back one (both canonical, so the same length).
            guard r.isTimeCanonical(base), r.time <= authored else { return false }
            var line = Array(body)
            let at = r.modifiedAt.start - r.start
            let time = base + r.tagAt + opening.count + tagDigits + 1
            for i in 0..<timeDigits { line[at + i] = time[i] }
            mac = line.withUnsafeBytes { key.tag($0) }
        } else {
            mac = key.tag(body)
        }
        // In time that does not depend on where they first differ.
        var diff: UInt8 = 0
        for i in 0..<tagBytes { diff |= mac[i] ^ expected[i] }
        return diff == 0
    }

    /// What a receiver says when it did not take versions for want of a proof of their author.
    static func refusalWarning(_ count: Int64, from peer: String) -> String {
        "\(count) version\(count == 1 ? "" : "s") from \(peer) named another device as \(count == 1 ? "its" : "their") author without that device's authorship tag: not taken"
    }
}
