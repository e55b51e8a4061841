import Foundation
import Testing
import FamilySync

/// Files that hold the family's secrets, as the tools make and find them:
/// a store is made only where its path is not a link, any store is 0600
/// (set so, with a note, when found looser), and an offer's image is 0600.
@Suite struct LocalFilesTests {
    static func mode(_ path: String) -> mode_t {
        var st = stat()
        return stat(path, &st) == 0 ? st.st_mode & 0o7777 : 0
    }

    /// A `--db` naming a symbolic link to nowhere is refused: no store, and
    /// no secrets, appear at the link's target.
    @Test func aStoreIsNotCreatedThroughADanglingLink() throws {
        let dir = TempDir()
        let target = dir.file("elsewhere.db"), link = dir.file("owner.db")
        #expect(symlink(target, link) == 0)
        let r = try Tools.run("pair-qr", ["--db", link, "--format", "text", "-o", dir.file("pair.txt")])
        #expect(r.status != 0, "\(r.out)")
        #expect(r.err.hasPrefix("pair-qr: ") && r.err.contains("symbolic link"), "\(r.err)")
        #expect(!FileManager.default.fileExists(atPath: target), "a store was made at the link's target")
        var st = stat()
        #expect(lstat(link, &st) == 0 && st.st_mode & S_IFMT == S_IFLNK, "the link is left as it was")
    }

    /// A store file that was already there with a looser mode (touched, or
    /// copied with cp) is set to 0600 before the family's keys go into it,
    /// and the tool says so on stderr; the offer's image, which holds the
    /// nonce, is 0600 even where a 0644 file stood.
    @Test func aLooserStoreIsMade0600WithANoteAndTheOfferImageIs0600() throws {
        let dir = TempDir()
        let db = dir.file("owner.db"), png = dir.file("pair.png")
        #expect(FileManager.default.createFile(atPath: db, contents: nil))
        #expect(chmod(db, 0o644) == 0)
        #expect(FileManager.default.createFile(atPath: png, contents: Data([1, 2, 3])))
        #expect(chmod(png, 0o644) == 0)
        let r = try Tools.run("pair-qr", ["--db", db, "-o", png])
        #expect(r.status == 0, "\(r.err)")
        #expect(r.err.contains("pair-qr: store \(db) was mode 644") && r.err.contains("0600 now"), "\(r.err)")
        #expect(Self.mode(db) == 0o600)
        #expect(try Store(path: db).familySecret() != nil, "the store holds the family's key")
        #expect(Self.mode(png) == 0o600, "mode \(String(Self.mode(png), radix: 8))")
        // Once tight, nothing more is said.
        let again = try Tools.run("pair-qr", ["--db", db, "-o", png])
        #expect(again.status == 0 && !again.err.contains("0600 now"), "\(again.err)")
    }
}
