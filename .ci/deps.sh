#!/usr/bin/env bash
# deps.sh -- installs the Debian packages named on the command line when any is
# missing (apt-get; `apt-get update` first only if a plain install fails).
set -u
missing=()
for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "deps: installing ${missing[*]}" >&2
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get install -y -q "${missing[@]}" >/dev/null 2>&1 && exit 0
$SUDO apt-get update -q >/dev/null 2>&1
$SUDO apt-get install -y -q "${missing[@]}" || { echo "deps: could not install ${missing[*]}" >&2; exit 1; }
