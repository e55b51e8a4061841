import Testing
@testable import FamilySync

@Suite struct FrameTests {
    func decodeAll(_ bytes: [UInt8], chunk: Int) throws -> [Frame] {
        var d = FrameDecoder()
        var out: [Frame] = []
        var i = 0
        while i < bytes.count {
            let j = min(bytes.count, i + chunk)
            bytes[i..<j].withUnsafeBytes { d.append($0) }
            while let f = try d.next() { out.append(f) }
            i = j
        }
        #expect(d.buffered == 0)
        return out
    }

    @Test(arguments: [1, 2, 5, 7, 4096])
    func framesSurviveAnySplit(chunk: Int) throws {
        let stream = Frame.encode(.hello, Array("{\"a\":1}".utf8)) + Frame.encode(.ping, []) + Frame.encode(.photoData, [UInt8](repeating: 9, count: 3000))
        let frames = try decodeAll(stream, chunk: chunk)
        #expect(frames.map(\.type) == [.hello, .ping, .photoData])
        #expect(frames[0].payload == Array("{\"a\":1}".utf8))
        #expect(frames[1].payload.isEmpty)
        #expect(frames[2].payload.count == 3000)
    }

    /// A large payload is read straight into its frame once its header is in;
    /// what follows it goes through the shared buffer again.
    @Test(arguments: [0, 5, 1000, 40_000])
    func largePayloadsAreFilledInPlace(arrivedWithHeader: Int) throws {
        let big = (0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let stream = Frame.encode(.photoData, big) + Frame.encode(.ping, []) + Frame.encode(.done, [1, 2])
        var d = FrameDecoder()
        #expect(d.withPayloadSpace { _ in 0 } == nil)
        stream[0..<(Frame.headerBytes + arrivedWithHeader)].withUnsafeBytes { d.append($0) }
        #expect(try d.next() == nil)
        #expect(d.buffered == Frame.headerBytes + arrivedWithHeader)
        var at = Frame.headerBytes + arrivedWithHeader
        var direct = 0
        var frames: [Frame] = []
        while let n = d.withPayloadSpace({ space -> Int in
            let n = min(space.count, 30_000)
            stream[at..<(at + n)].withUnsafeBytes { space.copyMemory(from: $0) }
            return n
        }) {
            d.filled(n)
            at += n
            direct += n
            while let f = try d.next() { frames.append(f) }
        }
        #expect(direct > 0)
        // The rest, and the frames after it, in one piece through the shared buffer.
        stream[at...].withUnsafeBytes { d.append(UnsafeRawBufferPointer($0)) }
        while let f = try d.next() { frames.append(f) }
        #expect(frames.map(\.type) == [.photoData, .ping, .done])
        let intact = frames.first?.payload == big
        #expect(intact)
        #expect(frames.last?.payload == [1, 2])
        #expect(d.buffered == 0)
    }

    @Test func headerIsBigEndianLengthThenType() {
        #expect(Frame.encode(.done, [1, 2, 3]) == [0, 0, 0, 3, 0x30, 1, 2, 3])
    }

    @Test func oversizedFrameIsRefusedFromItsHeaderAlone() throws {
        var d = FrameDecoder()
        let n = UInt32(Frame.maxPayloadBytes + 1)
        [UInt8(n >> 24), UInt8(n >> 16 & 0xFF), UInt8(n >> 8 & 0xFF), UInt8(n & 0xFF), 0x10].withUnsafeBytes { d.append($0) }
        let e = try #require(throws: ProtocolError.self) { try d.next() }
        #expect(e.message == "frame of \(Frame.maxPayloadBytes + 1) bytes exceeds the limit of \(Frame.maxPayloadBytes)")
    }

    @Test func largestFrameIsAccepted() throws {
        let frames = try decodeAll(Frame.encode(.records, [UInt8](repeating: 0x41, count: Frame.maxPayloadBytes)), chunk: 1 << 16)
        #expect(frames.count == 1 && frames[0].payload.count == Frame.maxPayloadBytes)
    }

    @Test(arguments: [UInt8(0x00), 0x07, 0x14, 0x7E, 0xFF])
    func unknownTypeIsAProtocolError(type: UInt8) {
        var d = FrameDecoder()
        [0, 0, 0, 0, type].withUnsafeBytes { d.append($0) }
        do {
            _ = try d.next()
            Issue.record("decoded an unknown type")
        } catch {
            #expect(error.message.hasPrefix("unknown frame type 0x"))
        }
    }

    @Test func truncatedFrameWaitsAndNeverYields() throws {
        var d = FrameDecoder()
        let f = Frame.encode(.hello, Array("{}".utf8))
        f.dropLast().withUnsafeBytes { d.append(UnsafeRawBufferPointer($0)) }
        #expect(try d.next() == nil)
        #expect(d.buffered == f.count - 1)
    }

    @Test(arguments: ["", "[]", "{", "\"x\"", "{\"a\":}", "nul"])
    func controlFramesMustBeJSONObjects(text: String) {
        #expect(throws: ProtocolError.self) { try Frame(.hello, Array(text.utf8)).json() }
    }
}
