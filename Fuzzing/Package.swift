// swift-tools-version:6.0
import PackageDescription

/// The libFuzzer driver for family-sync's parsers. A package of its own so a
/// plain `swift build` of the tools never links an executable whose `main`
/// only libFuzzer provides. Built and run by `make fuzz`:
///   swift build -c release -Xswiftc -sanitize=fuzzer,address -Xswiftc -use-ld=lld
/// One binary holds every target; FUZZ_TARGET names the one to run.
let package = Package(
    name: "family-sync-fuzz",
    dependencies: [.package(name: "family-sync", path: "..")],
    targets: [
        .target(name: "LibFuzzerDriver"),
        .executableTarget(
            name: "family-sync-fuzz",
            dependencies: ["LibFuzzerDriver", .product(name: "FamilySyncFuzz", package: "family-sync")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
