"""Shared fixtures: the repository, the two environments, and a runnable copy of the workflow."""

from __future__ import annotations

import csv
import functools
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
WORKFLOW_PYTHON = Path(sys.executable)
SNAKEMAKE = WORKFLOW_PYTHON.parent / "snakemake"
# The MXNet environment that `make test` creates; another one can be named.
EXPERIMENT_PYTHON = Path(os.environ.get("EXPERIMENT_PYTHON", REPO / ".venv-mxnet/bin/python"))
# Every program a test starts imports this tree's d2lperf, whatever an environment installed.
os.environ["PYTHONPATH"] = os.pathsep.join(
    filter(None, [str(REPO / "scripts"), os.environ.get("PYTHONPATH")]))
COPY_IGNORE = shutil.ignore_patterns(
    ".git", ".venv", ".venv-*", "results", ".snakemake", "__pycache__",
    ".pytest_cache", ".ruff_cache", "artifacts", "gpu-check-kit", ".gpu-check", "archives",
)


# The PyTorch environment that `make test` creates (config key torch_python); another can be named.
TORCH_PYTHON = Path(os.environ.get("TORCH_PYTHON", REPO / ".venv-torch/bin/python"))


@pytest.fixture(scope="session")
def torch_python() -> Path:
    if not TORCH_PYTHON.exists():
        pytest.fail(f"PyTorch environment missing: {TORCH_PYTHON} (run `make envs`)")
    return TORCH_PYTHON


# The JAX environment that `make test` creates (config key jax_python), or JAX_PYTHON.
JAX_PYTHON = Path(os.environ.get("JAX_PYTHON", REPO / ".venv-jax/bin/python"))


@pytest.fixture(scope="session")
def jax_python() -> Path:
    if not JAX_PYTHON.exists():
        pytest.fail(f"JAX environment missing: {JAX_PYTHON} (run `make envs`)")
    return JAX_PYTHON


@pytest.fixture(scope="session")
def experiment_python() -> Path:
    if not EXPERIMENT_PYTHON.exists():
        pytest.fail(f"MXNet environment missing: {EXPERIMENT_PYTHON} (run `make envs`)")
    return EXPERIMENT_PYTHON


def ctrl_c_as_in_a_terminal() -> None:
    """For ``preexec_fn``: SIGINT back to its default in the child, as in a terminal. A test
    run started as a background job of a non-interactive shell inherits SIGINT ignored, and
    a test's Ctrl-C would then reach nothing."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def copy_workflow(dest: Path) -> Path:
    """A copy of the workflow's files in which Snakemake can run without touching ours."""
    shutil.copytree(REPO, dest, ignore=COPY_IGNORE, symlinks=True)
    return dest


def snakemake(workdir: Path, *args: str, timeout: int = 900) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(SNAKEMAKE), *args], cwd=workdir, capture_output=True, text=True, timeout=timeout
    )


