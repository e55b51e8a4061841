import FamilySync

/// Structured append (ISO/IEC 18004 section 8): one message split over up
/// to 16 symbols, each carrying its index, the total and a parity byte
/// shared by the whole sequence. Parts read anywhere on the ladder are
/// grouped by parity and total; a complete group becomes one code, its
/// parts' segments joined in index order; a group with a part missing is
/// left out (half a text is a wrong text) and reported.
public enum QRSequence {
    /// A sequence some of whose parts were not found, or whose parts disagree.
    public struct Incomplete: Sendable, Equatable {
        public var parity: UInt8
        public var total: Int
        /// The indexes (from 0) that were read.
        public var found: [Int]
        /// Two different symbols claim the same index: two sequences share
        /// a parity, and which parts belong together is not ours to guess.
        public var conflicting: Bool

        /// For a diagnostic: "structured-append sequence (parity 0x5A): parts 1, 3 of 4 read".
        public var summary: String {
            let which = found.map { String($0 + 1) }.joined(separator: ", ")
            let what = conflicting ? "two different symbols claim the same part" : "part\(found.count == 1 ? "" : "s") \(which) of \(total) read"
            return "structured-append sequence (parity 0x\(String(parity, radix: 16, uppercase: true))): \(what)"
        }
    }

    /// Codes with their complete sequences joined (in reading order) and
    /// the sequences that could not be.
    public static func join(_ codes: [ScannedCode]) -> (codes: [ScannedCode], incomplete: [Incomplete]) {
        var single: [ScannedCode] = []
        var groups: [[UInt8]: [ScannedCode]] = [:]
        var keys: [[UInt8]] = []
        for c in codes {
            guard let sa = c.stream?.structuredAppend else { single.append(c); continue }
            let key = [sa.parity, UInt8(sa.total)]
            if groups[key] == nil { keys.append(key) }
            groups[key, default: []].append(c)
        }
        var joined: [ScannedCode] = []
        var incomplete: [Incomplete] = []
        for key in keys {
            let parts = groups[key] ?? []
            let total = Int(key[1])
            // The reads of each index, in reading order (the same part seen twice is two printed copies).
            var byIndex = [[ScannedCode]](repeating: [], count: total)
            // Every part was grouped by its header, and the bitstream parser keeps index < total.
            for p in parts { byIndex[p.stream!.structuredAppend!.index].append(p) }
            let found = byIndex.indices.filter { !byIndex[$0].isEmpty }
            let conflicting = byIndex.contains { reads in reads.contains { $0.bytes != reads[0].bytes } }
            guard found.count == total, !conflicting else {
                incomplete.append(Incomplete(parity: key[0], total: total, found: found, conflicting: conflicting))
                continue
            }
            // As many whole copies as every index has reads for.
            let copies = byIndex.map(\.count).min()!
            for k in 0..<copies { joined.append(ScannedCode(sequence: byIndex.map { $0[k] })) }
        }
        return (ScannedCode.readingOrder(single + joined), incomplete)
    }

    /// The segments of a sequence's parts end to end. An ECI stays in force
    /// into the next part until another is declared, as the standard has it
    /// (and as zbar and ZXing read it).
    static func joinedStream(_ parts: [QRBitstream]) -> QRBitstream {
        var out = parts[0]
        out.segments = []
        out.structuredAppend = nil
        var eci: UInt32?
        for p in parts {
            var partECI: UInt32?
            for var s in p.segments {
                if s.eci == nil { s.eci = partECI ?? eci } else { partECI = s.eci }
                out.segments.append(s)
            }
            if let e = partECI { eci = e }
            out.gs1 = out.gs1 || p.gs1
        }
        return out
    }
}

extension ScannedCode {
    /// A complete structured-append sequence as one code: its parts' data
    /// joined in index order and decided as one text; its corners are the
    /// first part's, and `parts` keeps every part.
    init(sequence parts: [ScannedCode]) {
        // Never nil: only parts with a structured-append header (read from a stream) are grouped.
        let stream = QRSequence.joinedStream(parts.map { $0.stream! })
        self.init(stream: stream, corners: parts[0].corners)
        self.parts = parts
        for t in parts.flatMap(\.disagreeing) where !disagreeing.contains(t) { disagreeing.append(t) }
    }
}
