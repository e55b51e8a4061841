/// The store's schema, one forward migration per version. `PRAGMA
/// user_version` holds the version a store is at; a store from a newer build
/// is refused rather than guessed at.
enum Schema {
    /// Marks a SQLite file as a family-sync store ("FSYN").
    static let applicationID: Int32 = 0x4653_594E

    /// migrations[i] takes a store from version i to version i + 1.
    static let migrations: [String] = [
        // Version 1.
        """
        -- Small facts about this store: device_id, created_at, change_seq, family_id, role, owner_device.
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;

        -- Secret material (the family secret). Never printed; the file is 0600.
        CREATE TABLE secrets (name TEXT PRIMARY KEY, value BLOB NOT NULL) WITHOUT ROWID;

        -- Settings a user sets once: bundle_id, products, max_devices, allow_sandbox.
        CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;

        -- Records, one row per id: the LWW winner held. `line` is the record's JSON
        -- text as written out; `seq` is this store's change counter when the row last
        -- changed, the cursor peers sync from. Times are milliseconds since the epoch.
        -- A rowid table with a unique id index: appends stay sequential and the id
        -- index stays small, which keeps bulk applies and purges fast.
        -- `photo_count` is how many record_photos rows the record has (0 for tombstones).
        CREATE TABLE records (
            rid INTEGER PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            type TEXT NOT NULL,
            modified_at INTEGER NOT NULL,
            device_id TEXT NOT NULL,
            deleted INTEGER NOT NULL CHECK (deleted IN (0, 1)),
            line TEXT NOT NULL,
            seq INTEGER NOT NULL,
            photo_count INTEGER NOT NULL DEFAULT 0
        );
        CREATE INDEX records_by_seq ON records (seq);
        CREATE INDEX tombstones_by_time ON records (modified_at, seq) WHERE deleted = 1;

        -- Which live records name which photos (by the record's rid), so wanted and
        -- unreferenced photos are found without reading every record.
        CREATE TABLE record_photos (
            sha256 TEXT NOT NULL,
            record INTEGER NOT NULL,
            PRIMARY KEY (sha256, record)
        ) WITHOUT ROWID;
        CREATE INDEX record_photos_by_record ON record_photos (record);

        -- Photo bytes, content-addressed by lowercase SHA-256 hex.
        CREATE TABLE photos (
            sha256 TEXT PRIMARY KEY,
            size INTEGER NOT NULL,
            added_at INTEGER NOT NULL,
            bytes BLOB NOT NULL
        );
        CREATE INDEX photos_by_age ON photos (added_at);

        -- The family's devices, this one included, and what this store knows of
        -- syncing with each: sent_seq is how far of our changes the peer has
        -- acknowledged (a completed done handshake), recv_seq how far of theirs we hold.
        CREATE TABLE devices (
            device_id TEXT PRIMARY KEY,
            role TEXT NOT NULL CHECK (role IN ('owner', 'member')),
            name TEXT,
            joined_at INTEGER NOT NULL,
            revoked_at INTEGER,
            last_addr TEXT,
            last_synced_at INTEGER,
            sent_seq INTEGER NOT NULL DEFAULT 0,
            recv_seq INTEGER NOT NULL DEFAULT 0
        ) WITHOUT ROWID;

        -- One-time pairing offers this store (the owner's) has made.
        CREATE TABLE offers (
            nonce TEXT PRIMARY KEY,
            created_at INTEGER NOT NULL,
            expires_at INTEGER NOT NULL,
            addr TEXT,
            used_at INTEGER,
            used_by TEXT,
            closed_at INTEGER
        ) WITHOUT ROWID;

        -- Entitlement proofs (compact JWS App Store transactions) this store keeps,
        -- each verified before it was kept and re-verified whenever it is read.
        -- source is 'local' or 'peer:<device ID>'; signed_at and expires_at are the
        -- payload's signedDate and expiresDate (NULL: none), for ordering and pruning.
        CREATE TABLE proofs (
            id INTEGER PRIMARY KEY,
            jws TEXT NOT NULL UNIQUE,
            source TEXT NOT NULL,
            saved_at INTEGER NOT NULL,
            signed_at INTEGER,
            expires_at INTEGER
        );
        CREATE INDEX proofs_by_signed ON proofs (signed_at);
        """,
        // Version 2: the owner's acknowledgement points (Acknowledgements.swift):
        // after the session that ended at the owner's change number own_seq, the
        // owner held every change of `device` up to that device's peer_seq.
        """
        CREATE TABLE ack_points (
            device TEXT NOT NULL,
            peer_seq INTEGER NOT NULL,
            own_seq INTEGER NOT NULL,
            PRIMARY KEY (device, peer_seq)
        ) WITHOUT ROWID;
        """,
        // Version 3: meta 'record_digest', the record-state digest kept current
        // by every write (RecordStateDigest.swift). Store.migrate computes it
        // once over the records already held; this step only clears a stale one.
        """
        DELETE FROM meta WHERE key = 'record_digest';
        """,
        // Version 4 (protocol revision 3, docs/design.md §4): deletes by evidence.
        // `prev_at` is, for an edit made here, the `modified_at` of the version it
        // replaced (NULL for a new id or a received version): the bound a session
        // puts on this device's own versions never pulls an edit below it.
        // `purge_batches` are the records of purges (PurgeRecords.swift): the ids'
        // hashes and delete times, kept long after the tombstones are gone; `seq`
        // is this store's change number for the batch (how peers are sent it; 0 on
        // a member, which passes batches on only when it sends everything),
        // `digest` the SHA-256 of `entries` (a batch received twice is kept once),
        // `signature` the owner's Ed25519 signature over them (NULL until signed).
        // `seq_clock` says when this store held its changes (HeldSince.swift): every
        // change numbered at most `seq` was here by this store's time `at`, the end of an hour.
        """
        ALTER TABLE records ADD COLUMN prev_at INTEGER;
        CREATE TABLE purge_batches (
            id INTEGER PRIMARY KEY,
            seq INTEGER NOT NULL,
            digest BLOB NOT NULL UNIQUE,
            entries BLOB NOT NULL,
            signature BLOB
        );
        CREATE INDEX purge_batches_by_seq ON purge_batches (seq);
        CREATE TABLE seq_clock (
            at INTEGER PRIMARY KEY,
            seq INTEGER NOT NULL
        );
        """,
        // Version 5: a record line holds no CR (docs/design.md §2). Earlier builds
        // kept a CR between tokens; in a valid line a CR byte can only be such
        // whitespace (inside a string it is refused), so it becomes a space: the
        // same JSON, and every store holding that version rewrites it alike.
        // Store.migrate recomputes the kept digest when a line changed.
        """
        UPDATE records SET line = replace(line, char(13), ' ') WHERE instr(line, char(13)) > 0;
        """,
        // Version 6: where a version came from. `came_from` is the device a
        // session received the row's line from, byte for byte, and `came_seq`
        // the change number it was stored with; the mark holds only while
        // `came_seq = seq` (any later write gives the row a new change number),
        // and a session never sends a row back to the device it came from
        // (RecordBatches.swift), even when the session that brought it was cut
        // off before its cursors moved.
        """
        ALTER TABLE records ADD COLUMN came_from TEXT;
        ALTER TABLE records ADD COLUMN came_seq INTEGER;
        """,
        // Version 7: bundles (docs/protocol.md §12b, BundleLedger.swift). Per
        // peer: how far of its changes bundles brought here without a gap
        // (`recv`), how far of ours it acknowledged in its bundles (`sent`),
        // the number of the last bundle written to it, the highest applied
        // from it and that bundle's clock, until which acknowledgement bundles to it carry everything, and the
        // photos it said it wants. `bundle_ranges`: parts applied past `recv`;
        // `bundle_parts`: every part applied, so a replay changes nothing.
        """
        CREATE TABLE IF NOT EXISTS bundle_peers (
            peer TEXT PRIMARY KEY,
            recv INTEGER NOT NULL DEFAULT 0,
            sent INTEGER NOT NULL DEFAULT 0,
            written INTEGER NOT NULL DEFAULT 0,
            applied INTEGER NOT NULL DEFAULT 0,
            applied_clock INTEGER NOT NULL DEFAULT 0,
            resend INTEGER NOT NULL DEFAULT 0,
            wants TEXT NOT NULL DEFAULT ''
        ) WITHOUT ROWID;
        CREATE TABLE IF NOT EXISTS bundle_ranges (
            peer TEXT NOT NULL,
            after INTEGER NOT NULL,
            up_to INTEGER NOT NULL,
            PRIMARY KEY (peer, after, up_to)
        ) WITHOUT ROWID;
        CREATE TABLE IF NOT EXISTS bundle_parts (
            id TEXT PRIMARY KEY,
            peer TEXT NOT NULL,
            applied_at INTEGER NOT NULL
        ) WITHOUT ROWID;
        """,
        // Version 8: resuming a session that was cut off (docs/protocol.md
        // §7.4b, ResumePoints.swift). Per peer and direction: a chain of
        // sessions that started sending from `after` and had delivered the
        // sender's changes up to `up_to` when the last of them ended. And the
        // copies an owner pulled back from a member's bundle (BundleLedger.swift).
        """
        CREATE TABLE IF NOT EXISTS resume_points (
            peer TEXT NOT NULL,
            direction TEXT NOT NULL CHECK (direction IN ('in', 'out')),
            chain TEXT NOT NULL,
            after INTEGER NOT NULL,
            up_to INTEGER NOT NULL,
            PRIMARY KEY (peer, direction)
        ) WITHOUT ROWID;

        -- The owner's pulled-back copies of a member's versions that came in a
        -- bundle, kept until the member acknowledges the change `seq` (the row's
        -- when the copy was made): a copy superseded here before it went back
        -- still goes, ahead of what superseded it (docs/protocol.md §12b).
        -- `theirs`: the member's version's time as it came.
        CREATE TABLE IF NOT EXISTS bundle_returns (
            peer TEXT NOT NULL,
            rid INTEGER NOT NULL,
            line TEXT NOT NULL,
            seq INTEGER NOT NULL,
            theirs INTEGER NOT NULL,
            PRIMARY KEY (peer, rid)
        ) WITHOUT ROWID;
        """,
        // Version 9: photo bytes live in the photo file beside the store
        // (PhotoFile.swift), where they are written once; `photos` keeps which
        // are held. The bytes are copied there before this runs (Store.migrate).
        """
        ALTER TABLE photos DROP COLUMN bytes;
        """,
        // Version 10: the photo file keeps only an index, the bytes are in the
        // pack beside it (PhotoPack.swift), moved there when the photo file is
        // opened. Nothing changes in the store itself; the version tells an
        // older family-sync, which would find no photos in the photo file, to
        // leave the store alone.
        """
        SELECT 1;
        """,
        // Version 11: bundles name their writes (docs/protocol.md §12b, BundleLedger.swift).
        // `bundle_writes`: the writes this store made to `peer`, each named by a random
        // token its reader echoes; an echo naming none of them means the reader counted
        // another history of this store's (it was put back from a copy since).
        // `bundle_newest`: per peer, the newest write applied from it: its token, number,
        // clock, and `base`, the change number its range starts after; ranges of other
        // writes do not count above it.
        // `copies_made` (CopiesMade.swift, docs/design.md §3.1): each version of another
        // device's this store pulled back, or kept its earlier copy of, by the time it
        // came with (`theirs`), with the copy's line, for as long as that version could
        // still beat the row. The copies an owner owed already are its first entries.
        """
        CREATE TABLE IF NOT EXISTS copies_made (
            rid INTEGER NOT NULL,
            theirs INTEGER NOT NULL,
            line TEXT NOT NULL,
            PRIMARY KEY (rid, theirs)
        ) WITHOUT ROWID;
        INSERT OR IGNORE INTO copies_made (rid, theirs, line) SELECT rid, theirs, line FROM bundle_returns;
        CREATE TABLE IF NOT EXISTS bundle_writes (
            peer TEXT NOT NULL,
            token TEXT NOT NULL,
            write INTEGER NOT NULL,
            PRIMARY KEY (peer, token)
        ) WITHOUT ROWID;
        CREATE TABLE IF NOT EXISTS bundle_newest (
            peer TEXT PRIMARY KEY,
            token TEXT NOT NULL,
            write INTEGER NOT NULL,
            clock INTEGER NOT NULL,
            base INTEGER NOT NULL
        ) WITHOUT ROWID;
        """,
    ]

    /// The first version whose stores keep the record-state digest in `meta`.
    static let keptDigestVersion: Int32 = 3
    /// The first version whose stores keep purge records and holding times.
    static let evidenceVersion: Int32 = 4
    /// The first version whose record lines hold no CR.
    static let noCRVersion: Int32 = 5
    /// The first version whose photo bytes are in the photo file.
    static let photoFileVersion: Int32 = 9

    static var currentVersion: Int32 { Int32(migrations.count) }
}
