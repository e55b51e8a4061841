#!/usr/bin/env bash
# Builds a throwaway package that depends on this repository's FamilySync
# library the way another project would (a versioned git dependency on the
# current commit, tagged in a scratch clone; not a local path, not a branch),
# and calls a little of its public API. SwiftPM refuses a versioned
# dependency whose targets use unsafe flags, so this is the check that the
# library product is usable at all. Slow (a cold build of the core),
# so it is not part of `make test`: run it with `make check-dependent`.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
commit=$(git -C "$repo" rev-parse HEAD)
# SwiftPM names a URL dependency after the last part of its path.
identity=family-sync
if [ -n "$(git -C "$repo" status --porcelain --untracked-files=no)" ]; then
    echo "check-dependent: uncommitted changes are not seen; checking $commit" >&2
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/family-sync-dependent.XXXXXX")
trap 'rm -rf "$work"' EXIT
# A plain clone (a worktree or a checkout with local changes is no URL SwiftPM takes).
git clone -q --no-checkout "$repo" "$work/$identity"
git -C "$work/$identity" cat-file -e "$commit^{commit}"
git -C "$work/$identity" tag -f 0.0.1 "$commit" >/dev/null
mkdir -p "$work/app/Sources/uses-family-sync"
cat > "$work/app/Package.swift" <<SWIFT
// swift-tools-version:6.0
import PackageDescription
let package = Package(
    name: "uses-family-sync",
    dependencies: [.package(url: "file://$work/$identity", exact: "0.0.1")],
    targets: [.executableTarget(name: "uses-family-sync", dependencies: [.product(name: "FamilySync", package: "$identity")])]
)
SWIFT
cat > "$work/app/Sources/uses-family-sync/main.swift" <<'SWIFT'
import FamilySync

// The rule, a record, an address and an error, through the public API only.
let held = try Record(line: #"{"id":"r-1","type":"receipt","modifiedAt":"2026-11-30T10:00:00.000Z","deviceId":"A","deleted":false}"#)
let incoming = try Record(line: #"{"id":"r-1","type":"receipt","modifiedAt":"2026-11-30T10:00:00.000Z","deviceId":"B","deleted":false}"#)
let d = LWW.decide(local: held.version, remote: incoming.version)
guard d.takeRemote, d.rule == .greaterDevice, HostPort(parsing: "[::1]:7433") != nil else { fatalError("unexpected answer") }
// The core's own errors, without the command-line library: a kind to branch on, words to show.
do { _ = try PairingOffer.validateAddress("no port") } catch let e as PairingError {
    guard e.kind == .addressNotHostPort, "\(e)" == "address 'no port' is not HOST:PORT" else { fatalError("unexpected error \(e)") }
}
print("ok")
SWIFT
cd "$work/app"
swift build -q
out=$(swift run -q uses-family-sync)
[ "$out" = ok ] || { echo "check-dependent: the dependent package printed '$out'" >&2; exit 1; }
echo "check-dependent: a package depending on FamilySync ($commit) builds and runs"
