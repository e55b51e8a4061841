# Sourced by the benchmarks: what the record-state digest's per-row terms
# (docs/protocol.md §7.8: one SHA-256 per row written, one per row replaced
# or removed) cost inside one run of a tool, as the share of its CPU samples.
#
# digest_terms_share OUT CMD...: runs CMD (stdout to /dev/null) under
# `perf record` (the cpu-clock software event, so it works without hardware
# counters) and prints the share of samples spent on the terms: the
# RecordDigestSum/TermScratch code and libcrypto, which the tools that write
# records use for nothing else (no TLS, no photos). Sets TERMS_SHARE (a
# fraction) or leaves it empty, printing why, when perf cannot sample here.
digest_terms_share() {
    local out=$1 total terms
    shift
    TERMS_SHARE=""
    if ! command -v perf > /dev/null || ! perf record -q -e cpu-clock -o "$out.probe" -- true > /dev/null 2>&1; then
        echo "  digest terms: not measured (perf cannot sample on this machine)"
        return 0
    fi
    perf record -q -e cpu-clock -F 999 -o "$out" -- "$@" > /dev/null 2> "$out.err"
    read -r total terms < <(perf report -i "$out" --stdio -n --sort dso,sym 2> /dev/null | awk '
        /^#/ || NF < 4 { next }
        { n = $2 + 0; total += n }
        $3 ~ /libcrypto/ || /RecordDigestSum|TermScratch/ { terms += n }
        END { print total + 0, terms + 0 }')
    [ "$total" -gt 0 ] || { echo "  digest terms: not measured (perf recorded no samples)"; return 0; }
    TERMS_SHARE=$(awk -v t="$terms" -v n="$total" 'BEGIN { printf "%.4f", t / n }')
    awk -v t="$terms" -v n="$total" 'BEGIN {
        s = t / n
        printf "  digest terms: %.1f%% of the CPU samples (%d of %d): the run takes %.3f x what it would without them\n", 100 * s, t, n, 1 / (1 - s)
    }'
}
