import FamilySyncCLI

Tool.main(PairScanCommand.spec, PairScanCommand.run)
