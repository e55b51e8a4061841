#!/usr/bin/env python3
# Writes the seed corpora in Fuzzing/Corpus/ from the test vectors and hand-made
# examples of every format (run from anywhere; the output is checked in).
# Sources: Tests/FamilySyncTests/Vectors (see its README), the record, offer and
# message examples of the unit tests, and images built here byte by byte.
import os, json, struct, base64, zlib, glob
R = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
C = R + '/Fuzzing/Corpus'
def put(t, name, data):
    os.makedirs(f'{C}/{t}', exist_ok=True)
    if isinstance(data, str): data = data.encode()
    open(f'{C}/{t}/{name}', 'wb').write(data)

V = R + '/Tests/FamilySyncTests/Vectors'
FAM = "0F6B8E52-8B0C-4B5E-9D59-2B7D1B0E7E11"
DEV = "6B3C1A2E-4D5F-4A6B-8C7D-9E0F1A2B3C4D"
NONCE = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
recs = [
 '{"id":"r-1","type":"receipt","modifiedAt":"2026-11-30T10:00:00.000Z","deviceId":"D1","deleted":false}',
 '{ "type":"receipt", "id":"r-1" ,"x":[1,2.5e3,-0.1,{"k":null}],"modifiedAt":"2026-11-30T10:00:00.000Z","deviceId":"D1","deleted":false,"data":{"a":"\u00fc\\n\\u00e9"},"photos":[]}',
 '{ "zzz":{"n":1.50E+3,"s":"\\u00e9"} , "deleted":false,"deviceId":"D1","modifiedAt":"2026-11-30T10:00:00.001Z","type":"receipt","id":"r" }',
 '{"id":"\\u00e9","type":"receipt","modifiedAt":"2026-11-30T10:00:00Z","deviceId":"D1","deleted":true}',
 '{"id":"p","type":"receipt","modifiedAt":"2026-11-30T10:00:00.5+02:00","deviceId":"D2","deleted":false,"photos":["' + 'ab'*32 + '","' + '0f'*32 + '"]}',
 '{"id":"e","type":"budget","amount":12.5}',
 '{"id":"s\\ud83d\\ude00","type":"t","modifiedAt":"1999-12-31T23:59:59.999Z","deviceId":"\\u0044","deleted":false,"nested":[[[{}]]]}',
]
for i, r in enumerate(recs): put('record-line', f'seed-{i}', r)
put('record-merge', 'seed-0', '\n'.join(recs[:3]) + '\n\0' + '\n'.join(recs[3:]) + '\n')
put('record-merge', 'seed-1', recs[0] + '\r\n\n  \n' + recs[4] + '\0' + recs[0].replace('10:00:00.000', '10:00:00.001') + '\n')

def seg(b): return base64.urlsafe_b64encode(b).rstrip(b'=')
jws = {os.path.basename(p)[:-4]: open(p,'rb').read().strip() for p in glob.glob(V + '/apple-test/*.jws')}
for n, t in jws.items():
    put('jws', n, t)
    h, p, s = t.split(b'.')
    put('jws-header', n, h)
    put('jws-payload', n, p)
    put('json', 'jws-' + n, base64.urlsafe_b64decode(p + b'=' * (-len(p) % 4)))
    put('json', 'jwsheader-' + n, base64.urlsafe_b64decode(h + b'=' * (-len(h) % 4)))
    put('base64url', n, p[:400])
    for kind in range(3):
        put('proof-verifier', f'{n}-{kind}', bytes([kind | 0x40]) + t)
put('base64url', 'std', base64.b64encode(b'\xff\xfe hello world \x00\x01'))
put('base64url', 'pad', 'YQ==')

