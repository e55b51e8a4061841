import Foundation
import Glibc
import Testing
@testable import FamilySync

/// The photo file beside the store (PhotoFile.swift): where photo bytes are
/// written, that a row of the store never names bytes that are not there,
/// and how old stores, backups and stores put back without it fare.
@Suite struct PhotoFileTests {
    static let t0 = Timestamp(milliseconds: 1_790_000_000_000)

    static func size(_ path: String) -> Int64 {
        var st = stat()
        return stat(path, &st) == 0 ? Int64(st.st_size) : 0
    }

    static func photo(_ seed: Int, size: Int) -> [UInt8] {
        var g = SeededBytes(seed: UInt64(seed))
        return (0..<size).map { _ in g.next() }
    }

    /// A session's photos go into the photo file and nowhere else: not
    /// through the store's write-ahead log (the store's file stays small),
    /// not through the photo file's journal (it stays a few pages), and
    /// the bytes the receiving side writes add up to the photos once.
    @Test func aSessionWritesTheBytesOfEachPhotoItReceivesOnce() throws {
        let h = try InProcessHousehold(members: 1, start: Self.t0)
        let m = h.members[0]
        let count = 32, each = 512 << 10
        var lines: [String] = []
        do {
            let o = try Store(path: h.owner.path)
            for i in 0..<count {
                let hash = try o.addPhoto(Self.photo(i, size: each), now: Self.t0)
                lines.append(RT.line("p\(i)", "2026-09-21T12:00:00.000Z", h.owner.id, extra: #","photos":["\#(hash)"]"#))
            }
        }
        try h.edit(h.owner, lines)
        let (client, _) = try h.sync(m)
        #expect(client.photosReceived == Int64(count))
        let photoBytes = Int64(count * each)
        #expect(try Store(path: m.path).photoCount() == count)
        // Everything is checkpointed into the store's file when its last connection closes.
        #expect(Self.size(m.path) + Self.size(m.path + "-wal") < photoBytes / 4, "photo bytes went through the store")
        #expect(Self.size(m.path + PhotoFile.suffix) >= photoBytes)
        #expect(Self.size(m.path + PhotoFile.suffix + "-journal") <= 8 * Int64(Store.pageSize), "photo pages went through the journal")
        let s = try Store(path: m.path)
        for i in [0, count - 1] {
            let bytes = Self.photo(i, size: each)
            #expect(try s.photo(Hex.encode(SHA256.hash(bytes))) == bytes)
        }
    }

    /// Bytes staged and not yet committed do not count as held by another
    /// connection, and a staged photo is on disk (and held) once flushed.
    @Test func aPhotoIsHeldOnlyOnceItsBytesAreCommitted() throws {
        let (s, dir) = try RT.store()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let bytes = Self.photo(1, size: 100_000)
        let hash = Hex.encode(SHA256.hash(bytes))
        try s.keepVerifiedPhoto([bytes[..<40_000], bytes[40_000...]], size: bytes.count, sha256: hash, now: Self.t0)
        #expect(try s.hasPhoto(hash))  // this connection knows it has it on its way
        let other = try Store(path: s.path)
        #expect(try !other.hasPhoto(hash))
        #expect(try other.photoFile.bytes(hash) == nil)
        try s.flushStagedPhotos()
        #expect(try other.hasPhoto(hash))
        #expect(try other.photo(hash) == bytes)
    }

    /// A session's writer: a photo handed to it is on its way (this
    /// connection does not ask for it again) but not held for another
    /// connection until it is on disk; another connection adding a photo
    /// meanwhile waits for the writer's commit, it does not fail; and a
    /// drain puts everything on disk.
    @Test func aWritersPhotosAreHeldOnceOnDiskAndAnotherWriterGetsIn() throws {
        let (s, dir) = try RT.store()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try s.startPhotoWriter()
        let a = Self.photo(30, size: 200_000), ha = Hex.encode(SHA256.hash(a))
        try s.keepVerifiedPhoto([a[..<1000], a[1000...]], size: a.count, sha256: ha, now: Self.t0)
        #expect(try s.hasPhoto(ha))
        let other = try Store(path: s.path)
        let b = Self.photo(31, size: 1_000)
        let hb = try other.addPhoto(b, now: Self.t0)
        #expect(try other.photo(hb) == b)
        try s.flushStagedPhotos()
        #expect(try other.photo(ha) == a)
        let c = Self.photo(32, size: 3_000), hc = Hex.encode(SHA256.hash(c))
        try s.keepVerifiedPhoto([c[...]], size: c.count, sha256: hc, now: Self.t0)
        try s.stopPhotoWriter()
        #expect(try other.photo(hc) == c)
        #expect(try other.photoCount() == 3)
    }

    /// A store of version 8 kept photo bytes in its own `photos` table: opened,
    /// they move to the photo file, the column goes, and nothing is lost,
    /// also when an earlier attempt had already copied some of them.
    @Test func anOldStoresPhotosMoveIntoThePhotoFile() throws {
        let dir = TempFolder("fs-photofile")
        let p = dir.path + "/old.db"
        let kept = Self.photo(2, size: 300_000), copiedBefore = Self.photo(3, size: 5_000)
        let hashes = [kept, copiedBefore].map { Hex.encode(SHA256.hash($0)) }
        do {
            let db = try Database(path: p)
            try db.execute("PRAGMA journal_mode = WAL")
            for i in 0..<Int(Schema.photoFileVersion - 1) { try db.execute(Schema.migrations[i]) }
            try db.run("INSERT INTO meta (key, value) VALUES ('device_id', ?), ('created_at', ?), ('change_seq', '0')",
                       [.text(UUID().uuidString.lowercased()), .text(Self.t0.rfc3339)])
            for (h, b) in zip(hashes, [kept, copiedBefore]) {
                try db.run("INSERT INTO photos (sha256, size, added_at, bytes) VALUES (?, ?, ?, ?)",
                           [.text(h), .int(Int64(b.count)), .int(Self.t0.milliseconds), .blob(b)])
            }
            try db.execute("PRAGMA application_id = \(Schema.applicationID); PRAGMA user_version = \(Schema.photoFileVersion - 1)")
            try db.close()
        }
        // A migration cut off after it had copied one photo.
        do {
            let f = try PhotoFile(storePath: p)
            try f.stage([copiedBefore[...]], size: copiedBefore.count, sha256: hashes[1], addedAt: Self.t0.milliseconds)
            _ = try f.commitStaged()
            try f.close()
        }
        let s = try Store(path: p)
        #expect(try s.db.scalarInt("PRAGMA user_version") == Int64(Schema.currentVersion))
        #expect(try s.db.scalarInt("SELECT count(*) FROM pragma_table_info('photos') WHERE name = 'bytes'") == 0)
        #expect(try s.photo(hashes[0]) == kept)
        #expect(try s.photo(hashes[1]) == copiedBefore)
        #expect(try s.photoCount() == 2)
        #expect(s.photosForgotten == 0)
    }

    /// A store put back from a copy without its photo file: its records
    /// stay, and its photos are wanted again instead of taken for held.
    @Test func aStorePutBackWithoutItsPhotoFileWantsItsPhotosAgain() throws {
        let (s, dir) = try RT.store()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let bytes = Self.photo(4, size: 2_000)
        let hash = try s.addPhoto(bytes, now: Self.t0)
        _ = try RT.apply(s, RT.line("r", "2026-09-21T12:00:00.000Z", "D1", extra: #","photos":["\#(hash)"]"#))
        try s.close()
        #expect(unlink(s.path + PhotoFile.suffix) == 0)
        let back = try Store(path: s.path)
        #expect(back.photosForgotten == 1)
        #expect(try back.wantedPhotos() == [hash])
        #expect(try back.recordCounts().live == 1)
        let again = try Store(path: s.path)
        #expect(again.photosForgotten == 0)
    }

    /// A backup is the store and its photo file, each 0600, holding exactly
    /// the photos whose bytes it has; opened as a store, it has them all.
    @Test func aBackupHoldsThePhotosAndOpensAsAStore() throws {
        let (s, dir) = try RT.store()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let photos = (0..<3).map { Self.photo(10 + $0, size: 50_000 + $0) }
        var hashes: [String] = []
        for p in photos { hashes.append(try s.addPhoto(p, now: Self.t0)) }
        let target = dir + "/copy.db"
        let summary = try s.backup(to: target)
        #expect(summary.photos == 3)
        #expect(summary.photoFile == target + PhotoFile.suffix)
        for f in [target, target + PhotoFile.suffix] {
            var st = stat()
            #expect(stat(f, &st) == 0 && st.st_mode & 0o777 == 0o600, "\(f)")
        }
        #expect(summary.bytes >= Self.size(target + PhotoFile.suffix) && summary.bytes > 150_000)
        let copy = try Store(path: target)
        #expect(copy.photosForgotten == 0)
        for (h, p) in zip(hashes, photos) { #expect(try copy.photo(h) == p) }
        // A second backup to the same place is refused and leaves the first as it was.
        #expect(throws: StoreError.self) { try s.backup(to: target) }
        #expect(try Store(path: target).photoCount() == 3)
    }

    /// tombstone-gc sets the store and its photo file right with each other:
    /// old bytes no row names go, a row whose bytes are missing goes (the
    /// photo is wanted again), and bytes a row names stay.
    @Test func garbageCollectionReconcilesTheStoreAndItsPhotoFile() throws {
        let (s, dir) = try RT.store()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let old = Self.t0.subtracting(.days(30))
        let named = try s.addPhoto(Self.photo(20, size: 1_000), now: old)
        let lost = try s.addPhoto(Self.photo(21, size: 1_000), now: old)
        _ = try RT.apply(s, RT.line("r", "2026-09-21T12:00:00.000Z", "D1", extra: #","photos":["\#(named)","\#(lost)"]"#))
        // Bytes no row names (a crash between the two writes), old and young.
        let orphanOld = Self.photo(22, size: 1_000), orphanYoung = Self.photo(23, size: 1_000)
        try s.photoFile.stage([orphanOld[...]], size: 1_000, sha256: Hex.encode(SHA256.hash(orphanOld)), addedAt: old.milliseconds)
        try s.photoFile.stage([orphanYoung[...]], size: 1_000, sha256: Hex.encode(SHA256.hash(orphanYoung)), addedAt: Self.t0.milliseconds)
        _ = try s.photoFile.commitStaged()
        try s.photoFile.remove([lost])
        _ = try s.collectGarbage(now: Self.t0, dryRun: false)
        #expect(try s.photoFile.has(named) && s.hasPhoto(named))
        #expect(try !s.hasPhoto(lost))
        #expect(try s.wantedPhotos() == [lost])
        #expect(try !s.photoFile.has(Hex.encode(SHA256.hash(orphanOld))))
        #expect(try s.photoFile.has(Hex.encode(SHA256.hash(orphanYoung))))
    }

    /// A file where the photo file goes that is not one is refused, untouched.
    @Test func somethingElseWhereThePhotoFileGoesIsRefused() throws {
        let dir = TempFolder("fs-photofile")
        let p = dir.path + "/s.db"
        let junk = Data("not a database, just bytes that happen to be here".utf8)
        _ = FileManager.default.createFile(atPath: p + PhotoFile.suffix, contents: junk, attributes: [.posixPermissions: 0o600])
        #expect(throws: StoreError.self) { try Store(path: p) }
        #expect(FileManager.default.contents(atPath: p + PhotoFile.suffix) == junk)
    }
}

/// Deterministic bytes for test photos (splitmix64).
struct SeededBytes {
    private var state: UInt64
    private var word: UInt64 = 0
    private var left = 0
    init(seed: UInt64) { state = seed &+ 0x9E37_79B9_7F4A_7C15 }
    mutating func next() -> UInt8 {
        if left == 0 {
            state = state &+ 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            word = z ^ (z >> 31)
            left = 8
        }
        left -= 1
        let b = UInt8(truncatingIfNeeded: word)
        word >>= 8
        return b
    }
}
