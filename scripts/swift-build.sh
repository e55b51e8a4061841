#!/usr/bin/env bash
# Runs `swift build ARGS...` and fails when the compiler warns about a file of
# this project (Sources/, Tests/, Fuzzing/): the project's own targets build
# warning-free, and a new warning fails `make test` and so CI. A build only
# recompiles what changed, so locally only the files rebuilt are checked; CI
# builds from a clean clone and checks them all.
#
# One linker warning is not ours and is dropped from the output: the
# toolchain's static Foundation (libFoundationEssentials.a, linked by
# --static-swift-stdlib) calls mktemp(3), which glibc marks with a link-time
# warning. No tool of this project calls mktemp.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
log=$(mktemp)
trap 'rm -f "$log"' EXIT
"${SWIFT:-swift}" build "$@" 2>&1 | grep -v "libFoundationEssentials\.a(.*warning: the use of \`mktemp' is dangerous" | tee "$log"
status=${PIPESTATUS[0]}
[ "$status" -eq 0 ] || exit "$status"
if grep -E "^$root/(Sources|Tests|Fuzzing)/[^:]+:[0-9]+:[0-9]+: warning:" "$log" > /dev/null; then
    echo "swift-build.sh: the build of this project's own files has warnings (above); it must have none" >&2
    exit 1
fi
