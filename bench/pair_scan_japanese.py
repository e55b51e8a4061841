"""Japanese codes photographed: pair-scan against zbarimg (the anchor) and
zxing-cpp on codes made by qrencode from Shift_JIS input (-8: all in 8-bit
mode; -k: kanji mode for the double-byte characters), half-width katakana
alone, MECARD and vCard with their backslash escapes, URLs with a tilde,
kanji beside byte segments, rendered as photos (perspective, blur, glare,
JPEG) and turned by 0, 90, 180 and 270 degrees. Counts exact reads, wrong
texts and misses separately, and time per image against zbarimg's; exits 1
if pair-scan gives any wrong text.

    python pair_scan_japanese.py OUT_DIR PAIR_SCAN [ZBARIMG] [SEED]

pair-scan runs with --json and a code it marks "certain": false counts as
flagged (what --raw leaves out), not as a read.
"""
import json
import os
import random
import subprocess
import sys
import time

import cv2
import numpy as np
import zxingcpp
from PIL import Image

import pair_scan_corpus as photo

TEXTS = [
    "ﾃﾞｻﾞｲﾝ",
    "ｶﾀｶﾅ ﾃｷｽﾄ ｺｰﾄﾞ",
    "QRｺｰﾄﾞ 2024",
    r"MECARD:N:山田,太郎;SOUND:ﾔﾏﾀﾞ,ﾀﾛｳ;TEL:0312345678;URL:http\://example.jp/~yamada/;NOTE:会議室\;3F;;",
    "BEGIN:VCARD\r\nVERSION:3.0\r\nN:山田;太郎;;;\r\nORG:株式会社ｻﾝﾌﾟﾙ\\, 東京支店\r\nNOTE:月曜\\n休み ~ 予約制\r\nEND:VCARD",
    "［外側ＱＲコード］*ﾀﾞﾌﾞﾙQR*",
    "ソフト表示能力 C:\\ﾃﾞｰﾀ ~",
    "http://example.jp/~tanaka/ｶﾀﾛｸﾞ.html",
    "ﾁｹｯﾄ:東京駅 20261202",
    "日本語のテキスト",
]
FLAGS = ["-8", "-k"]
KINDS = ["perspective", "blur", "glare", "jpeg"]
ORIENTATIONS = {"0": None, "90": cv2.ROTATE_90_CLOCKWISE, "180": cv2.ROTATE_180, "270": cv2.ROTATE_90_COUNTERCLOCKWISE}


def qrencode(text, flag, path):
    """The code as qrencode draws it from the text's Shift_JIS bytes, 8 px a module."""
    subprocess.run(["qrencode", flag, "-s", "8", "-m", "4", "-o", path], input=text.encode("cp932"), check=True)
    img = cv2.imread(path, cv2.IMREAD_GRAYSCALE)
    return np.where(img < 128, 0, 255).astype(np.uint8)


def render(code, kind, rng, nprng):
    """The code photographed, with one distortion strong and camera noise."""
    module = rng.uniform(3.0, 5.0)
    code = cv2.resize(code, None, fx=module / 8, fy=module / 8, interpolation=cv2.INTER_AREA)
    w, h = rng.choice([(800, 600), (1024, 768)])
    canvas = photo.scene(w, h, rng, nprng, rng.random() < 0.3)
    angle = rng.uniform(-10, 10)
    persp = rng.uniform(0.08, 0.18) if kind == "perspective" else rng.uniform(0, 0.03)
    _, ink, mask = photo.place(canvas, code, rng, angle, persp)
    paper, dark = rng.uniform(215, 250), rng.uniform(10, 50)
    codeimg = (paper - (paper - dark) * ink)[..., None] * nprng.uniform(0.85, 1.0, 3).astype(np.float32)
    img = canvas * (1 - mask[..., None]) + codeimg * mask[..., None]
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    if kind == "glare":
        gx, gy = rng.uniform(0.35, 0.65) * w, rng.uniform(0.35, 0.65) * h
        r = rng.uniform(0.06, 0.14) * min(w, h)
        img += (rng.uniform(110, 190) * np.exp(-((xx - gx) ** 2 + (yy - gy) ** 2) / (2 * r * r)))[..., None]
    img = cv2.GaussianBlur(img, (0, 0), rng.uniform(0.35, 0.6) * module if kind == "blur" else 0.6)
    img += nprng.normal(0, 2.5, img.shape).astype(np.float32)
    img = np.clip(img, 0, 255).astype(np.uint8)[..., ::-1]
    q = rng.randrange(35, 70) if kind == "jpeg" else 90
    ok, data = cv2.imencode(".jpg", img, [cv2.IMWRITE_JPEG_QUALITY, q])
    assert ok
    return bytes(data)


