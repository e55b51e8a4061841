import Testing
@testable import FamilySync

/// serve's bounded noise: connections that never proved a key are summed up
/// in one `keyless` event per interval; everything else passes at once. The
/// interval runs on a hand-moved clock.
@Suite struct KeylessNoiseTests {
    static let base = Timestamp(milliseconds: 1_780_000_000_000)

    /// A summariser on `clock`, and what it forwarded (with the monotonic time of each).
    final class Sink: @unchecked Sendable {
        let clock: ManualClock
        var events: [(at: Deadline, event: SyncEvent)] = []
        init(_ clock: ManualClock) { self.clock = clock }
        var names: [String] { events.map(\.event.name) }
        var summaries: [SyncEvent] { events.map(\.event).filter { $0.name == "keyless" } }
    }

    static func noise(_ clock: ManualClock, interval: TimeSpan = SyncLimits.keylessSummaryInterval) -> (KeylessNoise, Sink) {
        let sink = Sink(clock)
        let n = KeylessNoise(clock: SyncClock(base: base, monotonic: clock.clock), interval: interval) { e in
            sink.events.append((clock.now, e))
        }
        return (n, sink)
    }

    static func rejected(_ from: String, _ reason: String = "handshake") -> SyncEvent {
        SyncEvent("rejected", [("from", .string(from)), ("reason", .string(reason)), ("message", .string("x"))])
    }
    static func refused(_ from: String, authenticated: Bool, _ reason: String = "unknown-key") -> SyncEvent {
        SyncEvent("refused", [("from", .string(from)), ("reason", .string(reason)), ("message", .string("m")), ("authenticated", .bool(authenticated))])
    }
    static func busy(_ from: String, known: Bool) -> SyncEvent { SyncEvent("busy", [("from", .string(from)), ("known", .bool(known))]) }

    static func field(_ e: SyncEvent, _ k: String) -> JSONValue? { e.fields.first { $0.0 == k }?.1 }
    static func reasons(_ e: SyncEvent) -> [String: Int64] {
        guard case let .object(r)? = field(e, "reasons") else { return [:] }
        return Dictionary(uniqueKeysWithValues: r.map { ($0.0, $0.1.int64Value ?? -1) })
    }

    @Test func keylessConnectionsMakeOneSummaryPerInterval() {
        let clock = ManualClock()
        let (noise, sink) = Self.noise(clock)
        let from = ["192.0.2.1:40000", "192.0.2.2:40001", "[2001:db8::7]:40002"]
        for k in 0..<300 {
            // Three source addresses, each from many ports: counted as three.
            let f = from[k % 3].replacingOccurrences(of: ":4000", with: ":5\(k)")
            switch k % 3 {
            case 0: noise.send(Self.rejected(f))
            case 1: noise.send(Self.refused(f, authenticated: false))
            default: noise.send(Self.busy(f, known: false))
            }
            clock.advance(by: TimeSpan(milliseconds: 100))
        }
        noise.tick()
        #expect(sink.events.isEmpty, "30 s into the interval: nothing yet, \(sink.names)")
        clock.advance(by: TimeSpan.seconds(30))
        noise.tick()
        #expect(sink.names == ["keyless"])
        let s = sink.summaries[0]
        #expect(Self.field(s, "connections")?.int64Value == 300)
        #expect(Self.reasons(s) == ["handshake": 100, "unknown-key": 100, "busy": 100])
        #expect(Self.field(s, "addresses")?.int64Value == 3)
        #expect(Self.field(s, "addressesCapped") == nil)
        #expect(Self.field(s, "first")?.stringValue == Self.base.rfc3339)
        #expect(Self.field(s, "last")?.stringValue == Self.base.adding(TimeSpan(milliseconds: 29_900)).rfc3339)
        // The next interval starts with the next keyless connection.
        clock.advance(by: TimeSpan.minutes(5))
        noise.tick()
        #expect(sink.summaries.count == 1)
        noise.send(Self.rejected("192.0.2.9:1", "bad-key"))
        noise.finish()
        #expect(sink.summaries.count == 2)
        #expect(Self.reasons(sink.summaries[1]) == ["bad-key": 1])
    }

