import FoundationEssentials
import Glibc
import FamilySync

/// What `peer-sync serve` says on standard error when it is not a terminal
/// (run as a service: journald keeps each line): the listening address at
/// start, one line per session and one per refusal to a device that proved
/// its key; connections that never did are summed up in one line per
/// interval (`KeylessNoise`). A terminal gets the progress display instead.
final class ServiceLog: @unchecked Sendable {
    private let name: String
    let enabled: Bool
    private let lock = ThreadLock()
    /// Where the running session's peer connected from.
    private var from: String?

    init(_ ctx: ToolContext) {
        name = ctx.name
        enabled = !ctx.quiet && isatty(2) != 1
    }

    func line(_ message: String) {
        guard enabled else { return }
        lock.lock()
        defer { lock.unlock() }
        StandardStreams.writeError("\(name): \(message)\n")
    }

    func event(_ e: SyncEvent) {
        func field(_ k: String) -> String? {
            guard let v = e.fields.first(where: { $0.0 == k })?.1 else { return nil }
            if case let .string(s) = v { return s }
            return v.serialized
        }
        switch e.name {
        case "session", "joined":
            from = field("from")
        case "refused", "rejected":
            line("refused \(field("from") ?? "a peer"): \(field("reason") ?? "refused"): \(field("message") ?? "")")
        case "keyless":
            line(ServiceLog.keylessLine(e))
        case "busy" where field("from") != nil:
            line("busy: told \(field("from")!) to retry (a session is running)")
        default:
            break
        }
    }

    /// The journal's line for a `keyless` summary: how many, from how many
    /// addresses, when, and the count per reason.
    static func keylessLine(_ e: SyncEvent) -> String {
        func value(_ k: String) -> JSONValue? { e.fields.first { $0.0 == k }?.1 }
        let n = value("connections")?.int64Value ?? 0
        let a = value("addresses")?.int64Value ?? 0
        let capped = value("addressesCapped")?.boolValue == true ? "at least " : ""
        var reasons: [String] = []
        if case let .object(r)? = value("reasons") { reasons = r.map { "\($0.0) \($0.1.int64Value ?? 0)" } }
        return "\(n) connection\(n == 1 ? "" : "s") without a key of this family from \(capped)\(a) address\(a == 1 ? "" : "es") "
            + "(\(value("first")?.stringValue ?? "?") to \(value("last")?.stringValue ?? "?")): \(reasons.joined(separator: ", "))"
    }

    /// One line for an ended session; a failed one is already on stderr as a warning.
    func session(_ result: Result<SyncSummary, any Error>) {
        defer { from = nil }
        guard case let .success(s) = result else { return }
        let seconds = String(cFormat: "%.1f", Double(s.durationMilliseconds) / 1000)
        line("session with \(SyncProgressView.label(s.peer, name: s.peerName, full: true))\(from.map { " at \($0)" } ?? "")\(s.joined ? " (joined)" : ""): records \(s.recordsSent) sent, \(s.recordsReceived) received; "
             + "photos \(s.photosSent) sent, \(s.photosReceived) received; \(s.bytesSent + s.bytesReceived) bytes in \(seconds) s")
    }
}
