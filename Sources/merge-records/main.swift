import FamilySyncCLI

Tool.main(MergeRecordsCommand.spec, MergeRecordsCommand.run)
