/// Bundles (docs/protocol.md §12b): a session's data as a file, for two
/// devices with no link at all. Writing or applying one takes the store's
/// one session slot, as a session does, so neither runs beside a session.
public enum Bundles {
    /// Writes what `peer` has not acknowledged in bundles yet to `path` (and
    /// `path.2`, … when `maxBytes` cuts it into parts).
    public static func write(store: Store, to peer: String, path: String, maxBytes: Int64?, now: Timestamp, verifier: ProofVerifier,
                             warn: (String) -> Void) throws -> BundleWriteSummary {
        let (family, me) = try current(store)
        guard peer != me else { throw BundleError(.usage, "a bundle is for another device, not this one") }
        guard let d = try store.device(peer) else { throw BundleError(.usage, "device \(peer) is not in this store's family") }
        if let t = d.revokedAt { throw BundleError(.usage, "device \(peer) was revoked at \(t.rfc3339)") }
        if let maxBytes, maxBytes < BundleLimits.minPartBytes {
            throw BundleError(.usage, "--max-bytes: at least \(BundleLimits.minPartBytes) bytes (a part holds a whole record batch)")
        }
        let lock = try slot(store)
        defer { lock.release() }
        return try BundleWriter.write(store: store, family: family, me: me, to: peer, path: path, maxBytes: maxBytes, now: now, verifier: verifier, warn: warn)
    }

    /// Applies one part; the store is as it was when it throws.
    public static func apply(store: Store, path: String, now: Timestamp, verifier: ProofVerifier,
                             emit: (String, [(String, JSONValue)]) -> Void) throws -> BundleApplySummary {
        let (family, me) = try current(store)
        let lock = try slot(store)
        defer { lock.release() }
        return try BundleApplier.apply(path: path, store: store, family: family, me: me, now: now, verifier: verifier, emit: emit)
    }

    private static func current(_ store: Store) throws -> (FamilyInfo, String) {
        guard let family = try store.family() else { throw StoreError(.noFamily, path: store.path) }
        let me = try store.deviceID
        if let t = try store.device(me)?.revokedAt { throw SyncError(.revoked, detail: t.rfc3339, family: family.id) }
        return (family, me)
    }

    private static func slot(_ store: Store) throws -> SessionLock {
        let lock = try SessionLock.forStore(at: store.path)
        guard lock.tryAcquire() else { throw BundleError(.busy, "a session or another bundle is using the store \(store.path); try again when it ends") }
        return lock
    }
}
