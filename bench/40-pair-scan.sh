#!/usr/bin/env bash
# pair-scan against zbarimg (the anchor) and zxing-cpp on a seeded corpus of
# hard photos of pairing codes, upright, turned by 90, 180 and 270 degrees and
# mirrored: decode rate per orientation and per distortion, wrong texts, time
# per image. Then Japanese codes photographed (pair_scan_japanese.py).
# $1: the release bin dir. $BENCH_PYTHON: the bench venv's python.
# PAIR_SCAN_CORPUS_SIZE (default 220) and PAIR_SCAN_SEED change the corpus;
# PAIR_SCAN_ROTATIONS (default "0 90 180 270 mirror") and PAIR_SCAN_LIMIT (first N
# images) make quick runs.
set -euo pipefail
bin=${1:?usage: bench/40-pair-scan.sh RELEASE_BIN_DIR}
here=$(cd "$(dirname "$0")" && pwd)
py=${BENCH_PYTHON:-$here/.venv/bin/python}
size=${PAIR_SCAN_CORPUS_SIZE:-220}
seed=${PAIR_SCAN_SEED:-20261130}
command -v zbarimg >/dev/null || { echo "zbarimg not found (Debian zbar-tools)"; exit 1; }
corpus="$here/out/pair-scan-$seed-$size"
if [ ! -s "$corpus/manifest.tsv" ]; then
    echo "generating $size images in $corpus"
    rm -rf "$corpus"
    "$py" "$here/pair_scan_corpus.py" "$corpus" "$size" "$seed"
fi
"$py" "$here/pair_scan_bench.py" "$corpus" "$bin/pair-scan" "$(command -v zbarimg)"
# Japanese codes photographed (qrencode -8 and -k from Shift_JIS input): exact
# reads, wrong texts and misses counted apart; fails on any wrong text from pair-scan.
command -v qrencode >/dev/null || { echo "qrencode not found (Debian qrencode)"; exit 1; }
"$py" "$here/pair_scan_japanese.py" "$here/out/pair-scan-japanese-${PAIR_SCAN_JAPANESE_SEED:-20261202}" "$bin/pair-scan" \
    "$(command -v zbarimg)" "${PAIR_SCAN_JAPANESE_SEED:-20261202}"
