#!/usr/bin/env bash
# The price of durability: what a tool reports done is on disk before it exits.
#
# 1. One `merge-records --stamp` of one record beside a running
#    `peer-sync serve` (the household's usual state), against the same stamp
#    with nothing else holding the store: the stamp beside serve is synced
#    at its commit instead of at a close-time checkpoint.
# 2. With BENCH_BEFORE_BIN (release tools built without these syncs, e.g.
#    an older checkout's .build/release), each figure is also given against
#    those tools in the same run, alternating, best of the trials: the stamp
#    beside serve, a member's full first sync (`join`: records and photos),
#    and a store apply of records (`merge-records --db`). Target: the sync
#    and the apply within 1.05x.
#
# The store lives on disk (TMPDIR, else /var/tmp), never in memory: an
# fsync there costs what it costs users.
# Environment: BENCH_BEFORE_BIN, DURABILITY_BENCH_STAMPS (default 30),
# DURABILITY_BENCH_RECORDS (default 200000 for the apply, a tenth for the
# sync), DURABILITY_BENCH_PHOTOS (default 200 of 1 MB), DURABILITY_BENCH_TRIALS (default 3).
set -euo pipefail
bin=${1:?usage: bench/70-durability.sh RELEASE_BIN_DIR}
before=${BENCH_BEFORE_BIN:-}
here=$(cd "$(dirname "$0")" && pwd)
py=${BENCH_PYTHON:-$here/.venv/bin/python}
command -v "$py" > /dev/null || py=python3
stamps=${DURABILITY_BENCH_STAMPS:-30}
records=${DURABILITY_BENCH_RECORDS:-200000}
photos=${DURABILITY_BENCH_PHOTOS:-200}
trials=${DURABILITY_BENCH_TRIALS:-3}
work=$(mktemp -d "${TMPDIR:-/var/tmp}/bench-durable.XXXXXX")
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2> /dev/null || true; done
    for p in "${pids[@]}"; do wait "$p" 2> /dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT
