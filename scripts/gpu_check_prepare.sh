#!/usr/bin/env bash
# Gather, on a machine with network, what the one-command GPU check (scripts/gpu_check.sh)
# needs beyond what a GPU machine already has (Python >= 3.10, torch with CUDA, pandas,
# matplotlib, jinja2): Snakemake and its dependencies, and nvidia-ml-py (NVML, pure
# Python: the GPUs' energy and clocks), as wheels for that machine's Python, and
# Fashion-MNIST's four files. One folder, under 60 MiB, checked here.
#
#   scripts/gpu_check_prepare.sh [FOLDER]    (default: gpu-check-kit in this checkout,
#                                             ignored by git; a relative FOLDER is taken
#                                             from where the command is run)
#
# FOLDER must be new, empty, or a kit this script made before (it holds the marker file
# .gpu-check-kit): anything else is refused untouched, since a kit replaces its folder, and
# a mistyped name (results, report) must never lose what is there. The kit is made in a
# hidden folder beside FOLDER (same file system) and checked there; only when it is
# complete does it take FOLDER's place, the old kit removed after: a re-run that fails at
# any step (no network, a full disk) leaves FOLDER exactly as it was, since a GPU machine
# without network cannot make another.
#
# GPU_PYTHON (default 3.12) is the GPU machine's Python version; the wheels are for
# CPython on x86-64 Linux (manylinux). The pins are the workflow environment's
# (envs/workflow.lock.txt), less the test and lint tools and what the GPU machine has.
set -euo pipefail
# FOLDER is the caller's: resolved against the folder the command is run from, before the
# cd into the checkout (which the script's own paths below are relative to).
case ${1:-} in
  "") kit="$(cd "$(dirname "$0")/.." && pwd)/gpu-check-kit" ;;
  /*) kit=$1 ;;
  *) kit="$PWD/$1" ;;
esac
while [ "${#kit}" -gt 1 ] && [ "${kit%/}" != "$kit" ]; do kit=${kit%/}; done  # kit/ is kit
cd "$(dirname "$0")/.."
python_version=${GPU_PYTHON:-3.12}
pip=${PIP:-.venv/bin/pip}
limit_mib=60  # what is carried to a GPU machine is at most 64 MiB: room for the rest
# Test/lint tools (not needed to run the pipeline) and the GPU machine's own packages
# (packaging stays: Snakemake pins it below 26, which the machine's own may not be).
exclude='^(black|click|colorama|mando|radon|six|iniconfig|mypy_extensions|pathspec|playwright|pluggy|pytest|pytokens|ruff|shfmt-py|snakefmt|snakemake-executor-plugin-slurm|snakemake-executor-plugin-slurm-jobstep|Pygments|contourpy|cycler|fonttools|kiwisolver|matplotlib|numpy|pandas|pillow|pyparsing|python-dateutil|tzdata|Jinja2|MarkupSafe|scipy)=='
# Published as source only: built into a wheel here (pure Python, so it runs anywhere).
source_only='^(connection_pool)=='

if ! [[ $python_version =~ ^3\.[0-9]+$ ]]; then
  echo "GPU_PYTHON must look like 3.12, got '$python_version'" >&2
  exit 2
fi
abi="cp${python_version/./}"
marker=.gpu-check-kit
if [ -L "$kit" ] || { [ -e "$kit" ] && ! [ -d "$kit" ]; }; then
  echo "gpu_check_prepare: refusing $kit: not a folder (a link or a file); name a new or" \
       "empty folder" >&2
  exit 2
fi
if [ -d "$kit" ] && [ -n "$(ls -A "$kit")" ] && ! [ -f "$kit/$marker" ]; then
  echo "gpu_check_prepare: refusing $kit: it is not empty and no kit made by this script" \
       "($marker is missing); name a new or empty folder" >&2
  exit 2
fi

# The new kit is made in $new, beside $kit so that putting it in place is a rename on one
# file system. Any way out before that (an error, Ctrl-C) removes $new and leaves $kit as
# it was; the old kit is moved aside, and removed only once the new one is in its place.
parent=$(dirname "$kit")
if ! mkdir -p "$parent" || ! new=$(mktemp -d "$parent/.$(basename "$kit").new.XXXXXX"); then
  echo "gpu_check_prepare: cannot write into $parent; name a FOLDER where you can" >&2
  exit 2
fi
old=""
placed=0
finish() {
  local status=$?
  rm -rf "$new"
  if [ "$status" -ne 0 ] && [ "$placed" = 0 ]; then
    echo "gpu_check_prepare: no kit made; $kit is as it was (mend what is said above, the" \
         "network or PIP perhaps, and run this again)" >&2
  fi
}
trap finish EXIT
trap 'exit 130' INT  # so that finish runs on Ctrl-C and kill too
trap 'exit 143' TERM

mkdir "$new/wheels" "$new/fashion-mnist"
echo "made by scripts/gpu_check_prepare.sh: it may replace this folder to remake the kit" \
  > "$new/$marker"
grep -v '^#' envs/workflow.lock.txt | grep -Ev "$exclude" > "$new/requirements.txt"
grep -Ev "$source_only" "$new/requirements.txt" > "$new/binary.txt"
grep -E "$source_only" "$new/requirements.txt" > "$new/source.txt" || true

"$pip" download --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
  --python-version "$python_version" --implementation cp --abi "$abi" \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64 --platform any \
  -d "$new/wheels" -r "$new/binary.txt"
if [ -s "$new/source.txt" ]; then
  "$pip" wheel --quiet --disable-pip-version-check --no-deps -w "$new/wheels" -r "$new/source.txt"
fi
rm "$new/binary.txt" "$new/source.txt"

# Fashion-MNIST from wherever the pipeline finds it here; then the kit as a whole: a wheel
# for every pin (pip said nothing of one it skipped), the four files intact where they are.
PYTHONPATH=scripts .venv/bin/python - "$new" <<'PY'
import shutil, sys
from pathlib import Path
from packaging.utils import canonicalize_name, parse_wheel_filename
from packaging.version import Version
from d2lperf import data
kit = Path(sys.argv[1])
source = data.find_fashion_mnist()
for name in data.FILES:
    shutil.copyfile(source / name, kit / "fashion-mnist" / name)
wheels = {parse_wheel_filename(w.name)[:2] for w in (kit / "wheels").glob("*.whl")}
missing = []
for pin in (kit / "requirements.txt").read_text().split():
    name, version = pin.split("==")
    if (canonicalize_name(name), Version(version)) not in wheels:
        missing.append(f"no wheel for {pin}")
problems = missing + data.verify(kit / "fashion-mnist")
if problems:
    sys.exit("gpu_check_prepare: the new kit is incomplete: " + "; ".join(problems))
print(f"Fashion-MNIST: copied from {source}")
PY

echo "$python_version" > "$new/python-version"
size=$(du -sb "$new" | cut -f1)
mib=$(( (size + 1048575) / 1048576 ))
if [ "$size" -gt $(( limit_mib * 1048576 )) ]; then
  echo "gpu_check_prepare: the kit would be ${mib} MiB, over ${limit_mib} MiB: see which" \
       "wheels envs/workflow.lock.txt added and leave them out (exclude, in $0)" >&2
  exit 1
fi

# In place: the old kit (if any) moved aside, the new one renamed to its name, the old one
# removed. Should the second rename fail, the old kit goes back where it was.
if [ -d "$kit" ]; then
  old="$parent/.$(basename "$kit").old.${new##*.new.}"
  mv -T "$kit" "$old"
fi
if ! mv -T "$new" "$kit"; then
  if [ -n "$old" ] && ! mv -T "$old" "$kit"; then
    placed=1  # not as it was: say where the old kit is
    echo "gpu_check_prepare: no kit made; the old kit is in $old: move it back to $kit" >&2
  fi
  exit 1
fi
placed=1
[ -z "$old" ] || rm -rf "$old"
echo "GPU check kit: $kit, $(ls "$kit/wheels" | wc -l) wheels for CPython $python_version, ${mib} MiB"
