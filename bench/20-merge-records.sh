#!/usr/bin/env bash
# merge-records pure mode on two inputs of 500,000 realistic records each
# (~340 MB together), against the same LWW merge written as SQL in the sqlite3
# CLI (import both, upsert with the rule, export sorted) and against `cat` of
# the inputs (the I/O floor), all writing to a file in the same folder.
# Also: store-mode apply of 1,000,000 records against a plain sqlite3 bulk
# insert of the same rows into the same table, and the share of that apply
# spent on the record-state digest's per-row terms (a second apply under perf).
set -euo pipefail
bin=${1:?usage: 20-merge-records.sh RELEASE_BIN_DIR}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/digest-terms-share.sh"
py=${BENCH_PYTHON:-python3}
[ -x "$py" ] || py=python3
N=${BENCH_RECORDS:-500000}
# Work in memory when there is room, so disk write-back does not blur the figures.
base=${TMPDIR:-/tmp}
if [ -z "${TMPDIR:-}" ] && [ -d /dev/shm ] && [ "$(df -Pk /dev/shm | awk 'NR == 2 { print $4 }')" -gt 8000000 ]; then base=/dev/shm; fi
work=$(mktemp -d "$base/bench-merge.XXXXXX")
trap 'rm -rf "$work"' EXIT
now=2026-12-01T00:00:00Z

"$py" "$here/gen-records.py" --count "$N" --first 0 --seed 1 > "$work/local.ndjson"
"$py" "$here/gen-records.py" --count "$N" --first $((N * 2 / 5)) --seed 2 > "$work/remote.ndjson"
bytes=$(( $(stat -c %s "$work/local.ndjson") + $(stat -c %s "$work/remote.ndjson") ))
records=$((2 * N))

