"""Seeded distortion corpus for the pair-scan benchmark.

Every image holds one pairing-offer QR code (the FS1 text pair-qr makes) in
a photo-like setting: rotation, blur, noise, perspective, inversion, low
contrast, glare, light gradients, downscaling, cluttered scenes, and JPEG at
quality 35-80. The same seed always gives the same images; manifest.tsv
lists each file with the text its code holds.

    python pair_scan_corpus.py OUT_DIR [COUNT] [SEED]
"""
import os
import random
import string
import sys
import uuid

import cv2
import numpy as np
import segno

KINDS = ["rotation", "blur", "noise", "perspective", "inversion", "low-contrast",
         "glare", "gradient", "downscale", "clutter", "jpeg"]
BASE32 = string.ascii_uppercase + "234567"


def offer_text(rng):
    family = str(uuid.UUID(int=rng.getrandbits(128), version=4)).upper()
    nonce = "".join(rng.choice(BASE32) for _ in range(32))
    expires = 1_790_000_000 + rng.randrange(10_000_000)
    addr = rng.choice(["", "192.168.1.%d:7433" % rng.randrange(2, 250), "OWNER-IPAD.LOCAL:7433"])
    return "FS1/%s/%s/%d/%s" % (family, nonce, expires, addr.upper())


def code_image(text, level, module, rng):
    """The code drawn black on white with a 4-module quiet zone, `module` px a module."""
    qr = segno.make_qr(text, error=level, mode="alphanumeric", boost_error=False)
    m = np.array([list(row) for row in qr.matrix], dtype=np.uint8)
    m = np.pad(m, 4)
    img = np.where(m == 1, 0, 255).astype(np.uint8)
    return cv2.resize(img, None, fx=module, fy=module, interpolation=cv2.INTER_NEAREST)