def wait_for(predicate, seconds: float = 120.0, poll: float = 0.1) -> bool:
    """Whether ``predicate()`` came true within ``seconds`` (a hang guard: long enough for
    a slow machine)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(poll)
    return False


def jobs_planned(output: str) -> list[str]:
    """The rules of the jobs a Snakemake run planned, from its job stats table (a job with a
    message: prints that instead of its rule's name); empty when nothing was to be done."""
    lines = output.splitlines()
    start = next((k for k, line in enumerate(lines) if line.split()[:2] == ["job", "count"]),
                 None)
    if start is None:
        return []
    found = []
    for line in lines[start + 2:]:  # past the header and its rule
        parts = line.split()
        if not parts or parts[0] == "total":
            break
        found += [parts[0]] * int(parts[1])
    return found


def a_job_started(output: str) -> bool:
    """Whether Snakemake started any job: a job with a message prints "Job N: <message>",
    one without prints "rule <name>:" (or localrule)."""
    return re.search(r"^(Job \d+: |(local)?rule \w+:$)", output, re.M) is not None


def run_script(python: Path, script: str, *args: str, timeout: int = 600,
               env: dict[str, str] | None = None):
    """A section's script (``sections/<name>/<name>_<framework>.py``, under scripts/) run by
    hand."""
    return subprocess.run(
        [str(python), str(REPO / "scripts" / script), *args],
        capture_output=True, text=True, timeout=timeout, env=env,
    )


def run_command(python: Path, command: str, *args: str, timeout: int = 600,
                env: dict[str, str] | None = None, **popen):
    """``d2lperf COMMAND ARGS`` run with ``python`` (``python -m d2lperf``)."""
    return subprocess.run(
        [str(python), "-m", "d2lperf", command, *args],
        capture_output=True, text=True, timeout=timeout, env=env, **popen,
    )


def run_program(python: Path, *parts: str, env: dict[str, str] | None = None,
                timeout: int = 300):
    """Run the Python program made of ``parts`` (each dedented on its own) with ``python``,
    d2lperf importable; return what it printed last, read as JSON."""
    program = "\n".join(textwrap.dedent(part) for part in parts)
    done = subprocess.run([str(python), "-c", program], capture_output=True, text=True,
                          timeout=timeout, cwd=REPO / "scripts", env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def crashing_python(folder: Path, module: str, message: str | None = None) -> Path:
    """An interpreter that passes the check before a run (it answers the framework's
    version) and fails as each section starts, printing ``message`` (by default what a
    Python without the framework says); machine-info it runs with the workflow's Python."""
    message = message or f"ModuleNotFoundError: No module named '{module}'"
    path = folder / f"python-without-{module}"
    path.write_text("#!/bin/sh\n"
                    'case "$*" in -c*) echo 99.0; exit 0;; "-m d2lperf machine-info"*)'
                    f' exec {WORKFLOW_PYTHON} "$@";; esac\n'
                    f"echo {shlex.quote(message)} >&2\nexit 1\n")
    path.chmod(0o755)
    return path


CI_MACHINE = "ci-test-machine"
# The steadiness probe's work in the tests' runs: a quarter of the config's 0.2 s. Each
# section's manager times it 13 times at least (before, after, each stage), 2.6 s of a
# CI-preset section's ~10 s at 0.2; the probe's figures are checked, not its duration.
CI_PROBE_SECONDS = 0.05
# Both frameworks (the config's default); the copies of the workflow have no environments
# of their own, so each run names the interpreters (experiment_python where it is given).
CI_CONFIG = ["--config", "preset=ci", f"machine={CI_MACHINE}", "gpu_sections_on_cpu=True",
             f"torch_python={TORCH_PYTHON}", f"probe_seconds={CI_PROBE_SECONDS}"]


@pytest.fixture(scope="session")
def ci_run(tmp_path_factory, experiment_python):
    """The whole workflow, CI preset, GPU sections on CPU contexts, in a temporary copy.
    Returns (copy, results folder); what Snakemake printed is in the copy's console.log."""
    work = copy_workflow(tmp_path_factory.mktemp("ci") / "wf")
    done = snakemake(work, "--cores", "2", *CI_CONFIG, f"experiment_python={experiment_python}")
    (work / "console.log").write_text(done.stdout + done.stderr, encoding="utf-8")
    assert done.returncode == 0, done.stderr[-5000:]
    return work, work / "results" / CI_MACHINE


def from_the_ci_run(ci_run, section: str, framework: str):
    """One section's results as the CI run made them (its script at the CI preset, through
    the workflow, GPU sections on their CPU stand-ins): its folder, run record and log
    (stdout and stderr), read by a section's tests rather than run a second time."""
    from d2lperf.frameworks import rule_name

    _, results = ci_run
    rule = rule_name(section, framework)
    return (results / rule, read_run(results / rule),
            (results / "logs" / f"{rule}.log").read_text(encoding="utf-8"))


def ci_preset(section: str) -> dict:
    """The CI preset's options of a section, as the shipped config gives them."""
    return shipped_config()["presets"]["ci"][section]


def shipped_config() -> dict:
    """config/config.yaml with its presets completed as a run takes them: every section's
    declared entry with the config's keys over it."""
    import yaml

    from d2lperf.sections import complete_presets

    config = yaml.safe_load((REPO / "config/config.yaml").read_text(encoding="utf-8"))
    return {**config, "presets": complete_presets(config.get("presets"))}


def run_section(python: Path, script: str, out: Path, *args: str, timeout: int = 600,
                env: dict[str, str] | None = None):
    """Run a section script that writes out/samples.csv and out/run.json."""
    return run_script(python, script, *args, "--csv", str(out / "samples.csv"),
                      "--sidecar", str(out / "run.json"), timeout=timeout, env=env)


def measure(python: Path, script: Path | str, *args: str, section: str | None = None,
            framework: str | None = None, timeout: int = 600,
            env: dict[str, str] | None = None, **popen) -> subprocess.CompletedProcess:
    """A section measured as its rule measures it: the manager (`d2lperf measure`, in this,
    the workflow's interpreter) running the worker ``script`` (under scripts/, or a path)
    with ``python``; its section and framework from the script's path
    (``sections/<section>/<section>_<framework>.py``) unless given."""
    path = Path(script) if Path(script).is_absolute() else REPO / "scripts" / script
    command = [sys.executable, "-m", "d2lperf", "measure",
               "--section", section or path.parent.name,
               "--framework", framework or path.stem.removeprefix(path.parent.name + "_"),
               "--python", str(python), "--script", str(path), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env,
                          **popen)


def measure_section(python: Path, script: str, out: Path, *args: str, timeout: int = 600,
                    env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """``measure`` a section into out/samples.csv and out/run.json."""
    return measure(python, script, *args, "--csv", str(out / "samples.csv"),
                   "--sidecar", str(out / "run.json"), timeout=timeout, env=env)


def read_rows(out: Path) -> list[dict[str, str]]:
    with open(out / "samples.csv", newline="") as handle:
        return list(csv.DictReader(handle))


def read_run(out: Path) -> dict:
    return json.loads((out / "run.json").read_text())


def samples_by_case(rows: list[dict[str, str]]) -> dict[str, list[float]]:
    """Each case's values, in row order."""
    samples: dict[str, list[float]] = {}
    for row in rows:
        samples.setdefault(row["case"], []).append(float(row["value"]))
    return samples


# What a section's run record holds beyond its own options when its script ran by hand, in
# one process: no processes, budget or band (those are the manager's, d2lperf.manager).
SINGLE_PROCESS = {"seed": 0, "probe_seconds": 0.2}


# --- the quick tier: `make check` runs `pytest -m "not slow"` -------------------------------
# A test is slow when it starts a framework's interpreter, a Snakemake run, a browser, SLURM
# or a timing job (`d2lperf measure`, a section's script), or takes over half a second on 2
# cores (most of those start the pipeline's steps as processes), so that the rest runs in
# under a minute. Those that start one through a fixture are marked here, by the fixtures
# they use (directly or through another fixture); the others carry `@pytest.mark.slow` (or
# a module's `pytestmark`) in their own file. Every test not marked slow runs with the guard
# below, which fails it, loudly, the moment it starts one of those.
SLOW_FIXTURES = {
    "experiment_python", "torch_python", "jax_python",  # a framework's interpreter
    "ci_run",  # the whole workflow at the CI preset
    "slurm",  # SLURM's daemons (test_slurm.py)
    "kit",  # the GPU kit, made with pip (test_gpu_check.py)
    "workflow_copy",  # Snakemake's dry runs in a copy of the workflow (test_blas.py)
}


def pytest_collection_modifyitems(config, items):
    for item in items:
        if SLOW_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)


def _under_a_framework_environment(program: str) -> bool:
    path = Path(program)
    if not path.is_absolute() and os.sep not in program:
        return False
    path = Path(os.path.abspath(path))
    if path in {EXPERIMENT_PYTHON, TORCH_PYTHON, JAX_PYTHON}:
        return True
    return any(part.startswith(".venv-") for part in path.parts)


HEAVY_PROGRAMS = {"snakemake", "chromium", "chromium-browser", "chrome", "headless_shell",
                  "srun", "sbatch", "salloc", "slurmctld", "slurmd", "munged"}


def _what_is_heavy(args) -> str | None:
    """What in a command line a quick test may not start, or None."""
    if isinstance(args, str | bytes | os.PathLike):
        args = os.fsdecode(args)
        try:
            argv = shlex.split(args)
        except ValueError:
            argv = args.split()
    else:
        argv = [os.fsdecode(a) for a in args]
    if not argv:
        return None
    if _under_a_framework_environment(argv[0]):
        return f"a framework's interpreter ({argv[0]})"
    for k, word in enumerate(argv):
        name = os.path.basename(word)
        if name in HEAVY_PROGRAMS or (word == "-m" and argv[k + 1:k + 2] == ["snakemake"]):
            return f"{name if name in HEAVY_PROGRAMS else 'snakemake'}"
        if word == "measure" and argv[max(0, k - 1)].endswith("d2lperf"):
            return "a timing job (d2lperf measure)"
        if "scripts/sections/" in word or name in {"gpu_check.sh", "gpu_check_prepare.sh"}:
            return f"a timing job or the GPU kit ({word})"
        if "playwright" in word:
            return "a browser (playwright)"
    return None


@functools.cache
def _quick_lock() -> str:
    """The host's timing lock of the quick tests, in a folder of the session's own."""
    return str(Path(tempfile.mkdtemp(prefix="d2lperf-quick-tests-")) / "host.lock")


def pytest_sessionfinish(session):
    if _quick_lock.cache_info().currsize:
        shutil.rmtree(Path(_quick_lock()).parent, ignore_errors=True)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """A test not marked slow may not start what a slow one does (SLOW_FIXTURES)."""
    if item.get_closest_marker("slow"):
        yield
        return
    original = subprocess.Popen.__init__

    def checked(self, args, *rest, **options):
        heavy = _what_is_heavy(args)
        if heavy:
            pytest.fail(f"{item.nodeid} is not marked slow but starts {heavy}: mark it "
                        "@pytest.mark.slow (or add its fixture to SLOW_FIXTURES in "
                        "tests/conftest.py)", pytrace=False)
        original(self, args, *rest, **options)

    # A step a quick test starts (summarise, report, import) takes the host's timing lock
    # shared: it would wait, for as long as it takes, for another run's timing on this host.
    # A lock of the session's own, unless the test names one; it times nothing.
    from d2lperf.hostlock import LOCK_VARIABLE

    lock = os.environ.get(LOCK_VARIABLE)
    if lock is None:
        os.environ[LOCK_VARIABLE] = _quick_lock()
    subprocess.Popen.__init__ = checked
    try:
        yield
    finally:
        subprocess.Popen.__init__ = original
        if lock is None:
            os.environ.pop(LOCK_VARIABLE, None)
