#!/usr/bin/env bash
# peer-sync on loopback, three figures, each against an anchor from the same run:
#
# 1. Full sync of 1,000 photos of 1 MB and 100,000 records (a member's first
#    sync, `peer-sync join`), against a raw TLS 1.3 copy of the same bytes
#    (openssl s_server receiving into a file, s_client sending, external PSK,
#    TLS_AES_128_GCM_SHA256): throughput as a fraction of the raw copy's.
#    Target: at least 0.90 (the raw copy does not even sync what it writes).
# 2. Incremental sync of 100 changed records in that 100,000-record store,
#    against a session in which nothing changed. Target: under 1 s.
# 3. Peak RSS of both sides syncing 10,000 photos (16 KiB each, to keep the
#    run short; the wave and chunk bounds make photo size irrelevant to
#    memory), against the same with 1,000 photos: the ratio shows memory does
#    not grow with the library. Target: under 100 MB.
# 4. A first sync of 200,000 records cut off (SIGINT) once the member holds
#    about 40% of them, then `peer-sync connect`: the session that goes on
#    from where it stopped, carrying the R records still missing, against an
#    ordinary session carrying R new records to the same member. Target:
#    at most 1.10 (a resumed session costs what it carries, not what the
#    cut-off one had already done).
#
# Environment: BENCH_PYTHON (venv python, writes the photo files and records), PEER_SYNC_BENCH_PHOTOS (default
# 1000), PEER_SYNC_BENCH_RECORDS (default 100000), PEER_SYNC_BENCH_TRIALS
# (default 3, at most 3: each trial joins a new member to a family of at
# most four devices; the two alternate, and the best of each is kept),
# PEER_SYNC_BENCH_RESUME_RECORDS (default 200000), PEER_SYNC_BENCH_SECTIONS (default
# "1 2 3 4": which of the four to run; 2 needs 1).
set -euo pipefail
bin=${1:?usage: bench/50-peer-sync.sh RELEASE_BIN_DIR}
here=$(cd "$(dirname "$0")" && pwd)
py=${BENCH_PYTHON:-$here/.venv/bin/python}
command -v "$py" > /dev/null || py=python3
photos=${PEER_SYNC_BENCH_PHOTOS:-1000}
records=${PEER_SYNC_BENCH_RECORDS:-100000}
trials=${PEER_SYNC_BENCH_TRIALS:-3}
[ "$trials" -ge 1 ] && [ "$trials" -le 3 ] || { echo "PEER_SYNC_BENCH_TRIALS must be 1 to 3"; exit 64; }
work=$(mktemp -d)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2> /dev/null || true; done
    for p in "${pids[@]}"; do wait "$p" 2> /dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT
fixture() { "$py" "$here/peer_sync_fixture.py" "$@"; }
sections=" ${PEER_SYNC_BENCH_SECTIONS:-1 2 3 4} "
want() { [[ "$sections" == *" $1 "* ]]; }
now() { echo "$EPOCHREALTIME"; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }
min() { awk -v a="$1" -v b="$2" 'BEGIN { print (a == "" || b < a) ? b : a }'; }

