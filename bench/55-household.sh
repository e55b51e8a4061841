#!/usr/bin/env bash
# A household on loopback, with protocol version 2's bookkeeping (the owner's
# signed roster, acknowledgement points, the purge floor), two figures, each
# against an anchor from the same run:
#
# 1. Incremental sync of 100 changed records in a 100,000-record store
#    between the owner and a member, against a session in which nothing
#    changed. Targets: under 1 s, and within 1.1 x the empty session.
# 2. A full sync of a household of four devices (the owner and three
#    members) of 100,000 records each, until every store holds all 400,000,
#    against the same for two devices (the owner and one member): the
#    members sync with the owner in turn (three members need two rounds).
#    The time includes a status per member after each round (a few ms).
#
# How part 1 is measured: after each batch of 100 edits on the owner, one
# incremental session, then one empty session, against the same serve; the
# medians over HOUSEHOLD_BENCH_INC_TRIALS pairs are compared, and so is the
# median of the pairs' own ratios (a pair runs within a fraction of a second,
# so a burst of load on a shared machine moves both alike). Wall clock is the
# target; the connecting side's CPU time (user + system, from the shell's
# `time`) is printed beside it, as it moves less with the machine's load.
#
# Environment: BENCH_PYTHON (venv python, writes the records),
# HOUSEHOLD_BENCH_RECORDS (default 100000), HOUSEHOLD_BENCH_TRIALS (default 3;
# the best of each full sync is kept), HOUSEHOLD_BENCH_INC_TRIALS (default 21),
# HOUSEHOLD_BENCH_PARTS (default "1 2": which parts to run).
set -euo pipefail
bin=${1:?usage: bench/55-household.sh RELEASE_BIN_DIR}
here=$(cd "$(dirname "$0")" && pwd)
py=${BENCH_PYTHON:-$here/.venv/bin/python}
command -v "$py" > /dev/null || py=python3
records=${HOUSEHOLD_BENCH_RECORDS:-100000}
trials=${HOUSEHOLD_BENCH_TRIALS:-3}
work=$(mktemp -d)
serve_pid=""
cleanup() {
    [ -n "$serve_pid" ] && kill "$serve_pid" 2> /dev/null && wait "$serve_pid" 2> /dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
fixture() { "$py" "$here/peer_sync_fixture.py" "$@"; }
now() { echo "$EPOCHREALTIME"; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }
min() { awk -v a="$1" -v b="$2" 'BEGIN { print (a == "" || b < a) ? b : a }'; }
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
inc_trials=${HOUSEHOLD_BENCH_INC_TRIALS:-21}
parts=${HOUSEHOLD_BENCH_PARTS:-1 2}
runs() { case " $parts " in *" $1 "*) return 0 ;; esac; return 1; }

# Serves $1 until stopped; sets $port and $serve_pid.
serve() {
    [ -n "$serve_pid" ] && { kill "$serve_pid"; wait "$serve_pid" 2> /dev/null || true; }
    rm -f "$work/serve.events"
    "$bin/peer-sync" serve --db "$1" --listen 127.0.0.1:0 --events "$work/serve.events" > /dev/null 2> "$work/serve.err" &
    serve_pid=$!
    for _ in $(seq 500); do
        port=$(sed -n 's/.*"event":"listening".*"address":"127.0.0.1:\([0-9]*\)".*/\1/p' "$work/serve.events" 2> /dev/null | head -1 || true)
        [ -n "$port" ] && return 0
        sleep 0.02
    done
    echo "peer-sync serve did not start: $(cat "$work/serve.err")"
    exit 1
}

fixture library "$work/lib" "$records" 0 0
# A household named $1 of an owner and $2 members, each with its own
# $records records (ids prefixed by the device), joined but not yet synced
# since the records were written.
household() {
    local name=$1 members=$2 i
    rm -f "$work/$name"-*.db*
    "$bin/pair-qr" --db "$work/$name-owner.db" --ttl 1h --format text -o "$work/$name-offer.txt" > "$work/$name-offer.json"
    serve "$work/$name-owner.db"
    for i in $(seq "$members"); do
        [ "$i" -gt 1 ] && "$bin/pair-qr" --db "$work/$name-owner.db" --ttl 1h --format text -o "$work/$name-offer.txt" > "$work/$name-offer.json"
        "$bin/peer-sync" join --db "$work/$name-m$i.db" --connect "127.0.0.1:$port" < "$work/$name-offer.json" > /dev/null
    done
    for d in owner $(seq -f "m%g" "$members"); do
        sed "s/\"id\":\"r-/\"id\":\"$d-/" "$work/lib/records.ndjson" | "$bin/merge-records" --db "$work/$name-$d.db" --stamp > /dev/null
    done
}

