import FamilySync

/// The progress line of a tool reading a long input: percent of the file,
/// the count so far, the rate and the time left when the size is known (a
/// regular file), the count and rate alone when it is not (a pipe). Time
/// left comes first after the percent, as a narrow terminal cuts from the end.
struct InputProgress {
    let ctx: ToolContext
    let started = Deadline.now()
    /// What is counted ("records").
    let unit: String
    /// Said before the numbers ("reading A"), if anything.
    var prefix: String?

    init(_ ctx: ToolContext, unit: String, prefix: String? = nil) {
        self.ctx = ctx
        self.unit = unit
        self.prefix = prefix
    }

    /// Redraws the line for `count` items and `done` of `size` bytes.
    func show(count: Int, done: Int64, size: Int64?) {
        guard ctx.showsProgress else { return }
        ctx.progress(Self.line(prefix: prefix, count: count, unit: unit, done: done, size: size,
                               elapsedMilliseconds: Deadline.now().milliseconds(since: started)))
    }

    /// Redraws the line for `count` of `total` items (a store's records).
    func show(count: Int, of total: Int) {
        guard ctx.showsProgress else { return }
        let ms = Deadline.now().milliseconds(since: started)
        var parts: [String] = prefix.map { [$0] } ?? []
        parts.append("\(total > 0 ? min(100, count * 100 / total) : 100)%")
        parts.append("\(SyncProgressView.count(Int64(count))) of \(SyncProgressView.count(Int64(total))) \(unit)")
        if count > 0, ms > 0 {
            let left = Int64(max(0, total - count)) * ms / Int64(count)
            parts.append(left == 0 ? "almost done" : SyncProgressView.duration(left) + " left")
            parts.append("\(SyncProgressView.count(Int64(count) * 1000 / ms)) \(unit)/s")
        }
        ctx.progress(SyncProgressView.join(parts))
    }

    /// The words of the line, from the numbers alone.
    static func line(prefix: String?, count: Int, unit: String, done: Int64, size: Int64?, elapsedMilliseconds ms: Int64) -> String {
        var parts: [String] = []
        if let prefix { parts.append(prefix) }
        let rate = ms > 0 ? done * 1000 / ms : 0
        if let size, size > 0 {
            let pct = min(100, done * 100 / size)
            parts.append("\(pct)% of \(SyncProgressView.size(size))")
            parts.append("\(SyncProgressView.count(Int64(count))) \(unit)")
            if done > 0, ms > 0 {
                let left = max(0, size - done) * ms / done
                parts.append(left == 0 ? "almost done" : SyncProgressView.duration(left) + " left")
            }
        } else {
            parts.append("\(SyncProgressView.count(Int64(count))) \(unit)")
        }
        if done > 0 { parts.append(SyncProgressView.size(rate) + "/s") }
        return SyncProgressView.join(parts)
    }
}
