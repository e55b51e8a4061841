import FamilySyncCLI

Tool.main(PeerSyncCommand.spec, PeerSyncCommand.run)
