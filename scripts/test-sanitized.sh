#!/usr/bin/env bash
# Runs the whole test suite under one sanitizer: `address` (AddressSanitizer
# with LeakSanitizer) or `thread` (ThreadSanitizer). The tools the end-to-end
# tests run are built with the same sanitizer, so a server's busy-reply
# thread or a store's checkpointer is checked in the process it runs in.
# Every report - from the test process or any tool it started - is written
# to a file under the build folder, not to the tool's stderr (which the tests
# read), and any report fails the run, as does a failing test.
set -uo pipefail
cd "$(dirname "$0")/.."
kind=${1:?usage: scripts/test-sanitized.sh address|thread}
swift=${SWIFT:-swift}
scratch=.build/$([ "$kind" = address ] && echo asan || echo tsan)
reports="$PWD/$scratch/sanitizer-reports"
supp="$PWD/scripts/sanitizers"

start=$(date +%s)
"$swift" build --build-tests --sanitize="$kind" --scratch-path "$scratch" || exit 1
built=$(date +%s)

rm -rf "$reports"; mkdir -p "$reports"
export ASAN_OPTIONS="detect_leaks=1:log_path=$reports/asan:${ASAN_OPTIONS:-}"
export LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0:${LSAN_OPTIONS:-}"
export TSAN_OPTIONS="log_path=$reports/tsan:suppressions=$supp/tsan.supp:second_deadlock_stack=1:${TSAN_OPTIONS:-}"
# The clock and purge property test's schedules are the same code paths every
# time: a tenth of `make test`'s 2,000 is enough under a sanitizer's cost (they
# still run two at a time, so ThreadSanitizer sees households side by side).
export FAMILY_SYNC_SCHEDULES="${FAMILY_SYNC_SCHEDULES:-200}"
"$swift" test --skip-build --sanitize="$kind" --scratch-path "$scratch" ${TEST_FILTER:+--filter "$TEST_FILTER"}
rc=$?
end=$(date +%s)

found=$(find "$reports" -type f | sort)
if [ -n "$found" ]; then
    for f in $found; do echo "== $f"; cat "$f"; done
    echo "test-sanitized: $(echo "$found" | wc -l) sanitizer report(s) under $reports" >&2
    rc=1
fi
echo "test-sanitized ($kind): build $((built - start)) s, tests $((end - built)) s, exit $rc"
exit $rc