def scene(w, h, rng, nprng, cluttered):
    if not cluttered:
        base = nprng.integers(170, 235)
        img = np.full((h, w, 3), base, np.float32)
        img += nprng.normal(0, 3, (h, w, 1)).astype(np.float32)
        return img
    img = np.zeros((h, w, 3), np.uint8)
    img[:] = nprng.integers(40, 220, 3)
    for _ in range(rng.randrange(25, 60)):
        colour = tuple(int(c) for c in nprng.integers(0, 256, 3))
        kind = rng.random()
        x, y = rng.randrange(w), rng.randrange(h)
        if kind < 0.35:
            cv2.rectangle(img, (x, y), (x + rng.randrange(10, w // 3), y + rng.randrange(10, h // 3)), colour, -1)
        elif kind < 0.6:
            cv2.circle(img, (x, y), rng.randrange(5, min(w, h) // 5), colour, -1)
        elif kind < 0.8:
            cv2.line(img, (x, y), (rng.randrange(w), rng.randrange(h)), colour, rng.randrange(1, 6))
        else:
            word = "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(rng.randrange(3, 12)))
            cv2.putText(img, word, (x, y), cv2.FONT_HERSHEY_SIMPLEX, rng.uniform(0.5, 2.5), colour, rng.randrange(1, 4))
    # A checkerboard patch: finder-pattern-like clutter.
    if rng.random() < 0.5:
        cs = rng.randrange(4, 12)
        x0, y0 = rng.randrange(w // 2), rng.randrange(h // 2)
        for i in range(8):
            for j in range(8):
                if (i + j) % 2 == 0:
                    cv2.rectangle(img, (x0 + i * cs, y0 + j * cs), (x0 + (i + 1) * cs, y0 + (j + 1) * cs), (0, 0, 0), -1)
    return img.astype(np.float32)


def place(canvas, code, rng, angle, persp):
    """Pastes the code (gray, 0 ink / 255 paper) onto the canvas with a
    rotation and a perspective jitter; returns the canvas and the code mask."""
    h, w = canvas.shape[:2]
    ch, cw = code.shape
    cx, cy = rng.uniform(0.35, 0.65) * w, rng.uniform(0.35, 0.65) * h
    src = np.float32([[0, 0], [cw, 0], [cw, ch], [0, ch]])
    a = np.deg2rad(angle)
    rot = np.array([[np.cos(a), -np.sin(a)], [np.sin(a), np.cos(a)]])
    dst = (src - [cw / 2, ch / 2]) @ rot.T + [cx, cy]
    dst += np.array([[rng.uniform(-1, 1), rng.uniform(-1, 1)] for _ in range(4)]) * persp * cw
    M = cv2.getPerspectiveTransform(src, dst.astype(np.float32))
    ink = cv2.warpPerspective(255 - code, M, (w, h), flags=cv2.INTER_LINEAR, borderValue=0).astype(np.float32) / 255
    mask = cv2.warpPerspective(np.full_like(code, 255), M, (w, h), flags=cv2.INTER_LINEAR, borderValue=0).astype(np.float32) / 255
    return M, ink, mask


def make(i, rng, nprng):
    text = offer_text(rng)
    level = rng.choice(["L", "M", "M", "Q", "H"])
    kinds = [KINDS[i % len(KINDS)]]
    kinds += rng.sample(KINDS, rng.choice([0, 1, 1, 2]))
    big = "downscale" in kinds or rng.random() < 0.25
    w, h = (rng.choice([(1600, 1200), (2000, 1500)]) if big else rng.choice([(640, 480), (800, 600), (1024, 768)]))
    module = rng.uniform(2.2, 4.0) if "downscale" in kinds else rng.uniform(3.0, 7.0)
    code = code_image(text, level, 8, rng)
    scale = module / 8
    code = cv2.resize(code, None, fx=scale, fy=scale, interpolation=cv2.INTER_AREA)
    canvas = scene(w, h, rng, nprng, "clutter" in kinds or rng.random() < 0.3)
    angle = rng.uniform(-180, 180) if "rotation" in kinds else rng.uniform(-8, 8)
    persp = rng.uniform(0.08, 0.22) if "perspective" in kinds else rng.uniform(0, 0.03)
    _, ink, mask = place(canvas, code, rng, angle, persp)

    paper, dark = rng.uniform(215, 250), rng.uniform(10, 50)
    if "low-contrast" in kinds:
        mid = rng.uniform(90, 170)
        spread = rng.uniform(18, 40)
        paper, dark = mid + spread / 2, mid - spread / 2
    if "inversion" in kinds:
        paper, dark = 255 - paper, 255 - dark
    tint = nprng.uniform(0.85, 1.0, 3).astype(np.float32)
    codeimg = (paper - (paper - dark) * ink)[..., None] * tint
    img = canvas * (1 - mask[..., None]) + codeimg * mask[..., None]

    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    if "gradient" in kinds:
        gx, gy = rng.uniform(-1, 1), rng.uniform(-1, 1)
        g = (xx / w - 0.5) * gx + (yy / h - 0.5) * gy
        img *= (1 + rng.uniform(0.8, 1.4) * g)[..., None]
        img += rng.uniform(-20, 20)
    if "glare" in kinds:
        gx, gy = rng.uniform(0.3, 0.7) * w, rng.uniform(0.3, 0.7) * h
        r = rng.uniform(0.06, 0.18) * min(w, h)
        blob = np.exp(-((xx - gx) ** 2 + (yy - gy) ** 2) / (2 * r * r))
        img += (rng.uniform(120, 220) * blob)[..., None]
    if "blur" in kinds:
        sigma = rng.uniform(0.35, 0.75) * module
        img = cv2.GaussianBlur(img, (0, 0), sigma)
    else:
        img = cv2.GaussianBlur(img, (0, 0), 0.6)
    if "noise" in kinds:
        img += nprng.normal(0, rng.uniform(12, 30), img.shape).astype(np.float32)
    else:
        img += nprng.normal(0, 2.5, img.shape).astype(np.float32)
    img = np.clip(img, 0, 255).astype(np.uint8)
    if "downscale" in kinds:
        f = rng.uniform(0.5, 0.7)
        img = cv2.resize(img, None, fx=f, fy=f, interpolation=cv2.INTER_AREA)
    bgr = img[..., ::-1]
    if "jpeg" in kinds or rng.random() < 0.5:
        q = rng.randrange(35, 81)
        name = "%03d-%s-q%d.jpg" % (i, "+".join(kinds), q)
        ok, data = cv2.imencode(".jpg", bgr, [cv2.IMWRITE_JPEG_QUALITY, q])
    else:
        name = "%03d-%s.png" % (i, "+".join(kinds))
        ok, data = cv2.imencode(".png", bgr)
    assert ok
    return name, bytes(data), text


def main():
    out = sys.argv[1]
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 220
    seed = int(sys.argv[3]) if len(sys.argv) > 3 else 20261130
    os.makedirs(out, exist_ok=True)
    rng = random.Random(seed)
    nprng = np.random.default_rng(seed)
    rows = []
    for i in range(count):
        name, data, text = make(i, rng, nprng)
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
        rows.append("%s\t%s\n" % (name, text))
    with open(os.path.join(out, "manifest.tsv"), "w") as f:
        f.writelines(rows)


if __name__ == "__main__":
    main()
