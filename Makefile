# Two commands matter: `make report` and `make test`. Everything else is a step of theirs.
SHELL := /bin/bash
PYTHON ?= python3
CORES ?= 4
VENV := .venv
MXVENV := .venv-mxnet
SNAKEMAKE := $(VENV)/bin/snakemake
AXE := tests/.axe

.PHONY: report test setup envs data browser blas slurm lint lock bench clean

## report: set everything up, run the pipeline, print where the report is
report: setup
	$(SNAKEMAKE) --cores $(CORES)

## test: set up what the tests need, then run every test
test: setup browser blas slurm
	$(VENV)/bin/pytest

setup: envs data

envs: $(VENV)/.installed $(MXVENV)/.installed

# The workflow environment: Snakemake, pandas, matplotlib, jinja2, pytest (modern numpy).
$(VENV)/.installed: envs/workflow.lock.txt
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check -r $<
	touch $@

# The experiment environment: MXNet 1.9.1, which needs numpy < 1.24 (DESIGN.md decision 1).
# Where an NVIDIA GPU answers, MXNet's CUDA build of the same release replaces the CPU one
# (override with `make MXNET_BUILD=mxnet-cu117 ...`); each run records which build ran.
MXNET_BUILD ?= $(shell nvidia-smi -L >/dev/null 2>&1 && echo mxnet-cu112 || echo mxnet)
$(MXVENV)/.installed: envs/mxnet.lock.txt
	$(PYTHON) -m venv $(MXVENV)
	sed 's/^mxnet==/$(MXNET_BUILD)==/' $< > $(MXVENV)/requirements.txt
	$(MXVENV)/bin/pip install --quiet --disable-pip-version-check -r $(MXVENV)/requirements.txt
	echo $(MXNET_BUILD) > $@

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

## slurm: Debian's slurm-wlm and munge, for the test that runs the workflow on a one-node SLURM
# (no recommends: a few small packages; no slurmdbd, the test uses the plugin's squeue mode)
slurm:
	@scripts/install_packages.sh --no-recommends "the SLURM executor's test" slurm-wlm munge

lint: envs
	$(VENV)/bin/ruff check scripts tests bench
	$(VENV)/bin/snakefmt --check Snakefile workflow/rules
	$(SNAKEMAKE) --lint

## lock: re-pin both environments from what is installed now
lock: envs
	{ sed -n 1,2p envs/workflow.lock.txt; $(VENV)/bin/pip freeze; } > envs/workflow.lock.tmp
	{ sed -n 1,2p envs/mxnet.lock.txt; $(MXVENV)/bin/pip freeze; } > envs/mxnet.lock.tmp
	mv envs/workflow.lock.tmp envs/workflow.lock.txt; mv envs/mxnet.lock.tmp envs/mxnet.lock.txt

bench: envs
	$(VENV)/bin/python bench/pipeline_overhead.py

clean:
	rm -rf $(VENV) $(MXVENV) $(AXE) .snakemake
