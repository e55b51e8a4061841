import FoundationEssentials
import Glibc
import FamilySync

/// peer-sync's terminal display: one progress line in words, redrawn from the
/// session's events, e.g.
///
///     peer-sync: 1A2B3C4D: photos 12/40 · 4 s left · 20.0 MB/s · 30.1 MB · wave 1
///
/// and lines that stay for what happened (serve's "listening on …", a
/// session's end on the serving side). Only ever on a terminal: ToolContext
/// draws nothing otherwise.
final class SyncProgressView {
    private let ctx: ToolContext
    private var peer = ""
    private var phase = ""
    private var recordsExpected: Int64?
    private var photosWanted: Int64?
    private var phaseStarted = Deadline.now()
    /// Items done when the phase started, so the pace counts this phase only.
    private var doneAtPhaseStart: Int64 = 0

    init(_ ctx: ToolContext) { self.ctx = ctx }

    private static func field(_ e: SyncEvent, _ k: String) -> JSONValue? { e.fields.first { $0.0 == k }?.1 }

    /// A device ID shown short: its first 8 characters.
    static func short(_ id: String) -> String { String(id.prefix(8)) }

    /// A device as people read it: its ID (short unless `full`), then its
    /// name in parentheses when it has one, made safe again for the terminal.
    static func label(_ id: String, name: String?, full: Bool = false) -> String {
        (full ? id : short(id)) + (name.flatMap(DeviceName.neutralised).map { " (\($0))" } ?? "")
    }

    func handle(_ e: SyncEvent) {
        func s(_ k: String) -> String { Self.field(e, k)?.stringValue ?? "" }
        func n(_ k: String) -> Int64? { Self.field(e, k)?.int64Value }
        switch e.name {
        case "listening":
            ctx.log("listening on \(s("address")) (\(s("role")) of family \(Self.short(s("family"))))")
        case "trying":
            ctx.progress("trying \(Self.short(s("peer"))) at \(s("address"))")
        case "session":
            peer = Self.short(s("peer"))
            phase = "hello"
            recordsExpected = nil
            photosWanted = nil
            ctx.progress(peer.isEmpty ? "connecting to \(s("address"))" : "\(peer): starting the session")
        case "joined":
            ctx.progress("joined family \(Self.short(s("family"))); first sync")
        case "hello":
            peer = Self.label(s("peer"), name: Self.field(e, "peerName")?.stringValue)
            recordsExpected = n("recordsExpected")
            ctx.progress("\(peer): records")
        case "phase":
            if s("phase") == "photos" { photosWanted = n("photosWanted") }
        case "progress":
            ctx.progress(line(e))
        case "busy":
            ctx.progress("\(s("address")) is busy with another device; retrying (attempt \(n("attempt") ?? 1))")
        case "ended", "synced":
            ctx.endProgress()
        default:
            break
        }
    }

    /// "1A2B3C4D: records 800/1,000 in · 2 s left · 3.4 MB/s · 1.2 MB",
    /// the phase as the session reports it.
    func line(_ e: SyncEvent) -> String {
        func n(_ k: String) -> Int64 { Self.field(e, k)?.int64Value ?? 0 }
        let bytes = n("bytesSent") + n("bytesReceived"), rate = n("bytesPerSecond")
        let now = Self.field(e, "phase")?.stringValue ?? phase
        let (done, total, sent): (Int64, Int64?, Int64) = now == "photos"
            ? (n("photosReceived") + n("photosUnavailable"), photosWanted, n("photosSent"))
            : (n("recordsReceived"), recordsExpected, n("recordsSent"))
        if now != phase {
            // A new phase: its pace counts from here.
            phase = now
            phaseStarted = Deadline.now()
            doneAtPhaseStart = done
        }
        switch now {
        case "records", "photos":
            var what = "\(peer): \(now)"
            var left: Int64?
            if let total, total > 0 || done > 0 {
                what += " \(Self.count(done))/\(Self.count(max(total, done))) in"
                left = max(0, total - done)
            } else if done > 0 {
                what += " \(Self.count(done)) in"
            }
            var parts = [what]
            if sent > 0 { parts.append("\(Self.count(sent)) out") }
            parts += tail(bytes: bytes, rate: rate, done: done, left: left)
            if now == "photos", n("wave") > 0 { parts.append("wave \(n("wave"))") }
            return Self.join(parts)
        case "done":
            // Done on this side; the peer may still be asking for photos.
            return Self.join(["\(peer): answering its photo requests", "\(Self.count(n("photosSent"))) photos out",
                              Self.size(rate) + "/s", Self.size(bytes)])
        default:
            return Self.join(["\(peer): \(now)", Self.size(rate) + "/s", Self.size(bytes)])
        }
    }

    /// The time left (when the pace is known), the rate and the bytes: in
    /// that order, as a narrow terminal cuts from the end.
    private func tail(bytes: Int64, rate: Int64, done: Int64, left: Int64?) -> [String] {
        var t: [String] = []
        let elapsed = Deadline.now().milliseconds(since: phaseStarted)
        let doneHere = done - doneAtPhaseStart
        if let left, doneHere > 0, elapsed > 0 {
            t.append(left == 0 ? "almost done" : Self.duration(left * elapsed / doneHere) + " left")
        }
        return t + [Self.size(rate) + "/s", Self.size(bytes)]
    }

    /// The line that stays on serve's terminal after each session:
    /// "1A2B3C4D synced: records 0 out, 30,150 in; photos 0 out, 150 in; 160.2 MB in 9 s".
    static func sessionLine(_ summary: JSONValue) -> String {
        func n(_ a: String, _ b: String) -> Int64 { summary[a]?[b]?.int64Value ?? 0 }
        let peer = label(summary["peer"]?.stringValue ?? "", name: summary["peerName"]?.stringValue)
        let bytes = n("bytes", "sent") + n("bytes", "received")
        let ms = summary["durationMs"]?.int64Value ?? 0
        return "\(peer) synced: records \(count(n("records", "sent"))) out, \(count(n("records", "received"))) in; "
            + "photos \(count(n("photos", "sent"))) out, \(count(n("photos", "received"))) in; \(size(bytes)) in \(duration(ms))"
    }

    static func join(_ parts: [String]) -> String { parts.joined(separator: " · ") }

    /// 1234567 → "1,234,567".
    static func count(_ v: Int64) -> String {
        let digits = Array(String(v))
        var out = ""
        for (i, c) in digits.enumerated() {
            if i > 0 && (digits.count - i) % 3 == 0 { out += "," }
            out.append(c)
        }
        return out
    }

    /// Bytes in B, kB, MB or GB (powers of 1000, one decimal).
    static func size(_ b: Int64) -> String {
        let d = Double(b)
        if d < 1000 { return "\(b) B" }
        if d < 1e6 { return String(cFormat: "%.1f kB", d / 1e3) }
        if d < 1e9 { return String(cFormat: "%.1f MB", d / 1e6) }
        return String(cFormat: "%.2f GB", d / 1e9)
    }

    /// "4 s", "2 min 5 s", "1 h 3 min".
    static func duration(_ ms: Int64) -> String {
        let s = max(1, (ms + 999) / 1000)
        if s < 60 { return "\(s) s" }
        if s < 3600 { return "\(s / 60) min \(s % 60) s" }
        return "\(s / 3600) h \(s % 3600 / 60) min"
    }
}
