import FamilySyncCLI

Tool.main(TombstoneGCCommand.spec, TombstoneGCCommand.run)
