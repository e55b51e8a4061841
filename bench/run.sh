#!/usr/bin/env bash
# Runs every benchmark in bench/ against the release binaries in $1.
# Each prints its figures as ratios against an anchor measured in the same run.
set -euo pipefail
bin=${1:?usage: bench/run.sh RELEASE_BIN_DIR}
here=$(cd "$(dirname "$0")" && pwd)
export PATH="$bin:$PATH" BENCH_PYTHON="$here/.venv/bin/python"
status=0
for b in "$here"/[0-9]*.sh; do
    [ -e "$b" ] || continue
    echo "== $(basename "$b")"
    bash "$b" "$bin" || { echo "benchmark $(basename "$b") failed"; status=1; }
done
exit $status
