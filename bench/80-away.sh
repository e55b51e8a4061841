#!/usr/bin/env bash
# Sync away from home, two figures, each against an anchor from the same run:
#
# 1. A full sync (300 photos of 1 MB and 20,000 records, to a member that
#    has none) over `connect --via` a local pipe (`peer-sync serve --stdio`
#    as the command), against the same sync over loopback TCP (serve, then
#    connect HOST:PORT). Both start from the same two store files, restored
#    before each trial. Target: the pipe within 1.1x TCP's time.
# 2. The same sync over a real ssh (an sshd in a network namespace of its
#    own, on its loopback), against `ssh home cat` of as many bytes as the
#    session moved. Needs root, ip(8) and openssh-server; skipped otherwise.
#
# Environment: BENCH_PYTHON (venv python, writes the photo files and records),
# AWAY_BENCH_PHOTOS (default 300), AWAY_BENCH_RECORDS (default 20000),
# AWAY_BENCH_TRIALS (default 3; the two sides alternate, the best of each is kept).
set -euo pipefail
bin=${1:?usage: bench/80-away.sh RELEASE_BIN_DIR}
here=$(cd "$(dirname "$0")" && pwd)
py=${BENCH_PYTHON:-$here/.venv/bin/python}
command -v "$py" > /dev/null || py=python3
photos=${AWAY_BENCH_PHOTOS:-300}
records=${AWAY_BENCH_RECORDS:-20000}
trials=${AWAY_BENCH_TRIALS:-3}
work=$(mktemp -d)
ns=""
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2> /dev/null || true; done
    for p in "${pids[@]}"; do wait "$p" 2> /dev/null || true; done
    if [ -n "$ns" ]; then
        for p in $(ip netns pids "$ns" 2> /dev/null); do kill -9 "$p" 2> /dev/null || true; done
        ip netns delete "$ns" 2> /dev/null || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT
now() { echo "$EPOCHREALTIME"; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }
min() { awk -v a="$1" -v b="$2" 'BEGIN { print (a == "" || b < a) ? b : a }'; }

# serve --once on an ephemeral loopback port; sets $port and $serve_pid.
serve() {
    rm -f "$work/serve.events"
    "$bin/peer-sync" serve --db "$work/owner.db" --listen 127.0.0.1:0 --once --no-advertise --quiet \
        --events "$work/serve.events" > "$work/serve.out" 2> "$work/serve.err" &
    serve_pid=$!
    pids+=("$serve_pid")
    for _ in $(seq 500); do
        port=$(sed -n 's/.*"event":"listening".*"address":"127.0.0.1:\([0-9]*\)".*/\1/p' "$work/serve.events" 2> /dev/null | head -1 || true)
        [ -n "$port" ] && return 0
        sleep 0.02
    done
    echo "peer-sync serve did not start: $(cat "$work/serve.err")"
    exit 1
}

# The household: an owner and a member joined while the owner held nothing;
# then the owner's library. Both stores are kept as they are now.
"$bin/pair-qr" --db "$work/owner.db" --ttl 1h --format text -o "$work/offer.txt" > "$work/offer.json"
serve
"$bin/peer-sync" join --db "$work/kid.db" --connect "127.0.0.1:$port" --quiet < "$work/offer.json" > /dev/null
wait "$serve_pid"
"$py" "$here/peer_sync_fixture.py" library "$work/lib" "$records" "$photos" 1048576
sed 's/^/--add-photo\n/' "$work/lib/photo-list" | tr '\n' '\0' | xargs -0 "$bin/merge-records" --db "$work/owner.db" > /dev/null
"$bin/merge-records" --db "$work/owner.db" --stamp < "$work/lib/records.ndjson" > /dev/null
rm -rf "$work/lib"
# A store is its file, its log and its photo index and pack: each trial starts from all of them as they were.
files="db db-wal db-photos db-photos-pack"
for db in owner kid; do
    for f in $files; do [ -e "$work/$db.$f" ] && cp "$work/$db.$f" "$work/$db.$f.base"; done
done
restore() {
    for db in owner kid; do
        for f in $files db-shm db-photos-journal; do rm -f "$work/$db.$f"; done
        for f in $files; do [ -e "$work/$db.$f.base" ] && cp "$work/$db.$f.base" "$work/$db.$f"; done
    done
    sync
}
check() { grep -q "\"received\":$photos," "$1" || { echo "the sync did not receive every photo: $(cat "$1")"; exit 1; }; }

