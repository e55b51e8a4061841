import Foundation
import Testing
@testable import FamilySync

/// The requesting side of photo transfer without a connection: which hashes
/// each wave asks for, and how answers are assembled and kept.
@Suite struct PhotoWavesTests {
    static func hashes(_ range: Range<Int>) -> [String] { range.map { Hex.encode(SHA256.hash("photo \($0)")) } }

    static func unavailable(_ h: String) -> Frame {
        Frame(.photoUnavailable, Array(JSONValue.object([("photo", .string(h))]).serialized.utf8))
    }

    static func data(_ bytes: [UInt8], offset: Int, total: Int) -> Frame {
        var p = Hex.decode(Hex.encode(SHA256.hash(bytes)))!
        for v in [UInt64(total), UInt64(offset)] {
            for shift in stride(from: 56, through: 0, by: -8) { p.append(UInt8((v >> UInt64(shift)) & 0xFF)) }
        }
        return Frame(.photoData, p)
    }

    /// Waves start with the first records; photos named later, behind the
    /// cursor, are still asked for, once, before the waves are over.
    @Test func wavesStartBeforeTheLastRecordAndMissNothing() throws {
        let (s, dir) = try RT.store()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let now = Timestamp.current()
        let all = Self.hashes(0..<50).sorted()
        let early = Array(all[25...]), late = Array(all[..<25])
        let w = PhotoWaves(store: s, waveTimeout: .seconds(30))
        #expect(try w.nextWave(recordsComplete: false) == nil)

        _ = try s.applyRemote([try SyncStateTests.record("a", photos: early)], now: now)
        w.recordsArrived()
        var asked: [String] = []
        while let wave = try w.nextWave(recordsComplete: false) {
            #expect(wave.count <= SyncLimits.waveSize)
            #expect(try w.nextWave(recordsComplete: false) == nil)  // not before this one is answered
            for h in wave { try w.handleUnavailable(Self.unavailable(h)) }
            asked += wave
        }
        #expect(asked == early)
        #expect(!w.finished)

        // The last batch names photos that sort before everything asked for so far.
        _ = try s.applyRemote([try SyncStateTests.record("b", photos: late)], now: now)
        w.recordsArrived()
        while let wave = try w.nextWave(recordsComplete: true) {
            for h in wave { try w.handleUnavailable(Self.unavailable(h)) }
            asked += wave
        }
        #expect(asked.sorted() == all)
        #expect(Set(asked).count == asked.count)  // no photo asked for twice
        #expect(w.finished)
        #expect(w.unavailable == 50)
    }

    /// A wave is short of 20 only when fewer photos are left to ask for: it
    /// wraps round the end of the wanted list to photos named since that sort
    /// before where the last wave stopped.
    @Test func wavesAreFullWhileMoreAreWanted() throws {
        let (s, dir) = try RT.store()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let now = Timestamp.current()
        // Batches whose photos interleave in hash order with those already asked for.
        let all = Self.hashes(0..<130)
        let batches = [Array(all[0..<30]), Array(all[30..<75]), Array(all[75..<130])]
        let w = PhotoWaves(store: s, waveTimeout: .seconds(30))
        var asked: Set<String> = []
        var sizes: [Int] = []
        for (k, batch) in batches.enumerated() {
            _ = try s.applyRemote([try SyncStateTests.record("r\(k)", photos: batch)], now: now)
            w.recordsArrived()
            let last = k == batches.count - 1
            // Every request is answered unavailable, so what was asked for stays wanted.
            while let wave = try w.nextWave(recordsComplete: last) {
                // Wanted and not asked for before this wave (this wave's hashes included).
                let left = try s.wantedPhotos(after: "", limit: 1000).filter { !asked.contains($0) }.count
                #expect(wave.count == min(SyncLimits.waveSize, left), "wave \(sizes.count + 1): \(wave.count) of \(left) left")
                #expect(asked.isDisjoint(with: wave))
                sizes.append(wave.count)
                asked.formUnion(wave)
                for h in wave { try w.handleUnavailable(Self.unavailable(h)) }
            }
        }
        #expect(w.finished)
        #expect(asked == Set(all))
        #expect(sizes.filter { $0 < SyncLimits.waveSize }.count <= batches.count)
    }

