/// A RECORDS payload as a session or a bundle takes it (docs/protocol.md
/// §7.4): every line is exactly one record object ended by 0x0A (no blank
/// line, no CR, no bytes around the object), with `modifiedAt` in canonical
/// form; one bad line and nothing of the batch is applied. Each line is
/// scanned once, where it lies in the payload, and applied from that scan.
enum IncomingRecords {
    /// The scans of the payload's `count` bytes at `base`, which the caller
    /// checked to be non-empty and to end with 0x0A. `recordsBefore` numbers
    /// the records in errors.
    static func scan(_ base: UnsafePointer<UInt8>, count: Int, recordsBefore: Int64) throws -> [RecordScan] {
        var scans: [RecordScan] = []
        var workspace = RecordScanner.ScanWorkspace()
        var lineNumber = 0
        var start = 0
        while start < count {
            // Stops within the payload: it ends with 0x0A.
            var end = start
            while base[end] != 0x0A { end += 1 }
            lineNumber += 1
            func bad(_ problem: String) -> ProtocolError {
                ProtocolError("RECORDS line \(lineNumber) (record \(recordsBefore + Int64(scans.count) + 1)): \(problem)")
            }
            guard end > start else { throw bad("empty line") }
            guard base[start] == UInt8(ascii: "{"), base[end - 1] == UInt8(ascii: "}") else {
                throw bad(base[end - 1] == 0x0D ? "ends with a carriage return (lines end with 0x0A alone)"
                                                : "bytes before or after the record object")
            }
            guard end - start <= Record.maxLineBytes else { throw bad("line longer than \(Record.maxLineBytes) bytes") }
            let r: RecordScan
            do { r = try RecordScanner.scan(base, start: start, end: end, mode: .exchanged, workspace: &workspace) } catch { throw bad("\(error)") }
            // A non-canonical time would be rewritten here and leave the sender's copy different.
            guard r.isTimeCanonical(base) else { throw bad("modifiedAt: not in canonical form YYYY-MM-DDTHH:MM:SS.sssZ") }
            scans.append(r)
            start = end + 1
        }
        return scans
    }
}
