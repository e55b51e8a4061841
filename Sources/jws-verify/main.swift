import FamilySyncCLI

Tool.main(JWSVerifyCommand.spec, JWSVerifyCommand.run)
