#!/usr/bin/env bash
# The household of docs/design.md §1, end to end on loopback, in a temporary folder.
# $1: the folder holding the release tools.
set -euo pipefail
bin=${1:?usage: scripts/demo.sh BIN_DIR}
scripts=$(cd "$(dirname "$0")" && pwd)
export PATH="$bin:$PATH"
unset FAMILY_SYNC_DB
work=$(mktemp -d)
server=""
cleanup() {
    # serve ends with 143 on SIGTERM, as every tool does on a stop.
    if [ -n "$server" ] && kill "$server" 2>/dev/null; then wait "$server" 2>/dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT
cd "$work"

# Bold steps on a terminal only: piped or saved, the transcript carries no escapes.
bold="" plain=""
if [ -t 1 ]; then bold=$(tput bold 2>/dev/null || true) plain=$(tput sgr0 2>/dev/null || true); fi
say() { printf '\n%s# %s%s\n' "$bold" "$*" "$plain"; }
step() { printf '%s$ %s%s\n' "$bold" "$*" "$plain"; }
run() { step "$*"; eval "$@"; }

bundle=com.example.familysync product=family.monthly
now_ms=$(date +%s%3N)
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
addr=127.0.0.1:$port

say "The owner's device: a new family and a one-time pairing offer, drawn as a QR code"
run pair-qr --db owner.db --addr "$addr" -o pair.png
ls -l pair.png | awk '{print $1, $5, $NF}'

say "The owner's App Store proof. Apple signs only real purchases, so a demo PKI shaped like Apple's signs this one"
bash "$scripts/demo-pki.sh" "$bundle" "$product" $((now_ms + 30 * 86400000))
run jws-verify --db owner.db --save --root demo-root.der --bundle-id "$bundle" --product "$product" "< tx.jws"

say "The owner's device waits for peers, one at a time"
step "peer-sync serve --db owner.db --listen $addr --quiet &"
peer-sync serve --db owner.db --listen "$addr" --quiet --events owner-events.ndjson >owner-sessions.ndjson 2>owner.log &
server=$!
for _ in $(seq 100); do grep -q '"listening"' owner-events.ndjson 2>/dev/null && break; sleep 0.1; done

say "A member's device scans a photo of the code and joins: family, members, proof, first sync (the root given once is kept)"
run "pair-scan pair.png | peer-sync join --db kid.db --root demo-root.der --quiet"

say "The offer is spent: a second device with the same screenshot is refused"
step "pair-scan pair.png | peer-sync join --db stranger.db --root demo-root.der --quiet"
pair-scan pair.png | peer-sync join --db stranger.db --root demo-root.der --quiet || echo "(exit $?)"

say "Both edit: the member adds receipts with a photo, the owner a budget"
head -c 300000 /dev/urandom > receipt.jpg
run merge-records --db kid.db --add-photo receipt.jpg
photo=$(sha256sum receipt.jpg | cut -d' ' -f1)
cat > kid-edits.ndjson <<NDJSON
{"id":"r-1","type":"receipt","data":{"merchant":"Café Müller","total":"12.50","currency":"EUR"},"photos":["$photo"]}
{"id":"r-2","type":"receipt","data":{"merchant":"東京ストア","total":"800","currency":"JPY"}}
NDJSON
run merge-records --db kid.db --stamp "< kid-edits.ndjson"
echo '{"id":"b-1","type":"budget","data":{"month":"2026-12","limit":"400.00"}}' > owner-edits.ndjson
run merge-records --db owner.db --stamp "< owner-edits.ndjson"

say "Sync Now: the member reaches the peers it knows"
run peer-sync connect --db kid.db --quiet

say "Both devices now hold the same records (and the photo)"
run merge-records --db owner.db --export
run "peer-sync status --db kid.db"

say "Every launch, the member re-checks the cached proof offline"
run jws-verify --db kid.db
say "...and once the subscription lapses, the member drops to free by itself (exit 1)"
step "jws-verify --db kid.db --now <in 40 days>"
jws-verify --db kid.db --now "$(date -u -d '+40 days' +%Y-%m-%dT%H:%M:%SZ)" || echo "(exit $?)"

say "A delete is a tombstone that travels; only the owner's tombstone-gc purges it, once every device has it and the owner has held it 90 days"
echo '{"id":"r-2","type":"receipt","deleted":true}' > kid-delete.ndjson
run merge-records --db kid.db --stamp "< kid-delete.ndjson"
run peer-sync connect --db kid.db --quiet
run tombstone-gc --db kid.db --dry-run --verbose
say "On a member, tombstone-gc purges nothing by itself: the owner decides, so no member and no clock can make a store forget"
later=$(date -u -d '+91 days' +%Y-%m-%dT%H:%M:%SZ)
say "In 91 days by the owner's clock the delete goes from the owner's store, and a 16-byte record of the purge stays"
step "tombstone-gc --db owner.db --now <in 91 days>"
tombstone-gc --db owner.db --now "$later"
say "At its next contact the member drops it too (records.purged), by the owner's signed purge record"
run peer-sync connect --db kid.db --quiet

say "The owner revokes the member's device: the family key moves on, its place is freed"
kid_id=$(peer-sync status --db kid.db | python3 -c 'import json, sys; print(json.load(sys.stdin)["device"])')
run peer-sync revoke --db owner.db "$kid_id"
step "peer-sync connect --db kid.db --quiet"
peer-sync connect --db kid.db --quiet || echo "(exit $?)"
step "jws-verify --db kid.db"
jws-verify --db kid.db || echo "(exit $?)"

say "What the owner's device logged, one JSON summary per session"
run cat owner-sessions.ndjson

say "Done. Every tool has a man page: man -l man/man1/peer-sync.1, man -l man/man7/family-sync.7"
