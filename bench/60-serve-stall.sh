#!/usr/bin/env bash
# peer-sync serve against connections that stall before authenticating, each
# figure against the same operation with no stalled connection, measured in
# the same run against the same server:
#
# 1. One idle TCP connection open: how much later a member's sync completes.
#    Target: at most 100 ms later.
# 2. 60 stalled connections (50 idle, 10 that sent half a ClientHello): the
#    time a new member's join takes. Target: under 3 s.
# 3. A stranger replaying the member's ClientHello (kept from one connect to
#    an address where the stranger answered) every 50 ms: the member's sync
#    against the undisturbed one. Target: at most 1.2x.
#
# Environment: SERVE_STALL_TRIALS (default 5; medians are reported).
set -euo pipefail
bin=${1:?usage: bench/60-serve-stall.sh RELEASE_BIN_DIR}
trials=${SERVE_STALL_TRIALS:-5}
work=$(mktemp -d)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2> /dev/null || true; done
    for p in "${pids[@]}"; do wait "$p" 2> /dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT
now() { echo "$EPOCHREALTIME"; }
ms() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f\n", (b - a) * 1000 }'; }
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }

# The owner (with a few records) serves; one member joins to sync with.
"$bin/pair-qr" --db "$work/owner.db" --format text -o "$work/code.txt" > "$work/offer0.json"
for i in $(seq 50); do echo "{\"id\":\"r$i\",\"type\":\"receipt\",\"data\":{\"n\":$i}}"; done |
    "$bin/merge-records" --db "$work/owner.db" --stamp > /dev/null
"$bin/peer-sync" serve --db "$work/owner.db" --listen 127.0.0.1:0 --events "$work/serve.events" > "$work/serve.out" 2> "$work/serve.err" &
pids+=($!)
port=
for _ in $(seq 500); do
    port=$(sed -n 's/.*"event":"listening".*"address":"127.0.0.1:\([0-9]*\)".*/\1/p' "$work/serve.events" 2> /dev/null | head -1 || true)
    [ -n "$port" ] && break
    sleep 0.02
done
[ -n "$port" ] || { echo "peer-sync serve did not start: $(cat "$work/serve.err")"; exit 1; }
addr=127.0.0.1:$port
"$bin/peer-sync" join --db "$work/kid.db" --connect "$addr" < "$work/offer0.json" > /dev/null

# Holds N stalled connections open until killed: idle ones, then ones that
# sent the first part of a ClientHello record. Prints "ready" once all are open.
cat > "$work/stall.py" <<'PY'
import socket, sys, time
port, idle, partial = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
held = []
for i in range(idle + partial):
    s = socket.create_connection(("127.0.0.1", port))
    if i >= idle:
        s.sendall(bytes([0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xFC, 0x03, 0x03]) + b"Z" * 60)
    held.append(s)
print("ready", flush=True)
time.sleep(3600)
PY
start_stall() {
    rm -f "$work/stall.ready"
    # python3 itself in the background, so $! is the process that holds the sockets.
    python3 "$work/stall.py" "$port" "$1" "$2" > "$work/stall.ready" &
    stall_pid=$!
    pids+=("$stall_pid")
    for _ in $(seq 500); do grep -q ready "$work/stall.ready" 2> /dev/null && return 0; sleep 0.01; done
    echo "could not open the stalled connections"; exit 1
}
stop_stall() { kill "$stall_pid" 2> /dev/null || true; wait "$stall_pid" 2> /dev/null || true; }

sync_ms() {
    local t0 t1
    t0=$(now)
    "$bin/peer-sync" connect --db "$work/kid.db" --wait 0s "$addr" > /dev/null
    t1=$(now)
    ms "$t0" "$t1"
}

# 1. A sync with nothing stalled and with one idle connection, alternating.
: > "$work/plain"; : > "$work/one"
for _ in $(seq "$trials"); do
    sync_ms >> "$work/plain"
    start_stall 1 0
    sync_ms >> "$work/one"
    stop_stall
done
plain=$(median < "$work/plain")
one=$(median < "$work/one")