now() { echo "$EPOCHREALTIME"; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.4f", b - a }'; }
min() { awk -v a="$1" -v b="$2" 'BEGIN { print (a == "" || b < a) ? b : a }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'; }

# serve TOOLS DB NAME: starts serve, waits until it listens; sets $port and $serve_pid.
serve() {
    local tools=$1 db=$2 name=$3
    rm -f "$work/$name.events"
    "$tools/peer-sync" serve --db "$db" --listen 127.0.0.1:0 --events "$work/$name.events" > /dev/null 2> "$work/$name.err" &
    serve_pid=$!
    pids+=("$serve_pid")
    for _ in $(seq 500); do
        port=$(sed -n 's/.*"event":"listening".*"address":"127.0.0.1:\([0-9]*\)".*/\1/p' "$work/$name.events" 2> /dev/null | head -1 || true)
        [ -n "$port" ] && return 0
        sleep 0.02
    done
    echo "peer-sync serve did not start: $(cat "$work/$name.err")"
    exit 1
}
stop_serve() { kill "$serve_pid"; wait "$serve_pid" 2> /dev/null || true; }

# stamp_median TOOLS DB: the median of $stamps one-record stamps, in seconds.
stamp_median() {
    local tools=$1 db=$2 i t0 t1
    : > "$work/stamps"
    for i in $(seq "$stamps"); do
        t0=$(now)
        echo "{\"id\":\"s-$i-$RANDOM\",\"type\":\"receipt\",\"data\":{\"total\":\"1.00\"}}" | "$tools/merge-records" --db "$db" --stamp > /dev/null
        t1=$(now)
        elapsed "$t0" "$t1" >> "$work/stamps"
    done
    sort -n "$work/stamps" | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'
}

# stamp_figures TOOLS NAME: sets $alone and $beside.
stamp_figures() {
    local tools=$1 name=$2
    "$tools/pair-qr" --db "$work/$name-stamp.db" --format text -o "$work/$name-stamp.txt" > /dev/null
    alone=$(stamp_median "$tools" "$work/$name-stamp.db")
    serve "$tools" "$work/$name-stamp.db" "$name-stamp"
    beside=$(stamp_median "$tools" "$work/$name-stamp.db")
    stop_serve
}

stamp_figures "$bin" after
echo "stamp of one record beside serve: $(awk -v s="$beside" 'BEGIN { printf "%.1f", s * 1000 }') ms (median of $stamps), $(ratio "$beside" "$alone")x the stamp with the store to itself ($(awk -v s="$alone" 'BEGIN { printf "%.1f", s * 1000 }') ms)"

[ -n "$before" ] || { echo "(BENCH_BEFORE_BIN not set: no figures against tools without the syncs)"; exit 0; }

# Alternating, twice each, the lower median kept: the machine's load drifts.
before_beside="" after_beside=""
for _ in 1 2; do
    stamp_figures "$before" before; before_beside=$(min "$before_beside" "$beside")
    stamp_figures "$bin" after; after_beside=$(min "$after_beside" "$beside")
done
echo "stamp of one record beside serve: $(ratio "$after_beside" "$before_beside")x the tools without the syncs ($(awk -v s="$after_beside" 'BEGIN { printf "%.1f", s * 1000 }') ms vs $(awk -v s="$before_beside" 'BEGIN { printf "%.1f", s * 1000 }') ms, which are not durable)"

# A library: records and 1 MB photos, made once, and an owner store per tool set.
"$py" "$here/peer_sync_fixture.py" library "$work/lib" "$((records / 10))" "$photos" 1048576
"$py" "$here/gen-records.py" --count "$records" --first 0 --seed 1 > "$work/apply.ndjson"
owner() {
    local tools=$1 name=$2
    "$tools/pair-qr" --db "$work/$name-owner.db" --ttl 1h --format text -o "$work/$name-offer.txt" > "$work/$name-offer.json"
    sed 's/^/--add-photo\n/' "$work/lib/photo-list" | tr '\n' '\0' | xargs -0 "$tools/merge-records" --db "$work/$name-owner.db" > /dev/null
    "$tools/merge-records" --db "$work/$name-owner.db" --stamp < "$work/lib/records.ndjson" > /dev/null
}
owner "$before" before
owner "$bin" after

# join_once TOOLS NAME TRIAL: a member's full first sync, timed into $took.
join_once() {
    local tools=$1 name=$2 trial=$3 t0 t1
    "$tools/pair-qr" --db "$work/$name-owner.db" --ttl 1h --format text -o "$work/$name-offer.txt" > "$work/$name-offer.json"
    serve "$tools" "$work/$name-owner.db" "$name-sync"
    t0=$(now)
    "$tools/peer-sync" join --db "$work/$name-member-$trial.db" --connect "127.0.0.1:$port" < "$work/$name-offer.json" > /dev/null
    t1=$(now)
    stop_serve
    took=$(elapsed "$t0" "$t1")
    rm -f "$work/$name-member-$trial.db"*
}
# apply_once TOOLS NAME: a store apply into a new store, timed into $took.
apply_once() {
    local tools=$1 name=$2 t0 t1
    rm -f "$work/$name-apply.db"*
    t0=$(now)
    "$tools/merge-records" --db "$work/$name-apply.db" "$work/apply.ndjson" > /dev/null
    t1=$(now)
    took=$(elapsed "$t0" "$t1")
}
sync_before="" sync_after="" apply_before="" apply_after=""
# Each trial runs both tool sets, in turn first, so neither always finds the caches warm.
for t in $(seq "$trials"); do
    order="before after"; [ $((t % 2)) -eq 0 ] && order="after before"
    for which in $order; do
        if [ "$which" = before ]; then
            join_once "$before" before "$t"; sync_before=$(min "$sync_before" "$took")
            apply_once "$before" before; apply_before=$(min "$apply_before" "$took")
        else
            join_once "$bin" after "$t"; sync_after=$(min "$sync_after" "$took")
            apply_once "$bin" after; apply_after=$(min "$apply_after" "$took")
        fi
    done
done
echo "full sync ($((records / 10)) records, $photos photos of 1 MB): $(ratio "$sync_after" "$sync_before")x the tools without the syncs (${sync_after} s vs ${sync_before} s, best of $trials; target at most 1.05)"
echo "store apply ($records records): $(ratio "$apply_after" "$apply_before")x the tools without the syncs (${apply_after} s vs ${apply_before} s, best of $trials; target at most 1.05)"
