import FamilySync
import FoundationEssentials
import Glibc
import Synchronization

/// SIGINT and SIGTERM end every tool the same way: exit status 128 + the
/// signal (130, 143) and one line on standard error saying what was kept.
///
/// A tool that can stop at a safe point (peer-sync: a session ends without
/// moving a cursor) calls `stopCooperatively()`: the signal then only asks
/// for a stop (`SyncStop`), and `Tool.run` says what was kept once the tool
/// has stopped. Every other tool is ended from the handler at once: each of
/// its changes to a store is one SQLite transaction, which a process that
/// ends in the middle leaves rolled back, so what is kept is known before
/// the work starts (`whatIsKept`, set by the tool).
public enum Interruption {
    /// The signal received (0: none yet); the first one counts.
    private static let received = Atomic<Int32>(0)
    private static let cooperative = Atomic<Bool>(false)
    /// The handler's line, in one of two buffers: the tool writes the one not
    /// in use and then switches, so the handler never reads a half-written one.
    private static let lineCapacity = 1024
    nonisolated(unsafe) private static let buffers = (0..<2).map { _ in UnsafeMutablePointer<UInt8>.allocate(capacity: lineCapacity) }
    private static let length0 = Atomic<Int>(0)
    private static let length1 = Atomic<Int>(0)
    private static let active = Atomic<Int>(0)
    /// The tool's name and a terminal's line clear, fixed at `install`.
    nonisolated(unsafe) private static var tool: [UInt8] = []
    nonisolated(unsafe) private static var stderrIsTerminal = false

    /// The signal that asked the tool to stop, if one did.
    public static var signal: Int32? {
        let s = received.load(ordering: .relaxed)
        return s == 0 ? nil : s
    }

    /// 130 for SIGINT, 143 for SIGTERM.
    static func status(for signal: Int32) -> Int32 { 128 + signal }

    static func name(of signal: Int32) -> String { signal == SIGINT ? "SIGINT" : signal == SIGTERM ? "SIGTERM" : "signal \(signal)" }

    /// The one line: `tool: interrupted (SIGINT); KEPT`.
    static func line(tool: String, signal: Int32, kept: String) -> String {
        "\(tool): interrupted (\(name(of: signal))); \(kept)"
    }

    /// Installs the handlers; a parent may have left the signals blocked, so
    /// they are unblocked here. Called once, before the tool's body runs.
    static func install(tool name: String) {
        tool = Array(name.utf8)
        stderrIsTerminal = isatty(2) == 1
        // Every global the handler touches is made here, never lazily inside it.
        _ = received.load(ordering: .relaxed)
        _ = cooperative.load(ordering: .relaxed)
        whatIsKept("nothing was changed")
        let handler: @convention(c) (Int32) -> Void = { sig in
            _ = Interruption.received.compareExchange(expected: 0, desired: sig, ordering: .relaxed)
            if Interruption.cooperative.load(ordering: .relaxed) {
                SyncStop.request()
                return
            }
            Interruption.writeLineAndExit(sig)
        }
        Glibc.signal(SIGINT, handler)
        Glibc.signal(SIGTERM, handler)
        var set = sigset_t()
        sigemptyset(&set)
        sigaddset(&set, SIGINT)
        sigaddset(&set, SIGTERM)
        pthread_sigmask(SIG_UNBLOCK, &set, nil)
    }

    /// What an immediate stop keeps, said after `interrupted (SIGNAL); `.
    public static func whatIsKept(_ kept: String) {
        let next = 1 - active.load(ordering: .relaxed)
        let bytes = Array(kept.utf8.prefix(lineCapacity - 1)) + [0x0A]
        bytes.withUnsafeBufferPointer { if let b = $0.baseAddress { buffers[next].update(from: b, count: $0.count) } }
        if next == 0 { length0.store(bytes.count, ordering: .relaxed) } else { length1.store(bytes.count, ordering: .relaxed) }
        active.store(next, ordering: .releasing)
    }

    /// From here on a signal only asks for a stop; the tool ends at its next safe point.
    public static func stopCooperatively() {
        cooperative.store(true, ordering: .relaxed)
        // A signal that came before this is honoured as a stop request too.
        if signal != nil { SyncStop.request() }
    }

    /// Async-signal-safe: write(2) of bytes prepared beforehand, then _exit.
    private static func writeLineAndExit(_ sig: Int32) -> Never {
        func put(_ p: UnsafeRawPointer, _ n: Int) { _ = write(2, p, n) }
        func put(_ s: StaticString) { put(s.utf8Start, s.utf8CodeUnitCount) }
        if stderrIsTerminal { put("\r\u{1B}[K") }
        tool.withUnsafeBufferPointer { if let b = $0.baseAddress { put(b, $0.count) } }
        put(": interrupted (")
        if sig == SIGINT { put("SIGINT") } else { put("SIGTERM") }
        put("); ")
        let i = active.load(ordering: .acquiring)
        put(buffers[i], i == 0 ? length0.load(ordering: .relaxed) : length1.load(ordering: .relaxed))
        _exit(status(for: sig))
    }
}
