#!/usr/bin/env bash
# Packs an installed tree (`make install DESTDIR=ROOT PREFIX=/usr`) as a Debian
# binary package: man pages compressed as Debian does, the copyright and
# changelog in /usr/share/doc, control data whose Depends is what
# dpkg-shlibdeps finds the two binaries link, md5sums; built by dpkg-deb with
# root as the owner of every file. Then lintian, where installed: any error
# or warning it reports fails the build.
set -euo pipefail
root=${1:?usage: scripts/make-deb.sh ROOT VERSION OUTPUT.deb}
version=${2:?usage: scripts/make-deb.sh ROOT VERSION OUTPUT.deb}
out=${3:?usage: scripts/make-deb.sh ROOT VERSION OUTPUT.deb}
here=$(cd "$(dirname "$0")/.." && pwd)
arch=$(dpkg --print-architecture)
doc="$root/usr/share/doc/family-sync"

gzip -9n "$root"/usr/share/man/man*/*.[0-9]
install -d -m 755 "$doc"
install -m 644 "$here/packaging/copyright" "$doc/copyright"
sed "s/@VERSION@/$version/" "$here/packaging/changelog" | gzip -9n > "$doc/changelog.gz"
chmod 644 "$doc/changelog.gz"

# dpkg-shlibdeps reads the package name from a debian/control beside it.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/debian"
printf 'Source: family-sync\n\nPackage: family-sync\nArchitecture: any\n' > "$work/debian/control"
bins=$(realpath "$root"/usr/libexec/family-sync/*)
# shellcheck disable=SC2086  # the two paths have no spaces: they are ours
depends=$(cd "$work" && dpkg-shlibdeps -O $bins 2> >(grep -v "should already be installed in their package" >&2) | sed -n 's/^shlibs:Depends=//p')
[ -n "$depends" ] || { echo "make-deb: dpkg-shlibdeps named no dependencies" >&2; exit 1; }

install -d -m 755 "$root/DEBIAN"
size=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
sed -e "s/@VERSION@/$version/" -e "s/@ARCH@/$arch/" -e "s/@SIZE@/$size/" -e "s/@DEPENDS@/$depends/" \
    "$here/packaging/control" > "$root/DEBIAN/control"
(cd "$root" && find usr -type f -print0 | sort -z | xargs -0 md5sum) > "$root/DEBIAN/md5sums"
chmod 644 "$root/DEBIAN/control" "$root/DEBIAN/md5sums"

mkdir -p "$(dirname "$out")"
dpkg-deb --root-owner-group -Zxz --build "$root" "$out" > /dev/null
rm -rf "$root/DEBIAN"
echo "make-deb: $out ($(du -k "$out" | cut -f1) kB, installed $size kB)"

if command -v lintian > /dev/null; then
    # Errors and warnings fail the build; the informational tags that remain
    # are explained in README.md (Install). lintian's note on running as root
    # is not a tag.
    tags=$(lintian --tag-display-limit 0 "$out" 2>&1 | grep -v '^running with root privileges' || true)
    if [ -n "$tags" ]; then echo "$tags" >&2; echo "make-deb: lintian reported the tags above" >&2; exit 1; fi
    echo "make-deb: lintian clean"
fi
