import FamilySync

/// The six tools, for generators and the tests that keep help, man pages and
/// completions in agreement with the parser.
public enum AllTools {
    public static var specs: [CommandSpec] {
        [JWSVerifyCommand.spec, PairQRCommand.spec, PairScanCommand.spec,
         MergeRecordsCommand.spec, PeerSyncCommand.spec, TombstoneGCCommand.spec]
    }

    static let family = ["family-sync(7)"]
    static func seeAlso(except name: String) -> [String] {
        ["jws-verify(1)", "pair-qr(1)", "pair-scan(1)", "merge-records(1)", "peer-sync(1)", "tombstone-gc(1)"]
            .filter { !$0.hasPrefix(name + "(") } + family
    }
}