# Starts `peer-sync serve --once` on an ephemeral port, timed by /usr/bin/time
# (peak RSS into $1.rss); sets $port and $serve_pid.
serve() {
    local db=$1 name=$2
    rm -f "$work/$name.events"
    /usr/bin/time -f %M -o "$work/$name.rss" "$bin/peer-sync" serve --db "$db" --listen 127.0.0.1:0 --once \
        --events "$work/$name.events" > "$work/$name.out" 2> "$work/$name.err" &
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

# An owner's store with a family and a library made with the tools
# (pair-qr, merge-records --add-photo and --stamp); leaves $work/$1-owner.db,
# $work/$1-offer.json and the library's files in $work/$1-lib.
household() {
    local name=$1 n_records=$2 n_photos=$3 photo_bytes=$4
    "$bin/pair-qr" --db "$work/$name-owner.db" --ttl 1h --format text -o "$work/$name-offer.txt" > "$work/$name-offer.json"
    fixture library "$work/$name-lib" "$n_records" "$n_photos" "$photo_bytes"
    split -l 1000 "$work/$name-lib/photo-list" "$work/$name-lib/batch."
    for b in "$work/$name-lib"/batch.*; do
        sed 's/^/--add-photo\n/' "$b" | tr '\n' '\0' | xargs -0 "$bin/merge-records" --db "$work/$name-owner.db" > /dev/null
    done
    "$bin/merge-records" --db "$work/$name-owner.db" --stamp < "$work/$name-lib/records.ndjson" > /dev/null
}

# Joins (a full first sync), timed; sets $took and writes the member's peak RSS to $name.join.rss.
join_timed() {
    local name=$1
    serve "$work/$name-owner.db" "$name"
    local t0; t0=$(now)
    /usr/bin/time -f %M -o "$work/$name.join.rss" "$bin/peer-sync" join --db "$work/$name-member.db" \
        --connect "127.0.0.1:$port" < "$work/$name-offer.json" > "$work/$name.join.json"
    wait "$serve_pid"
    took=$(elapsed "$t0" "$(now)")
}

if want 1; then
# --- 1. Full sync against a raw TLS 1.3 copy of the same bytes ----------------
household full "$records" "$photos" 1048576
# The bytes a full sync carries: every photo and every record line.
{ xargs cat < "$work/full-lib/photo-list"; "$bin/merge-records" --db "$work/full-owner.db" --export; } > "$work/payload.bin"
rm -rf "$work/full-lib"
bytes=$(stat -c %s "$work/payload.bin")

# One raw TLS 1.3 copy of payload.bin; sets $took.
tls_copy() {
    local key tls_port s_pid t0
    key=$(openssl rand -hex 32)
    rm -f "$work/tls.fifo" "$work/received.bin"
    mkfifo "$work/tls.fifo"
    tls_port=$(( 20000 + RANDOM % 20000 ))
    openssl s_server -accept "127.0.0.1:$tls_port" -tls1_3 -ciphersuites TLS_AES_128_GCM_SHA256 -psk "$key" -psk_identity bench \
        -nocert -naccept 1 -quiet < "$work/tls.fifo" > "$work/received.bin" 2> "$work/s_server.err" &
    s_pid=$!
    pids+=("$s_pid")
    exec 4> "$work/tls.fifo"   # holds the server's stdin open: it must not hang up on EOF
    sleep 0.3
    t0=$(now)
    openssl s_client -connect "127.0.0.1:$tls_port" -tls1_3 -ciphersuites TLS_AES_128_GCM_SHA256 -psk "$key" -psk_identity bench \
        -quiet -no_ign_eof -nocommands < "$work/payload.bin" > /dev/null 2> "$work/s_client.err"
    wait "$s_pid" || true
    took=$(elapsed "$t0" "$(now)")
    exec 4>&-
    [ "$(stat -c %s "$work/received.bin")" -eq "$bytes" ] || { echo "the raw TLS copy lost bytes"; exit 1; }
    rm -f "$work/received.bin"
}

# The two alternate, trial by trial, each starting with no other writes still
# being flushed, so a slow spell of the machine does not fall on one side only.
best_sync="" best_tls="" all_sync="" all_tls=""
for t in $(seq "$trials"); do
    rm -f "$work/full-member.db" "$work/full-member.db-wal" "$work/full-member.db-shm" "$work/full-member.db-photos" "$work/full-member.db-photos-journal" "$work/full-member.db-photos-pack"
    [ "$t" -gt 1 ] && "$bin/pair-qr" --db "$work/full-owner.db" --ttl 1h --format text -o "$work/full-offer.txt" > "$work/full-offer.json"
    sync
    join_timed full
    grep -q "\"received\":$photos," "$work/full.join.json" || { echo "full sync did not receive every photo: $(cat "$work/full.join.json")"; exit 1; }
    best_sync=$(min "$best_sync" "$took")
    all_sync="$all_sync $took"
    sync
    tls_copy
    best_tls=$(min "$best_tls" "$took")
    all_tls="$all_tls $took"
done
awk -v b="$bytes" -v s="$best_sync" -v a="$best_tls" -v p="$photos" -v r="$records" 'BEGIN {
    printf "full sync, %d photos of 1 MB + %d records (%.0f MB): peer-sync %.2f s (%.0f MB/s), raw TLS 1.3 copy %.2f s (%.0f MB/s)\n", p, r, b / 1e6, s, b / 1e6 / s, a, b / 1e6 / a
    printf "  ratio: peer-sync throughput = %.2f x raw TLS copy (target >= 0.90)\n", a / s
}'
echo "  trials (s): peer-sync$all_sync; raw TLS copy$all_tls"

fi
if want 2; then
# --- 2. Incremental sync of 100 changed records ------------------------------
best_inc="" best_noop=""
for _ in $(seq "$trials"); do
    fixture edits 100 | "$bin/merge-records" --db "$work/full-owner.db" --stamp > /dev/null
    serve "$work/full-owner.db" inc
    t0=$(now)
    "$bin/peer-sync" connect --db "$work/full-member.db" "127.0.0.1:$port" > "$work/inc.json"
    wait "$serve_pid"
    best_inc=$(min "$best_inc" "$(elapsed "$t0" "$(now)")")
    grep -q '"received":100,' "$work/inc.json" || { echo "incremental sync did not carry 100 records: $(cat "$work/inc.json")"; exit 1; }
    serve "$work/full-owner.db" noop
    t0=$(now)
    "$bin/peer-sync" connect --db "$work/full-member.db" "127.0.0.1:$port" > "$work/noop.json"
    wait "$serve_pid"
    best_noop=$(min "$best_noop" "$(elapsed "$t0" "$(now)")")
