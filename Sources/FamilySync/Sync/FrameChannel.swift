import FoundationEssentials
import Glibc

/// Frames over one TLS connection, driven by a single thread: an output
/// buffer the session fills (and stops filling above a high-water mark), a
/// decoder for input, byte counters and the times of the last traffic, so
/// the session can send keepalives and notice a silent peer.
/// Not Sendable.
final class FrameChannel {
    let tls: TLSConnection
    private var out: [UInt8] = []
    private var outStart = 0
    /// Whether `out` has held key bytes since it was last wiped.
    private var holdsSecret = false
    private var decoder = FrameDecoder()
    private var scratch = [UInt8](repeating: 0, count: FrameChannel.readChunkBytes)
    private var readWantsWrite = false

    private(set) var bytesSent: Int64 = 0
    private(set) var bytesReceived: Int64 = 0
    /// When the peer last sent anything / we last wrote anything.
    private(set) var lastReceived: Deadline
    private(set) var lastSent: Deadline
    /// When a frame other than PING was last queued or received: a session
    /// whose keepalives are all that moves makes no progress.
    private(set) var lastWork: Deadline
    /// The clock those two times are read from.
    let clock: MonotonicClock
    /// Set once the peer has closed: true for a clean TLS close.
    private(set) var peerClosed: Bool?

    /// How much one read asks OpenSSL for.
    static let readChunkBytes = 256 << 10
    /// The most one turn reads before handing frames to the session, so a
    /// flooding peer cannot make us buffer without bound.
    static let maxReadPerTurn = 8 << 20

    /// Runs at the start of every turn: a session records there as held the
    /// photos its writer has put on disk since the last turn.
    var eachTurn: (() throws -> Void)?

    init(_ tls: TLSConnection, clock: MonotonicClock = .system) {
        self.tls = tls
        self.clock = clock
        lastReceived = clock.now()
        lastSent = lastReceived
        lastWork = lastReceived
    }

    /// The largest frame this channel accepts from now on.
    var maxPayload: Int {
        get { decoder.maxPayload }
        set { decoder.maxPayload = newValue }
    }

    /// Bytes queued and not yet written.
    var backlog: Int { out.count - outStart }

    func send(_ type: FrameType, _ payload: [UInt8]) {
        if type != .ping { lastWork = clock.now() }
        Frame.appendHeader(type, length: payload.count, to: &out)
        out.append(contentsOf: payload)
    }

    func send(_ type: FrameType, json: JSONValue) {
        send(type, Array(json.serialized.utf8))
    }

    /// Queues a message that carries key bytes (WELCOME, FAMILY with the
    /// family key): the serialized copy is zeroed once queued, and the send
    /// buffer once it has all been written, so the keys' hex text does not
    /// stay behind in this process's buffers.
    func sendSecret(_ type: FrameType, json: JSONValue) {
        var payload = Array(json.serialized.utf8)
        send(type, payload)
        payload.withUnsafeMutableBytes(SecretBytes.wipe)
        holdsSecret = true
    }

    /// Appends a frame whose payload is `head` followed by `body`, without joining them first.
    func send(_ type: FrameType, head: [UInt8], body: ArraySlice<UInt8>) {
        lastWork = clock.now()
        Frame.appendHeader(type, length: head.count + body.count, to: &out)
        out.append(contentsOf: head)
        out.append(contentsOf: body)
    }

    /// Appends a frame built in place by `build`, which appends the payload to the buffer it is given.
    func sendBuilt(_ type: FrameType, length: Int, _ build: (inout [UInt8]) throws -> Void) rethrows {
        lastWork = clock.now()
        Frame.appendHeader(type, length: length, to: &out)
        let before = out.count
        try build(&out)
        precondition(out.count - before == length, "frame built with a wrong length")
    }

    /// One turn of the loop: write what the socket takes, read what has
    /// arrived, and if neither made progress wait up to `waitMilliseconds` for
    /// either. Returns the complete frames received.
    func turn(waitMilliseconds: Int32) throws -> [Frame] {
        try eachTurn?()
        var frames: [Frame] = []
        var progressed = try flush()
        progressed = try readAvailable(into: &frames) || progressed
        // Any progress goes back to the session first: it may have more to
        // queue now that the buffer drained, or frames to act on.
        if !frames.isEmpty || peerClosed != nil || progressed { return frames }
        let rc = tls.link.poll(events: Int16(POLLIN) | ((backlog > 0 || readWantsWrite) ? Int16(POLLOUT) : 0), milliseconds: waitMilliseconds)
        if rc < 0 && errno != EINTR { throw SocketError("poll", address: tls.link.address) }
        _ = try flush()
        _ = try readAvailable(into: &frames)
        return frames
    }

