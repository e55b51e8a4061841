import FamilySyncCLI

Tool.main(PairQRCommand.spec, PairQRCommand.run)