done
awk -v i="$best_inc" -v n="$best_noop" -v r="$records" 'BEGIN {
    printf "incremental sync, 100 changed records in a %d-record store: %.3f s (target < 1 s); a session with nothing to send: %.3f s\n", r, i, n
    printf "  ratio: incremental = %.2f x an empty session\n", i / n
}'
rm -f "$work"/full-*.db* "$work/payload.bin" "$work/received.bin"

fi
if want 3; then
# --- 3. Peak RSS with 10,000 photos against 1,000 -----------------------------
household small 1000 1000 16384
join_timed small
rm -rf "$work/small-lib"
household large 10000 10000 16384
join_timed large
grep -q '"received":10000,' "$work/large.join.json" || { echo "the 10,000-photo sync did not receive every photo"; exit 1; }
awk -v ss="$(cat "$work/small.rss")" -v sj="$(cat "$work/small.join.rss")" -v ls="$(cat "$work/large.rss")" -v lj="$(cat "$work/large.join.rss")" 'BEGIN {
    printf "peak RSS, 10,000 photos of 16 KiB: serving side %.1f MB, joining side %.1f MB (target < 100 MB)\n", ls / 1024, lj / 1024
    printf "  ratio against 1,000 photos: serving side %.2f x, joining side %.2f x (1.00 = independent of library size)\n", ls / ss, lj / sj
}'

fi
if want 4; then
# --- 4. A cut-off first sync goes on where it stopped --------------------------
resume_records=${PEER_SYNC_BENCH_RESUME_RECORDS:-200000}
household resume "$resume_records" 1 16384
rm -rf "$work/resume-lib"
# The member's record count, read beside the running join (WAL readers do not block it).
held() { "$py" -c 'import sqlite3, sys; print(sqlite3.connect("file:" + sys.argv[1] + "?mode=ro", uri=True).execute("SELECT count(*) FROM records").fetchone()[0])' "$1" 2> /dev/null || echo 0; }
ratios=""
for t in $(seq "$trials"); do
    m="$work/resume-member-$t.db"
    total=$(held "$work/resume-owner.db")   # earlier trials' anchors added records
    [ "$t" -gt 1 ] && "$bin/pair-qr" --db "$work/resume-owner.db" --ttl 1h --format text -o "$work/resume-offer.txt" > "$work/resume-offer.json"
    serve "$work/resume-owner.db" cut
    "$bin/peer-sync" join --db "$m" --connect "127.0.0.1:$port" < "$work/resume-offer.json" > "$work/cut.json" 2> "$work/cut-join.err" &
    join_pid=$!
    pids+=("$join_pid")
    for _ in $(seq 3000); do
        [ "$(held "$m")" -ge $(( total * 2 / 5 )) ] && break
        sleep 0.02
    done
    kill -INT "$join_pid"
    rc=0; wait "$join_pid" || rc=$?
    [ "$rc" -eq 130 ] || { echo "the cut-off join exited $rc, not 130: $(cat "$work/cut-join.err")"; exit 1; }
    wait "$serve_pid" || true
    kept=$(held "$m")
    sync
    serve "$work/resume-owner.db" resumed
    t0=$(now)
    "$bin/peer-sync" connect --db "$m" "127.0.0.1:$port" > "$work/resumed.json"
    wait "$serve_pid"
    t_resumed=$(elapsed "$t0" "$(now)")
    grep -q '"resumed":true' "$work/resumed.json" || { echo "the session after the cut did not go on from it: $(cat "$work/resumed.json")"; exit 1; }
    carried=$(sed -n 's/.*"records":{"sent":[0-9]*,"received":\([0-9]*\),.*/\1/p' "$work/resumed.json")
    [ "$carried" -eq $(( total - kept )) ] || { echo "the resumed session carried $carried records, not the $(( total - kept )) missing"; exit 1; }
    fixture new "$carried" "$t" | "$bin/merge-records" --db "$work/resume-owner.db" --stamp > /dev/null
    sync
    serve "$work/resume-owner.db" anchor
    t0=$(now)
    "$bin/peer-sync" connect --db "$m" "127.0.0.1:$port" > "$work/anchor.json"
    wait "$serve_pid"
    t_anchor=$(elapsed "$t0" "$(now)")
    grep -q "\"received\":$carried," "$work/anchor.json" || { echo "the anchor session did not carry $carried records: $(cat "$work/anchor.json")"; exit 1; }
    echo "  trial $t: cut at $kept of $total records; resumed session carried $carried in $t_resumed s, an ordinary session carrying $carried new ones in $t_anchor s"
    ratios="$ratios $(awk -v a="$t_resumed" -v b="$t_anchor" 'BEGIN { printf "%.2f", a / b }')"
done
echo "$ratios" | tr ' ' '\n' | sed '/^$/d' | sort -n | awk -v n="$resume_records" '{ r[NR] = $1 } END {
    printf "resumed first syncs (%d records, and the anchors of earlier trials): ratio resumed session / ordinary session carrying the same records = %.2f (median; target <= 1.10); each:", n, r[int((NR + 1) / 2)]
    for (i = 1; i <= NR; i++) printf " %.2f", r[i]
    printf "\n"
}'
fi
