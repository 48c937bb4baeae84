#!/usr/bin/env bash
# Debian's SLURM and munge for tests/test_slurm.py (a one-node cluster started by start.sh),
# where this machine allows it (root and apt-get). Never fails: without them the SLURM test is
# skipped and says why. Without recommends it is 9 small packages, a few seconds; the
# recommended plugins (HDF5, RRD, IPMI, ...) are not needed for a test cluster.
# No slurmdbd/MariaDB: the test uses the executor's squeue status mode.
set -euo pipefail
packages=(slurm-wlm munge)
missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$package")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "installing ${missing[*]} (the SLURM executor's test)"
  install() {
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" \
      >/dev/null 2>&1
  }
  # An out-of-date package index is the usual reason for a failed install: refresh, retry once.
  install || { apt-get update -q >/dev/null 2>&1 && install; } ||
    echo "could not install ${missing[*]}; the SLURM test will be skipped, saying so"
else
  echo "${missing[*]} not installed and cannot be installed here (needs root and apt-get);"
  echo "  the SLURM test will be skipped, saying so"
fi
exit 0
