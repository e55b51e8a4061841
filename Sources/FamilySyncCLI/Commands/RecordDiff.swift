import FoundationEssentials
import Glibc
import FamilySync

/// `merge-records --diff A B`: why two devices disagree. A and B are each a
/// store or an NDJSON export; for every id whose versions differ, one JSON
/// line {"id", "a", "b", "winner", "rule"} (sorted by id): both versions as
/// held (null where one side has none), which one a sync keeps and by which
/// step of the rule. Versions with the same modifiedAt, deviceId and deleted
/// but other bytes are same-version to the rule: each side keeps its own, so
/// syncing never makes them agree (winner null).
enum RecordDiff {
    /// Every record of `path`, by id: a store's records, or an export's
    /// lines (a later line for an id replaces an earlier one by the rule).
    static func load(_ path: String, progress: InputProgress? = nil) throws -> [String: Record] {
        var out: [String: Record] = [:]
        func take(_ r: Record) {
            if let held = out[r.id], !LWW.decide(local: held.version, remote: r.version).takeRemote { return }
            out[r.id] = r
        }
        if isStore(path) {
            let store = try Store(path: path, create: false)
            let total = (try? store.recordCounts()).map { $0.live + $0.tombstones } ?? 0
            try store.forEachRecordLine { bytes in
                // A store's size is its record count: the percent is of records.
                // (out.count: ids so far, the same as records in a store, where ids are unique.)
                if out.count % progressEvery == 0 { progress?.show(count: out.count, of: total) }
                let line = String(decoding: bytes, as: UTF8.self)
                do { take(try Record(line: line)) } catch { throw ToolError.data("\(path): a stored record does not parse: \(error)") }
            }
            return out
        }
        let reader = try LineReader(path: path, maxLineBytes: Record.maxLineBytes)
        while let l = try reader.next() {
            if reader.lineNumber % progressEvery == 0 { progress?.show(count: reader.lineNumber, done: reader.position, size: reader.size) }
            guard case let .text(bytes) = l else { throw ToolError.data("\(reader.name):\(reader.lineNumber): line longer than \(Record.maxLineBytes) bytes") }
            if bytes.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) { continue }
            do { take(try Record(line: String(decoding: bytes, as: UTF8.self))) } catch {
                throw ToolError.data("\(reader.name):\(reader.lineNumber): \(error)")
            }
        }
        return out
    }

    /// Records between progress redraws: a few per second at full speed.
    static let progressEvery = 65536

    /// A store begins with SQLite's 16-byte header.
    static func isStore(_ path: String) -> Bool {
        guard path != "-" else { return false }
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var header = [UInt8](repeating: 0, count: 16)
        return read(fd, &header, 16) == 16 && header == Array("SQLite format 3\u{0}".utf8)
    }

    static func run(_ ctx: ToolContext, a: String, b: String) throws -> ExitStatus {
        if a == "-" && b == "-" { throw ToolError.usage("A and B cannot both be standard input") }
        let left = try load(a, progress: InputProgress(ctx, unit: "records", prefix: "reading A (\(a))"))
        let right = try load(b, progress: InputProgress(ctx, unit: "records", prefix: "reading B (\(b))"))
        ctx.endProgress()
        var differing = 0
        for id in Set(left.keys).union(right.keys).sorted(by: { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }) {
            let l = left[id], r = right[id]
            if let l, let r, l.line == r.line { continue }
            var winner: JSONValue, rule: String
            switch (l, r) {
            case let (l?, r?):
                let d = LWW.decide(local: l.version, remote: r.version)
                rule = d.rule.rawValue
                winner = d.rule == .sameVersion ? .null : .string(d.takeRemote ? "b" : "a")
            case (_?, nil): (winner, rule) = (.string("a"), LWW.Rule.new.rawValue)
            default: (winner, rule) = (.string("b"), LWW.Rule.new.rawValue)
            }
            func version(_ x: Record?) throws -> JSONValue { try x.map { try JSONParser.parse($0.line) } ?? .null }
            try ctx.out.writeLine(.object([("id", .string(id)), ("a", try version(l)), ("b", try version(r)), ("winner", winner), ("rule", .string(rule))]))
            differing += 1
        }
        return differing == 0 ? .success : .negative
    }
}
