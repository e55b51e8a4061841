// swift-tools-version:6.0
import PackageDescription

/// family-sync: six command-line tools around one core library.
/// C libraries come from Debian's -dev packages through systemLibrary targets.
let package = Package(
    name: "family-sync",
    products: [
        .library(name: "FamilySync", targets: ["FamilySync", "FamilySyncImaging", "FamilySyncCLI"]),
        // The six tools in two binaries, each run as links named after its tools
        // (MultiCall): jws-verify, merge-records, peer-sync and tombstone-gc in one;
        // pair-qr and pair-scan, which load the image libraries, in the other.
        .executable(name: "family-sync", targets: ["family-sync"]),
        .executable(name: "family-sync-qr", targets: ["family-sync-qr"]),
        // The fuzz targets, for the libFuzzer package in Fuzzing/ (`make fuzz`).
        .library(name: "FamilySyncFuzz", targets: ["FamilySyncFuzz"]),
    ],
    targets: [
        .systemLibrary(name: "COpenSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(name: "CQREncode", pkgConfig: "libqrencode", providers: [.apt(["libqrencode-dev"])]),
        .systemLibrary(name: "CZBar", pkgConfig: "zbar", providers: [.apt(["libzbar-dev"])]),
        .systemLibrary(name: "CPNG", pkgConfig: "libpng", providers: [.apt(["libpng-dev"])]),
        .systemLibrary(name: "CJPEG", pkgConfig: "libjpeg", providers: [.apt(["libjpeg-dev"])]),
        .systemLibrary(name: "CZXing", pkgConfig: "zxing", providers: [.apt(["libzxing-dev"])]),
        // ZXing-C++ behind a small C API: the second QR engine, whose error-corrected
        // codewords pair-scan parses itself.
        .target(name: "ZXingBridge", dependencies: ["CZXing"]),

        // The shared core: records and the LWW rule, the store, crypto, entitlement, pairing offers, sync.
        .target(
            name: "FamilySync",
            dependencies: ["COpenSSL", "CSQLite", "SystemGlue"]
        ),
        // glibc calls Swift's Glibc module does not bring: direct I/O and punching
        // holes for the photo pack, malloc's arena limit; and the tools' first
        // initialisation of OpenSSL. Kept -Wall -Wextra clean (`make c-warnings`).
        .target(name: "SystemGlue", dependencies: ["COpenSSL"]),
        // The core's image half: reading PNG/JPEG/PNM, drawing and decoding QR codes. Its own
        // target so only pair-qr and pair-scan load libzbar (and with it X11, dbus, v4l), libZXing,
        // libqrencode, libpng and libjpeg; the other tools start faster without them.
        .target(
            name: "FamilySyncImaging",
            dependencies: ["FamilySync", "CQREncode", "CZBar", "ZXingBridge", "CPNG", "JPEGGlue"]
        ),
        // libjpeg's setjmp/longjmp error handling, which Swift cannot unwind: the
        // decode and encode run in C and hand back a status. Kept -Wall -Wextra
        // clean (`make c-warnings`).
        .target(name: "JPEGGlue", dependencies: ["CJPEG"]),
        // Command-line support shared by the six tools; the core never imports it.
        .target(name: "FamilySyncCLI", dependencies: ["FamilySync", "SystemGlue"]),

        // One entry point per parser of outside bytes, shared by libFuzzer (Fuzzing/) and the replay tests.
        .target(name: "FamilySyncFuzz", dependencies: ["FamilySync", "FamilySyncImaging", "FamilySyncCLI"]),

        // Released, family-sync carries the parts of libstdc++ and libgcc's unwinder
        // that the Swift runtime uses instead of loading and binding the 2 MB shared
        // library at every start (measured: about a quarter of jws-verify's
        // start-up). `make` puts libstdc++.a alone in .build/static-libstdc++, which
        // is searched before the compiler's own folder. family-sync-qr keeps the
        // shared library: libZXing loads it anyway, and one process should not
        // carry two.
        .executableTarget(name: "family-sync", dependencies: ["FamilySync", "FamilySyncCLI"],
                          linkerSettings: [.unsafeFlags(["-L\(Context.packageDirectory)/.build/static-libstdc++",
                                                         "-Xclang-linker", "-static-libgcc"],
                                                        .when(configuration: .release))]),
        .executableTarget(name: "family-sync-qr", dependencies: ["FamilySync", "FamilySyncImaging", "FamilySyncCLI"]),

        .testTarget(name: "FamilySyncTests", dependencies: ["FamilySync", "FamilySyncImaging", "FamilySyncCLI", "FamilySyncFuzz"],
                    resources: [.copy("Vectors")]),
        // The zsh completion driver and the power-cut file system are scripts the tests run, not sources.
        .testTarget(name: "EndToEndTests", dependencies: ["FamilySync", "FamilySyncImaging", "FamilySyncCLI"],
                    exclude: ["Support/zsh-complete.zsh", "Support/powercut_fs.py"]),
    ],
    swiftLanguageModes: [.v6],
    cxxLanguageStandard: .cxx17
)
