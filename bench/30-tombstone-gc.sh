#!/usr/bin/env bash
# tombstone-gc purging 1,000,000 old tombstones among 3,000,000 records,
# against one sqlite3 DELETE of the same rows on a copy of the same store.
# A probe process writes to the store every few milliseconds while tombstone-gc
# runs and reports the longest it had to wait for the write lock. Then the
# share of a purge spent on the record-state digest's terms (one SHA-256 per
# purged row), on another copy, under perf.
set -euo pipefail
bin=${1:?usage: 30-tombstone-gc.sh RELEASE_BIN_DIR}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/digest-terms-share.sh"
py=${BENCH_PYTHON:-python3}
[ -x "$py" ] || py=python3
N=${BENCH_GC_RECORDS:-3000000}
# Work in memory when there is room, so disk write-back does not blur the figures.
base=${TMPDIR:-/tmp}
if [ -z "${TMPDIR:-}" ] && [ -d /dev/shm ] && [ "$(df -Pk /dev/shm | awk 'NR == 2 { print $4 }')" -gt 8000000 ]; then base=/dev/shm; fi
work=$(mktemp -d "$base/bench-gc.XXXXXX")
[ -n "${BENCH_KEEP:-}" ] || trap 'rm -rf "$work"' EXIT
now=2026-12-01T00:00:00Z
nowsecs=$(date -u -d "$now" +%s)
# A tombstone ages from when the store got it: collect 91 days after the load.
gcnow=2027-03-02T00:00:00Z

"$py" "$here/gen-records.py" --count "$N" --seed 7 --small --tombstones 0 --old-tombstones 0.3333 --now "$nowsecs" > "$work/all.ndjson"
"$bin/merge-records" --db "$work/base.db" --now "$now" "$work/all.ndjson" > /dev/null
rm -f "$work/all.ndjson"
cp "$work/base.db" "$work/gc.db"
cp "$work/base.db" "$work/anchor.db"
cp "$work/base.db" "$work/terms.db"
cutoff=$(( (nowsecs - 90 * 86400) * 1000 ))
expected=$(sqlite3 "$work/base.db" "SELECT count(*) FROM records WHERE deleted = 1 AND modified_at < $cutoff")

# The probe: a tiny write transaction every 5 ms; the longest wait for the lock.
cat > "$work/probe.py" <<'PY'
import sqlite3, sys, time, os
db, stop = sys.argv[1], sys.argv[2]
# Retry the lock every millisecond, as the tools' own connections do.
c = sqlite3.connect(db, timeout=0, isolation_level=None)
worst = 0.0
n = 0
while not os.path.exists(stop):
    t0 = time.perf_counter()
    while True:
        try:
            c.execute("BEGIN IMMEDIATE")
            break
        except sqlite3.OperationalError:
            time.sleep(0.001)
    c.execute("INSERT INTO settings (key, value) VALUES ('bench-probe', ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value", (str(n),))
    c.execute("COMMIT")
    worst = max(worst, time.perf_counter() - t0)
    n += 1
    time.sleep(0.005)
print("%.1f %d" % (worst * 1000, n))
PY
"$py" "$work/probe.py" "$work/gc.db" "$work/stop" > "$work/probe.out" &
probe=$!
sleep 0.5
/usr/bin/time -f "%e %M" -o "$work/time.gc" "$bin/tombstone-gc" --db "$work/gc.db" --now "$gcnow" --verbose > "$work/gc.json" 2> "$work/gc.err"
touch "$work/stop"
wait "$probe"
read -r gc_s gc_rss < "$work/time.gc"
read -r probe_worst probe_n < "$work/probe.out"
longest=$(sed -n 's/.*longest write transaction: \([0-9.]*\) ms over \([0-9]*\) transactions.*/\1 \2/p' "$work/gc.err")

/usr/bin/time -f "%e %M" -o "$work/time.anchor" sqlite3 "$work/anchor.db" \
    "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; DELETE FROM records WHERE deleted = 1 AND modified_at < $cutoff;" > /dev/null
read -r anchor_s _ < "$work/time.anchor"
left=$(sqlite3 "$work/gc.db" "SELECT count(*) FROM records")
left_anchor=$(sqlite3 "$work/anchor.db" "SELECT count(*) FROM records")

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'; }
echo "tombstone-gc: $N records, $expected old tombstones; summary $(head -c 120 "$work/gc.json")..."
echo "  records left: $left (sqlite3 DELETE: $left_anchor)"
echo "  time: $(ratio "$gc_s" "$anchor_s")x one sqlite3 DELETE of the same rows (tombstone-gc ${gc_s}s incl. its counts, sqlite3 ${anchor_s}s; target <= 1.5x)"
echo "  longest write transaction (self-reported): ${longest% *} ms over ${longest#* } transactions (target <= 100 ms)"
echo "  longest wait of a concurrent writer: $probe_worst ms over $probe_n probe writes; peak RSS $((gc_rss / 1024)) MB"
purge_bytes=$(sqlite3 "$work/gc.db" "SELECT coalesce(sum(pgsize), 0) FROM dbstat WHERE name LIKE 'purge_batches%'" 2>/dev/null || echo 0)
purge_n=$(sqlite3 "$work/gc.db" "SELECT coalesce(sum(length(entries)), 0) / 16 FROM purge_batches")
echo "  purge records: $purge_n kept in $(awk -v b="$purge_bytes" 'BEGIN { printf "%.1f", b / 1048576 }') MB of store, $(awk -v b="$purge_bytes" -v n="$purge_n" 'BEGIN { printf "%.1f", (n > 0 ? b / n * 1000000 / 1048576 : 0) }') MB per 1,000,000 deleted ids (target <= 32 MB)"
digest_terms_share "$work/gc.perf" "$bin/tombstone-gc" --db "$work/terms.db" --now "$gcnow"