    /// §7.6: a receiver accepts any chunk size and the answers of one
    /// request in any order.
    @Test func answersComeInAnyOrderAndAnyChunkSize() throws {
        let (s, dir) = try RT.store()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let photos = [[UInt8](repeating: 1, count: 1000), [UInt8](repeating: 2, count: 300), [UInt8](repeating: 3, count: 10)]
        let hashes = photos.map { Hex.encode(SHA256.hash($0)) }
        _ = try s.applyRemote([try SyncStateTests.record("a", photos: hashes)], now: Timestamp.current())
        let w = PhotoWaves(store: s, waveTimeout: .seconds(30))
        w.recordsArrived()
        let wave = try #require(try w.nextWave(recordsComplete: true))
        #expect(Set(wave) == Set(hashes))
        // The last-requested photo first, in chunks of 1, 7 and the rest;
        // then an unavailable; then the first photo whole.
        let last = try #require(wave.last), first = try #require(wave.first)
        let bytes = photos[hashes.firstIndex(of: last)!]
        var off = 0
        for n in [1, 7, bytes.count - 8] {
            var f = Self.data(bytes, offset: off, total: bytes.count)
            f.payload += bytes[off..<(off + n)]
            #expect(try w.handleData(f, now: Timestamp.current()) == nil)
            off += n
        }
        let middle = wave[1]
        try w.handleUnavailable(Self.unavailable(middle))
        let whole = photos[hashes.firstIndex(of: first)!]
        var f = Self.data(whole, offset: 0, total: whole.count)
        f.payload += whole
        #expect(try w.handleData(f, now: Timestamp.current()) == nil)
        #expect(w.received == 2)
        #expect(w.unavailable == 1)
        #expect(w.outstanding.isEmpty)
        #expect(try s.hasPhoto(last) && s.hasPhoto(first))
    }

    /// A wave asked for while the peer is still sending records is not silent
    /// while records keep coming; once they stop, the timeout runs.
    @Test func aWaveWaitingBehindRecordsDoesNotTimeOut() throws {
        let (s, dir) = try RT.store()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        _ = try s.applyRemote([try SyncStateTests.record("a", photos: Self.hashes(0..<3))], now: Timestamp.current())
        let t = ManualClock()
        let w = PhotoWaves(store: s, waveTimeout: TimeSpan(milliseconds: 1_000), clock: t.clock)
        w.recordsArrived()
        #expect(try w.nextWave(recordsComplete: false)?.count == 3)
        // Records keep coming for 1.5 s, more than the timeout in all: the wave stays.
        for _ in 0..<15 {
            t.advance(by: TimeSpan(milliseconds: 100))
            w.recordsArrived()
            #expect(w.expireIfSilent() == 0)
        }
        // Then silence: 999 ms is not yet the timeout, 1,000 ms is.
        t.advance(by: TimeSpan(milliseconds: 999))
        #expect(w.expireIfSilent() == 0)
        t.advance(by: TimeSpan(milliseconds: 1))
        #expect(w.expireIfSilent() == 3)
        #expect(w.unavailable == 3)
    }

    @Test func withEveryRecordInOnePassIsEnough() throws {
        let (s, dir) = try RT.store()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let all = Self.hashes(0..<3)
        _ = try s.applyRemote([try SyncStateTests.record("a", photos: all)], now: Timestamp.current())
        let w = PhotoWaves(store: s, waveTimeout: .seconds(30))
        let wave = try #require(try w.nextWave(recordsComplete: true))
        #expect(wave == all.sorted())
        for h in wave { try w.handleUnavailable(Self.unavailable(h)) }
        #expect(try w.nextWave(recordsComplete: true) == nil)
        #expect(w.finished)
        #expect(w.waveNumber == 1)
    }