    /// Writes until the buffer is empty or the socket is full. Returns whether anything was written.
    @discardableResult
    func flush() throws -> Bool {
        var wrote = false
        while backlog > 0 {
            let r = try out.withUnsafeBytes { try tls.write(UnsafeRawBufferPointer(rebasing: $0[outStart..<out.count])) }
            switch r {
            case let .bytes(n):
                outStart += n
                bytesSent += Int64(n)
                wrote = true
                lastSent = clock.now()
            case .wantRead, .wantWrite:
                compact()
                return wrote
            case .closed:
                peerClosed = peerClosed ?? false
                return wrote
            }
        }
        if holdsSecret {
            out.withUnsafeMutableBytes(SecretBytes.wipe)
            holdsSecret = false
        }
        out.removeAll(keepingCapacity: out.capacity <= (8 << 20))
        outStart = 0
        return wrote
    }

    private func compact() {
        if outStart > (1 << 20) && outStart * 2 > out.count {
            // What was written may hold a secret's text: zero it before the unsent rest moves over it.
            if holdsSecret { let n = outStart; out.withUnsafeMutableBytes { SecretBytes.wipe(.init(rebasing: $0[..<n])) } }
            out.removeFirst(outStart)
            outStart = 0
        }
    }

    /// Reads whatever is available (up to the per-turn cap) into frames.
    private func readAvailable(into frames: inout [Frame]) throws -> Bool {
        var total = 0
        readWantsWrite = false
        while total < FrameChannel.maxReadPerTurn, peerClosed == nil {
            // Straight into the frame being filled when much of it is missing, else into scratch for the decoder.
            let direct = try decoder.withPayloadSpace { try tls.read(into: $0) }
            let r = try direct ?? scratch.withUnsafeMutableBytes { try tls.read(into: $0) }
            switch r {
            case let .bytes(n):
                total += n
                bytesReceived += Int64(n)
                if direct != nil {
                    decoder.filled(n)
                } else {
                    scratch.withUnsafeBytes { decoder.append(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
                }
                while let f = try decoder.next() {
                    if f.type != .ping { lastWork = clock.now() }
                    frames.append(f)
                }
            case .wantRead:
                if total > 0 { lastReceived = clock.now() }
                return total > 0
            case .wantWrite:
                readWantsWrite = true
                if total > 0 { lastReceived = clock.now() }
                return total > 0
            case let .closed(clean):
                peerClosed = clean
            }
        }
        if total > 0 { lastReceived = clock.now() }
        return total > 0
    }

    /// True when the peer closed in the middle of a frame.
    var closedMidFrame: Bool { peerClosed != nil && decoder.buffered > 0 }

    /// Writes everything still queued, waiting up to the deadline.
    func drain(deadline: Deadline) throws {
        while backlog > 0 {
            if try flush() { continue }
            if backlog == 0 || peerClosed != nil { return }
            guard try tls.link.wait(for: Int16(POLLOUT) | Int16(POLLIN), deadline: deadline) else {
                throw TLSError(.timeout, "writing to \(tls.link.address) timed out")
            }
        }
    }

    /// Reads the next frame, waiting at most until the deadline. Nil when the peer closed first.
    func receive(deadline: Deadline) throws -> Frame? {
        var pending: [Frame] = []
        while true {
            pending = try turn(waitMilliseconds: min(deadline.remainingMilliseconds, 1000))
            if let f = pending.first {
                stash = Array(pending.dropFirst())
                return f
            }
            if peerClosed != nil { return nil }
            if deadline.hasPassed { throw TLSError(.timeout, "no answer from \(tls.link.address)") }
        }
    }

    /// Frames read past the one `receive` returned, for the next `turn`.
    var stash: [Frame] = []

    func takeStash() -> [Frame] {
        defer { stash = [] }
        return stash
    }
}
