import Foundation
@testable import FamilySync

/// Helpers the record and store tests share.
enum RT {
    /// A record line in the contract's field order.
    static func line(_ id: String, _ time: String, _ device: String, deleted: Bool = false,
                     data: String = "{}", extra: String = "") -> String {
        let idJSON = JSONValue.string(id).serialized
        if deleted {
            return "{\"id\":\(idJSON),\"type\":\"receipt\",\"modifiedAt\":\"\(time)\",\"deviceId\":\"\(device)\",\"deleted\":true\(extra)}"
        }
        return "{\"id\":\(idJSON),\"type\":\"receipt\",\"modifiedAt\":\"\(time)\",\"deviceId\":\"\(device)\",\"deleted\":false,\"data\":\(data)\(extra)}"
    }

    static func t(_ s: String) -> Timestamp { Timestamp(rfc3339: s)! }

    /// The pure merge of two NDJSON texts, as text.
    static func merge(_ local: String, _ remote: String, now: String = "2026-12-01T00:00:00Z") throws -> String {
        try merge(local, remote, now: t(now))
    }

    static func merge(_ local: String, _ remote: String, now: Timestamp) throws -> String {
        let l = RecordInput(name: "LOCAL", data: Array(local.utf8))
        let r = RecordInput(name: "REMOTE", data: Array(remote.utf8))
        var out: [UInt8] = []
        _ = try RecordMerge.merge(local: l, remote: r, now: now) { out.append(contentsOf: $0) }
        return String(decoding: out, as: UTF8.self)
    }

    /// What the pure merge explains, per id: (id, rule, from remote).
    static func explain(_ local: String, _ remote: String, now: String = "2026-12-01T00:00:00Z") throws -> [(String, LWW.Rule, Bool)] {
        let l = RecordInput(name: "LOCAL", data: Array(local.utf8))
        let r = RecordInput(name: "REMOTE", data: Array(remote.utf8))
        var out: [(String, LWW.Rule, Bool)] = []
        _ = try RecordMerge.merge(local: l, remote: r, now: t(now), explain: { e in
            out.append((String(decoding: e.id, as: UTF8.self), e.rule, e.fromRemote))
        }) { _ in }
        return out
    }

    /// A fresh store in a temporary folder.
    static func store() throws -> (Store, String) {
        let dir = NSTemporaryDirectory() + "/fs-records-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let path = dir + "/store.db"
        return (try Store(path: path), dir)
    }

    /// Applies NDJSON text to a store through the line reader (the CLI path).
    static func apply(_ store: Store, _ text: String, stamping: Bool = false, now: String = "2026-12-01T00:00:00Z") throws -> ApplySummary {
        let path = NSTemporaryDirectory() + "/fs-input-\(UUID().uuidString).ndjson"
        _ = FileManager.default.createFile(atPath: path, contents: Data(text.utf8))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let reader = try LineReader(path: path, maxLineBytes: Record.maxLineBytes)
        return try store.applyLines(reader, stamping: stamping, now: t(now))
    }

    static func export(_ store: Store) throws -> String {
        var out: [UInt8] = []
        try store.forEachRecordLine { out.append(contentsOf: $0); out.append(0x0A) }
        return String(decoding: out, as: UTF8.self)
    }
}

/// A small seeded generator (SplitMix64) for every test that draws at random:
/// a failing property or image corpus names a seed that reproduces it.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
