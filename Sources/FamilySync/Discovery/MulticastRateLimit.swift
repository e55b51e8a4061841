/// RFC 6762 section 6's flood protection: a record is multicast on an
/// interface at most once a second, so a storm of queries (a bug, or
/// someone on the LAN) costs the network at most one copy of each record
/// per second, however fast the queries come. A querier that missed the
/// last copy asks again and gets the next. The one exception the RFC makes
/// is the answer to a probe (a query with proposed records in its authority
/// section): the prober decides within 250 ms, so its answer may go that
/// soon after the last copy. Goodbyes (TTL 0, section 10.1) are not limited
/// and are not copies. Unicast replies (a legacy querier's) are not multicast
/// and not counted. The caller passes the time from its injected clock.
struct MulticastRateLimit {
    /// Section 6: the least time between two multicasts of a record on one interface.
    static let interval = TimeSpan.seconds(1)
    /// Section 6: the same, for an answer to a probe query.
    static let probeDefenceInterval = TimeSpan(milliseconds: 250)

    /// The records multicast within the last `interval`, where and when;
    /// older entries are dropped, so this holds at most this device's own
    /// records once per interface.
    private var sent: [(interface: UInt32, name: DNSName, data: DNSRData, at: Deadline)] = []

    /// Splits `records` into those that may be multicast on `interface` now
    /// (noted as sent at `now`) and those that must wait, with the moment the
    /// earliest of those may go.
    mutating func admit(_ records: [DNSRecord], on interface: UInt32, at now: Deadline,
                        probeDefence: Bool = false) -> (now: [DNSRecord], later: [DNSRecord], next: Deadline?) {
        sent.removeAll { now >= $0.at.adding(MulticastRateLimit.interval) }
        let gap = probeDefence ? MulticastRateLimit.probeDefenceInterval : MulticastRateLimit.interval
        var go: [DNSRecord] = [], wait: [DNSRecord] = []
        var next: Deadline?
        for r in records {
            if r.ttl == 0 { go.append(r); continue }
            if let k = sent.firstIndex(where: { $0.interface == interface && $0.name == r.name && $0.data == r.data }) {
                let allowed = sent[k].at.adding(gap)
                if now < allowed {
                    wait.append(r)
                    next = min(next ?? allowed, allowed)
                    continue
                }
                sent[k].at = now
            } else {
                sent.append((interface, r.name, r.data, now))
            }
            go.append(r)
        }
        return (go, wait, next)
    }

    /// Forgets every interface's history (the names or the interfaces changed entirely).
    mutating func reset() { sent.removeAll() }
}
