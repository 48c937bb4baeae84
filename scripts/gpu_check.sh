#!/usr/bin/env bash
# The GPU check, one command long: the chapter's PyTorch sections on this machine's GPU(s)
# at the documents' parameters, through Snakemake, then the report and the archive.
#
#   scripts/gpu_check.sh [KIT]     KIT: the folder scripts/gpu_check_prepare.sh made on a
#                                  machine with network (default: gpu-check-kit)
#
# For a machine with an NVIDIA GPU and no network that has Python >= 3.10 with torch (CUDA),
# pandas, matplotlib and jinja2: Snakemake comes from the kit's wheels (installed into
# .gpu-check/, beside the machine's own packages, nothing else touched), Fashion-MNIST from
# the kit too. Where torch sees no GPU it runs the same pipeline in its CPU mode, at the CI
# preset with the GPU sections on the CPU stand-in. On a GPU, the archive is kept under
# report/machines/ for later reports to compare against.
#
# GPU_CHECK_PYTHON: the interpreter with torch (default: python3). GPU_CHECK_PRESET: the
# preset (default: documents on a GPU, ci without one). GPU_CHECK_CORES: Snakemake's cores.
# GPU_CHECK_SECTIONS: some sections only, by name, space-separated (default: every one).
# GPU_CHECK_KEEP=1 keeps the archive in CPU mode too, GPU_CHECK_DRY_RUN=1 plans the run
# without running it (the tests use both).
set -euo pipefail
cd "$(dirname "$0")/.."
kit=$(realpath "${1:-gpu-check-kit}")
python=${GPU_CHECK_PYTHON:-python3}
here=.gpu-check

fail() { echo "gpu_check: $*" >&2; exit 2; }
[ -d "$kit/wheels" ] && [ -f "$kit/requirements.txt" ] ||
  fail "no kit at $kit: make one with scripts/gpu_check_prepare.sh on a machine with network"
"$python" -c 'import sys; sys.exit(sys.version_info < (3, 10))' ||
  fail "$python is older than Python 3.10"
version=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
[ "$(cat "$kit/python-version")" = "$version" ] ||
  fail "the kit's wheels are for Python $(cat "$kit/python-version"), $python is $version:" \
       "make the kit with GPU_PYTHON=$version scripts/gpu_check_prepare.sh"
for module in torch pandas matplotlib jinja2; do
  "$python" -c "import $module" 2>/dev/null || fail "$python cannot import $module"
done

# Snakemake and its dependencies, beside (and before) the machine's own packages.
rm -rf "$here/site"
"$python" -m pip install --quiet --disable-pip-version-check --no-index --no-deps \
  --find-links "$kit/wheels" --target "$here/site" -r "$kit/requirements.txt"
export PYTHONPATH="$PWD/$here/site${PYTHONPATH:+:$PYTHONPATH}"
# Every job's interpreter is this one, PYTHONPATH and all (the workflow's and torch's).
interpreter="$PWD/$here/python"
printf '#!/bin/sh\nexec %q "$@"\n' "$(command -v "$python")" > "$interpreter"
chmod +x "$interpreter"

if "$python" -c 'import sys, torch; sys.exit(not torch.cuda.is_available())'; then
  mode=gpu preset=${GPU_CHECK_PRESET:-documents} on_cpu=False
else
  mode=cpu preset=${GPU_CHECK_PRESET:-ci} on_cpu=True
fi
cores=${GPU_CHECK_CORES:-$(nproc)}
echo "gpu_check: $mode mode, preset $preset, $cores cores, torch from $python"

# Given as a JSON file, not as --config KEY=VALUE: Snakemake reads each such VALUE as YAML,
# which would make a path with ' #' in it shorter, or one with ': ' a mapping.
config="$here/config.json"
"$python" - "$config" "$preset" "$interpreter" "$kit/fashion-mnist" "$on_cpu" \
  "${GPU_CHECK_SECTIONS:-}" <<'EOF'
import json, sys
out, preset, torch_python, data_dir, on_cpu, sections = sys.argv[1:]
config = {"preset": preset, "frameworks": ["pytorch"], "torch_python": torch_python,
          "data_dir": data_dir, "gpu_sections_on_cpu": on_cpu == "True"}
if sections.split():  # names only: the workflow's config check refuses any other
    config["sections"] = sections.split()
with open(out, "w", encoding="utf-8") as handle:
    json.dump(config, handle)
EOF
start=$(date +%s)
if [ "${GPU_CHECK_DRY_RUN:-0}" = 1 ]; then  # the tests: the configuration as the run reads it
  exec "$interpreter" -m snakemake all archive -n --cores "$cores" --configfile "$config"
fi
"$interpreter" -m snakemake all archive --cores "$cores" --configfile "$config"
echo "gpu_check: finished in $(( $(date +%s) - start )) s"

archive=$(ls -t archives/*.tar.gz | head -n 1)
echo "gpu_check: report $(dirname "$(ls -t results/*/report.html | head -n 1)")/report.html"
echo "gpu_check: archive $archive"
# Kept as <machine>-<date>.tar.gz: `make report` imports it under that name (never the id
# of a machine running here), so every later report compares against this GPU.
if [ "$mode" = gpu ] || [ "${GPU_CHECK_KEEP:-0}" = 1 ]; then
  mkdir -p report/machines
  kept="report/machines/$(basename "$archive" .tar.gz)-$(date -u +%Y-%m-%d).tar.gz"
  cp "$archive" "$kept"
  echo "gpu_check: kept as $kept (commit it)"
fi
