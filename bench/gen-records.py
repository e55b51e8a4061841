#!/usr/bin/env python3
"""Writes realistic family-sync records as NDJSON, fast and reproducibly.

Receipts with Unicode merchants and notes, nested line items, 0-2 photo
hashes, ~5% tombstones and a few unknown fields, about 300 bytes a line.

    gen-records.py --count N --first K [--seed S] [--devices D] [--tombstones F]
                   [--old-tombstones F --now TIME] [--small]

Ids are a fixed function of the integer k in [first, first+count), so two
runs over overlapping ranges produce competing versions of the same ids.
"""
import argparse, random, sys, hashlib

MERCHANTS = ["Café Müller", "Bäckerei Groß", "Łódź Market", "東京ストア", "Épicerie Noël", "Ωmega Pharmacy",
             "Señor Taco 🌮", "Smørrebrød Hus", "Crème & Co", "Žabka", "İstanbul Kebap", "Corner Shop",
             "Supermarché Lé", "Pizzeria Già", "北京饭店", "Ünal Market"]
ITEMS = ["Milch", "Brot", "Äpfel", "café au lait", "寿司", "tomatoes", "Käse", "pâté", "jalapeño", "water 💧",
         "crème brûlée", "tea", "rice 米", "olive oil", "Brötchen", "soap"]
NOTES = ["", "", "Geschäftsessen", "pour l'anniversaire 🎂", "split with Zoë", "返品可", '\\"quoted\\" note',
         "tab\\there", "weekly shop", "💳 card ending 42"]
CURRENCIES = ["EUR", "USD", "GBP", "JPY", "CHF"]


def rid(k):
    x = (k * 0x9E3779B97F4A7C15F39CC0605CEDC835 + 0x632BE59BD9B4E019) & ((1 << 128) - 1)
    h = "%032x" % x
    return "%s-%s-4%s-a%s-%s" % (h[0:8], h[8:12], h[13:16], h[17:20], h[20:32])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--count", type=int, required=True)
    ap.add_argument("--first", type=int, default=0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--devices", type=int, default=3)
    ap.add_argument("--tombstones", type=float, default=0.05)
    ap.add_argument("--old-tombstones", type=float, default=0.0,
                    help="this fraction becomes tombstones deleted a year before --now")
    ap.add_argument("--now", type=int, default=1796040000, help="seconds since the epoch")
    ap.add_argument("--small", action="store_true", help="short records (no items, no notes)")
    a = ap.parse_args()
    rnd = random.Random(a.seed)
    devs = ["%08X-%04X-4%03X-8%03X-%012X" % (rnd.getrandbits(32), rnd.getrandbits(16), rnd.getrandbits(12),
                                              rnd.getrandbits(12), rnd.getrandbits(48)) for _ in range(a.devices)]
    hashes = [hashlib.sha256(str(i).encode()).hexdigest() for i in range(4096)]
    out = sys.stdout
    buf = []
    base = a.now - 200 * 86400
    for k in range(a.first, a.first + a.count):
        r = rnd.random()
        dev = devs[rnd.randrange(len(devs))]
        if r < a.old_tombstones:
            t = a.now - 365 * 86400 + rnd.randrange(86400 * 30)
            ms = rnd.randrange(1000)
            buf.append('{"id":"%s","type":"receipt","modifiedAt":"%s.%03dZ","deviceId":"%s","deleted":true}\n'
                       % (rid(k), iso(t), ms, dev))
        else:
            t = base + rnd.randrange(190 * 86400)
            ms = rnd.randrange(1000)
            if rnd.random() < a.tombstones:
                buf.append('{"id":"%s","type":"receipt","modifiedAt":"%s.%03dZ","deviceId":"%s","deleted":true}\n'
                           % (rid(k), iso(t), ms, dev))
            elif a.small:
                buf.append('{"id":"%s","type":"receipt","modifiedAt":"%s.%03dZ","deviceId":"%s","deleted":false,"data":{"total":"%d.%02d"}}\n'
                           % (rid(k), iso(t), ms, dev, rnd.randrange(500), rnd.randrange(100)))
            else:
                n = 1 + (rnd.random() < 0.1)
                items = ",".join('{"name":"%s","qty":%d,"price":%d.%02d}' % (ITEMS[rnd.randrange(len(ITEMS))], 1 + rnd.randrange(4),
                                                                           rnd.randrange(60), rnd.randrange(100)) for _ in range(n))
                ph = (0, 0, 0, 1, 1, 1)[rnd.randrange(6)]
                photos = ",".join('"%s"' % hashes[rnd.randrange(len(hashes))] for _ in range(ph))
                extra = ',"tags":["food","family"]' if rnd.random() < 0.2 else ""
                buf.append('{"id":"%s","type":"receipt","modifiedAt":"%s.%03dZ","deviceId":"%s","deleted":false,'
                           '"data":{"merchant":"%s","total":"%d.%02d","items":[%s],"note":"%s"},"photos":[%s]%s}\n'
                           % (rid(k), iso(t), ms, dev, MERCHANTS[rnd.randrange(len(MERCHANTS))], rnd.randrange(500),
                              rnd.randrange(100), items, NOTES[rnd.randrange(len(NOTES))],
                              photos, extra))
        if len(buf) >= 10000:
            out.write("".join(buf))
            buf = []
    out.write("".join(buf))


_days_cache = {}


def iso(t):
    d, s = divmod(t, 86400)
    ymd = _days_cache.get(d)
    if ymd is None:
        import datetime
        ymd = _days_cache[d] = (datetime.date(1970, 1, 1) + datetime.timedelta(days=d)).isoformat()
    return "%sT%02d:%02d:%02d" % (ymd, s // 3600, s // 60 % 60, s % 60)


if __name__ == "__main__":
    main()
