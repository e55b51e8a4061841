/// The family's clock (docs/design.md §3): the owner's device's clock. A
/// member stamps its edits by it — its own clock corrected by the offset it
/// measured against the owner's HELLO in its last session with the owner — so
/// a device whose clock is a month behind or 200 days ahead still orders its
/// edits among the family's as they happened. The owner's offset is 0.
extension Store {
    /// How far the owner's clock was ahead of this device's at the last
    /// session with the owner (negative: behind). 0 before any.
    public var familyClockOffset: TimeSpan {
        get throws { TimeSpan(milliseconds: Int64(try meta("family_clock_offset_ms") ?? "0") ?? 0) }
    }

    /// A member: the owner's HELLO said `ownerClock` when this device's clock said `localClock`.
    func setFamilyClockOffset(ownerClock: Timestamp, localClock: Timestamp) throws {
        let (d, over) = ownerClock.milliseconds.subtractingReportingOverflow(localClock.milliseconds)
        try setMeta("family_clock_offset_ms", String(over ? 0 : d))
    }

    /// This device's reading of the family's clock at its own time `local`.
    public func familyTime(at local: Timestamp) throws -> Timestamp {
        let t = local.adding(try familyClockOffset)
        return min(max(t, Timestamp.earliest), Timestamp.latest)
    }
}