# 2. Joins: a new member each time (a fresh offer), unstalled and past 60 stalled.
# The family allows four devices, so each pair of trials revokes the members it added.
join_ms() {
    local db=$1 t0 t1
    "$bin/pair-qr" --db "$work/owner.db" --format text -o "$work/code.txt" > "$work/offer.json"
    t0=$(now)
    "$bin/peer-sync" join --db "$db" --connect "$addr" < "$work/offer.json" > "$work/join.out"
    t1=$(now)
    ms "$t0" "$t1"
}
revoke() {
    local id
    # The first "device" of the status line is the store's own.
    id=$("$bin/peer-sync" status --db "$1" | sed -n 's/^{"device":"\([0-9A-F-]*\)".*/\1/p')
    [ -n "$id" ] && "$bin/peer-sync" revoke --db "$work/owner.db" "$id" > /dev/null
}
: > "$work/join.plain"; : > "$work/join.stalled"
for i in $(seq "$trials"); do
    join_ms "$work/a$i.db" >> "$work/join.plain"
    start_stall 50 10
    join_ms "$work/b$i.db" >> "$work/join.stalled"
    stop_stall
    revoke "$work/a$i.db"
    revoke "$work/b$i.db"
done
join_plain=$(median < "$work/join.plain")
join_stalled=$(median < "$work/join.stalled")

# 3. The member's ClientHello, kept by a stranger it connected to, replayed every 50 ms.
cat > "$work/replay.py" <<'PY'
import socket, subprocess, sys, time
bin_dir, db, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
lst = socket.socket()
lst.bind(("127.0.0.1", 0))
lst.listen(1)
victim = subprocess.Popen([bin_dir + "/peer-sync", "connect", "--db", db, "--wait", "0s", "127.0.0.1:%d" % lst.getsockname()[1]],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
conn, _ = lst.accept()
data = b""
while len(data) < 5 or len(data) < 5 + int.from_bytes(data[3:5], "big"):
    chunk = conn.recv(4096)
    if not chunk:
        sys.exit("no ClientHello")
    data += chunk
hello = data[:5 + int.from_bytes(data[3:5], "big")]
conn.close()
victim.wait()
held = []
print("ready", flush=True)
while True:
    try:
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(hello)
        held.append(s)
        if len(held) > 200:
            held.pop(0).close()
    except OSError:
        pass
    time.sleep(0.05)
PY
: > "$work/replay.plain"; : > "$work/replay.during"
for _ in $(seq "$trials"); do
    sync_ms >> "$work/replay.plain"
    rm -f "$work/replay.ready"
    python3 "$work/replay.py" "$bin" "$work/kid.db" "$port" > "$work/replay.ready" &
    replay_pid=$!
    pids+=("$replay_pid")
    for _ in $(seq 500); do grep -q ready "$work/replay.ready" 2> /dev/null && break; sleep 0.01; done
    grep -q ready "$work/replay.ready" || { echo "could not capture the member's ClientHello"; exit 1; }
    sleep 0.3  # a few replays are in flight before the sync starts
    sync_ms >> "$work/replay.during"
    kill "$replay_pid" 2> /dev/null || true; wait "$replay_pid" 2> /dev/null || true
done
replay_plain=$(median < "$work/replay.plain")
replay_during=$(median < "$work/replay.during")

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'; }
printf 'sync, nothing stalled (median of %d)          %8s ms\n' "$trials" "$plain"
printf 'sync, one idle connection open                %8s ms  (%sx; %s ms later; target <= 100 ms later)\n' \
    "$one" "$(ratio "$one" "$plain")" "$(awk -v a="$one" -v b="$plain" 'BEGIN { printf "%.1f", a - b }')"
printf 'join, nothing stalled                         %8s ms\n' "$join_plain"
printf 'join, 60 stalled (50 idle, 10 half-hello)     %8s ms  (%sx; target < 3000 ms)\n' \
    "$join_stalled" "$(ratio "$join_stalled" "$join_plain")"
printf 'sync, nothing stalled (3rd set)               %8s ms\n' "$replay_plain"
printf 'sync, its ClientHello replayed every 50 ms    %8s ms  (%sx; target <= 1.2x)\n' \
    "$replay_during" "$(ratio "$replay_during" "$replay_plain")"
