#!/usr/bin/env bash
# Discovery and sync on a simulated household network: network namespaces,
# veth pairs and a bridge made here and removed on every exit (needs root and
# iproute2; nothing is sent on the host's own interfaces). Three figures:
#
# 1. serve start to a browser seeing it: python-zeroconf (an independent
#    DNS-SD browser, already browsing) on one device, `peer-sync serve`
#    started on another; the time until the browser reports the service.
# 2. An address change to a successful Sync Now: the owner's device moves to
#    a new address while serving, then `peer-sync connect` without an address
#    on a member, until its session completes.
#    Both as medians over runs, against the anchor: a plain `peer-sync
#    connect` to the owner's known address, nothing to sync.
# 3. A first sync (`peer-sync join`) of 200 photos of 1 MB over a link shaped
#    to 20 Mbit/s with tc's token bucket (this kernel has no netem): the link
#    used, as payload bytes over time against the shaped rate (target >= 0.90),
#    and each side's peak RSS (target < 60 MB).
#
# Environment: BENCH_PYTHON (venv python with zeroconf), DISCOVERY_BENCH_RUNS
# (default 5), DISCOVERY_BENCH_PHOTOS (default 200).
set -euo pipefail
[ -n "${DISCOVERY_BENCH_TRACE:-}" ] && set -x
bin=${1:?usage: bench/60-discovery.sh RELEASE_BIN_DIR}
here=$(cd "$(dirname "$0")" && pwd)
py=${BENCH_PYTHON:-$here/.venv/bin/python}
runs=${DISCOVERY_BENCH_RUNS:-5}
photos=${DISCOVERY_BENCH_PHOTOS:-200}
rate_mbit=20
if [ "$(id -u)" -ne 0 ] || ! command -v ip > /dev/null; then echo "skipped: needs root and iproute2 (network namespaces)"; exit 0; fi
"$py" -c "import zeroconf" 2> /dev/null || { echo "skipped: $py has no zeroconf (make bench-deps installs it)"; exit 0; }

lab=fsb$$
br=${lab}br owner=${lab}o kid=${lab}k
work=$(mktemp -d)
cleanup() {
    for n in "$owner" "$kid" "$br"; do
        ip netns pids "$n" 2> /dev/null | xargs -r kill -9 2> /dev/null || true
        ip netns del "$n" 2> /dev/null || true
    done
    rm -rf "$work"
}
trap cleanup EXIT
ip netns add "$br"; ip netns add "$owner"; ip netns add "$kid"
ip -n "$br" link add br0 type bridge; ip -n "$br" link set br0 up
i=0
for n in "$owner" "$kid"; do
    ip link add eth0 netns "$n" type veth peer name "port$i" netns "$br"
    ip -n "$br" link set "port$i" master br0; ip -n "$br" link set "port$i" up
    ip -n "$n" addr add "10.66.0.$((i + 1))/24" dev eth0
    ip -n "$n" link set eth0 up; ip -n "$n" link set lo up
    i=$((i + 1))
