#!/usr/bin/env bash
# What the release build pays for keeping its checks (array bounds, integer
# overflow, preconditions): the same source tree built once more with
# -Ounchecked on the core and the image half, as Package.swift once did, and
# the two compared in the same run on
#   1. merge-records pure mode, 2 x 500,000 records (BENCH_RECORDS), best of 3;
#   2. jws-verify, a batch of 20,000 tokens (JWS_BENCH_TOKENS), best of 3 by CPU time.
# Trials alternate between the two builds so machine load hits both alike.
# The -Ounchecked build is cached in bench/.unchecked-build (rebuilt when the
# sources change).
set -euo pipefail
bin=${1:?usage: bench/15-unchecked-cost.sh RELEASE_BIN_DIR}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
py=${BENCH_PYTHON:-python3}
[ -x "$py" ] || py=python3
N=${BENCH_RECORDS:-500000}
tokens=${JWS_BENCH_TOKENS:-20000}
base=${TMPDIR:-/tmp}
if [ -z "${TMPDIR:-}" ] && [ -d /dev/shm ] && [ "$(df -Pk /dev/shm | awk 'NR == 2 { print $4 }')" -gt 4000000 ]; then base=/dev/shm; fi
work=$(mktemp -d "$base/bench-unchecked.XXXXXX")
trap 'rm -rf "$work"' EXIT

# The same sources, Package.swift with -Ounchecked put back on the two targets.
tree=$here/.unchecked-build/src
mkdir -p "$tree"
rm -rf "$tree/Sources" && cp -a "$root/Sources" "$tree/"
python3 - "$root/Package.swift" "$tree/Package.swift" <<'PY'
import re, sys
s = open(sys.argv[1]).read()
flag = 'swiftSettings: [.unsafeFlags(["-Ounchecked"], .when(configuration: .release))]'
for target in ("FamilySync", "FamilySyncImaging"):
    m = re.search(r'\.target\(\s*name: "%s",(.*?)\n        \)' % target, s, re.S)
    if not m:
        sys.exit("Package.swift: no target %s" % target)
    body = m.group(1).rstrip().rstrip(",")
    s = s[:m.start(1)] + body + ",\n            " + flag + s[m.end(1):]
s = re.sub(r'\.testTarget\(.*?\),\n', '', s, flags=re.S)
open(sys.argv[2], "w").write(s)
PY
echo "building the -Ounchecked variant (cached in bench/.unchecked-build)..."
(cd "$tree" && nice -n 10 swift build -c release --static-swift-stdlib --scratch-path "$here/.unchecked-build/scratch" \
    --product family-sync > "$work/build.log" 2>&1) || { tail -20 "$work/build.log"; exit 1; }
# The two tools are links to the binary that carries them, as installed.
ubin="$here/.unchecked-build/tools"
mkdir -p "$ubin"
for t in merge-records jws-verify; do
    ln -sfn "$(cd "$tree" && swift build -c release --static-swift-stdlib --scratch-path "$here/.unchecked-build/scratch" --show-bin-path)/family-sync" "$ubin/$t"
done

"$py" "$here/gen-records.py" --count "$N" --first 0 --seed 1 > "$work/local.ndjson"
"$py" "$here/gen-records.py" --count "$N" --first $((N * 2 / 5)) --seed 2 > "$work/remote.ndjson"
now=2026-12-01T00:00:00Z
secs() { /usr/bin/time -f "%e" -o "$work/t" "$@" > /dev/null; cat "$work/t"; }
cpu() { /usr/bin/time -f "%U %S" -o "$work/t" "$@" > /dev/null; awk '{ print $1 + $2 }' "$work/t"; }
best() { sort -n | head -1; }
: > "$work/m.checked"; : > "$work/m.unchecked"
for _ in 1 2 3; do
    secs "$bin/merge-records" --now $now "$work/local.ndjson" "$work/remote.ndjson" >> "$work/m.checked"
    secs "$ubin/merge-records" --now $now "$work/local.ndjson" "$work/remote.ndjson" >> "$work/m.unchecked"
done
cmp <("$bin/merge-records" --now $now "$work/local.ndjson" "$work/remote.ndjson") \
    <("$ubin/merge-records" --now $now "$work/local.ndjson" "$work/remote.ndjson") || { echo "the two builds merged differently"; exit 1; }

vectors="$root/Tests/FamilySyncTests/Vectors/apple-test"
token=$(tr -d '\r\n' < "$vectors/transactionInfo.jws")
yes "$token" | head -n "$tokens" > "$work/batch.jws" || true
args=(--root "$vectors/testCA.der" --bundle-id com.example --allow-sandbox --now 2026-11-30T10:00:00Z)
: > "$work/j.checked"; : > "$work/j.unchecked"
for _ in 1 2 3; do
    cpu "$bin/jws-verify" "${args[@]}" "$work/batch.jws" >> "$work/j.checked"
    cpu "$ubin/jws-verify" "${args[@]}" "$work/batch.jws" >> "$work/j.unchecked"
done

mc=$(best < "$work/m.checked"); mu=$(best < "$work/m.unchecked")
jc=$(best < "$work/j.checked"); ju=$(best < "$work/j.unchecked")
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", (b > 0 ? a / b : 0) }'; }
printf 'merge-records 2 x %d records: checked %ss, -Ounchecked %ss: checked takes %sx the time\n' "$N" "$mc" "$mu" "$(ratio "$mc" "$mu")"
printf 'jws-verify batch of %d:      checked %ss, -Ounchecked %ss of CPU: checked takes %sx the time\n' "$tokens" "$jc" "$ju" "$(ratio "$jc" "$ju")"
