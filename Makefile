# Two commands matter: `make report` and `make test` (`make check`: its quick tier, after
# every change). Everything else is a step of theirs.
SHELL := /bin/bash
PYTHON ?= python3
CORES ?= 4
VENV := .venv
MXVENV := .venv-mxnet
TVENV := .venv-torch
SNAKEMAKE := $(VENV)/bin/snakemake
AXE := tests/.axe

# Before anything is built, one line where $(PYTHON) cannot build the environments: a
# Python other than 3.11, 3.12 or 3.13 (MXNet's numpy is pinned per Python:
# envs/mxnet.lock.txt), or one without ensurepip (Debian's python3-venv): d2lperf.pythons.
# Not for the goals that build no environment.
NO_PYTHON_GOALS := clean data blas slurm
ifneq ($(filter-out $(NO_PYTHON_GOALS),$(or $(MAKECMDGOALS),report)),)
PYTHON_PROBLEM := $(shell why=$$(PYTHONPATH=scripts $(PYTHON) -m d2lperf.pythons '$(PYTHON)' \
	2>/dev/null) || echo "$${why:-PYTHON=$(PYTHON) does not run as Python 3: point PYTHON= at \
	Python 3.11, 3.12 or 3.13, e.g. make report PYTHON=python3.12}")
ifneq ($(PYTHON_PROBLEM),)
$(error $(PYTHON_PROBLEM))
endif
endif

.PHONY: report test check setup envs data browser blas slurm lint lock bench clean site
.PHONY: lock-mxnet lock-torch all-envs framework-envs

## report: set everything up, run the pipeline, print where the report is
## (the archives kept under report/machines/, such as a GPU check's, are compared too)
report: setup
	$(VENV)/bin/d2lperf import --kept report/machines
	$(SNAKEMAKE) --cores $(CORES)

## site: one page for every machine measured, site/index.html (each machine's report beside
## it); the machines kept under report/machines/ are imported first, as `make report` does
site: $(VENV)/.installed
	$(VENV)/bin/d2lperf import --kept report/machines
	$(VENV)/bin/d2lperf site --results results --out site

## test: set up what the tests need, then run every test (CI's command; a test that runs make
## gets a make of its own, as from a shell, not this one's)
test: all-envs data browser blas slurm
	env -u MAKELEVEL -u MAKEFLAGS -u MFLAGS $(VENV)/bin/pytest

## check: after every change, in under a minute: ruff, and every test not marked slow (those
## that start a framework, a Snakemake run, a browser, SLURM or a timing job, or take over
## half a second, are: tests/conftest.py), with the workflow environment alone: no root or network
## (the environment as it is, built where missing: never a reinstall, so never the network;
## a test that runs make gets a make of its own, not this one's)
check: | $(VENV)/.installed
	$(VENV)/bin/ruff check scripts tests bench
	env -u MAKELEVEL -u MAKEFLAGS -u MFLAGS $(VENV)/bin/pytest -m 'not slow' -q -p no:cacheprovider \
	  --durations=10

setup: envs data

# The package and its command (pyproject.toml: d2lperf, its code in scripts/d2lperf) go into
# every environment, editable: `d2lperf ...` runs this tree's code, and so does a section
# script run by hand in its framework's environment. Before any environment exists (to
# choose MXNet's build), the system's Python runs it from the tree.
INSTALL_D2LPERF = bin/pip install --quiet --disable-pip-version-check --no-deps -e .
D2LPERF_HERE := PYTHONPATH=scripts $(PYTHON) -m d2lperf

# The environments of the frameworks the config runs (config/config.yaml's `frameworks`;
# JAX's, 0.75 GB, only where it is listed), or of those named: `make envs FRAMEWORKS=jax`.
# The list is read with the workflow environment's yaml, so `envs` builds that one first,
# then the rest in a second make that can read it. `make test` builds every framework's.
# A framework without a rule of its own below is built from its lock by the pattern rule
# (the registry: scripts/d2lperf/frameworks.py).
FRAMEWORKS ?= $(shell [ -x $(VENV)/bin/python ] && cd scripts && ../$(VENV)/bin/python -c \
	'from d2lperf import frameworks; print(*frameworks.configured("../config/config.yaml"))')
ALL_FRAMEWORKS := $(shell cd scripts && $(PYTHON) -c \
	'from d2lperf import frameworks; print(*frameworks.names())')
venvs = $(shell cd scripts && $(PYTHON) -c \
	'import sys; from d2lperf import frameworks; print(*frameworks.environments(sys.argv[1:]))' $(1))