hello = {"protocol":1,"device":DEV,"family":FAM,"role":"member","clock":"2026-11-30T10:00:00.000Z","epoch":3,"after":17,"software":"0.9.0"}
family = {"owner":DEV,"epoch":2,"maxDevices":6,"devices":[{"device":DEV,"role":"owner","joinedAt":"2026-11-01T08:00:00.000Z","revokedAt":None},{"device":FAM,"role":"member","joinedAt":"2026-11-02T08:00:00Z","revokedAt":"2026-11-03T08:00:00Z"}],"proof":None,"policy":{"bundleId":"com.example","products":["p1"],"allowSandbox":True},"familyKey":"11"*32}
refused = {"reason":"unknown-key","message":"this device holds no key for the identity offered","hint":"00"*44}
busy = {"reason":"busy","message":"busy","retryAfterMs":250}
join = {"protocol":1,"device":DEV,"clock":"2026-11-30T10:00:00.000Z","software":"0.9.0"}
welcome = {"family":FAM,"owner":DEV,"epoch":1,"familyKey":"22"*32,"deviceKey":"33"*32}
done = {"records":{"sent":1,"received":2,"applied":1},"photos":{"sent":0,"received":0,"unavailable":0},"digest":"ab"*32,"upTo":5}
preq = {"photos":["ab"*32,"cd"*32]}
punav = {"photo":"ab"*32}
err = {"message":"store is busy"}
rend = {"count":2}
msgs = [(0x01,hello),(0x02,family),(0x03,refused),(0x04,busy),(0x05,join),(0x06,welcome),(0x11,rend),(0x20,preq),(0x22,punav),(0x30,done),(0x31,{}),(0x3F,err)]
types = [0x01,0x02,0x03,0x04,0x05,0x06,0x10,0x11,0x20,0x21,0x22,0x30,0x31,0x3F]
def frame(t, payload): return struct.pack('>IB', len(payload), t) + payload
allframes = b''
for t, m in msgs:
    pl = json.dumps(m, separators=(',',':')).encode()
    put('message', f'type-{t:02x}', bytes([types.index(t)]) + pl)
    put('json', f'msg-{t:02x}', pl)
    allframes += frame(t, pl)
recpl = ('\n'.join(recs[:5]) + '\n').encode()
put('message', 'type-10', bytes([types.index(0x10)]) + recpl)
pdata = bytes.fromhex('ab'*32) + struct.pack('>QQ', 10, 0) + b'0123456789'
put('message', 'type-21', bytes([types.index(0x21)]) + pdata)
allframes += frame(0x10, recpl) + frame(0x21, pdata)
put('frames', 'session-step7', bytes([6]) + allframes)
put('frames', 'session-whole', bytes([255]) + allframes)
put('frames', 'hello-1byte', bytes([0]) + frame(0x01, json.dumps(hello).encode()))
put('frames', 'big-header', bytes([3]) + struct.pack('>IB', 40000, 0x21) + bytes(100))

put('json', 'misc', '{"a":[1,-2.5e-3,true,false,null,"\\u00e9\\ud83d\\ude00\\n"],"b":{"c":{}},"d":""}')
put('json', 'deep', '[' * 60 + ']' * 60)

for n in ['AppleRootCA-G3.cer', 'apple-test/testCA.der']:
    d = open(f'{V}/{n}','rb').read()
    put('x509', os.path.basename(n), d)
    put('x509', os.path.basename(n) + '.pem', b'-----BEGIN CERTIFICATE-----\n' + base64.encodebytes(d) + b'-----END CERTIFICATE-----\n')
h = json.loads(base64.urlsafe_b64decode(jws['transactionInfo'].split(b'.')[0] + b'=='))
for i, c in enumerate(h['x5c'][:2]): put('x509', f'tx-x5c-{i}', base64.b64decode(c))

w = json.load(open(f'{V}/wycheproof/ecdsa_secp256r1_sha256_p1363_test.json'))
n = 0
for g in w['testGroups']:
    for t in g['tests']:
        if n < 12 and (t['result'] == 'valid' or n % 2):
            put('raw-signature', f'wycheproof-{t["tcId"]}', bytes.fromhex(t['sig'])); n += 1
put('raw-signature', 'p384-zero-high', bytes(1) + b'\x80' + bytes(46) + b'\x01' + bytes(47))
put('raw-signature', 'tx-sig', base64.urlsafe_b64decode(jws['transactionInfo'].split(b'.')[2] + b'=='))

