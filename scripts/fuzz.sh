#!/usr/bin/env bash
# Builds the libFuzzer driver (Fuzzing/) and runs every fuzz target, or the
# ones named, for FUZZ_SECONDS each (default 60). Fails when any target finds
# a crash, a leak, a timeout or an out-of-memory; the input that did it is
# kept in Fuzzing/out/TARGET/ and the log says how to replay it.
#   scripts/fuzz.sh [TARGET...]       FUZZ_SECONDS=600 FUZZ_JOBS_NICE=15 FUZZ_ARGS='-max_len=8192'
set -uo pipefail
cd "$(dirname "$0")/.."
seconds=${FUZZ_SECONDS:-60}
nice_level=${FUZZ_NICE:-15}
swift=${SWIFT:-swift}
# lld: gold fails on the sanitized link (an internal error in its DWARF reader).
flags=(-c release -Xswiftc -sanitize=fuzzer,address -Xswiftc -use-ld=lld)

(cd Fuzzing && nice -n "$nice_level" "$swift" build "${flags[@]}") || { echo "fuzz: the driver does not build" >&2; exit 70; }
bin="$(cd Fuzzing && "$swift" build "${flags[@]}" --show-bin-path)/family-sync-fuzz"

if [ $# -gt 0 ]; then targets=("$@"); else
    mapfile -t targets < <(ls Fuzzing/Corpus)
fi

mkdir -p Fuzzing/out
failed=()
printf '%-16s %12s %10s %8s %8s  %s\n' target executions exec/s cov ft result
for t in "${targets[@]}"; do
    [ -d "Fuzzing/Corpus/$t" ] || { echo "fuzz: no target '$t' (see Fuzzing/Corpus)" >&2; exit 64; }
    work="Fuzzing/.build/corpus/$t"          # grows across runs; not checked in
    mkdir -p "$work" "Fuzzing/out/$t"
    log="Fuzzing/out/$t.log"
    seeds=("Fuzzing/Corpus/$t")
    [ -d "Fuzzing/Regressions/$t" ] && seeds+=("Fuzzing/Regressions/$t")
    # Leaks are findings (LeakSanitizer runs after any input that allocated more
    # than it freed), except the toolchain's own, listed once for the tests too.
    # The Swift runtime's backtracer would catch a trap before libFuzzer does.
    FUZZ_TARGET="$t" SWIFT_BACKTRACE=enable=no ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}" \
        LSAN_OPTIONS="suppressions=$PWD/scripts/sanitizers/lsan.supp:print_suppressions=0" nice -n "$nice_level" "$bin" \
        -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=2048 \
        -print_final_stats=1 -artifact_prefix="Fuzzing/out/$t/" ${FUZZ_ARGS:-} \
        "$work" "${seeds[@]}" > "$log" 2>&1
    rc=$?
    execs=$(awk '/stat::number_of_executed_units:/ {n=$2} END {print n}' "$log")
    speed=$(awk '/stat::average_exec_per_sec:/ {n=$2} END {print n}' "$log")
    cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -1 | awk '{print $2}')
    ft=$(grep -oE 'ft: [0-9]+' "$log" | tail -1 | awk '{print $2}')
    if [ $rc -eq 0 ]; then result=ok; else
        result="FAILED ($(grep -m1 -oE 'ERROR: [A-Za-z]+: [a-z-]+|ERROR: libFuzzer: [a-z-]+|Fatal error: [^\n]*|deadly signal' "$log" | head -1))"
        failed+=("$t")
    fi
    printf '%-16s %12s %10s %8s %8s  %s\n' "$t" "${execs:-0}" "${speed:-0}" "${cov:--}" "${ft:--}" "$result"
done
if [ ${#failed[@]} -gt 0 ]; then
    echo "fuzz: findings in: ${failed[*]}" >&2
    echo "  replay one:  FUZZ_TARGET=NAME $bin Fuzzing/out/NAME/crash-..." >&2
    echo "  then keep it as a regression input (make test replays it): Fuzzing/Regressions/NAME/" >&2
    exit 1
fi
