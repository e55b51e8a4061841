import FoundationEssentials

/// When a write is on disk (docs/design.md, "Durability"): every commit
/// outside a sync session is durable when it returns (`synchronous = FULL`,
/// `Store.connectionPragmas`); a session commits without a sync each and
/// makes everything durable at its two promises, before it sends DONE and
/// after it moves its cursors. Photo bytes are on disk before the store
/// counts them as held (PhotoFile.swift). A sync that fails is an error, never a
/// silent success.
extension Store {
    /// Puts everything committed through this connection on disk (the
    /// write-ahead log and the file), whoever else has the store open.
    public func makeDurable() throws {
        try flushStagedPhotos()
        try db.syncToDisk()
    }

    /// Closes the store, saying so when that fails; a tool calls it before
    /// exiting 0. The store must not be used after.
    public func close() throws {
        try flushStagedPhotos()
        try stopPhotoWriter()
        try photoFile.close()
        try db.close()
    }

    /// Runs `body` with commits not synced one by one (`synchronous =
    /// NORMAL`: in WAL mode a commit is then durable at the next explicit
    /// sync or checkpoint), so a session receiving a library pays for a few
    /// fsyncs instead of one per batch and photo. Whatever `body` promises
    /// to a peer or a user it first makes durable with `makeDurable`.
    /// Every commit after it is synced again.
    func deferringSyncs<T>(_ body: () throws -> T) throws -> T {
        try db.execute("PRAGMA synchronous = NORMAL")
        defer { try? db.execute("PRAGMA synchronous = FULL") }
        return try body()
    }
}