offer = f"FS1/{FAM}/{NONCE}/1796032800/192.168.1.20:7433"
# Sealed names: identities of both versions, a sealed one whose tag no key
# opens, and a bundle header's padded JSON (first byte odd).
put('sealed-names', 'v4', b'\0FS4 ' + b'ab' * 61)
put('sealed-names', 'v3-sync', f"\0FS1 S {FAM} {DEV} {DEV} 3")
put('sealed-names', 'v3-pair', f"\0FS1 P {FAM} " + 'ab' * 16)
header = json.dumps({"family":FAM,"from":DEV,"to":DEV,"key":"device","epoch":0,"id":"ab"*16,"write":1,"part":1}, separators=(',',':'))
put('sealed-names', 'bundle-header', '\1' + header + ' ' * (512 - len(header)))
put('pairing-offer', 'text', offer)
put('pairing-offer', 'no-addr', f"FS1/{FAM}/{NONCE}/1796032800")
put('pairing-offer', 'ipv6', f"FS1/{FAM}/{NONCE}/1796032800/[FE80::1]:7433")
put('pairing-offer', 'json', json.dumps({"qr": offer, "family": FAM}) + '\n')
put('pairing-offer', 'host', "owner-ipad.local:7433")

for i, t in enumerate(["2026-11-30T10:00:00Z", "2026-11-30T10:00:00.123Z", "1970-01-01T00:00:00.5+14:00", "9999-12-31T23:59:59.999-00:00", "0000-01-01t00:00:00z", "2024-02-29T12:00:00.000000001Z", "30s", "500ms", "90d", "2w", "12h", "10m"]):
    put('times', f'seed-{i}', t)

def argv(tool, *a): return bytes([tool]) + b'\0'.join(x.encode() for x in a)
cli = [argv(0, '--db', 'x.db', '--save', '--bundle-id', 'com.example', '--now', '2026-11-30T10:00:00Z'),
       argv(1, '--db', 'o.db', '--addr', '192.168.1.20:7433', '-o', 'pair.png', '--ttl', '10m'),
       argv(1, '--db=o.db', '--close', 'all'),
       argv(2, '--raw', 'shot.png', '-'),
       argv(3, '--db', 'k.db', '--stamp', '--', '-x.ndjson'),
       argv(4, 'serve', '--db', 'o.db', '--listen', '127.0.0.1:0'),
       argv(4, 'connect', '--db', 'k.db', 'owner.local:7433', '--timeout', '30s'),
       argv(5, '--db', 'k.db', '--older-than', '30d', '--dry-run'),
       argv(5, '-h'), argv(0, '--version'), argv(4, 'join', '--help')]
for i, c in enumerate(cli): put('cli', f'seed-{i}', c)

def segs(*ss): return b''.join(bytes([m, len(d)]) + d for m, d in ss)
put('qr-segments', 'alnum', segs((1, bytes(range(60)))))
put('qr-segments', 'kanji', segs((1, b'abc'), (3, bytes([0x93,0xFA,0x96,0x7B,0x8C,0xEA]))))
put('qr-segments', 'eci-bytes', segs((4, bytes([26])), (2, "Łódź".encode())))
put('qr-segments', 'numeric-bytes', segs((0, b'1234567'), (2, b'\xff\x00binary')))

