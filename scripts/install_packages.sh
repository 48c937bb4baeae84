#!/usr/bin/env bash
# Install Debian packages that tests and optional features need, where this machine
# allows it (root and apt-get). Never fails: what needs a missing package says so itself.
#   scripts/install_packages.sh [--no-recommends] "what they are for" PACKAGE...
set -u
options=()
if [ "${1:-}" = "--no-recommends" ]; then
  options+=(--no-install-recommends)
  shift
fi
purpose=$1
shift
missing=()
for package in "$@"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$package")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "installing ${missing[*]} ($purpose)"
  install() {
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${options[@]}" "${missing[@]}" \
      >/dev/null 2>&1
  }
  # An out-of-date package index is the usual reason for a failed install: refresh, retry once.
  install || { apt-get update -q >/dev/null 2>&1 && install; } ||
    echo "could not install ${missing[*]}; $purpose will be skipped, saying so"
else
  echo "${missing[*]} not installed and cannot be installed here (needs root and apt-get);"
  echo "  $purpose will be skipped, saying so"
fi
exit 0
