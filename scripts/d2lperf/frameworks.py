"""The frameworks that run the sections, once: every list of frameworks reads ``REGISTRY``.

A framework is a script in each section's folder
(``scripts/sections/<section>/<section>_<name>.py``), a module of ``d2lperf`` with what
it does differently (``devices``, ``sync``, ``seed``, the data loaders, ``build_info``;
d2l's ``mxnet.py``/``torch.py`` idiom), an environment (``envs/<...>.yaml`` and its
lock) with the interpreter a config key names, and how the plots and the report draw it.
The first one is the documents' framework: rule and folder names carry no suffix for it,
and records written before there were several frameworks are its.

Is each framework the config asks for there, before any job runs? ``problem`` asks the
interpreter for the framework's version in a short subprocess that does not import it
(it never runs anything from the config but the interpreter named there, with a fixed
program). A missing interpreter, a missing framework or one too old gives a message
naming the key and how to fix it.

This module imports nothing of the library (the Snakefile reads it at every start).
"""

from __future__ import annotations

import contextlib
import importlib
import os
import re
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Framework:
    """``name``: the tables' ``framework`` column and the scripts' folder; ``label``: how
    the plots and the report name it; ``colour``, ``marker`` (matplotlib) and ``shape``
    (the report's overview SVG): how they draw it. ``interpreter_key``: the config key
    of its interpreter (``default_interpreter`` where the config leaves it out);
    ``environment``/``lock``: its conda environment and locked packages (archived with
    the results); ``package``: the module it imports, asked for its version
    (``min_version``: the oldest that runs the sections), and the run record's key of
    its build; ``module``: d2lperf's module for it. ``gpu_everywhere``: every section runs
    on a GPU where the machine has one (its jobs ask SLURM for one at least): PyTorch
    queues work only there, JAX's default device is the GPU there. ``blas_variant``: a run
    on a system BLAS (LD_PRELOAD) swaps its BLAS, so it is the one framework such a variant
    runs. ``runs_as``: how a
    claim's "where it applies" names it, by the way it runs work (the label where
    empty)."""

    name: str
    label: str
    colour: str
    marker: str
    shape: str
    interpreter_key: str
    default_interpreter: str
    environment: str
    lock: str
    package: str
    module: str
    build: str
    min_version: tuple[int, int] | None = None
    gpu_everywhere: bool = False
    blas_variant: bool = False
    runs_as: str = ""


REGISTRY: dict[str, Framework] = {f.name: f for f in [
    Framework("mxnet", "MXNet", colour="#1f5fa8", marker="o", shape="circle",
              interpreter_key="experiment_python",
              default_interpreter=".venv-mxnet/bin/python",
              environment="envs/mxnet.yaml", lock="envs/mxnet.lock.txt",
              package="mxnet", module="d2lperf.mxnet",
              build="`make envs FRAMEWORKS=mxnet` (it builds .venv-mxnet)", blas_variant=True),
    # torch.compile (2.0) with the inductor CPU backend, torch.cuda.max_memory_allocated,
    # torch.backends.cuda.matmul.allow_tf32: all there from 2.1.
    Framework("pytorch", "PyTorch", colour="#c0470c", marker="s", shape="diamond",
              interpreter_key="torch_python",
              default_interpreter=".venv-torch/bin/python",
              environment="envs/torch.yaml", lock="envs/torch.lock.txt",
              package="torch", module="d2lperf.torch",
              build="`make envs FRAMEWORKS=pytorch` (it builds .venv-torch)",
              min_version=(2, 1), gpu_everywhere=True, runs_as="eager PyTorch"),
    # jax.jit is what hybridize() was; JAX dispatches asynchronously on a CPU too, and
    # splits the host into devices (d2lperf.jax): jax.block_until_ready from 0.4.
    Framework("jax", "JAX", colour="#2e7d32", marker="^", shape="triangle",
              interpreter_key="jax_python", default_interpreter=".venv-jax/bin/python",
              environment="envs/jax.yaml", lock="envs/jax.lock.txt",
              package="jax", module="d2lperf.jax",
              build="`make envs FRAMEWORKS=jax` (it builds .venv-jax)", min_version=(0, 4),
              gpu_everywhere=True),
]}
FRAMEWORKS = tuple(REGISTRY)
DOCUMENTS = FRAMEWORKS[0]  # the documents' framework; older records' framework
LABELS = {name: f.label for name, f in REGISTRY.items()}
TIMEOUT = 120  # seconds: importing torch from a cold disk takes a while


def module(name: str):
    """d2lperf's module for a framework of the registry, imported when asked (the
    modules import the leaves, this one among them)."""
    return importlib.import_module(REGISTRY[name].module)