    @Test func provenAndKnownPeersStayOneEventEach() {
        let clock = ManualClock()
        let (noise, sink) = Self.noise(clock)
        let passing = [SyncEvent("listening", [("address", .string("0.0.0.0:7433"))]),
                       SyncEvent("session", [("from", .string("192.0.2.1:1")), ("peer", .string("P"))]),
                       Self.refused("192.0.2.1:2", authenticated: true, "revoked"),
                       Self.busy("192.0.2.1:3", known: true),
                       SyncEvent("ended", [("outcome", .string("synced"))]),
                       SyncEvent("warning", [("message", .string("w"))])]
        for e in passing {
            noise.send(Self.rejected("198.51.100.1:9"))
            noise.send(e)
        }
        #expect(sink.names == passing.map(\.name), "each passes at once, in order")
        noise.finish()
        #expect(sink.names == passing.map(\.name) + ["keyless"])
        #expect(Self.field(sink.summaries[0], "connections")?.int64Value == Int64(passing.count))
    }

    @Test func aPendingSummaryIsWrittenAtFinishAndOnlyOnce() {
        let clock = ManualClock()
        let (noise, sink) = Self.noise(clock)
        noise.finish()
        #expect(sink.events.isEmpty, "no keyless connection, no summary")
        noise.send(Self.rejected("192.0.2.1:1"))
        clock.advance(by: TimeSpan.seconds(1))
        noise.finish()
        noise.finish()
        #expect(sink.names == ["keyless"])
    }

    @Test func distinctAddressesAreCountedUpToTheLimit() {
        let clock = ManualClock()
        let (noise, sink) = Self.noise(clock)
        let n = SyncLimits.keylessAddressLimit + 10
        for k in 0..<n { noise.send(Self.rejected("10.\(k >> 16 & 255).\(k >> 8 & 255).\(k & 255):7")) }
        noise.finish()
        let s = sink.summaries[0]
        #expect(Self.field(s, "connections")?.int64Value == Int64(n))
        #expect(Self.field(s, "addresses")?.int64Value == Int64(SyncLimits.keylessAddressLimit))
        #expect(Self.field(s, "addressesCapped")?.boolValue == true)
    }

    /// Seeded schedules of keyless and other events, ticks and clock moves.
    /// Invariants: every other event is forwarded once, in order; every
    /// keyless connection is counted in exactly one summary; summaries not
    /// made by `finish` are at least an interval apart; a summary covers no
    /// more than one interval; the output is bounded by the events that are
    /// not keyless plus one summary per interval elapsed (plus the last).
    @Test(arguments: [UInt64(1), 2, 3, 4, 5, 6, 7, 8])
    func summariesAreBoundedAndCountEveryConnection(seed: UInt64) {
        var rng = SplitMix64(seed: seed)
        let clock = ManualClock()
        let interval = TimeSpan.seconds(10)
        let (noise, sink) = Self.noise(clock, interval: interval)
        let start = clock.now
        var others: [String] = []
        var keyless = 0
        let steps = Int.random(in: 200...2000, using: &rng)
        for k in 0..<steps {
            switch Int.random(in: 0..<10, using: &rng) {
            case 0..<5:
                keyless += 1
                let f = "192.0.2.\(Int.random(in: 0..<20, using: &rng)):\(k)"
                noise.send([Self.rejected(f), Self.refused(f, authenticated: false), Self.busy(f, known: false)].randomElement(using: &rng)!)
            case 5:
                let name = "session-\(k)"
                others.append(name)
                noise.send(SyncEvent(name, [("from", .string("192.0.2.1:1"))]))
            case 6:
                noise.tick()
            default:
                clock.advance(by: TimeSpan(milliseconds: Int64.random(in: 0...3000, using: &rng)))
            }
        }
        let beforeFinish = sink.events.count
        noise.finish()
        #expect(sink.events.map(\.event.name).filter { $0 != "keyless" } == others, "seed \(seed)")
        let counted = sink.summaries.reduce(Int64(0)) { $0 + (Self.field($1, "connections")?.int64Value ?? 0) }
        #expect(counted == Int64(keyless), "seed \(seed)")
        let timed = sink.events.prefix(beforeFinish).filter { $0.event.name == "keyless" }.map(\.at)
        for (a, b) in zip(timed, timed.dropFirst()) {
            #expect(b.milliseconds(since: a) >= interval.milliseconds, "seed \(seed): summaries \(b.milliseconds(since: a)) ms apart")
        }
        for s in sink.summaries {
            let first = Timestamp(rfc3339: Self.field(s, "first")?.stringValue ?? "")!, last = Timestamp(rfc3339: Self.field(s, "last")?.stringValue ?? "")!
            #expect(last.milliseconds - first.milliseconds < interval.milliseconds, "seed \(seed)")
        }
        let elapsed = clock.now.milliseconds(since: start)
        #expect(sink.summaries.count <= Int(elapsed / interval.milliseconds) + 1, "seed \(seed)")
    }
}