    /// Chunks of any size, down to a byte, come back in order; small ones are
    /// joined rather than kept one slice each.
    @Test func assemblyKeepsChunksInOrderAndJoinsSmallOnes() throws {
        let bytes = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ 5) }
        let hash = Hex.encode(SHA256.hash(bytes))
        let a = PhotoAssembly(hash: hash, total: bytes.count, discard: false)
        var at = 0
        for size in [1, 1, 3, 70_000, 2, 65_536, 5_000, 20_000] + Array(repeating: 1, count: 2_000) {
            a.append(bytes[at..<(at + size)])
            at += size
        }
        a.append(bytes[at...])
        #expect(a.count == bytes.count)
        let joined = a.chunks.flatMap { $0 } == bytes
        #expect(joined)
        #expect(a.chunks.count < 12)
        #expect(a.digestHex() == hash)
    }

    /// Waves on `s`, which holds one record naming a photo of `bytes`, that have asked for that photo; and its hash.
    static func wavesAskingFor(_ bytes: [UInt8], in s: Store) throws -> (PhotoWaves, String) {
        let h = Hex.encode(SHA256.hash(bytes))
        _ = try s.applyRemote([try SyncStateTests.record("a", photos: [h])], now: Timestamp.current())
        let w = PhotoWaves(store: s, waveTimeout: .seconds(30))
        #expect(try w.nextWave(recordsComplete: true) == [h])
        return (w, h)
    }

    /// A received photo is kept only whole and matching its hash, written from its chunks.
    @Test func receivedPhotoIsKeptFromItsChunks() throws {
        let (s, dir) = try RT.store()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let bytes = (0..<150_000).map { UInt8(truncatingIfNeeded: $0 &* 3) }
        let (w, h) = try Self.wavesAskingFor(bytes, in: s)
        var at = 0
        while at < bytes.count {
            let n = min(SyncLimits.photoChunkBytes, bytes.count - at)
            var f = Self.data(bytes, offset: at, total: bytes.count)
            f.payload += bytes[at..<(at + n)]
            #expect(try w.handleData(f, now: Timestamp.current()) == nil)
            #expect(try s.hasPhoto(h) == (at + n == bytes.count))
            at += n
        }
        let kept = try s.photo(h) == bytes
        #expect(kept)
        #expect(w.received == 1)
    }

    /// A frame that carries none of a photo's bytes is refused, first or mid-photo:
    /// it would reset the wave's silence timer while moving nothing forward.
    @Test func framesWithNoBytesOfAPhotoAreRefused() throws {
        let (s, dir) = try RT.store()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let bytes = (0..<5_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let (w, h) = try Self.wavesAskingFor(bytes, in: s)
        #expect(throws: ProtocolError.self) { try w.handleData(Self.data(bytes, offset: 0, total: bytes.count), now: Timestamp.current()) }
        var first = Self.data(bytes, offset: 0, total: bytes.count)
        first.payload += bytes[0..<1_000]
        #expect(try w.handleData(first, now: Timestamp.current()) == nil)
        #expect(throws: ProtocolError.self) { try w.handleData(Self.data(bytes, offset: 1_000, total: bytes.count), now: Timestamp.current()) }
        #expect(try !s.hasPhoto(h))
        // An empty photo is the one frame with no bytes.
        let (t, dir2) = try RT.store()
        defer { try? FileManager.default.removeItem(atPath: dir2) }
        let (v, _) = try Self.wavesAskingFor([], in: t)
        #expect(try v.handleData(Self.data([], offset: 0, total: 0), now: Timestamp.current()) == nil)
        #expect(v.received == 1)
    }

    /// §7.5: a requester never asks for a hash twice, so a second answer for a photo already
    /// answered (a responder that answers a repeated request again) is a protocol error here.
    @Test func aSecondAnswerForAPhotoAlreadyAnsweredIsRefused() throws {
        let (s, dir) = try RT.store()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let bytes = (0..<3_000).map { UInt8(truncatingIfNeeded: $0 &* 5) }
        let (w, h) = try Self.wavesAskingFor(bytes, in: s)
        var answer = Self.data(bytes, offset: 0, total: bytes.count)
        answer.payload += bytes
        #expect(try w.handleData(answer, now: Timestamp.current()) == nil)
        #expect(try s.hasPhoto(h))
        #expect { try w.handleData(answer, now: Timestamp.current()) } throws: {
            ($0 as? ProtocolError)?.message == "PHOTO-DATA for a photo already answered"
        }
        #expect(w.received == 1)
    }
}
