#!/bin/sh
# Installs the Debian packages listed in the given packages/*.txt files that
# are missing (through sudo when not root). Packages installed here are for
# building and testing, never services for the host: while apt runs, a
# policy-rc.d (unless the host has one) tells the maintainer scripts not to
# start anything, and avahi-daemon, which the tests run inside their own
# network namespaces, is masked first on a host run by systemd, so that
# installing it neither starts nor enables an mDNS responder on the host's
# own interfaces (now or at the next boot). An avahi-daemon already
# installed is left exactly as it is. To use the one installed here as the
# host's responder: systemctl unmask avahi-daemon.service avahi-daemon.socket
# openssh-server, whose sshd the tests run on a namespace's loopback, is
# masked the same way (ssh.service and ssh.socket), so installing it opens
# no ssh port on the host; an sshd already installed is left as it is.
set -eu
missing=$(grep -hv '^\s*#' "$@" | grep . | while read -r p; do
    dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q 'ok installed' || echo "$p"
done)
[ -n "$missing" ] || exit 0
sudo=$( [ "$(id -u)" -eq 0 ] || echo sudo )
echo "installing:" $missing

policy=/usr/sbin/policy-rc.d
if [ ! -e "$policy" ]; then
    # exit 101: "action forbidden by policy" (invoke-rc.d(8), deb-systemd-invoke).
    $sudo sh -c "printf '#!/bin/sh\nexit 101\n' > $policy && chmod 755 $policy"
    trap '$sudo rm -f "$policy"' EXIT
    trap 'exit 130' INT TERM
fi
case " $(echo $missing) " in
*" avahi-daemon "*)
    if [ -d /run/systemd/system ]; then
        echo "masking avahi-daemon.service and avahi-daemon.socket: the tests run their own avahi-daemon in a network namespace"
        $sudo systemctl mask avahi-daemon.service avahi-daemon.socket >/dev/null
    fi ;;
esac
case " $(echo $missing) " in
*" openssh-server "*)
    if [ -d /run/systemd/system ]; then
        echo "masking ssh.service and ssh.socket: the tests run their own sshd in a network namespace"
        $sudo systemctl mask ssh.service ssh.socket >/dev/null
    fi ;;
esac
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends $missing >/dev/null