def make_corpus(out, seed):
    os.makedirs(out, exist_ok=True)
    rng = random.Random(seed)
    nprng = np.random.default_rng(seed)
    rows = []
    for t, text in enumerate(TEXTS):
        for flag in FLAGS:
            code = qrencode(text, flag, os.path.join(out, "code.png"))
            for kind in KINDS:
                data = render(code, kind, rng, nprng)
                for o, turn in ORIENTATIONS.items():
                    name = "%02d%s-%s-%s.jpg" % (t, flag, kind, o)
                    if turn is None:
                        with open(os.path.join(out, name), "wb") as f:
                            f.write(data)
                    else:
                        img = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)
                        # Turned exactly and stored losslessly: the turn adds no second compression.
                        name = name[:-4] + ".png"
                        cv2.imwrite(os.path.join(out, name), cv2.rotate(img, turn))
                    rows.append({"file": name, "text": text, "flag": flag, "kind": kind, "orientation": o})
    os.remove(os.path.join(out, "code.png"))
    with open(os.path.join(out, "manifest.jsonl"), "w") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")


def run_pair_scan(binary, path):
    t = time.perf_counter()
    p = subprocess.run([binary, "--json", "--quiet", path], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=120)
    dt = time.perf_counter() - t
    codes = [json.loads(l) for l in p.stdout.decode("utf-8").split("\n") if l]
    return dt, [c["text"] for c in codes if c["certain"]], sum(1 for c in codes if not c["certain"])


def run_zbarimg(binary, path):
    t = time.perf_counter()
    p = subprocess.run([binary, "--raw", "-q", "-Sdisable", "-Sqrcode.enable", path], stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL, timeout=120)
    dt = time.perf_counter() - t
    # One code an image: all of its output (a vCard's lines too) is its text.
    out = p.stdout.decode("utf-8", "replace")
    return dt, [out[:-1]] if out else [], 0


def run_zxing(path):
    t = time.perf_counter()
    img = Image.open(path)
    img.load()
    res = zxingcpp.read_barcodes(img, formats=zxingcpp.BarcodeFormat.QRCode)
    return time.perf_counter() - t, [r.text for r in res if r.valid], 0


def main():
    out, pair_scan = sys.argv[1], sys.argv[2]
    zbarimg = sys.argv[3] if len(sys.argv) > 3 else "zbarimg"
    seed = int(sys.argv[4]) if len(sys.argv) > 4 else 20261202
    if not os.path.exists(os.path.join(out, "manifest.jsonl")):
        make_corpus(out, seed)
    rows = [json.loads(l) for l in open(os.path.join(out, "manifest.jsonl"), encoding="utf-8") if l.strip()]
    decoders = {
        "pair-scan": lambda p: run_pair_scan(pair_scan, p),
        "zbarimg": lambda p: run_zbarimg(zbarimg, p),
        "zxing-cpp": run_zxing,
    }
    stats = {k: {"ok": 0, "wrong": 0, "miss": 0, "flagged": 0, "time": 0.0, "rot": {}, "kind": {}} for k in decoders}
    for r in rows:
        path = os.path.join(out, r["file"])
        for k, fn in decoders.items():
            dt, texts, flagged = fn(path)
            s = stats[k]
            s["time"] += dt
            s["flagged"] += flagged
            ok = r["text"] in texts
            wrong = [t for t in texts if t != r["text"]]
            s["ok"] += ok
            s["wrong"] += bool(wrong)
            s["miss"] += not ok and not wrong
            if wrong:
                print("  %s: wrong text from %s: %r (expected %r)" % (r["file"], k, wrong, r["text"]))
            for key, v in (("rot", r["orientation"]), ("kind", r["kind"] + " " + r["flag"])):
                c = s[key].setdefault(v, [0, 0])
                c[0] += ok
                c[1] += 1
    n = len(rows)
    anchor = stats["zbarimg"]
    print("Japanese codes photographed: %d images (%d texts x qrencode %s x %s x 4 orientations)" % (n, len(TEXTS), "/".join(FLAGS), "/".join(KINDS)))
    print("%-10s %8s %6s %6s %8s %10s %10s" % ("decoder", "exact", "wrong", "miss", "flagged", "ms/image", "time/zbar"))
    for k, s in stats.items():
        print("%-10s %7.1f%% %6d %6d %8d %10.1f %9.2fx" % (k, 100 * s["ok"] / n, s["wrong"], s["miss"], s["flagged"],
                                                        1000 * s["time"] / n, s["time"] / anchor["time"]))
    for key, title in (("rot", "exact by orientation:"), ("kind", "exact by distortion and qrencode mode:")):
        print(title)
        print("%-18s" % "" + "".join("%11s" % k for k in decoders))
        for v in sorted(stats["pair-scan"][key]):
            print("%-18s%s" % (v, "".join("%6d/%-4d" % tuple(stats[k][key][v]) for k in decoders)))
    print("pair-scan wrong texts: %d (target 0)" % stats["pair-scan"]["wrong"])
    if stats["pair-scan"]["wrong"]:
        sys.exit(1)


if __name__ == "__main__":
    main()
