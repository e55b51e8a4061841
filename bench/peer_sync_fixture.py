"""Inputs for bench/50-peer-sync.sh, written as files for merge-records:
photos (random bytes, so nothing compresses) and the records naming them.

    python peer_sync_fixture.py library DIR RECORDS PHOTOS PHOTO_BYTES
        writes DIR/photos/NNNNNNN.jpg, DIR/photo-list (one path a line)
        and DIR/records.ndjson (RECORDS receipts; the first PHOTOS name one photo each)
    python peer_sync_fixture.py edits COUNT
        prints COUNT edits of the first COUNT receipts as NDJSON
    python peer_sync_fixture.py new COUNT TAG
        prints COUNT new receipts (ids n-TAG-NNNNNNN) as NDJSON
"""
import hashlib, json, os, sys, time


def library(root, records, photos, photo_bytes):
    os.makedirs(os.path.join(root, "photos"), exist_ok=True)
    hashes = []
    with open(os.path.join(root, "photo-list"), "w") as listing:
        for i in range(photos):
            b = os.urandom(photo_bytes)
            path = os.path.join(root, "photos", "%07d.jpg" % i)
            with open(path, "wb") as f:
                f.write(b)
            hashes.append(hashlib.sha256(b).hexdigest())
            listing.write(path + "\n")
    with open(os.path.join(root, "records.ndjson"), "w") as out:
        for i in range(records):
            rec = {"id": "r-%07d" % i, "type": "receipt",
                   "data": {"amount": i % 10000, "currency": "EUR", "note": "groceries, corner shop, visit %d" % i}}
            if i < photos:
                rec["photos"] = [hashes[i]]
            out.write(json.dumps(rec, separators=(",", ":")) + "\n")


def edits(count, tag):
    # The tag makes each run's content new: a stamp of the same content again is unchanged.
    for i in range(count):
        rec = {"id": "r-%07d" % i, "type": "receipt", "data": {"amount": i, "currency": "EUR", "note": "corrected " + tag}}
        sys.stdout.write(json.dumps(rec, separators=(",", ":")) + "\n")


def new(count, tag):
    for i in range(count):
        rec = {"id": "n-%s-%07d" % (tag, i), "type": "receipt",
               "data": {"amount": i % 10000, "currency": "EUR", "note": "groceries, corner shop, visit %d" % i}}
        sys.stdout.write(json.dumps(rec, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    if sys.argv[1] == "library":
        library(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]))
    elif sys.argv[1] == "edits":
        edits(int(sys.argv[2]), sys.argv[3] if len(sys.argv) > 3 else str(time.time()))
    elif sys.argv[1] == "new":
        new(int(sys.argv[2]), sys.argv[3])
    else:
        sys.exit("unknown command " + sys.argv[1])