def names() -> list[str]:
    return list(FRAMEWORKS)


def environments(names: list[str] | None = None) -> list[str]:
    """Each framework's default environment folder (``.venv-jax`` from
    ``.venv-jax/bin/python``), of those named (default: every one): what ``make envs``
    builds for the frameworks the config runs, and ``make test`` for all of them."""
    return [str(Path(REGISTRY[name].default_interpreter).parents[1])
            for name in (names or FRAMEWORKS)]


def configured(config: str | Path = "config/config.yaml") -> list[str]:
    """The frameworks the config's ``frameworks`` key runs, so that ``make envs`` builds
    only their environments (JAX's is 0.75 GB and not in the default run). Every framework
    where the key is absent (then every one runs), or the file or its list cannot be read
    (the config check will say why; building more never stops a run)."""
    import yaml  # the workflow's environment, which the Makefile builds first

    try:
        listed = (yaml.safe_load(Path(config).read_text(encoding="utf-8")) or {}).get(
            "frameworks")
    except (OSError, yaml.YAMLError, AttributeError):
        return names()
    if not isinstance(listed, list) or not listed or not set(listed) <= set(REGISTRY):
        return names()
    return [name for name in FRAMEWORKS if name in listed]


def rule_name(section: str, framework: str = DOCUMENTS) -> str:
    """A job's rule and results folder: ``<section>`` (the documents' framework),
    ``<section>_<framework>`` for every other."""
    return section if framework == DOCUMENTS else f"{section}_{framework}"


def parse_version(text: str) -> tuple[int, int]:
    """``(2, 13)`` from ``2.13.0+cpu`` or ``2.11.0a0+git1234``."""
    found = re.match(r"(\d+)\.(\d+)", text)
    if not found:
        raise ValueError(f"not a version: {text!r}")
    return int(found.group(1)), int(found.group(2))


def version_problem(framework: str, text: str) -> str | None:
    """Why this version of the framework cannot run the sections, or None when it can."""
    entry = REGISTRY[framework]
    if entry.min_version is None:
        return None
    try:
        found = parse_version(text)
    except ValueError:
        return f"not a {entry.package} version: {text!r}"
    if found < entry.min_version:
        return (f"{entry.package} {text} is too old: the {entry.label} sections need "
                f"{entry.package} >= {'.'.join(map(str, entry.min_version))}")
    return None


# Finds the module without importing it (importing torch takes seconds, and this runs
# at every Snakemake start); its version from the package metadata, or from the module
# itself where no distribution of that name is installed (MXNet's CUDA builds are named
# mxnet-cu112 and the like).
VERSION_PROGRAM = """
import importlib.metadata, importlib.util, sys
module, distribution = sys.argv[1], sys.argv[2]
if importlib.util.find_spec(module) is None:
    sys.exit(f"No module named {module!r}")
try:
    print(importlib.metadata.version(distribution))
except importlib.metadata.PackageNotFoundError:
    print(__import__(module).__version__)
"""


def _run_bounded(command: list[str], timeout: float) -> subprocess.CompletedProcess:
    """``command``'s output, or TimeoutExpired once every process it started is killed: it
    runs in a session of its own, killed whole (an interpreter that is a wrapper script
    starts a grandchild, which would otherwise live on, holding the pipes open)."""
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          start_new_session=True) as process:
        try:
            out, err = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
            raise
        return subprocess.CompletedProcess(command, process.returncode, out, err)


def problem(framework: str, python: str | Path, *, timeout: float = TIMEOUT) -> str | None:
    """Why ``python`` cannot run this framework's sections, or None when it can."""
    entry = REGISTRY[framework]
    key, module = entry.interpreter_key, entry.package
    fix = (f"set config key {key} to an interpreter that has {module}, or run {entry.build} "
           f"(or drop {framework} from config key frameworks)")
    if not Path(python).exists() and "/" in str(python):
        return f"config key {key} = {str(python)!r}: no such file; {fix}"
    try:
        done = _run_bounded([str(python), "-c", VERSION_PROGRAM, module, module], timeout)
    except OSError as error:
        return f"config key {key} = {str(python)!r}: cannot run it ({error.strerror}); {fix}"
    except subprocess.TimeoutExpired:
        return f"config key {key} = {str(python)!r}: importing {module} took over {timeout:g} s"
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return f"config key {key} = {str(python)!r}: cannot import {module} ({last}); {fix}"
    version = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    too_old = version_problem(framework, version)
    if too_old:
        minimum = ".".join(map(str, entry.min_version or ()))
        return (f"config key {key} = {str(python)!r}: {too_old}; install {module} >= "
                f"{minimum} there, or {fix}")
    return None
