#!/usr/bin/env bash
# The household of DESIGN.md, scripted, in a temporary folder. $1: the folder with the release tools.
set -euo pipefail
bin=${1:?usage: scripts/demo.sh BIN_DIR}
export PATH="$bin:$PATH"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; }
for t in jws-verify pair-qr pair-scan merge-records peer-sync tombstone-gc; do
    step "$t --version"; "$t" --version
done