FRAMEWORK_VENVS := $(call venvs,$(ALL_FRAMEWORKS))
envs: $(VENV)/.installed
	@$(MAKE) --no-print-directory framework-envs
all-envs: $(VENV)/.installed
	@$(MAKE) --no-print-directory framework-envs FRAMEWORKS='$(ALL_FRAMEWORKS)'
framework-envs: $(addsuffix /.installed,$(call venvs,$(FRAMEWORKS)))

# The workflow environment: Snakemake, pandas, matplotlib, jinja2, pytest (modern numpy).
$(VENV)/.installed: envs/workflow.lock.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check -r $<
	$(VENV)/$(INSTALL_D2LPERF)
	touch $@

# The MXNet environment: MXNet 1.9.1, which needs numpy < 1.24 (docs/design.md,
# "One environment per framework"). Its lock pins numpy per Python (1.23.5 on 3.11, the
# reference archives'; 1.26.4 on 3.12; 2.x on 3.13; setuptools from 3.12 for the distutils
# MXNet imports), installed as pinned (--no-deps: mxnet's own metadata asks numpy < 2) and
# from wheels only (never a build from source); `mxnet-build install-shim` makes this
# environment put back the numpy names MXNet still uses before it loads
# (d2lperf.mxnet_compat).
# `d2lperf mxnet-build` picks the build and says why in one line: where MXNet has kernels
# for a GPU here (compute capability 5.0-8.9, read from nvidia-smi), its CUDA 11.7 build
# with CUDA 11's libraries from PyPI (envs/mxnet-cu117.lock.txt), linked beside
# libmxnet.so; else (9.0 and later, or no driver) the CPU build. Override with
# `make MXNET_BUILD=mxnet ...` (auto, mxnet, mxnet-cu112, mxnet-cu117); each run records
# which build ran.
MXNET_BUILD ?= auto
$(MXVENV)/.installed: envs/mxnet.lock.txt envs/mxnet-cu117.lock.txt pyproject.toml
	$(PYTHON) -m venv $(MXVENV)
	$(D2LPERF_HERE) mxnet-build requirements --build '$(MXNET_BUILD)' --out $(MXVENV)/requirements.txt
	$(MXVENV)/bin/pip install --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
	  -r $(MXVENV)/requirements.txt
	$(MXVENV)/$(INSTALL_D2LPERF)
	$(D2LPERF_HERE) mxnet-build install-shim --venv $(MXVENV)
	$(D2LPERF_HERE) mxnet-build link-cuda-libs --venv $(MXVENV)
	@scripts/install_packages.sh "the libgfortran.so.3 inside MXNet's wheels" libquadmath0
	sed -n 's/^\(mxnet[-a-z0-9]*\)==.*/\1/p' $(MXVENV)/requirements.txt > $@

# The PyTorch environment (docs/design.md, "Three frameworks, one report"): torch and numpy for the sections' PyTorch twins.
# Where no NVIDIA driver answers, torch's CPU build (2.13.0+cpu): first from the wheels pip
# already knows (a wheel folder or mirror in pip's own configuration: offline), else from
# PyTorch's CPU index, TORCH_CPU_INDEX. Where `nvidia-smi` answers, the CUDA build from
# PyPI (its nvidia-* libraries pinned by torch's own metadata). Override with
# `make TORCH_BUILD=cpu ...`; each run records which build ran (run.json: torch).
TORCH_BUILD ?= $(shell nvidia-smi -L >/dev/null 2>&1 && echo cuda || echo cpu)
TORCH_CPU_INDEX ?= https://download.pytorch.org/whl/cpu
$(TVENV)/.installed: envs/torch.lock.txt pyproject.toml
	$(PYTHON) -m venv $(TVENV)
	sed '$(if $(filter cpu,$(TORCH_BUILD)),s/^torch==\(.*\)$$/torch==\1+cpu/)' $< > $(TVENV)/requirements.txt
	$(TVENV)/bin/pip install --quiet --disable-pip-version-check -r $(TVENV)/requirements.txt \
	  || { [ $(TORCH_BUILD) = cpu ] && $(TVENV)/bin/pip install --quiet \
	       --disable-pip-version-check --extra-index-url $(TORCH_CPU_INDEX) \
	       -r $(TVENV)/requirements.txt; }
	$(TVENV)/$(INSTALL_D2LPERF)
	echo $(TORCH_BUILD) > $@

# A framework's environment from its lock alone (JAX's: jax and jaxlib's CPU build, flax,
# optax); envs/<name>.lock.txt for .venv-<name>.
.venv-%/.installed: envs/%.lock.txt pyproject.toml
	$(PYTHON) -m venv .venv-$*
	.venv-$*/bin/pip install --quiet --disable-pip-version-check -r $<
	.venv-$*/$(INSTALL_D2LPERF)
	touch $@

