import FamilySyncFuzz
import Glibc
import LibFuzzerDriver

// The libFuzzer driver for one target, named by FUZZ_TARGET. main runs
// libFuzzer's driver itself (LLVMFuzzerRunDriver) rather than letting
// libFuzzer's main run: SwiftPM gives an executable's main to its own
// module, so this is where the program starts either way.
guard let name = getenv("FUZZ_TARGET").map({ String(cString: $0) }), let target = FuzzTargets.named(name) else {
    let message = Array("family-sync-fuzz: set FUZZ_TARGET to one of: \(FuzzTargets.all.map(\.name).joined(separator: " "))\n".utf8)
    _ = message.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
    exit(64)
}
let selected: FuzzTargets.Entry = target.run

var argc = CommandLine.argc
var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
let status = LLVMFuzzerRunDriver(&argc, &argv) { data, size in
    selected(UnsafeRawBufferPointer(start: data, count: size))
    return 0
}
exit(status)