# measure NAME CMD...: runs CMD under /usr/bin/time; sets SECS and RSS_KB.
measure() {
    local name=$1; shift
    /usr/bin/time -f "%e %M" -o "$work/time.$name" "$@"
    read -r SECS RSS_KB < "$work/time.$name"
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", (b > 0 ? a / b : 0) }'; }
rate() { awk -v n="$1" -v s="$2" 'BEGIN { printf "%.0f", (s > 0 ? n / s : 0) }'; }

# The I/O floor.
sync
measure cat sh -c "cat '$work/local.ndjson' '$work/remote.ndjson' > '$work/cat.out'"
cat_s=$SECS
# merge-records: best of three.
best=999999
for _ in 1 2 3; do
    measure merge sh -c "'$bin/merge-records' --now $now '$work/local.ndjson' '$work/remote.ndjson' > '$work/merged.out'"
    if awk -v a="$SECS" -v b="$best" 'BEGIN { exit !(a < b) }'; then best=$SECS; merge_rss=$RSS_KB; fi
done
merge_s=$best
merged_lines=$(wc -l < "$work/merged.out")

# The same merge in the sqlite3 CLI. Each NDJSON line is imported as one column
# (no 0x1F/0x1E in the data), then upserted with the rule: clamp (REMOTE only),
# later modifiedAt, live over tombstone, greater deviceId.
cat > "$work/merge.sql" <<SQL
.output /dev/null
PRAGMA journal_mode = OFF;
PRAGMA synchronous = OFF;
CREATE TABLE l(line TEXT);
CREATE TABLE r(line TEXT);
.mode ascii
.separator "\\037" "\\n"
.import '$work/local.ndjson' l
.import '$work/remote.ndjson' r
CREATE TABLE m(id TEXT PRIMARY KEY, t TEXT, dev TEXT, del INT, line TEXT);
INSERT INTO m (id, t, dev, del, line)
  SELECT json_extract(line, '$.id'), strftime('%Y-%m-%dT%H:%M:%fZ', json_extract(line, '$.modifiedAt')),
         json_extract(line, '$.deviceId'), json_extract(line, '$.deleted'), line FROM l WHERE true
  ON CONFLICT(id) DO UPDATE SET t = excluded.t, dev = excluded.dev, del = excluded.del, line = excluded.line
  WHERE excluded.t > m.t OR (excluded.t = m.t AND ((excluded.del = 0 AND m.del = 1)
     OR (excluded.del = m.del AND excluded.dev > m.dev)));
INSERT INTO m (id, t, dev, del, line)
  SELECT id, min(t, strftime('%Y-%m-%dT%H:%M:%fZ', '$now', '+5 minutes')), dev, del,
         CASE WHEN t > strftime('%Y-%m-%dT%H:%M:%fZ', '$now', '+5 minutes')
              THEN json_set(line, '$.modifiedAt', strftime('%Y-%m-%dT%H:%M:%fZ', '$now', '+5 minutes')) ELSE line END
  FROM (SELECT json_extract(line, '$.id') AS id, strftime('%Y-%m-%dT%H:%M:%fZ', json_extract(line, '$.modifiedAt')) AS t,
               json_extract(line, '$.deviceId') AS dev, json_extract(line, '$.deleted') AS del, line FROM r) WHERE true
  ON CONFLICT(id) DO UPDATE SET t = excluded.t, dev = excluded.dev, del = excluded.del, line = excluded.line
  WHERE excluded.t > m.t OR (excluded.t = m.t AND ((excluded.del = 0 AND m.del = 1)
     OR (excluded.del = m.del AND excluded.dev > m.dev)));
.mode list
.output '$work/sqlite.out'
SELECT line FROM m ORDER BY id;
SQL
rm -f "$work/m.db"
measure sqlite sqlite3 "$work/m.db" ".read '$work/merge.sql'"
sqlite_s=$SECS
sqlite_rss=$RSS_KB
sqlite_lines=$(wc -l < "$work/sqlite.out")
rm -f "$work/m.db" "$work/cat.out"

mb=$(awk -v b="$bytes" 'BEGIN { printf "%.0f", b / 1e6 }')
echo "pure merge: $records records, $mb MB in; merged $merged_lines lines (sqlite3: $sqlite_lines)"
echo "  merge-records: $(rate $records "$merge_s") records/s, $(awk -v b="$bytes" -v s="$merge_s" 'BEGIN { printf "%.0f", b / 1e6 / s }') MB/s, peak RSS $((merge_rss / 1024)) MB ($(ratio "$merge_rss" $((bytes / 1024))) x input)"
echo "  vs sqlite3 LWW merge: $(ratio "$sqlite_s" "$merge_s")x faster (sqlite3 $(rate $records "$sqlite_s") records/s, peak RSS $((sqlite_rss / 1024)) MB)"
echo "  vs cat of the inputs: $(ratio "$merge_s" "$cat_s")x the time of cat (cat $(awk -v b="$bytes" -v s="$cat_s" 'BEGIN { printf "%.0f", b / 1e6 / s }') MB/s)"

# Store-mode apply of 2N (1,000,000) records into a new store, against a plain
# sqlite3 bulk insert of the same rows into the same records table.
cat "$work/local.ndjson" > "$work/apply.ndjson"
"$py" "$here/gen-records.py" --count "$N" --first "$N" --seed 3 >> "$work/apply.ndjson"
measure apply sh -c "'$bin/merge-records' --db '$work/s.db' --now $now '$work/apply.ndjson' > '$work/summary.json'"
apply_s=$SECS
apply_rss=$RSS_KB
# The anchor: the same columns, from a TSV made outside the timing, into an
# empty store of the same schema, one transaction.
"$bin/merge-records" --db "$work/anchor.db" --now $now /dev/null > /dev/null  # an empty store: the schema
"$py" - "$work/apply.ndjson" "$work/rows.tsv" <<'PY'
import json, sys, datetime
src, dst = sys.argv[1], sys.argv[2]
with open(src, encoding="utf-8") as f, open(dst, "w", encoding="utf-8") as out:
    for seq, line in enumerate(f, 1):
        line = line.rstrip("\n")
        r = json.loads(line)
        t = datetime.datetime.strptime(r["modifiedAt"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc)
        ms = int(t.timestamp() * 1000)
        out.write("\x1f".join([r["id"], r["type"], str(ms), r["deviceId"], "1" if r["deleted"] else "0",
                               line, str(seq), str(len(r.get("photos") or []))]) + "\x1e")
PY
cat > "$work/anchor.sql" <<SQL
.output /dev/null
PRAGMA journal_mode = WAL;
PRAGMA synchronous = NORMAL;
PRAGMA cache_size = -131072;
CREATE TEMP VIEW v AS SELECT id, type, modified_at, device_id, deleted, line, seq, photo_count FROM records;
CREATE TEMP TRIGGER v_insert INSTEAD OF INSERT ON v BEGIN
  INSERT INTO records (id, type, modified_at, device_id, deleted, line, seq, photo_count)
  VALUES (NEW.id, NEW.type, NEW.modified_at, NEW.device_id, NEW.deleted, NEW.line, NEW.seq, NEW.photo_count);
END;
.mode ascii
.import '$work/rows.tsv' v
SQL
measure anchor sqlite3 "$work/anchor.db" ".read '$work/anchor.sql'"
anchor_s=$SECS
apply_n=$(wc -l < "$work/apply.ndjson")
echo "store apply: $apply_n records into a new store: $(rate "$apply_n" "$apply_s") records/s, peak RSS $((apply_rss / 1024)) MB"
echo "  vs sqlite3 bulk insert of the same rows: $(ratio "$apply_s" "$anchor_s")x its time (sqlite3 $(rate "$apply_n" "$anchor_s") records/s)"
echo "  summary: $(cat "$work/summary.json")"
rm -f "$work"/s.db* "$work"/anchor.db* "$work/rows.tsv"
digest_terms_share "$work/apply.perf" "$bin/merge-records" --db "$work/terms.db" --now $now "$work/apply.ndjson"