## data: Fashion-MNIST from Debian's package where possible (the training sections need it)
data:
	@scripts/install_data.sh

## browser: headless Chromium (and a CJK font for the documents' headings) for the report's test,
# and axe-core (in a pinned wheel, injected from disk: no network at test time) for its
# accessibility check
browser: $(AXE)/.installed
	@scripts/install_packages.sh "the report's browser test" chromium fonts-wqy-zenhei

# In a folder of its own (only its axe.min.js is used), after `setup` made the venv.
$(AXE)/.installed: envs/browser.lock.txt
	rm -rf $(AXE)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check --no-deps --target $(AXE) -r $<
	touch $@

## blas: Debian's OpenBLAS, for `--config blas=system` (MXNet's bundled BLAS vs a modern one)
blas:
	@scripts/install_packages.sh "the system-BLAS variant" libopenblas0-pthread

## slurm: Debian's slurm-wlm and munge, for the tests that run the workflow on a two-node SLURM
# (no recommends: a few small packages; no slurmdbd, the test uses the plugin's squeue mode)
slurm:
	@scripts/install_packages.sh --no-recommends "the SLURM executor's test" slurm-wlm munge

lint: envs
	$(VENV)/bin/ruff check scripts tests bench
	$(VENV)/bin/snakefmt --check Snakefile workflow/rules
	$(SNAKEMAKE) --lint

## lock: re-pin every environment from what is installed now (the CUDA 11 pins by hand)
lock: all-envs
	{ sed -n 1,2p envs/workflow.lock.txt; $(VENV)/bin/pip freeze; } > envs/workflow.lock.tmp
	mv envs/workflow.lock.tmp envs/workflow.lock.txt

# MXNet's: its CUDA build pinned as the plain mxnet, CUDA 11's libraries by hand, and so
# are numpy and setuptools, one pin per Python (the lines with a marker, kept as they are).
lock-mxnet: all-envs
	{ sed -n 1,2p envs/mxnet.lock.txt; { $(MXVENV)/bin/pip freeze --exclude-editable | \
	  sed -E '/^nvidia-/d; /^(numpy|setuptools)==/d; s/^mxnet-cu[0-9]+==/mxnet==/'; \
	  grep -E '^(numpy|setuptools)==.*;' envs/mxnet.lock.txt; } | LC_ALL=C sort -f; } \
	  > envs/mxnet.lock.tmp
	mv envs/mxnet.lock.tmp envs/mxnet.lock.txt

# Every other framework's (JAX's, one added later): its lock from its environment, as the
# pattern rule .venv-%/.installed builds that environment from it.
lock: $(patsubst .venv-%,lock-%,$(FRAMEWORK_VENVS))
lock-%: all-envs
	{ sed -n 1,2p envs/$*.lock.txt; .venv-$*/bin/pip freeze; } > envs/$*.lock.tmp
	mv envs/$*.lock.tmp envs/$*.lock.txt

# torch's local build label (+cpu) and the CUDA build's own libraries stay out of the pins.
lock-torch: all-envs
	{ sed -n 1,2p envs/torch.lock.txt; $(TVENV)/bin/pip freeze \
	  | sed 's/^torch==\([^+]*\)+.*/torch==\1/' | grep -v -e '^nvidia-' -e '^triton=='; } \
	  > envs/torch.lock.tmp
	mv envs/torch.lock.tmp envs/torch.lock.txt

# The commit before side-by-side measurement (docs/design.md, "Measured side by side") and
# PyTorch: bench prints its run time beside this tree's. The verdicts' stability runs twice:
# quiet, then with one core kept busy by a bounded spin the bench starts and stops; both
# printed side by side. Then every BLAS's kernel and rate beside the machine's ceilings, and
# how far LeNet's accuracy moves from seed to seed in each framework.
# Each benchmark's printed figures replace its part of docs/measurements.md (bench/record.py).
BENCH_BASELINE ?= 8a3f68d
BENCH := $(VENV)/bin/python bench/record.py
bench: all-envs
	$(BENCH) pipeline_overhead bench/pipeline_overhead.py --against $(BENCH_BASELINE)
	$(BENCH) frameworks_cost bench/frameworks_cost.py
	$(BENCH) verdict_stability bench/verdict_stability.py --runs 3 --modes quiet busy
	$(BENCH) blas_kernels bench/blas_kernels.py
	$(BENCH) accuracy_spread bench/accuracy_spread.py --seeds 5

clean:
	rm -rf $(VENV) $(FRAMEWORK_VENVS) $(AXE) .snakemake
