"""Is each framework the config asks for there, before any job runs?

``frameworks: [mxnet, pytorch]`` names the frameworks; ``experiment_python`` and
``torch_python`` their interpreters. Each interpreter is asked for its framework's version
in a short subprocess that does not import it (it never runs anything from the config but
the interpreter named there, with a fixed program). A missing interpreter, a missing
framework or one too old gives a message naming the key and how to fix it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from pathlib import Path

from d2lperf.torch import MIN_VERSION as TORCH_MIN_VERSION
from d2lperf.torch import version_problem as torch_version_problem

FRAMEWORKS = ("mxnet", "pytorch")
# framework: (config key of its interpreter, module to import, how `make` builds it)
INTERPRETERS = {
    "mxnet": ("experiment_python", "mxnet", "`make envs` (it builds .venv-mxnet)"),
    "pytorch": ("torch_python", "torch", "`make envs` (it builds .venv-torch)"),
}
TIMEOUT = 120  # seconds: importing torch from a cold disk takes a while


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
    key, module, build = INTERPRETERS[framework]
    fix = (f"set config key {key} to an interpreter that has {module}, or run {build} "
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
    if framework == "pytorch":
        too_old = torch_version_problem(version)
        if too_old:
            minimum = ".".join(map(str, TORCH_MIN_VERSION))
            return (f"config key {key} = {str(python)!r}: {too_old}; install torch >= "
                    f"{minimum} there, or {fix}")
    return None
