/// Every limit and timeout of peer-sync, with why it has the value it has.
public enum SyncLimits {
    /// Photos asked for at once: the next wave goes out only when the last is
    /// answered, so neither side ever holds more than a wave of work and a
    /// whole library is never requested in one go.
    public static let waveSize = 20
    /// How long a wave may go without any reply before what is still missing
    /// counts as unavailable and the session moves on (`--wave-timeout`).
    public static let defaultWaveTimeout = TimeSpan.seconds(30)
    /// Photo requests a responder queues at most: a requester that timed out a
    /// wave may send the next before the old one is answered, but not endlessly.
    public static let maxQueuedPhotoRequests = 4 * waveSize
    /// Bytes of photo data per PHOTO-DATA frame: small enough to interleave
    /// control frames and for each frame's buffer to come from the allocator's
    /// reused heap (below glibc's 128 KiB mmap threshold, so a gigabyte of
    /// photos does not fault in a gigabyte of fresh pages), large enough to
    /// keep TLS records full.
    public static let photoChunkBytes = 64 << 10
    /// Records per RECORDS frame, and the bytes after which a batch is cut
    /// (a batch always carries at least one record). Each batch is applied in
    /// one transaction, so a broken session leaves whole batches or nothing.
    public static let recordBatchCount = 1000
    public static let recordBatchBytes = 1 << 20
    /// Output queued before the session stops producing more until the peer
    /// reads: memory stays bounded whatever the library size.
    public static let outputHighWater = 4 << 20
    /// A side that has sent nothing for this long sends a PING, so its peer can
    /// tell a quiet session from a dead one.
    public static let keepaliveInterval = TimeSpan.seconds(10)
    /// A peer silent this long (no byte at all, keepalives included) has vanished.
    public static let idleTimeout = TimeSpan.seconds(45)
    /// The longest a session may pass with no frame but PING in either
    /// direction (`--quiet-limit`): every step of a session sends a frame,
    /// so only a peer that holds the session without doing anything gets
    /// here, and it must not hold a server's one session slot for it.
    public static let defaultQuietLimit = TimeSpan.minutes(2)
    /// The longest one session may run (`--session-limit`). What it applied
    /// stays and photos still missing are asked for next time, so a library
    /// larger than one session carries on over several; a peer that keeps a
    /// session going with a trickle of work holds the slot no longer than this.
    public static let defaultSessionLimit = TimeSpan.minutes(60)
    /// Connecting, the TLS handshake, reading a notice, and the closing handshake.
    public static let connectTimeout = TimeSpan.seconds(5)
    public static let handshakeTimeout = TimeSpan.seconds(10)
    public static let noticeTimeout = TimeSpan.seconds(10)
    public static let closeTimeout = TimeSpan.seconds(5)
    /// A `--via` command opens its own link before the handshake can cross it
    /// (ssh logs in, and may ask for a passphrase on the terminal), so the
    /// handshake over one may take this long.
    public static let viaHandshakeTimeout = TimeSpan.minutes(2)
    /// How long a `--via` command gets to end once its input is closed, before
    /// SIGTERM (then, a second later, SIGKILL).
    public static let transportExitGrace = TimeSpan.seconds(5)
    /// After a protocol error: how long ERROR and close_notify may take to go out.
    public static let errorCloseTimeout = TimeSpan.seconds(1)
    /// Clock difference beyond which the skew is reported (the LWW clamp's window).
    public static let reportedClockSkew = LWW.maxClockSkew
    /// How long `connect` keeps retrying a busy peer unless `--wait` says otherwise,
    /// and the backoff between tries (doubling from the first to the cap).
    public static let defaultBusyWait = TimeSpan.minutes(1)
    public static let busyRetryFirst = TimeSpan(milliseconds: 500)
    public static let busyRetryCap = TimeSpan.seconds(8)
    /// The longest a server's `retryAfterMs` hint is heeded, so a hostile or
    /// broken one cannot park a client past any sensible `--wait`.
    public static let busyRetryAfterCap = TimeSpan.seconds(60)
    /// The delay a busy server suggests before the next try.
    public static let busyRetryHint = TimeSpan.seconds(1)
    /// Connections `serve` holds before they authenticate (accepted, in their
    /// handshake, or getting a notice), each on its own thread; a newcomer past
    /// this drops the most stalled one (OpenSSH's MaxStartups, without the
    /// random early drop). A household has a handful of devices: 16 leaves
    /// room for all of them at once and bounds what a stranger can hold.
    public static let preAuthLimit = 16
    /// The most time a connection gets from accept to authenticated (or to its
    /// notice sent): OpenSSH's LoginGraceTime. A TLS 1.3 PSK handshake is one
    /// round trip, so even a slow link needs a fraction of this.
    public static let preAuthGrace = TimeSpan.seconds(5)
    /// How often `serve` reports connections that never proved a key (a
    /// failed handshake, an unauthenticated refusal or BUSY): one summary per
    /// interval, counts per reason, instead of a line each, so a flood of
    /// hundreds a second costs the journal a line a minute.
    public static let keylessSummaryInterval = TimeSpan.minutes(1)
    /// Distinct source addresses one summary counts; past this it says
    /// "at least" (`addressesCapped`), so a flood from many addresses holds
    /// no more memory than this.
    public static let keylessAddressLimit = 4096
    /// Connections the kernel queues before the acceptor takes them: enough
    /// for a burst of several pools' worth.
    public static let listenBacklog: Int32 = 64
    /// The largest family-key epoch any message or identity may carry. The
    /// epoch counts the family's key changes (one per revocation or restore),
    /// so a family never comes near it; the bound keeps every `epoch + 1`
    /// from overflowing, whatever a peer sends.
    public static let maxEpoch: Int64 = (1 << 31) - 1
    /// How far a member's HELLO `epoch` may be above the owner's own. Only a
    /// restored owner store is behind its members, by the key changes made
    /// since the copy was taken; more than this many cannot be a key the
    /// owner made, so the session ends with a protocol error instead of the
    /// owner moving its key to where a member says.
    public static let maxEpochLead: Int64 = 1024
    /// Device keys a device tries on a sealed identity or bundle header
    /// (§3.3): a member holds one, the owner one per device it admitted,
    /// current members first, then the most recently revoked. The roster
    /// holds as many entries at most, so a family never has more current.
    public static let maxTrialDeviceKeys = FamilyMessage.maxRosterEntries
    /// Offers the owner recognises in a pairing identity: the newest made,
    /// open or not (an older offer's redemption is an unknown key).
    public static let maxRecognisedOffers = 16
    /// Every key a device tries on one sealed name, at most: its family key,
    /// the device keys and the offers. One AES-256-GCM tag check of a few
    /// dozen bytes each bounds the work a stranger causes per ClientHello.
    public static let maxTrialKeys = 1 + maxTrialDeviceKeys + maxRecognisedOffers
    /// Services a joining device tries, the offer's address among them,
    /// before it gives up: no advertisement names the owner (§12a), so each
    /// family-sync service found is asked whether it holds the offer.
    public static let maxJoinCandidates = 8
    /// The default port `serve` listens on and `connect` assumes.
    public static let defaultPort: UInt16 = 7433
    /// How large a session lets the write-ahead log grow before a checkpoint:
    /// receiving a library then costs a few dozen checkpoints and their
    /// fsyncs rather than one every four megabytes.
    public static let sessionCheckpointBytes: Int64 = 64 << 20
    /// How often a waiting server looks whether it was asked to stop.
    public static let stopCheckInterval = TimeSpan(milliseconds: 100)
    /// Progress events are written at most this often.
    public static let progressInterval = TimeSpan(milliseconds: 500)
}
