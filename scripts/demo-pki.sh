#!/usr/bin/env bash
# Mints a demo PKI shaped like Apple's (root → intermediate with OID
# 1.2.840.113635.100.6.2.1 → leaf with 1.2.840.113635.100.6.11.1) and signs a
# StoreKit-2-shaped transaction with it, since Apple signs only for real
# purchases. Writes demo-root.der and tx.jws into the current folder.
# Usage: demo-pki.sh BUNDLE_ID PRODUCT_ID EXPIRES_MS
set -euo pipefail
bundle=$1 product=$2 expires=$3
pki=$(mktemp -d)
trap 'rm -rf "$pki"' EXIT
o() { openssl "$@" 2>/dev/null; }
o ecparam -name secp384r1 -genkey -noout -out "$pki/root.key"
o ecparam -name secp384r1 -genkey -noout -out "$pki/int.key"
o ecparam -name prime256v1 -genkey -noout -out "$pki/leaf.key"
printf 'basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign,cRLSign\n1.2.840.113635.100.6.2.1=DER:05:00\n' > "$pki/int.ext"
printf 'basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\n1.2.840.113635.100.6.11.1=DER:05:00\n' > "$pki/leaf.ext"
o req -x509 -new -key "$pki/root.key" -sha384 -subj "/O=family-sync demo/CN=Demo Root" -days 3650 -out "$pki/root.pem"
o req -new -key "$pki/int.key" -subj "/O=family-sync demo/CN=Demo Intermediate" -out "$pki/int.csr"
o x509 -req -in "$pki/int.csr" -CA "$pki/root.pem" -CAkey "$pki/root.key" -set_serial 2 -days 3000 -sha384 -extfile "$pki/int.ext" -out "$pki/int.pem"
o req -new -key "$pki/leaf.key" -subj "/O=family-sync demo/CN=Demo Leaf" -out "$pki/leaf.csr"
o x509 -req -in "$pki/leaf.csr" -CA "$pki/int.pem" -CAkey "$pki/int.key" -set_serial 3 -days 1000 -sha384 -extfile "$pki/leaf.ext" -out "$pki/leaf.pem"
o x509 -in "$pki/root.pem" -outform DER -out demo-root.der
# Signed after the certificates were made, so they are valid at signedDate.
signed=$(date +%s%3N)
b64() { openssl x509 -in "$1" -outform DER | base64 -w0; }
b64url() { base64 -w0 | tr '+/' '-_' | tr -d '='; }
header=$(printf '{"alg":"ES256","x5c":["%s","%s","%s"]}' "$(b64 "$pki/leaf.pem")" "$(b64 "$pki/int.pem")" "$(b64 "$pki/root.pem")" | b64url)
payload=$(printf '{"transactionId":"2000000123456789","originalTransactionId":"2000000123456789","bundleId":"%s","productId":"%s","purchaseDate":%s,"expiresDate":%s,"signedDate":%s,"type":"Auto-Renewable Subscription","inAppOwnershipType":"PURCHASED","environment":"Production"}' \
    "$bundle" "$product" "$signed" "$expires" "$signed" | b64url)
printf '%s.%s' "$header" "$payload" > "$pki/input"
openssl dgst -sha256 -sign "$pki/leaf.key" -out "$pki/sig.der" "$pki/input"
# JWS carries the raw r‖s (64 bytes), not DER.
sig=$(python3 - "$pki/sig.der" <<'PY' | b64url
import sys
d = open(sys.argv[1], "rb").read()
def parse_int(b, i):
    assert b[i] == 2; n = b[i + 1]; v = b[i + 2:i + 2 + n]
    return int.from_bytes(v, "big"), i + 2 + n
i = 2 if d[1] < 0x80 else 3
r, i = parse_int(d, i); s, _ = parse_int(d, i)
sys.stdout.buffer.write(r.to_bytes(32, "big") + s.to_bytes(32, "big"))
PY
)
printf '%s.%s.%s\n' "$header" "$payload" "$sig" > tx.jws