done
on() { local ns=$1; shift; ip netns exec "$ns" "$@"; }
now() { echo "$EPOCHREALTIME"; }
elapsed_ms() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.0f", (b - a) * 1000 }'; }
median() { tr ' ' '\n' | grep . | sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

serve_pid=""
start_serve() {
    rm -f "$work/serve.events"
    # ip netns exec execs the tool: $! is peer-sync itself, which SIGTERM ends.
    ip netns exec "$owner" "$bin/peer-sync" serve --db "$work/owner.db" --events "$work/serve.events" > /dev/null 2> "$work/serve.err" &
    serve_pid=$!
}
stop_serve() { kill -TERM "$serve_pid" 2> /dev/null || true; wait "$serve_pid" 2> /dev/null || true; }
wait_listening() { for _ in $(seq 500); do grep -q '"listening"' "$work/serve.events" 2> /dev/null && return 0; sleep 0.01; done; echo "serve did not start: $(cat "$work/serve.err")"; exit 1; }

# A family of two: the owner's store (offer made without --addr) and a member joined to it.
on "$owner" "$bin/pair-qr" --db "$work/owner.db" --ttl 1h --format text -o "$work/offer.txt" > "$work/offer.json"
start_serve; wait_listening
on "$kid" "$bin/peer-sync" join --db "$work/kid.db" "$work/offer.json" > /dev/null

# --- Anchor: a plain connect to the known address --------------------------
anchor=""
for _ in $(seq "$runs"); do
    t0=$(now)
    on "$kid" "$bin/peer-sync" connect --db "$work/kid.db" "10.66.0.1:7433" > /dev/null
    anchor="$anchor $(elapsed_ms "$t0" "$(now)")"
done
stop_serve

# --- 1. serve start to a browser seeing it ----------------------------------
cat > "$work/browse.py" << 'EOF'
import sys, time
from zeroconf import Zeroconf, ServiceBrowser, ServiceListener
class L(ServiceListener):
    def add_service(self, zc, t, name): print("%.6f" % time.time(), flush=True)
    def update_service(self, zc, t, name): pass
    def remove_service(self, zc, t, name): pass
zc = Zeroconf()
ServiceBrowser(zc, "_family-sync._tcp.local.", L())
print("ready", flush=True)
time.sleep(float(sys.argv[1]))
zc.close()
EOF
seen=""
for _ in $(seq "$runs"); do
    rm -f "$work/browse.out"
    ip netns exec "$kid" "$py" "$work/browse.py" 8 > "$work/browse.out" &
    b_pid=$!
    for _ in $(seq 500); do grep -q ready "$work/browse.out" 2> /dev/null && break; sleep 0.01; done
    sleep 0.5   # let the browser's own first queries go by: the serve must announce itself
    t0=$(now)
    start_serve
    for _ in $(seq 800); do [ "$(wc -l < "$work/browse.out")" -ge 2 ] && break; sleep 0.01; done
    t1=$(sed -n 2p "$work/browse.out")
    [ -n "$t1" ] || { echo "the browser never saw the service"; exit 1; }
    seen="$seen $(elapsed_ms "$t0" "$t1")"
    stop_serve
    kill "$b_pid" 2> /dev/null || true; wait "$b_pid" 2> /dev/null || true
    sleep 0.3
done

# --- 2. An address change to a successful Sync Now ----------------------------
start_serve; wait_listening
# The moves start once serve answers (its names are claimed after RFC 6762's
# probing, ~1 s): otherwise the first move measures the probing, not the move.
for _ in $(seq 20); do
    on "$kid" "$bin/peer-sync" discover --db "$work/kid.db" | grep -q '"role":"owner"' && break
done
moved=""
for r in $(seq "$runs"); do
    ip -n "$owner" addr flush dev eth0
    ip -n "$owner" addr add "10.66.0.$((100 + r))/24" dev eth0
    t0=$(now)
    on "$kid" "$bin/peer-sync" connect --db "$work/kid.db" > "$work/moved.json"
    moved="$moved $(elapsed_ms "$t0" "$(now)")"
    grep -q "\"address\":\"10.66.0.$((100 + r)):7433\"" "$work/moved.json" || { echo "Sync Now did not follow the move: $(cat "$work/moved.json")"; exit 1; }
done
stop_serve

a=$(echo "$anchor" | median) s=$(echo "$seen" | median) m=$(echo "$moved" | median)
awk -v a="$a" -v s="$s" -v m="$m" -v n="$runs" 'BEGIN {
    printf "discovery, medians of %d runs: plain connect to a known address (anchor) %d ms\n", n, a
    printf "  serve start to python-zeroconf seeing it: %d ms = %.1f x anchor\n", s, s / a
    printf "  address change to a completed Sync Now:   %d ms = %.1f x anchor\n", m, m / a
}'
echo "  runs (ms): anchor$anchor; seen$seen; moved$moved"

# --- 3. A first sync over a 20 Mbit/s link ----------------------------------
ip -n "$owner" addr flush dev eth0; ip -n "$owner" addr add 10.66.0.1/24 dev eth0
rm -f "$work"/big-*
"$py" "$here/peer_sync_fixture.py" library "$work/lib" "$photos" "$photos" 1048576
split -l 100 "$work/lib/photo-list" "$work/lib/batch."
on "$owner" "$bin/pair-qr" --db "$work/big-owner.db" --ttl 1h --format text -o "$work/big-offer.txt" > "$work/big-offer.json"
for b in "$work/lib"/batch.*; do
    sed 's/^/--add-photo\n/' "$b" | tr '\n' '\0' | xargs -0 "$bin/merge-records" --db "$work/big-owner.db" > /dev/null
done
"$bin/merge-records" --db "$work/big-owner.db" --stamp < "$work/lib/records.ndjson" > /dev/null
bytes=$(( $(xargs cat < "$work/lib/photo-list" | wc -c) + $("$bin/merge-records" --db "$work/big-owner.db" --export | wc -c) ))
rm -rf "$work/lib"
ip -n "$owner" link set eth0 txqueuelen 1000
tc -n "$owner" qdisc replace dev eth0 root tbf rate "${rate_mbit}mbit" burst 32kb latency 100ms
ip netns exec "$owner" /usr/bin/time -f %M -o "$work/big-serve.rss" "$bin/peer-sync" serve --db "$work/big-owner.db" --once > /dev/null 2> "$work/big-serve.err" &
big_pid=$!
sleep 0.5
sync
t0=$(now)
on "$kid" /usr/bin/time -f %M -o "$work/big-join.rss" "$bin/peer-sync" join --db "$work/big-kid.db" "$work/big-offer.json" > "$work/big-join.json"
took=$(elapsed_ms "$t0" "$(now)")
wait "$big_pid" || true
grep -q "\"received\":$photos," "$work/big-join.json" || { echo "the shaped first sync did not receive every photo: $(cat "$work/big-join.json")"; exit 1; }
awk -v b="$bytes" -v t="$took" -v r="$rate_mbit" -v p="$photos" -v s="$(cat "$work/big-serve.rss")" -v j="$(cat "$work/big-join.rss")" 'BEGIN {
    used = b * 8 / (t / 1000) / (r * 1e6)
    printf "first sync of %d photos of 1 MB over a %d Mbit/s tbf link: %.1f s, %.2f MB/s\n", p, r, t / 1000, b / 1e6 / (t / 1000)
    printf "  link used: %.2f of the shaped rate (target >= 0.90)\n", used
    printf "  peak RSS: serving %.0f MB, joining %.0f MB (target < 60 MB each)\n", s / 1024, j / 1024
}'