# Members sync with the owner in turn, round after round, until every store
# holds every device's records and the last round's digests were all equal;
# sets $took and $sessions.
held() { "$bin/peer-sync" status --db "$1" | sed -n 's/.*"records":\([0-9]*\),.*/\1/p'; }
converge() {
    local name=$1 members=$2 t0 equal i done
    sync
    t0=$(now)
    sessions=0
    for round in 1 2 3; do
        equal=0
        for i in $(seq "$members"); do
            "$bin/peer-sync" connect --db "$work/$name-m$i.db" "127.0.0.1:$port" > "$work/$name.json"
            sessions=$((sessions + 1))
            grep -q '"equal":true' "$work/$name.json" && equal=$((equal + 1))
        done
        done=1
        for i in $(seq "$members"); do
            [ "$(held "$work/$name-m$i.db")" -eq $(( (members + 1) * records )) ] || done=0
        done
        [ "$done" -eq 1 ] && [ "$equal" -eq "$members" ] && break
    done
    took=$(elapsed "$t0" "$(now)")
    [ "$done" -eq 1 ] && [ "$equal" -eq "$members" ] || { echo "the $name household did not converge"; exit 1; }
    [ "$(held "$work/$name-owner.db")" -eq $(( (members + 1) * records )) ] || { echo "the $name owner misses records"; exit 1; }
}

# --- 1. Incremental sync of 100 changed records, against an empty session ----
# timed WALLS CPUS OUT CMD...: runs CMD with stdout to OUT, and appends its
# wall-clock and CPU (user + system) seconds to the arrays named WALLS and CPUS.
timed() {
    local -n walls_=$1 cpus_=$2
    local out=$3 t w u s
    shift 3
    t=$( { TIMEFORMAT='%3R %3U %3S'; time "$@" > "$out"; } 2>&1 )
    read -r w u s <<< "$t"
    walls_+=("$w")
    cpus_+=("$(awk -v u="$u" -v s="$s" 'BEGIN { printf "%.3f", u + s }')")
}
if runs 1; then
household inc 1
"$bin/peer-sync" connect --db "$work/inc-m1.db" "127.0.0.1:$port" > /dev/null
"$bin/peer-sync" connect --db "$work/inc-m1.db" "127.0.0.1:$port" > /dev/null
inc_wall=() inc_cpu=() noop_wall=() noop_cpu=()
for t in $(seq "$inc_trials"); do
    fixture edits 100 "trial $t" | sed 's/"id":"r-/"id":"owner-/' | "$bin/merge-records" --db "$work/inc-owner.db" --stamp > /dev/null
    # The serve may still be closing the last session (a connect then gets
    # BUSY and waits 0.5 s): let it finish, outside the time measured.
    sync; sleep 0.3
    timed inc_wall inc_cpu "$work/inc.json" "$bin/peer-sync" connect --db "$work/inc-m1.db" "127.0.0.1:$port"
    grep -q '"records":{"sent":0,"received":100,' "$work/inc.json" || { echo "incremental sync did not carry 100 records: $(cat "$work/inc.json")"; exit 1; }
    sync; sleep 0.3
    timed noop_wall noop_cpu "$work/noop.json" "$bin/peer-sync" connect --db "$work/inc-m1.db" "127.0.0.1:$port"
    grep -q '"records":{"sent":0,"received":0,' "$work/noop.json" || { echo "the empty session carried records: $(cat "$work/noop.json")"; exit 1; }
done
pair_ratios=()
for i in "${!inc_wall[@]}"; do pair_ratios+=("$(awk -v a="${inc_wall[$i]}" -v b="${noop_wall[$i]}" 'BEGIN { printf "%.4f", a / b }')"); done
awk -v i="$(median "${inc_wall[@]}")" -v n="$(median "${noop_wall[@]}")" -v p="$(median "${pair_ratios[@]}")" \
    -v ic="$(median "${inc_cpu[@]}")" -v nc="$(median "${noop_cpu[@]}")" -v r="$records" -v t="$inc_trials" 'BEGIN {
    printf "incremental sync, 100 changed records in a %d-record household store: %.3f s (target < 1 s); an empty session: %.3f s (medians of %d pairs)\n", r, i, n, t
    printf "  ratio: incremental = %.3f x an empty session (target <= 1.10); median of the pairs'"'"' ratios %.3f\n", i / n, p
    printf "  CPU of the connecting side: incremental %.3f s, empty %.3f s: %.3f x\n", ic, nc, ic / nc
}'
fi

# --- 2. Full sync: four devices against two -----------------------------------
if runs 2; then
best2="" best4=""
for _ in $(seq "$trials"); do
    household two 1
    converge two 1
    best2=$(min "$best2" "$took"); s2=$sessions
    household four 3
    converge four 3
    best4=$(min "$best4" "$took"); s4=$sessions
done
awk -v a="$best2" -v b="$best4" -v r="$records" -v s2="$s2" -v s4="$s4" 'BEGIN {
    printf "full sync until every store holds every record, %d records per device: two devices %.2f s (%d session), four devices %.2f s (%d sessions)\n", r, a, s2, b, s4
    printf "  ratio: four devices = %.2f x two devices (four hold 2 x the records and move them through the owner)\n", b / a
}'
fi
