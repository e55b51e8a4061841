#!/usr/bin/env bash
# On a Debian machine, as root: installs the package with apt, runs the
# README's household from the installed tools (in a network namespace and
# UTS namespace of its own, as Tests/EndToEndTests/ReadmeTests.swift does:
# loopback and one veth pair, both ends inside, so nothing reaches the
# host's networks), removes the package, and checks that the file system is
# as it was before the install. It installs what the check itself uses first:
# iproute2 for the namespace, openssl and python3 for the demo proof.
# Usage: scripts/check-package.sh family-sync_VERSION_amd64.deb
set -euo pipefail
deb=$(realpath "${1:?usage: scripts/check-package.sh PACKAGE.deb}")
here=$(cd "$(dirname "$0")/.." && pwd)
apt() { DEBIAN_FRONTEND=noninteractive apt-get -y -qq -o Dpkg::Use-Pty=0 "$@"; }

# Every path outside the package manager's own records, with its type and size.
snapshot() {
    find / -xdev \( -path /proc -o -path /sys -o -path /dev -o -path /tmp -o -path /var/tmp -o -path /run \
        -o -path /var/lib/dpkg -o -path /var/lib/apt -o -path /var/cache -o -path /var/log -o -path "$here" \) -prune \
        -o -printf '%y %s %p\n' | sort
}

apt install iproute2 openssl python3 util-linux > /dev/null
# A first install brings the dependencies, which stay; the check is of the package's own files.
apt install "$deb" > /dev/null
apt remove family-sync > /dev/null
before=$(mktemp); after=$(mktemp); work=$(mktemp -d)
trap 'rm -rf "$before" "$after" "$work"' EXIT
snapshot > "$before"

apt install "$deb" > /dev/null
for t in jws-verify pair-qr pair-scan merge-records peer-sync tombstone-gc; do
    [ "$(command -v "$t")" = "/usr/bin/$t" ] || { echo "check-package: $t is not /usr/bin/$t" >&2; exit 1; }
done
# Nothing the binaries load comes from a Swift toolchain.
if ldd /usr/libexec/family-sync/family-sync /usr/libexec/family-sync/family-sync-qr | grep -E 'not found|swift|Foundation'; then
    echo "check-package: a library the tools load is missing or is Swift's" >&2; exit 1
fi

# The household block, verbatim, from the installed tools.
block=$(sed -n '/<!-- household:begin/,/<!-- household:end -->/p' "$here/README.md" | sed -n 's/^    //p')
mkdir -p "$work/scripts"
cp "$here/scripts/demo-pki.sh" "$work/scripts/"
cat > "$work/net.sh" <<'NET'
set -e
hostname owner
ip link set lo up
ip link add fs0 type veth peer name fs1
ip link set fs0 up; ip link set fs1 up
ip addr add 10.77.0.1/24 dev fs0
exec bash -e -o pipefail -c "$1"
NET
script="cd '$work'; export PATH=/usr/bin:/bin; unset FAMILY_SYNC_DB; trap 'kill \$(jobs -p) 2>/dev/null || true' EXIT
$block"
unshare --net --uts bash "$work/net.sh" "$script" > "$work/out" 2> "$work/err" || {
    cat "$work/out" "$work/err" >&2; echo "check-package: the README's household failed with the installed tools" >&2; exit 1; }
grep -q '{"entitled":true' "$work/out" || { cat "$work/out" >&2; echo "check-package: the member is not premium" >&2; exit 1; }
echo "check-package: the README's household ran from /usr/bin"

apt remove family-sync > /dev/null
[ "$(dpkg-query -W -f='${db:Status-Status}' family-sync 2>/dev/null || echo not-installed)" != installed ]
snapshot > "$after"
if ! diff "$before" "$after" > "$work/diff"; then
    cat "$work/diff" >&2; echo "check-package: apt remove left the file system changed" >&2; exit 1
fi
echo "check-package: apt remove left nothing behind"
