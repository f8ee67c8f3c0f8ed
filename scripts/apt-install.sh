#!/usr/bin/env bash
# apt-install.sh PACKAGE...: installs Debian packages, with sudo when not root. The ensure-*
# scripts call it only for what the machine lacks. Installs run one at a time (a lock): make
# test installs the packages in the background while a step that needs one of them (the
# schema dump needs PostgreSQL) may ask for it too, and apt refuses to run beside itself.
set -euo pipefail
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
lock=/tmp/contactd-apt-install.lock # ensure-postgres.sh waits on it too
[ -e "$lock" ] || : >"$lock"
exec 9<"$lock"
flock 9
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "$@" >/dev/null
