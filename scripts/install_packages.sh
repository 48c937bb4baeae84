#!/usr/bin/env bash
# Install Debian packages that tests and optional features need, where this machine
# allows it (root and apt-get). Never fails: what needs a missing package says so itself.
#   scripts/install_packages.sh "what they are for" PACKAGE...
set -u
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
  apt-get install -y -q "${missing[@]}" >/dev/null 2>&1 ||
    { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q "${missing[@]}" >/dev/null 2>&1; } ||
    echo "could not install ${missing[*]}; $purpose will be skipped, saying so"
else
  echo "${missing[*]} not installed and cannot be installed here (needs root and apt-get);"
  echo "  $purpose will be skipped, saying so"
fi
exit 0
