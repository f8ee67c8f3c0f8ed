#!/usr/bin/env bash
# test-fresh-machine.sh [DIR]: .ci/run in a fresh clone on a machine that has only what a new
# machine of this kind has (Debian with Go, gcc, git, make, Python and Node.js with npm), with
# every cache empty: a Debian root made by debootstrap in DIR (default /var/tmp/contactd-fresh),
# entered with chroot, given this machine's Go, Node.js, npm settings and certificate
# authorities, and nothing else. The repository's scripts install the rest (PostgreSQL,
# Redis, HAProxy, Chromium, pgBackRest, pg_auto_failover, NATS, the modules, the Node
# tooling), as CI's machine does. Prints make test's timed steps and the whole run's time.
# Root only (debootstrap, chroot, mounts); DIR is deleted first and kept after, for a look.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
root=${1:-/var/tmp/contactd-fresh}
[ "$(id -u)" -eq 0 ] || { echo "test-fresh-machine.sh runs as root (debootstrap, chroot)" >&2; exit 2; }
command -v debootstrap >/dev/null || "$repo/scripts/apt-install.sh" debootstrap

unmount() { for m in dev sys proc; do umount -R "$root/$m" 2>/dev/null || true; done; }
unmount
rm -rf "$root"
mkdir -p "$root"
trap unmount EXIT
t0=$(date +%s)
debootstrap --variant=minbase bookworm "$root" http://deb.debian.org/debian >/dev/null
cp /etc/resolv.conf "$root/etc/"
if compgen -G "/etc/apt/sources.list.d/*.sources" >/dev/null; then
  rm -f "$root/etc/apt/sources.list"
  cp /etc/apt/sources.list.d/*.sources "$root/etc/apt/sources.list.d/"
fi
mount -t proc proc "$root/proc"
mount --rbind /sys "$root/sys"
mount --rbind /dev "$root/dev" # /dev/shm with it: the tests' clusters go there
# what a new machine has before the project installs anything
chroot "$root" env DEBIAN_FRONTEND=noninteractive sh -c 'apt-get update -qq &&
  apt-get install -y -qq --no-install-recommends build-essential git make ca-certificates procps curl python3 xz-utils sudo iproute2 >/dev/null'
cp -a /usr/local/share/ca-certificates/. "$root/usr/local/share/ca-certificates/"
chroot "$root" update-ca-certificates >/dev/null
cp -a "$(dirname "$(dirname "$(readlink -f "$(command -v go)")")")" "$root/usr/local/go"
if dpkg -s nodejs >/dev/null 2>&1; then # Node.js as a package; npm as the machine upgraded it
  dpkg -L nodejs | while read -r f; do [ -f "$f" ] && echo "$f"; done | tar -cf - -T - 2>/dev/null | tar -xf - -C "$root"
  rm -rf "$root/usr/lib/node_modules/npm" && cp -a /usr/lib/node_modules/npm "$root/usr/lib/node_modules/"
fi
for f in /etc/npmrc /usr/etc/npmrc /root/.npmrc /root/.config/go/env; do
  [ -f "$f" ] && mkdir -p "$root$(dirname "$f")" && cp "$f" "$root$f"
done
echo "test-fresh-machine: the new machine made in $(($(date +%s) - t0)) s; make test starts" >&2
git clone -q "$repo" "$root/root/ci"
t1=$(date +%s)
rc=0
chroot "$root" /usr/bin/env -i HOME=/root PATH=/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  LANG=C.UTF-8 CI=true bash -c 'cd /root/ci && bash .ci/run' || rc=$?
echo "test-fresh-machine: .ci/run exited $rc after $(($(date +%s) - t1)) s" >&2
exit $rc
