import Foundation
import Glibc
import SystemGlue
import Testing
@testable import FamilySync

/// The photo file and its pack beside the store (PhotoFile.swift,
/// PhotoPack.swift): where photo bytes are written, that a row of the store
/// never names bytes that are not there, that bytes no index row names are
/// written over or given back, and how old stores, backups and stores put
/// back without their photos fare.
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

    /// A session's photos go into the pack and nowhere else: not through
    /// the store's write-ahead log (the store's file stays small), not into
    /// the photo file or its journal (an index of a row a photo), and the
    /// pack holds the photos once, each padded to a block at most.
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
        let pack = Self.size(m.path + PhotoPack.suffix)
        #expect(pack >= photoBytes && pack <= photoBytes + Int64(count * PhotoPack.alignment), "pack of \(pack) bytes")
        #expect(Self.size(m.path + PhotoFile.suffix) < photoBytes / 64, "photo bytes went into the index")
        #expect(Self.size(m.path + PhotoFile.suffix + "-journal") < photoBytes / 64, "photo bytes went through the journal")
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

    /// A backup is the store, its photo file and its pack, each 0600,
    /// holding exactly the photos whose bytes it has, compacted (a removed
    /// photo leaves no room behind); opened as a store, it has them all.
    @Test func aBackupHoldsThePhotosAndOpensAsAStore() throws {
        let (s, dir) = try RT.store()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let photos = (0..<3).map { Self.photo(10 + $0, size: 50_000 + $0) }
        var hashes: [String] = []
        for p in photos { hashes.append(try s.addPhoto(p, now: Self.t0)) }
        // One more, removed: the copy's pack leaves no room for it.
        let removed = try s.addPhoto(Self.photo(13, size: 400_000), now: Self.t0)
        try s.photoFile.remove([removed])
        try s.write { try s.db.run("DELETE FROM photos WHERE sha256 = ?", [.text(removed)]) }
        let target = dir + "/copy.db"
        let summary = try s.backup(to: target)
        #expect(summary.photos == 3)
        #expect(summary.photoFile == target + PhotoFile.suffix)
        for f in [target, target + PhotoFile.suffix, target + PhotoPack.suffix] {
            var st = stat()
            #expect(stat(f, &st) == 0 && st.st_mode & 0o777 == 0o600, "\(f)")
        }
        #expect(Self.size(target + PhotoPack.suffix) == photos.reduce(0) { $0 + PhotoPack.aligned(Int64($1.count)) })
        #expect(summary.bytes >= Self.size(target + PhotoPack.suffix) + Self.size(target + PhotoFile.suffix) && summary.bytes > 150_000)
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

    /// Appends that never committed (a bundle part refused, a crash before
    /// the index's commit) leave bytes past the end in use: the next photo
    /// is written over them, and tombstone-gc cuts what is left back.
    @Test func bytesPastTheEndInUseAreWrittenOverAndCutBack() throws {
        let (s, dir) = try RT.store()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let first = try s.addPhoto(Self.photo(40, size: 10_000), now: Self.t0)
        let end = Self.size(s.path + PhotoPack.suffix)
        #expect(end == PhotoPack.aligned(10_000))
        // More than the append buffer, so some of it reaches the file before the rollback.
        let big = Self.photo(41, size: PhotoPack.bufferBytes * 2 + 5)
        try s.photoFile.stage(big, sha256: Hex.encode(SHA256.hash(big)), addedAt: Self.t0.milliseconds)
        s.discardStagedPhotos()
        #expect(Self.size(s.path + PhotoPack.suffix) > end)
        #expect(try !s.photoFile.has(Hex.encode(SHA256.hash(big))))
        let next = Self.photo(42, size: 3_000)
        let h = try s.addPhoto(next, now: Self.t0)
        #expect(try s.photoFile.location(h)?.offset == end)
        #expect(try s.photo(h) == next)
        _ = try RT.apply(s, RT.line("r", "2026-09-21T12:00:00.000Z", "D1", extra: #","photos":["\#(first)","\#(h)"]"#))
        _ = try s.collectGarbage(now: Self.t0, dryRun: false)
        #expect(Self.size(s.path + PhotoPack.suffix) == end + PhotoPack.aligned(3_000))
        #expect(try s.integrityCheck() == "ok")
    }

    /// A removed photo's bytes do not stay in the pack: its blocks are
    /// given back (they read as zeros, and the pack holds fewer blocks), the
    /// photos around it are untouched.
    @Test func aRemovedPhotosBytesAreGivenBack() throws {
        let (s, dir) = try RT.store()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let photos = (0..<3).map { Self.photo(50 + $0, size: 600_000) }
        let hashes = try photos.map { try s.addPhoto($0, now: Self.t0.subtracting(.days(30))) }
        _ = try RT.apply(s, RT.line("r", "2026-09-21T12:00:00.000Z", "D1", extra: #","photos":["\#(hashes[0])","\#(hashes[2])"]"#))
        let gone = try #require(try s.photoFile.location(hashes[1]))
        var st = stat()
        #expect(stat(s.path + PhotoPack.suffix, &st) == 0)
        let blocksBefore = st.st_blocks
        let report = try s.collectGarbage(now: Self.t0, dryRun: false)
        #expect(report.photosPurged == 1)
        #expect(try s.photo(hashes[1]) == nil)
        #expect(try s.photo(hashes[0]) == photos[0] && s.photo(hashes[2]) == photos[2])
        var buffer = [UInt8](repeating: 0xFF, count: gone.size)
        try buffer.withUnsafeMutableBytes { try s.photoFile.pack.read(into: $0, count: gone.size, at: gone.offset) }
        #expect(buffer.allSatisfy { $0 == 0 }, "a removed photo's bytes are still in the pack")
        #expect(stat(s.path + PhotoPack.suffix, &st) == 0)
        #expect(st.st_blocks < blocksBefore, "the pack holds as many blocks as before")
    }

    /// A store whose photo file was written by store version 9 holds the
    /// bytes in the photo file itself: opened, they move to the pack, the
    /// photo file shrinks to an index, and nothing is lost, also when an
    /// earlier attempt moved some of them already.
    @Test func aVersion9PhotoFilesBytesMoveIntoThePack() throws {
        let dir = TempFolder("fs-photofile")
        let p = dir.path + "/old.db"
        let photos = (0..<5).map { Self.photo(60 + $0, size: 70_000 * ($0 + 1)) }
        let hashes = photos.map { Hex.encode(SHA256.hash($0)) }
        do {
            let db = try Database(path: p)
            try db.execute("PRAGMA journal_mode = WAL")
            for i in 0..<Int(Schema.photoFileVersion) { try db.execute(Schema.migrations[i]) }
            try db.run("INSERT INTO meta (key, value) VALUES ('device_id', ?), ('created_at', ?), ('change_seq', '0')",
                       [.text(UUID().uuidString.lowercased()), .text(Self.t0.rfc3339)])
            for (h, b) in zip(hashes, photos) {
                try db.run("INSERT INTO photos (sha256, size, added_at) VALUES (?, ?, ?)", [.text(h), .int(Int64(b.count)), .int(Self.t0.milliseconds)])
            }
            try db.execute("PRAGMA application_id = \(Schema.applicationID); PRAGMA user_version = \(Schema.photoFileVersion)")
            try db.close()
            // The photo file as version 9 wrote it: 64 KiB pages, the bytes in photo_bytes.
            let f = try Database(path: p + PhotoFile.suffix)
            try f.execute("""
                PRAGMA page_size = 65536; PRAGMA journal_mode = PERSIST;
                CREATE TABLE photo_bytes (sha256 TEXT PRIMARY KEY, added_at INTEGER NOT NULL, bytes BLOB NOT NULL);
                PRAGMA application_id = \(PhotoFile.applicationID);
                """)
            for (h, b) in zip(hashes, photos) {
                try f.run("INSERT INTO photo_bytes (sha256, added_at, bytes) VALUES (?, ?, ?)", [.text(h), .int(Self.t0.milliseconds), .blob(b)])
            }
            try f.close()
        }
        let before = Self.size(p + PhotoFile.suffix)
        // An earlier attempt that moved two of them, and was cut off.
        do {
            let f = try Database(path: p + PhotoFile.suffix)
            try f.execute("""
                CREATE TABLE photo_pack (sha256 TEXT PRIMARY KEY, added_at INTEGER NOT NULL, offset INTEGER NOT NULL, size INTEGER NOT NULL) WITHOUT ROWID;
                CREATE TABLE pack_state (only INTEGER PRIMARY KEY CHECK (only = 1), end_offset INTEGER NOT NULL);
                INSERT INTO pack_state VALUES (1, 0);
                """)
            try f.close()
            #expect(close(open(p + PhotoPack.suffix, O_WRONLY | O_CREAT, 0o600)) == 0)
            let pf = try PhotoFile(storePath: p)
            try pf.close()
        }
        let s = try Store(path: p)
        #expect(try s.db.scalarInt("PRAGMA user_version") == Int64(Schema.currentVersion))
        #expect(try s.photoFile.db.scalarInt("SELECT count(*) FROM sqlite_schema WHERE name = 'photo_bytes'") == 0)
        #expect(try s.photoFile.db.scalarInt("PRAGMA user_version") == Int64(PhotoFile.packFormat))
        for (h, b) in zip(hashes, photos) { #expect(try s.photo(h) == b) }
        #expect(try s.photoCount() == photos.count)
        #expect(s.photosForgotten == 0)
        #expect(Self.size(p + PhotoFile.suffix) < before / 10, "the photo file kept the pages of the bytes that left it")
        #expect(try s.integrityCheck() == "ok")
    }

    /// A pack that is gone, or cut short, takes its photos with it: they are
    /// wanted again, never taken for held (and never sent as bytes that are not there).
    @Test func aPackMissingOrCutShortMakesItsPhotosWantedAgain() throws {
        let (s, dir) = try RT.store()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let a = try s.addPhoto(Self.photo(70, size: 9_000), now: Self.t0)
        let b = try s.addPhoto(Self.photo(71, size: 9_000), now: Self.t0)
        _ = try RT.apply(s, RT.line("r", "2026-09-21T12:00:00.000Z", "D1", extra: #","photos":["\#(a)","\#(b)"]"#))
        try s.close()
        // Cut short: the second photo's bytes are not all there.
        #expect(truncate(s.path + PhotoPack.suffix, off_t(PhotoPack.aligned(9_000) + 100)) == 0)
        do {
            let cut = try Store(path: s.path)
            #expect(try cut.integrityCheck() != "ok")
            #expect(try cut.hasPhoto(b) && cut.photoFile.location(b) != nil)
            #expect(try cut.photoLocation(b) == nil && !cut.photoFile.has(b), "bytes that are not there would be sent")
            _ = try cut.collectGarbage(now: Self.t0, dryRun: false)
            #expect(try cut.wantedPhotos() == [b])
            #expect(try cut.photo(a) == Self.photo(70, size: 9_000))
            try cut.close()
        }
        #expect(unlink(s.path + PhotoPack.suffix) == 0)
        let gone = try Store(path: s.path)
        #expect(gone.photosForgotten == 1)
        #expect(try gone.wantedPhotos().sorted() == [a, b].sorted())
        #expect(try gone.integrityCheck() == "ok")
    }

    /// Pages of `path` in the page cache, and pages in all.
    static func cachedPages(_ path: String) throws -> (cached: Int, all: Int) {
        let size = Int(Self.size(path))
        let fd = open(path, O_RDONLY)
        defer { close(fd) }
        let map = try #require(mmap(nil, size, PROT_READ, MAP_SHARED, fd, 0))
        defer { munmap(map, size) }
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        var resident = [UInt8](repeating: 0, count: (size + page - 1) / page)
        #expect(mincore(map, size, &resident) == 0)
        return (resident.filter { $0 & 1 != 0 }.count, resident.count)
    }

    /// Where the file system does direct I/O, a received library goes from
    /// the writer's buffer to the disk without passing through the page
    /// cache: after a session, almost none of the pack is resident.
    @Test func receivedPhotosDoNotPassThroughThePageCache() throws {
        let h = try InProcessHousehold(members: 1, start: Self.t0, onDisk: true)
        let m = h.members[0]
        // A file system that caches what it is given anyway (tmpfs) or takes no direct I/O is not what this is about.
        let probe = h.dir + "/probe"
        let block = UnsafeMutableRawPointer.allocate(byteCount: 1 << 16, alignment: PhotoPack.alignment)
        defer { block.deallocate() }
        block.initializeMemory(as: UInt8.self, repeating: 7, count: 1 << 16)
        #expect(close(open(probe, O_WRONLY | O_CREAT, 0o600)) == 0)
        let fd = fs_open_direct_write(probe)
        guard fd >= 0 else { return }
        let wrote = pwrite(fd, block, 1 << 16, 0)
        close(fd)
        guard wrote == 1 << 16, try Self.cachedPages(probe).cached == 0 else { return }
        let count = 24, each = 512 << 10
        var lines: [String] = []
        do {
            let o = try Store(path: h.owner.path)
            for i in 0..<count {
                let hash = try o.addPhoto(Self.photo(80 + i, size: each), now: Self.t0)
                lines.append(RT.line("p\(i)", "2026-09-21T12:00:00.000Z", h.owner.id, extra: #","photos":["\#(hash)"]"#))
            }
        }
        try h.edit(h.owner, lines)
        let (client, _) = try h.sync(m)
        #expect(client.photosReceived == Int64(count))
        let pages = try Self.cachedPages(m.path + PhotoPack.suffix)
        #expect(pages.all * 4096 >= count * each)
        #expect(pages.cached * 10 < pages.all, "\(pages.cached) of \(pages.all) pages of the pack are in the page cache")
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
