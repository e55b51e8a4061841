import Foundation
import Testing
@testable import FamilySync

@Suite struct SyncStateTests {
    static func record(_ id: String, photos: [String] = [], size: Int = 10) throws -> Record {
        let ph = photos.isEmpty ? "" : ",\"photos\":[" + photos.map { "\"\($0)\"" }.joined(separator: ",") + "]"
        return try Record(line: "{\"id\":\"\(id)\",\"type\":\"t\",\"modifiedAt\":\"2026-11-30T10:00:00.000Z\",\"deviceId\":\"D\",\"deleted\":false,\"data\":{\"x\":\"\(String(repeating: "y", count: size))\"}\(ph)}")
    }

    @Test func revocationMovesTheFamilyKeyAndFreesAPlace() throws {
        let (s, dir) = try RT.store()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let now = Timestamp.current()
        _ = try s.write { try s.createFamily(now: now) }
        let oldKey = try #require(try s.familySecret())
        let member = try randomUUID()
        let dk = try s.write { try s.admitDeviceInTransaction(member, now: now) }
        #expect(try s.memberDeviceKey(member) == dk)
        #expect(try s.activeDeviceCount() == 2)
        let epoch = try s.write { try s.revokeDeviceInTransaction(member, now: now) }
        #expect(epoch == 1)
        #expect(try s.familyEpoch == 1)
        #expect(try s.familySecret() != oldKey)
        #expect(try s.activeDeviceCount() == 1)
        #expect(try s.device(member)?.revokedAt == now)
    }

    @Test func rosterMergeOnlyAccumulatesRevocationsUnlessAuthoritative() throws {
        let (s, dir) = try RT.store()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let d = try randomUUID(), t = Timestamp.current()
        try s.write { try s.mergeRosterEntry(device: d, role: .member, joinedAt: t, revokedAt: t, authoritative: false) }
        try s.write { try s.mergeRosterEntry(device: d, role: .member, joinedAt: t, revokedAt: nil, authoritative: false) }
        #expect(try s.device(d)?.revokedAt == t)
        try s.write { try s.mergeRosterEntry(device: d, role: .member, joinedAt: t, revokedAt: nil, authoritative: true) }
        #expect(try s.device(d)?.revokedAt == nil)
    }

    @Test func recordBatchesAreBoundedByCountBytesAndSnapshot() throws {
        let (s, dir) = try RT.store()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        _ = try s.applyRemote(try (0..<50).map { try Self.record("r\($0)", size: 1000) }, now: Timestamp.current())
        let b1 = try s.exportRecordBatch(after: 0, upTo: 40, maxCount: 100, maxBytes: 10_000)
        #expect(b1.count >= 8 && b1.count <= 10)
        #expect(b1.payload.count <= 10_000)
        let b2 = try s.exportRecordBatch(after: 0, upTo: 40, maxCount: 3, maxBytes: 1 << 20)
        #expect(b2.count == 3 && b2.lastSeq == 3)
        var after: Int64 = 0, total = 0
        while true {
            let b = try s.exportRecordBatch(after: after, upTo: 40, maxCount: 7, maxBytes: 1 << 20)
            if b.count == 0 { break }
            total += b.count
            after = b.lastSeq
        }
        #expect(total == 40)
        // A single record larger than the byte limit still goes, alone.
        let big = try s.exportRecordBatch(after: 0, upTo: 50, maxCount: 10, maxBytes: 5)
        #expect(big.count == 1)
    }

    @Test func wavesPageThroughWantedPhotosInHashOrder() throws {
        let (s, dir) = try RT.store()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let hashes = (0..<45).map { Hex.encode(SHA256.hash("photo \($0)")) }
        _ = try s.applyRemote([try Self.record("r", photos: hashes)], now: Timestamp.current())
        var seen: [String] = [], after = ""
        while true {
            let w = try s.wantedPhotos(after: after, limit: SyncLimits.waveSize)
            if w.isEmpty { break }
            #expect(w.count <= SyncLimits.waveSize)
            seen += w
            after = w.last!
        }
        #expect(seen == hashes.sorted())
        #expect(try s.wantedPhotoCount() == 45)
    }

    @Test func photosAreReadInChunks() throws {
        let (s, dir) = try RT.store()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let bytes = (0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let h = try s.addPhoto(bytes, now: Timestamp.current())
        let loc = try #require(try s.photoLocation(h))
        let r = PhotoBlobReader(store: s, offset: loc.offset, size: loc.size)
        var out: [UInt8] = []
        while !r.isFinished { try r.readChunk(max: 7_000, into: &out) }
        #expect(out == bytes)
    }
}
