"""Fixtures for bench/50-peer-sync.sh: fill an owner's store with records and
photos, make local edits, and export the bytes a full sync carries.

The store must exist and hold a family (pair-qr made it). Records are written
the way the store keeps them (the LWW winner's line, its change number, its
photo references), straight through SQLite, so that filling a library of a
gigabyte takes seconds and the benchmark measures peer-sync, not the filling.

    python peer_sync_fixture.py fill DB RECORDS PHOTOS PHOTO_BYTES
    python peer_sync_fixture.py edit DB COUNT
    python peer_sync_fixture.py payload DB OUT
"""
import json, hashlib, os, sqlite3, sys, time


def stamp(ms):
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms // 1000)) + ".%03dZ" % (ms % 1000)


def open_store(path):
    c = sqlite3.connect(path, isolation_level=None)
    c.execute("PRAGMA journal_mode = WAL")
    c.execute("PRAGMA synchronous = NORMAL")
    return c


def next_seq(c, n):
    cur = int(c.execute("SELECT value FROM meta WHERE key = 'change_seq'").fetchone()[0])
    c.execute("UPDATE meta SET value = ? WHERE key = 'change_seq'", (str(cur + n),))
    return cur + 1


def fill(path, records, photos, photo_bytes):
    c = open_store(path)
    me = c.execute("SELECT value FROM meta WHERE key = 'device_id'").fetchone()[0]
    now = int(time.time() * 1000) - 60_000
    c.execute("BEGIN IMMEDIATE")
    hashes = []
    for _ in range(photos):
        b = os.urandom(photo_bytes)
        h = hashlib.sha256(b).hexdigest()
        hashes.append(h)
        c.execute("INSERT INTO photos (sha256, size, added_at, bytes) VALUES (?, ?, ?, ?)", (h, len(b), now, b))
    seq = next_seq(c, records)
    for i in range(records):
        rec = {"id": "r-%07d" % i, "type": "receipt", "modifiedAt": stamp(now), "deviceId": me, "deleted": False,
               "data": {"amount": i % 10000, "currency": "EUR", "note": "groceries, corner shop, visit %d" % i}}
        if i < photos:
            rec["photos"] = [hashes[i]]
        c.execute("INSERT INTO records (id, type, modified_at, device_id, deleted, line, seq) VALUES (?, ?, ?, ?, 0, ?, ?)",
                  (rec["id"], rec["type"], now, me, json.dumps(rec, separators=(",", ":")), seq + i))
        if i < photos:
            c.execute("INSERT INTO record_photos (sha256, record_id) VALUES (?, ?)", (hashes[i], rec["id"]))
    c.execute("COMMIT")


def edit(path, count):
    """Local edits of `count` records, stamped now by this device."""
    c = open_store(path)
    me = c.execute("SELECT value FROM meta WHERE key = 'device_id'").fetchone()[0]
    now = int(time.time() * 1000)
    c.execute("BEGIN IMMEDIATE")
    rows = c.execute("SELECT id, line FROM records ORDER BY id LIMIT ?", (count,)).fetchall()
    seq = next_seq(c, len(rows))
    for k, (rid, line) in enumerate(rows):
        rec = json.loads(line)
        rec["modifiedAt"], rec["deviceId"] = stamp(now), me
        rec.setdefault("data", {})["edited"] = True
        c.execute("UPDATE records SET modified_at = ?, device_id = ?, line = ?, seq = ? WHERE id = ?",
                  (now, me, json.dumps(rec, separators=(",", ":")), seq + k, rid))
    c.execute("COMMIT")


def payload(path, out):
    """The bytes a full sync carries: every photo and every record line."""
    c = open_store(path)
    with open(out, "wb") as f:
        for (b,) in c.execute("SELECT bytes FROM photos"):
            f.write(b)
        for (line,) in c.execute("SELECT line FROM records"):
            f.write(line.encode() + b"\n")


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "fill":
        fill(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]))
    elif cmd == "edit":
        edit(sys.argv[2], int(sys.argv[3]))
    elif cmd == "payload":
        payload(sys.argv[2], sys.argv[3])
    else:
        sys.exit("unknown command " + cmd)
