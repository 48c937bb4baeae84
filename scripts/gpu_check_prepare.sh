#!/usr/bin/env bash
# Gather, on a machine with network, what the one-command GPU check (scripts/gpu_check.sh)
# needs beyond what a GPU machine already has (Python >= 3.10, torch with CUDA, pandas,
# matplotlib, jinja2): Snakemake and its dependencies as wheels for that machine's Python,
# and Fashion-MNIST's four files. One folder, under 60 MiB, checked here.
#
#   scripts/gpu_check_prepare.sh [FOLDER]    (default: gpu-check-kit, ignored by git)
#
# FOLDER must be new, empty, or a kit this script made before (it holds the marker file
# .gpu-check-kit): anything else is refused untouched, since a kit is made by emptying
# its folder first, and a mistyped name (results, report) must never lose what is there.
#
# GPU_PYTHON (default 3.12) is the GPU machine's Python version; the wheels are for
# CPython on x86-64 Linux (manylinux). The pins are the workflow environment's
# (envs/workflow.lock.txt), less the test and lint tools and what the GPU machine has.
set -euo pipefail
cd "$(dirname "$0")/.."
kit=${1:-gpu-check-kit}
python_version=${GPU_PYTHON:-3.12}
pip=${PIP:-.venv/bin/pip}
limit_mib=60
# Test/lint tools (not needed to run the pipeline) and the GPU machine's own packages
# (packaging stays: Snakemake pins it below 26, which the machine's own may not be).
exclude='^(black|click|iniconfig|mypy_extensions|pathspec|playwright|pluggy|pytest|pytokens|ruff|shfmt-py|snakefmt|snakemake-executor-plugin-slurm|snakemake-executor-plugin-slurm-jobstep|Pygments|contourpy|cycler|fonttools|kiwisolver|matplotlib|numpy|pandas|pillow|pyparsing|python-dateutil|tzdata|Jinja2|MarkupSafe)=='
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
if [ -f "$kit/$marker" ]; then
  find "$kit" -mindepth 1 -maxdepth 1 ! -name "$marker" -exec rm -rf {} +
fi
mkdir -p "$kit/wheels" "$kit/fashion-mnist"
echo "made by scripts/gpu_check_prepare.sh: it may empty this folder to remake the kit" \
  > "$kit/$marker"
grep -v '^#' envs/workflow.lock.txt | grep -Ev "$exclude" > "$kit/requirements.txt"
grep -Ev "$source_only" "$kit/requirements.txt" > "$kit/binary.txt"
grep -E "$source_only" "$kit/requirements.txt" > "$kit/source.txt" || true

"$pip" download --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
  --python-version "$python_version" --implementation cp --abi "$abi" \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64 --platform any \
  -d "$kit/wheels" -r "$kit/binary.txt"
if [ -s "$kit/source.txt" ]; then
  "$pip" wheel --quiet --disable-pip-version-check --no-deps -w "$kit/wheels" -r "$kit/source.txt"
fi
rm "$kit/binary.txt" "$kit/source.txt"

# Fashion-MNIST from wherever the pipeline finds it here, verified (d2lperf.data).
PYTHONPATH=scripts .venv/bin/python - "$kit/fashion-mnist" <<'EOF'
import shutil, sys
from pathlib import Path
from d2lperf import data
source = data.find_fashion_mnist()
for name in data.FILES:
    shutil.copyfile(source / name, Path(sys.argv[1]) / name)
print(f"Fashion-MNIST: copied from {source}")
EOF

echo "$python_version" > "$kit/python-version"
size=$(du -sb "$kit" | cut -f1)
mib=$(( (size + 1048575) / 1048576 ))
echo "GPU check kit: $kit, $(ls "$kit/wheels" | wc -l) wheels for CPython $python_version, ${mib} MiB"
if [ "$size" -gt $(( limit_mib * 1048576 )) ]; then
  echo "GPU check kit is over ${limit_mib} MiB" >&2
  exit 1
fi
