#!/usr/bin/env bash
# The GPU check, one command long: the chapter's PyTorch sections on this machine's GPU(s)
# at the documents' parameters, through Snakemake, then the report and the archive.
#
#   scripts/gpu_check.sh [KIT]     KIT: the folder scripts/gpu_check_prepare.sh made on a
#                                  machine with network (default: gpu-check-kit)
#
# For a machine with an NVIDIA GPU and no network that has Python >= 3.10 with torch (CUDA),
# pandas, matplotlib, scipy (the sections' manager judges with it) and jinja2: Snakemake,
# and nvidia-ml-py (NVML: each run's GPU energy, clocks and throttle reasons), come from
# the kit's wheels (installed into
# .gpu-check/, beside the machine's own packages, nothing else touched), Fashion-MNIST from
# the kit too. Where torch sees no GPU it runs the same pipeline in its CPU mode, at the CI
# preset with the GPU sections on the CPU stand-in. On a GPU, the archive is kept under
# report/machines/ for later reports to compare against.
#
# The check works in a results id of its own, <hardware id>-gpu-check: results/<that>/ and
# archives/<that>.tar.gz. A checkout may hold the user's own results and report under the
# hardware id (results/<hardware id>/, of both frameworks) and archives from elsewhere in
# archives/: the check never re-runs, replaces or keeps any of them. It keeps the one
# archive its own run wrote, which it names.
#
# GPU_CHECK_PYTHON: the interpreter with torch (default: python3). GPU_CHECK_PRESET: the
# preset (default: documents on a GPU, ci without one). GPU_CHECK_CORES: Snakemake's cores.
# GPU_CHECK_SECTIONS: some sections only, by name, space-separated (default: every one).
# GPU_CHECK_MACHINE: this machine's id (default: derived from the hardware, as the
# workflow derives it). GPU_CHECK_KEEP=1 keeps the archive in CPU mode too,
# GPU_CHECK_DRY_RUN=1 plans the run without running it (the tests use both).
set -euo pipefail
# KIT is the caller's: resolved against the folder the command is run from, before the cd
# into the checkout; the default is the checkout's own gpu-check-kit.
if [ -n "${1:-}" ]; then
  kit=$(realpath -m -- "$1")
else
  kit=$(realpath -m -- "$(dirname "$0")/../gpu-check-kit")
fi
cd "$(dirname "$0")/.."
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
for module in torch pandas matplotlib scipy jinja2; do
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
# The check's own results id: the hardware's (as the workflow derives it, so that the kept
# archive is named after this machine) with -gpu-check, never the id the user's own runs
# here write under.
hardware=$(PYTHONPATH="$PWD/scripts" "$python" - "${GPU_CHECK_MACHINE:-}" <<'EOF'
import sys
from d2lperf.machine import MachineIdError, check_machine_id, machine_id
try:
    hardware = check_machine_id(sys.argv[1] or machine_id(), "this machine's id")
    check_machine_id(f"{hardware}-gpu-check", "the GPU check's results id")
except MachineIdError as error:
    sys.exit(f"gpu_check: {error}; name this machine with GPU_CHECK_MACHINE=<shorter id>")
print(hardware)
EOF
) || exit 2
results_id="$hardware-gpu-check"
echo "gpu_check: $mode mode, preset $preset, $cores cores, torch from $python," \
     "results/$results_id/"
# NVML (nvidia-ml-py, from the kit): what the runs will meter of the GPUs' energy and
# clocks, or why they will record none (docs/design.md, "Energy and clocks").
nvml=$(PYTHONPATH="$PWD/scripts:$PYTHONPATH" "$python" - <<'EOF'
from d2lperf import energy
with energy.Meter() as meter:
    pass
reading = meter.reading()
gpus = reading.get("gpus") or []
names = ", ".join(sorted({str(g["name"]) for g in gpus}))
print(f"{len(gpus)} GPU(s) metered ({names})" if gpus else f"none: {reading['reason']}")
EOF
) || nvml="none: the check of NVML failed"
echo "gpu_check: NVML: $nvml"

# Given as a JSON file, not as --config KEY=VALUE: Snakemake reads each such VALUE as YAML,
# which would make a path with ' #' in it shorter, or one with ': ' a mapping.
config="$here/config.json"
"$python" - "$config" "$preset" "$interpreter" "$kit/fashion-mnist" "$on_cpu" \
  "${GPU_CHECK_SECTIONS:-}" "$results_id" <<'EOF'
import json, sys
out, preset, torch_python, data_dir, on_cpu, sections, results_id = sys.argv[1:]
# The check's own id as machine, and the stock BLAS (a BLAS variant would add to the
# folder's name): results/<results_id>/ and archives/<results_id>.tar.gz, whatever
# config/config.yaml says.
# JAX's twins too where this interpreter has jax and flax (the GPU machines this project is
# checked on do), with the versions found there (each run records them)
try:
    import flax, jax  # noqa: F401
    frameworks = {"frameworks": ["pytorch", "jax"], "jax_python": torch_python}
except ImportError:
    frameworks = {"frameworks": ["pytorch"]}
config = {"preset": preset, **frameworks, "torch_python": torch_python,
          "data_dir": data_dir, "gpu_sections_on_cpu": on_cpu == "True",
          "machine": results_id, "blas": "bundled", "blas_coretype": ""}
if sections.split():  # names only: the workflow's config check refuses any other
    config["sections"] = sections.split()
with open(out, "w", encoding="utf-8") as handle:
    json.dump(config, handle)
EOF
start=$(date +%s)
# The archive is written by this run, every time (--forcerun archive): an archive left by an
# earlier check here is never kept as this one's. The stamp tells the two apart.
archive="archives/$results_id.tar.gz"
stamp="$here/started"
touch "$stamp"
run=("$interpreter" -m snakemake all archive --forcerun archive --cores "$cores"
     --configfile "$config")
if [ "${GPU_CHECK_DRY_RUN:-0}" = 1 ]; then  # the tests: the configuration as the run reads it
  exec "${run[@]}" -n
fi
"${run[@]}"
echo "gpu_check: finished in $(( $(date +%s) - start )) s"

[ -f "$archive" ] && [ -n "$(find "$archive" -newer "$stamp")" ] ||
  fail "$PWD/$archive was not written by this run, so nothing is kept: see" \
       "$PWD/logs/archive-$results_id.log and run this again"
echo "gpu_check: report results/$results_id/report.html"
echo "gpu_check: archive $archive"
# Kept as <hardware id>-<date>.tar.gz: `make report` imports it under that name (never the
# id of a machine running here), so every later report compares against this GPU. A kept
# archive of that name that differs (a second check the same day) is not overwritten: this
# one gets the next free -2, -3, ...
if [ "$mode" = gpu ] || [ "${GPU_CHECK_KEEP:-0}" = 1 ]; then
  mkdir -p report/machines
  name="$hardware-$(date -u +%Y-%m-%d)"
  kept="report/machines/$name.tar.gz"
  n=1
  while [ -e "$kept" ] && ! cmp -s "$archive" "$kept"; do
    n=$((n + 1))
    kept="report/machines/$name-$n.tar.gz"
  done
  cp "$archive" "$kept"
  echo "gpu_check: kept as $kept (commit it)"
fi
