"""Runs pair-scan --raw, zbarimg --raw and zxing-cpp over the same corpus,
upright, turned by 90, 180 and 270 degrees and mirrored, and prints decode
rate (per orientation and per distortion), wrong texts and time per image,
with ratios against zbarimg (the anchor) measured in the same run.

    python pair_scan_bench.py CORPUS_DIR PAIR_SCAN [ZBARIMG]

PAIR_SCAN_ROTATIONS (default "0 90 180 270 mirror") picks the orientations
("mirror": the upright image flipped left to right) and
PAIR_SCAN_LIMIT (default all) the first N images, for quick runs.
"""
import os
import subprocess
import sys
import time

import zxingcpp
from PIL import Image

DECODERS = ["pair-scan", "zbarimg", "zxing-cpp"]


def run_tool(argv, path):
    t = time.perf_counter()
    p = subprocess.run(argv + [path], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=120)
    return time.perf_counter() - t, [l for l in p.stdout.decode("utf-8", "replace").split("\n") if l]


def run_zxing(path):
    t = time.perf_counter()
    img = Image.open(path)
    img.load()
    res = zxingcpp.read_barcodes(img, formats=zxingcpp.BarcodeFormat.QRCode)
    return time.perf_counter() - t, [r.text for r in res if r.valid]


def label(orientation):
    return "mirror" if orientation == "mirror" else "%s°" % orientation


def rotated_corpus(corpus, rows, orientation):
    """The corpus turned clockwise by `orientation` degrees (or mirrored),
    made once next to it. Quarter turns and the mirror are exact (no
    resampling); JPEGs are stored as PNG so the turn adds no second
    compression."""
    if orientation == "0":
        return corpus, [(n, t) for n, t in rows]
    out = "%s-%s" % (corpus, "mirror" if orientation == "mirror" else "rot" + orientation)
    os.makedirs(out, exist_ok=True)
    turn = {"90": Image.Transpose.ROTATE_270, "180": Image.Transpose.ROTATE_180, "270": Image.Transpose.ROTATE_90,
            "mirror": Image.Transpose.FLIP_LEFT_RIGHT}[orientation]
    moved = []
    for name, text in rows:
        target = name.rsplit(".", 1)[0] + ".png"
        path = os.path.join(out, target)
        if not os.path.exists(path):
            Image.open(os.path.join(corpus, name)).transpose(turn).save(path)
        moved.append((target, text))
    return out, moved


def kinds_of(name):
    return name.split("-", 1)[1].rsplit(".", 1)[0].split("-q")[0].split("+")


def main():
    corpus, pair_scan = sys.argv[1], sys.argv[2]
    zbarimg = sys.argv[3] if len(sys.argv) > 3 else "zbarimg"
    orientations = os.environ.get("PAIR_SCAN_ROTATIONS", "0 90 180 270 mirror").split()
    for r in orientations:
        if r not in ("0", "90", "180", "270", "mirror"):
            sys.exit("PAIR_SCAN_ROTATIONS: %r is not 0, 90, 180, 270 or mirror" % r)
    limit = int(os.environ.get("PAIR_SCAN_LIMIT", "0"))
    rows = [l.rstrip("\n").split("\t") for l in open(os.path.join(corpus, "manifest.tsv")) if l.strip()]
    if limit:
        rows = rows[:limit]
    decoders = {
        "pair-scan": lambda p: run_tool([pair_scan, "--raw", "--quiet"], p),
        "zbarimg": lambda p: run_tool([zbarimg, "--raw", "-q", "-Sdisable", "-Sqrcode.enable"], p),
        "zxing-cpp": run_zxing,
    }
    stats = {k: {"ok": 0, "wrong": 0, "time": 0.0, "kinds": {}, "rot": {}} for k in decoders}
    for orientation in orientations:
        where, images = rotated_corpus(corpus, rows, orientation)
        for name, expected in images:
            path = os.path.join(where, name)
            for k, fn in decoders.items():
                dt, texts = fn(path)
                s = stats[k]
                s["time"] += dt
                ok = expected in texts
                wrong = any(t != expected for t in texts)
                s["ok"] += ok
                s["wrong"] += wrong
                if wrong:
                    print("  %s (%s): wrong text from %s: %r" % (name, label(orientation), k, texts))
                r = s["rot"].setdefault(orientation, [0, 0])
                r[0] += ok
                r[1] += 1
                for kind in kinds_of(name):
                    d = s["kinds"].setdefault(kind, [0, 0])
                    d[0] += ok
                    d[1] += 1
    n = len(rows) * len(orientations)
    anchor = stats["zbarimg"]
    print("pair-scan corpus: %d images x %d orientations (%s)" % (len(rows), len(orientations), corpus))
    print("%-10s %8s %7s %12s %10s" % ("decoder", "rate", "wrong", "ms/image", "time/zbar"))
    for k, s in stats.items():
        print("%-10s %7.1f%% %7d %12.1f %9.2fx" % (k, 100 * s["ok"] / n, s["wrong"], 1000 * s["time"] / n,
                                                 s["time"] / anchor["time"]))
    print("rate by orientation:")
    print("%-13s" % "" + "".join("%11s" % k for k in decoders))
    for orientation in orientations:
        print("%-13s%s" % (label(orientation), "".join("%6d/%-4d" % tuple(stats[k]["rot"][orientation]) for k in decoders)))
    print("rate by distortion (images with it, all orientations):")
    print("%-13s" % "" + "".join("%11s" % k for k in decoders))
    for kind in sorted(stats["pair-scan"]["kinds"]):
        print("%-13s%s" % (kind, "".join("%6d/%-4d" % tuple(stats[k]["kinds"][kind]) for k in decoders)))
    ps, zx = stats["pair-scan"], stats["zxing-cpp"]
    print("pair-scan rate - zbarimg rate: %+.1f points (target >= +10)" % (100 * (ps["ok"] - anchor["ok"]) / n))
    print("pair-scan rate - zxing-cpp rate: %+.1f points (target > 0 at every orientation)" % (100 * (ps["ok"] - zx["ok"]) / n))
    for orientation in orientations:
        a, b = ps["rot"][orientation][0], zx["rot"][orientation][0]
        print("  %-7s pair-scan %d, zxing-cpp %d (%+d)" % (label(orientation) + ":", a, b, a - b))
    print("pair-scan time per image / zbarimg's: %.2fx (target <= 1.5)" % (ps["time"] / anchor["time"]))
    print("pair-scan wrong texts: %d (target 0)" % ps["wrong"])


if __name__ == "__main__":
    main()
