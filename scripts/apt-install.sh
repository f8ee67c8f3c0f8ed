#!/usr/bin/env bash
# apt-install.sh PACKAGE...: installs Debian packages, with sudo when not root. The ensure-*
# scripts call it only for what the machine lacks.
set -euo pipefail
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "$@" >/dev/null
