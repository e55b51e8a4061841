"""Runs pair-scan --raw, zbarimg --raw and zxing-cpp over the same corpus and
prints decode rate, wrong texts and time per image, with ratios against
zbarimg (the anchor) measured in the same run.

    python pair_scan_bench.py CORPUS_DIR PAIR_SCAN [ZBARIMG]
"""
import os
import subprocess
import sys
import time

import zxingcpp
from PIL import Image


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


def main():
    corpus, pair_scan = sys.argv[1], sys.argv[2]
    zbarimg = sys.argv[3] if len(sys.argv) > 3 else "zbarimg"
    rows = [l.rstrip("\n").split("\t") for l in open(os.path.join(corpus, "manifest.tsv")) if l.strip()]
    decoders = {
        "pair-scan": lambda p: run_tool([pair_scan, "--raw", "--quiet"], p),
        "zbarimg": lambda p: run_tool([zbarimg, "--raw", "-q", "-Sdisable", "-Sqrcode.enable"], p),
        "zxing-cpp": run_zxing,
    }
    stats = {k: {"ok": 0, "wrong": 0, "time": 0.0, "kinds": {}} for k in decoders}
    for name, expected in rows:
        path = os.path.join(corpus, name)
        kinds = name.split("-", 1)[1].rsplit(".", 1)[0].split("-q")[0].split("+")
        for k, fn in decoders.items():
            dt, texts = fn(path)
            s = stats[k]
            s["time"] += dt
            ok = expected in texts
            wrong = any(t != expected for t in texts)
            s["ok"] += ok
            s["wrong"] += wrong
            if wrong:
                print("  %s: wrong text from %s: %r" % (name, k, texts))
            for kind in kinds:
                d = s["kinds"].setdefault(kind, [0, 0])
                d[0] += ok
                d[1] += 1
    n = len(rows)
    anchor = stats["zbarimg"]
    print("pair-scan corpus: %d images (%s)" % (n, corpus))
    print("%-10s %8s %7s %12s %10s" % ("decoder", "rate", "wrong", "ms/image", "time/zbar"))
    for k, s in stats.items():
        print("%-10s %7.1f%% %7d %12.1f %9.2fx" % (k, 100 * s["ok"] / n, s["wrong"], 1000 * s["time"] / n,
                                                 s["time"] / anchor["time"]))
    kinds = sorted(stats["pair-scan"]["kinds"])
    print("rate by distortion (images with it):")
    print("%-13s" % "" + "".join("%11s" % k for k in decoders))
    for kind in kinds:
        cells = ""
        for k in decoders:
            ok, tot = stats[k]["kinds"][kind]
            cells += "%6d/%-4d" % (ok, tot)
        print("%-13s%s" % (kind, cells))
    ps, zx = stats["pair-scan"], stats["zxing-cpp"]
    print("pair-scan rate - zbarimg rate: %+.1f points (target >= +10)" % (100 * (ps["ok"] - anchor["ok"]) / n))
    print("pair-scan rate - zxing-cpp rate: %+.1f points (target >= 0)" % (100 * (ps["ok"] - zx["ok"]) / n))
    print("pair-scan time per image / zbarimg's: %.2fx (target <= 2)" % (ps["time"] / anchor["time"]))
    print("pair-scan wrong texts: %d (target 0)" % ps["wrong"])


if __name__ == "__main__":
    main()