# --- 1. --via a local pipe against loopback TCP ------------------------------
best_tcp="" best_pipe="" all_tcp="" all_pipe=""
for _ in $(seq "$trials"); do
    restore
    serve
    t0=$(now)
    "$bin/peer-sync" connect --db "$work/kid.db" --quiet "127.0.0.1:$port" > "$work/tcp.json"
    wait "$serve_pid"
    took=$(elapsed "$t0" "$(now)")
    check "$work/tcp.json"
    best_tcp=$(min "$best_tcp" "$took"); all_tcp="$all_tcp $took"
    restore
    t0=$(now)
    "$bin/peer-sync" connect --db "$work/kid.db" --quiet --via "$bin/peer-sync serve --stdio --quiet --db $work/owner.db" > "$work/pipe.json"
    took=$(elapsed "$t0" "$(now)")
    check "$work/pipe.json"
    best_pipe=$(min "$best_pipe" "$took"); all_pipe="$all_pipe $took"
done
bytes=$(sed -n 's/.*"bytes":{"sent":\([0-9]*\),"received":\([0-9]*\).*/\1 \2/p' "$work/pipe.json" | awk '{ print $1 + $2 }')
awk -v p="$best_pipe" -v t="$best_tcp" -v b="$bytes" -v n="$photos" -v r="$records" 'BEGIN {
    printf "full sync, %d photos of 1 MB + %d records (%.0f MB moved): --via a local pipe %.2f s, loopback TCP %.2f s\n", n, r, b / 1e6, p, t
    printf "  ratio: --via pipe = %.2f x loopback TCP time (target <= 1.10)\n", p / t
}'
echo "  trials (s): pipe$all_pipe; tcp$all_tcp"

# --- 2. over ssh, against ssh cat of the same bytes ---------------------------
if [ "$(id -u)" != 0 ] || ! command -v ip > /dev/null || [ ! -x /usr/sbin/sshd ]; then
    echo "over ssh: skipped (needs root, ip(8) and openssh-server)"
    exit 0
fi
ns="fs-bench-ssh-$$"
ip netns add "$ns"
ip -n "$ns" link set lo up
ssh-keygen -q -t ed25519 -N '' -f "$work/host_key"
ssh-keygen -q -t ed25519 -N '' -f "$work/user_key"
cp "$work/user_key.pub" "$work/authorized_keys"
mkdir -p /run/sshd
cat > "$work/sshd_config" <<EOF
ListenAddress 127.0.0.1
Port 2222
HostKey $work/host_key
AuthorizedKeysFile $work/authorized_keys
PidFile $work/sshd.pid
StrictModes no
UsePAM no
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
EOF
cat > "$work/ssh_config" <<EOF
Host home
    HostName 127.0.0.1
    Port 2222
    User root
    IdentityFile $work/user_key
    IdentitiesOnly yes
    BatchMode yes
    StrictHostKeyChecking no
    UserKnownHostsFile /dev/null
    LogLevel ERROR
EOF
ip netns exec "$ns" /usr/sbin/sshd -D -e -f "$work/sshd_config" 2> "$work/sshd.err" &
pids+=("$!")
inns() { ip netns exec "$ns" "$@"; }
for _ in $(seq 200); do inns ssh -F "$work/ssh_config" home true 2> /dev/null && break; sleep 0.05; done
head -c "$bytes" /dev/urandom > "$work/payload.bin"
best_ssh="" best_cat="" all_ssh="" all_cat=""
for _ in $(seq "$trials"); do
    restore
    t0=$(now)
    inns "$bin/peer-sync" connect --db "$work/kid.db" --quiet \
        --via "ssh -F $work/ssh_config -T home $bin/peer-sync serve --stdio --quiet --db $work/owner.db" > "$work/ssh.json"
    took=$(elapsed "$t0" "$(now)")
    check "$work/ssh.json"
    best_ssh=$(min "$best_ssh" "$took"); all_ssh="$all_ssh $took"
    t0=$(now)
    inns ssh -F "$work/ssh_config" home cat "$work/payload.bin" > "$work/copied.bin"
    took=$(elapsed "$t0" "$(now)")
    [ "$(stat -c %s "$work/copied.bin")" -eq "$bytes" ] || { echo "ssh cat lost bytes"; exit 1; }
    rm -f "$work/copied.bin"
    best_cat=$(min "$best_cat" "$took"); all_cat="$all_cat $took"
done
awk -v s="$best_ssh" -v c="$best_cat" -v b="$bytes" 'BEGIN {
    printf "full sync over ssh (sshd in a namespace, loopback): %.2f s; ssh cat of the same %.0f MB: %.2f s\n", s, b / 1e6, c
    printf "  ratio: sync over ssh = %.2f x ssh cat time\n", s / c
}'
echo "  trials (s): sync over ssh$all_ssh; ssh cat$all_cat"
