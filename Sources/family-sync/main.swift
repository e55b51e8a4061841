import FamilySyncCLI

// The four tools that need no image libraries, in one binary; each is
// installed as a link to it named after the tool (see MultiCall).
MultiCall.main(program: "family-sync", [
    .init(JWSVerifyCommand.spec, JWSVerifyCommand.run),
    .init(MergeRecordsCommand.spec, MergeRecordsCommand.run),
    .init(PeerSyncCommand.spec, PeerSyncCommand.run),
    .init(TombstoneGCCommand.spec, TombstoneGCCommand.run),
])