# Images: PNM by hand, PNG with zlib.
w, hgt = 12, 9
px = bytes((x * 20 + y * 7) % 256 for y in range(hgt) for x in range(w))
put('pnm', 'p5', f'P5\n{w} {hgt}\n255\n'.encode() + px)
put('pnm', 'p2', f'P2\n# comment\n{w} {hgt}\n255\n'.encode() + ' '.join(map(str, px)).encode())
put('pnm', 'p6', f'P6 {w} {hgt} 255\n'.encode() + bytes(b for p in px for b in (p, p, 255 - p)))
put('pnm', 'p3', f'P3\n{w} {hgt}\n15\n'.encode() + ' '.join(str(p % 16) for p in px for _ in range(3)).encode())
put('pnm', 'p5-16', f'P5\n{w} {hgt}\n65535\n'.encode() + bytes(b for p in px for b in (p, 0)))
put('pnm', 'p4', f'P4\n{w} {hgt}\n'.encode() + bytes(((w + 7) // 8) * hgt))
put('pnm', 'p1', f'P1\n{w} {hgt}\n'.encode() + ' '.join('1' if p > 128 else '0' for p in px).encode())
def chunk(t, d): return struct.pack('>I', len(d)) + t + d + struct.pack('>I', zlib.crc32(t + d))
def png(w, h, ctype, depth, rows, extra=b''):
    return b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', w, h, depth, ctype, 0, 0, 0)) + extra + chunk(b'IDAT', zlib.compress(rows)) + chunk(b'IEND', b'')
gray_rows = b''.join(b'\0' + px[y*w:(y+1)*w] for y in range(hgt))
rgb_rows = b''.join(b'\1' + bytes(b for p in px[y*w:(y+1)*w] for b in (p, 0, 255-p)) for y in range(hgt))
rgba_rows = b''.join(b'\0' + bytes(b for p in px[y*w:(y+1)*w] for b in (p, p, p, p)) for y in range(hgt))
pal_rows = b''.join(b'\0' + bytes(p % 4 for p in px[y*w:(y+1)*w]) for y in range(hgt))
put('png', 'gray8', png(w, hgt, 0, 8, gray_rows))
put('png', 'rgb8', png(w, hgt, 2, 8, rgb_rows))
put('png', 'rgba8', png(w, hgt, 6, 8, rgba_rows))
put('png', 'palette', png(w, hgt, 3, 8, pal_rows, chunk(b'PLTE', bytes([0,0,0, 255,255,255, 255,0,0, 0,0,255])) + chunk(b'tRNS', b'\xff\x80')))
put('png', 'interlaced-gray', b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', 8, 8, 8, 0, 0, 0, 1)) + chunk(b'IDAT', zlib.compress(bytes(15 * 9))) + chunk(b'IEND', b''))
for n in ['p5', 'p6']: put('image', n, open(f'{C}/pnm/{n}', 'rb').read())
for n in ['gray8', 'rgba8']: put('image', n, open(f'{C}/png/{n}', 'rb').read())

# JPEG: baseline and progressive files whose blocks are all zero, with and without EXIF.
def seg(m, d): return bytes([0xFF, m]) + struct.pack('>H', len(d) + 2) + d
def dqt(): return seg(0xDB, bytes([0]) + bytes([1] * 64))
def dht(cls, idx, counts, syms): return seg(0xC4, bytes([cls << 4 | idx]) + bytes(counts + [0] * (16 - len(counts))) + bytes(syms))
def sof(marker, w, h, comps): return seg(marker, bytes([8]) + struct.pack('>HH', h, w) + bytes([len(comps)]) + b''.join(bytes([i + 1, s, 0]) for i, s in enumerate(comps)))
def sos(n, ss=0, se=63, ahal=0): return seg(0xDA, bytes([n]) + b''.join(bytes([i + 1, 0x00]) for i in range(n)) + bytes([ss, se, ahal]))
def exif(orient, big=True):
    e = '>' if big else '<'
    tiff = (b'MM' if big else b'II') + struct.pack(e + 'HI', 42, 8) + struct.pack(e + 'H', 1) + struct.pack(e + 'HHIHH', 0x0112, 3, 1, orient, 0) + struct.pack(e + 'I', 0)
    return seg(0xE1, b'Exif\0\0' + tiff)
tables = dqt() + dht(0, 0, [1], [0]) + dht(1, 0, [1], [0])
def jpeg(w, h, comps, bits, extra=b'', marker=0xC0):
    data = bits
    return b'\xFF\xD8' + extra + tables + sof(marker, w, h, comps) + sos(len(comps)) + data + b'\xFF\xD9'
def put_jpeg(n, d):
    os.makedirs(C + '/jpeg', exist_ok=True)
    open(f'{C}/jpeg/{n}', 'wb').write(d)
# 16x16 gray: four blocks, "00" each -> one zero byte.
g = jpeg(16, 16, [0x11], b'\x00')
put_jpeg('gray16', g)
# 16x16 4:2:0 colour: one MCU of 4 Y + Cb + Cr blocks, 12 zero bits, padded with ones.
c = jpeg(16, 16, [0x22, 0x11, 0x11], b'\x00\x0F')
put_jpeg('color420', c)
for o in (3, 6, 8):
    put_jpeg(f'gray16-exif{o}', jpeg(16, 16, [0x11], b'\x00', exif(o)))
put_jpeg('gray16-exif6-le', jpeg(16, 16, [0x11], b'\x00', exif(6, big=False)))
put_jpeg('jfif-odd-size', jpeg(13, 7, [0x11], b'\x3F', seg(0xE0, b'JFIF\0\x01\x01\0\0\x01\0\x01\0\0')))
# Progressive: a DC-first scan only.
put_jpeg('progressive-dc', b'\xFF\xD8' + tables + sof(0xC2, 8, 8, [0x11]) + sos(1, 0, 0, 0) + b'\x7F' + b'\xFF\xD9')
os.makedirs(C + '/image', exist_ok=True)
open(C + '/image/jpeg-exif6', 'wb').write(jpeg(16, 16, [0x11], b'\x00', exif(6)))

# QR data codewords (qr-bitstream): first byte = level index (L M Q H) | (version - 1) << 2,
# then the codewords, built here bit by bit per ISO/IEC 18004 (versions 1-9 count widths).
class Bits:
    def __init__(self): self.b = []
    def put(self, v, n): self.b += [(v >> (n - 1 - i)) & 1 for i in range(n)]
    def codewords(self, cap):
        self.put(0, min(4, cap * 8 - len(self.b)))
        while len(self.b) % 8: self.b.append(0)
        out = [int(''.join(map(str, self.b[i:i + 8])), 2) for i in range(0, len(self.b), 8)]
        pads = [0xEC, 0x11]
        while len(out) < cap: out.append(pads[(len(out) - len(self.b) // 8) % 2])
        return bytes(out)
ALNUM = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ $%*+-./:"
def qr(level, version, cap, build):
    b = Bits(); build(b)
    return bytes([level | (version - 1) << 2]) + b.codewords(cap)
def alnum(b, text):
    b.put(0b0010, 4); b.put(len(text), 9)
    for i in range(0, len(text) - 1, 2): b.put(ALNUM.index(text[i]) * 45 + ALNUM.index(text[i + 1]), 11)
    if len(text) % 2: b.put(ALNUM.index(text[-1]), 6)
def byte(b, data):
    b.put(0b0100, 4); b.put(len(data), 8)
    for x in data: b.put(x, 8)
def numeric(b, digits):
    b.put(0b0001, 4); b.put(len(digits), 10)
    for i in range(0, len(digits), 3):
        g = digits[i:i + 3]; b.put(int(g), {3: 10, 2: 7, 1: 4}[len(g)])
def kanji(b, sjis):
    b.put(0b1000, 4); b.put(len(sjis) // 2, 8)
    for i in range(0, len(sjis), 2):
        v = sjis[i] << 8 | sjis[i + 1]; v -= 0x8140 if v <= 0x9FFC else 0xC140
        b.put((v >> 8) * 0xC0 + (v & 0xFF), 13)
def eci(b, n): b.put(0b0111, 4); b.put(n, 8)
def sappend(b, idx, total, parity): b.put(0b0011, 4); b.put(idx, 4); b.put(total - 1, 4); b.put(parity, 8)
sj = bytes([0x93, 0xFA, 0x96, 0x7B, 0x8C, 0xEA])
put('qr-bitstream', 'alnum-offer-v5L', qr(0, 5, 108, lambda b: alnum(b, "FS1/0F6B8E52-8B0C-4B5E-9D59-2B7D1B0E7E11/ABCDEFGHIJKLMNOPQRSTUVWXYZ234567/1796032800/192.168.1.20:7433")))
put('qr-bitstream', 'byte-utf8-v2M', qr(1, 2, 28, lambda b: byte(b, "Grüße €".encode())))
put('qr-bitstream', 'numeric-v1H', qr(3, 1, 9, lambda b: numeric(b, "0123456789")))
put('qr-bitstream', 'kanji-v1Q', qr(2, 1, 13, lambda b: kanji(b, sj)))
put('qr-bitstream', 'eci26-bytes-v2L', qr(0, 2, 34, lambda b: (eci(b, 26), byte(b, "Łódź".encode()))))
put('qr-bitstream', 'eci3-latin1-v1M', qr(1, 1, 16, lambda b: (eci(b, 3), byte(b, bytes([0x63, 0x61, 0x66, 0xE9])))))
put('qr-bitstream', 'mixed-v3L', qr(0, 3, 55, lambda b: (alnum(b, "ID:"), kanji(b, sj), numeric(b, "42"), byte(b, b'\xff\x00'))))
put('qr-bitstream', 'structured-append-v2M', qr(1, 2, 28, lambda b: (sappend(b, 0, 2, 0x5A), alnum(b, "PART ONE"))))
put('qr-bitstream', 'fnc1-gs1-v1L', qr(0, 1, 19, lambda b: (b.put(0b0101, 4), numeric(b, "0104012345"))))
