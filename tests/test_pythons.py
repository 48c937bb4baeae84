"""MXNet's environment on Python 3.11, 3.12 and 3.13: the lock's numpy per Python, the
shim that puts back numpy's names MXNet 1.9.1 still uses (d2lperf.mxnet_compat), the
one-line refusal of any other Python or of one without ensurepip (d2lperf.pythons), the
Python and numpy a run record and the machines view name; and, slow, the environment
built by the Makefile's own rule with each pyenv interpreter here, running the CI preset's
hybridize section."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
import textwrap
import time
import types
import warnings
from pathlib import Path

import numpy
import pytest
from packaging.markers import default_environment
from packaging.requirements import Requirement

from conftest import EXPERIMENT_PYTHON, REPO, ci_preset, read_run, run_section
from d2lperf import mxnet_compat, provenance, pythons
from d2lperf.commands import compare, mxnet_build
from d2lperf.manager import MANAGER_OPTIONS
from d2lperf.presets import cli_args, for_framework
from d2lperf.report.comparison import differences

MXNET_SCRIPT = "sections/hybridize/hybridize_mxnet.py"  # under scripts/

LOCK = REPO / "envs/mxnet.lock.txt"
SUPPORTED = ["3.11", "3.12", "3.13"]


def pins_for(python: str) -> dict[str, str]:
    """The lock's pins pip installs on Python ``python`` (its markers evaluated)."""
    environment = {**default_environment(), "python_version": python,
                   "python_full_version": f"{python}.0"}
    pins = {}
    for line in mxnet_build.pinned(LOCK):
        requirement = Requirement(line)
        if requirement.marker is None or requirement.marker.evaluate(environment):
            assert requirement.name not in pins, f"{requirement.name} pinned twice for {python}"
            pins[requirement.name] = str(requirement.specifier).removeprefix("==")
    return pins


# --- the lock ------------------------------------------------------------------------------

def test_the_lock_pins_one_numpy_per_python_and_3_11_keeps_the_reference_archives():
    numpys = {python: pins_for(python)["numpy"] for python in SUPPORTED}
    print(numpys)
    assert numpys["3.11"] == "1.23.5"  # what the kept reference archives ran
    assert numpys["3.12"] == "1.26.4"  # the last 1.x, with cp312 wheels
    assert numpys["3.13"].startswith("2.")  # 1.26 has no cp313 wheel
    for python in SUPPORTED:  # distutils (mxnet/numpy_dispatch_protocol.py) from 3.12 on
        assert ("setuptools" in pins_for(python)) == (python != "3.11")
        assert pins_for(python)["mxnet"] == "1.9.1"
    assert [pythons.listed()] == ["3.11, 3.12 or 3.13"]  # the check's list is the lock's


def test_the_requirements_resolve_the_markers_as_pip_would():
    """`mxnet-build requirements` (standard library only) keeps the pins of the Python
    that runs it, as packaging's markers say; a marker it cannot read is refused."""
    for python in SUPPORTED:
        major, minor = map(int, python.split("."))
        resolved = mxnet_build.requirements("mxnet", python=(major, minor))
        assert ";" not in " ".join(resolved)
        assert {p.split("==")[0]: p.split("==")[1] for p in resolved} == pins_for(python)
    with pytest.raises(ValueError, match="only a python_version marker"):
        mxnet_build.for_python(['numpy==2.2.6; sys_platform == "linux"'], (3, 13))


@pytest.mark.slow  # over a second on 2 cores
def test_the_makefile_installs_the_pins_as_they_are_from_wheels_with_the_shim(tmp_path):
    dry = subprocess.run(["make", "-n", "-B", f"MXVENV={tmp_path}/venv",
                          f"PYTHON={sys.executable}", f"{tmp_path}/venv/.installed"],
                         cwd=REPO, capture_output=True, text=True, timeout=60)
    assert dry.returncode == 0, dry.stderr
    install = next(line for line in dry.stdout.splitlines() if "pip install" in line
                   and "--no-deps --only-binary=:all:" in line)
    assert install.startswith(f"{tmp_path}/venv/bin/pip")
    assert f"mxnet-build install-shim --venv {tmp_path}/venv" in dry.stdout


# --- the shim: each name it restores --------------------------------------------------------

# What numpy 1.23 gave for each name, checked on what the shim restores.
INF = float("inf")


def named(name):
    """A financial function's check: its stub carries its name (calling it fails, below)."""
    return lambda np: getattr(np, name).__name__ == name

CHECKS = {
    "bool": lambda np: np.bool is bool,
    "PZERO": lambda np: np.PZERO == 0.0 and math.copysign(1, np.PZERO) == 1,
    "NZERO": lambda np: np.NZERO == 0.0 and math.copysign(1, np.NZERO) == -1,
    "PINF": lambda np: np.PINF == INF,
    "NINF": lambda np: np.NINF == -INF,
    "Inf": lambda np: np.Inf == INF,
    "NAN": lambda np: math.isnan(np.NAN),
    "NaN": lambda np: math.isnan(np.NaN),
    "alltrue": lambda np: not np.alltrue([True, False]) and np.alltrue([[True], [True]]),
    "sometrue": lambda np: np.sometrue([False, True]) and not np.sometrue([False]),
    "in1d": lambda np: np.in1d([[1, 2], [3, 4]], [2, 3]).tolist() == [False, True, True, False]
    and np.in1d([1, 2], [2], invert=True).tolist() == [True, False],
    "round_": lambda np: np.round_([1.26, 2.5], 1).tolist() == [1.3, 2.5],
    "product": lambda np: np.product([2, 3, 4]) == 24,
    "cumproduct": lambda np: np.cumproduct([2, 3, 4]).tolist() == [2, 6, 24],
    "msort": lambda np: np.msort([[3, 1], [2, 4]]).tolist() == [[2, 1], [3, 4]],
    "trapz": lambda np: np.trapz([1, 2, 3]) == 4.0 and np.trapz([1, 2, 3], dx=2) == 8.0,
    **{name: named(name) for name in mxnet_compat.FINANCIAL},
}


def numpy_without(*names: str) -> types.ModuleType:
    """A stand-in numpy: today's numpy's functions, without ``names`` (those of them it
    still has are hidden)."""
    stand_in = types.ModuleType("numpy")
    for name in ("all", "any", "isin", "asarray", "sort", "round", "prod", "cumprod",
                 "trapezoid"):
        setattr(stand_in, name, getattr(numpy, name))

    def missing(name):
        raise AttributeError(f"module 'numpy' has no attribute {name!r}")
    stand_in.__getattr__ = missing
    for name in names:
        stand_in.__dict__.pop(name, None)
    return stand_in


def test_every_name_the_shim_restores_has_a_check():
    assert set(mxnet_compat.replacements(numpy)) == set(CHECKS)
    assert set(CHECKS) >= {"bool", "PZERO", "NZERO", "NINF", "PINF", "NAN", "NaN", "Inf",
                           "alltrue", "sometrue", "in1d", "round_", "product", "cumproduct",
                           "msort", "trapz", "fv", "ipmt", "irr", "mirr", "nper", "npv",
                           "pmt", "ppmt", "pv", "rate"}


@pytest.mark.parametrize("name", sorted(CHECKS))
def test_a_name_numpy_lacks_is_restored_as_numpy_1_23_had_it(name):
    stand_in = numpy_without(name)
    assert not mxnet_compat.has(stand_in, name)
    assert name in mxnet_compat.restore(stand_in)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert CHECKS[name](stand_in), name


@pytest.mark.parametrize("name", sorted(mxnet_compat.FINANCIAL))
def test_a_restored_financial_function_still_fails_when_called_naming_numpy_financial(name):
    stand_in = numpy_without(name)
    mxnet_compat.restore(stand_in)
    with pytest.raises(RuntimeError, match=f"function {name} was removed .*numpy_financial"):
        getattr(stand_in, name)(0.1, 10, 100)


def test_a_name_numpy_has_is_never_replaced():
    """Where numpy has a name (its own, or a deprecated alias answered by its module
    __getattr__, as numpy 1.23's np.bool was), the shim leaves it: no failure is hidden."""
    own = numpy_without()
    mine = {name: object() for name in CHECKS}
    own.__dict__.update(mine)
    assert mxnet_compat.restore(own) == []
    assert all(getattr(own, name) is value for name, value in mine.items())

    deprecated = numpy_without()

    def alias(name):
        warnings.warn(f"np.{name} is a deprecated alias", DeprecationWarning, stacklevel=2)
        return bool if name == "bool" else numpy.all
    deprecated.__getattr__ = alias
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert mxnet_compat.restore(deprecated) == []
    assert "bool" not in deprecated.__dict__


def test_the_installed_numpy_gets_only_what_it_lacks():
    lacking = [name for name in CHECKS if not mxnet_compat.has(numpy, name)]
    print(f"numpy {numpy.__version__} lacks {lacking}")
    # on the real module, in a fresh process (it must not change this test process's numpy)
    program = textwrap.dedent("""
        import json, numpy
        from d2lperf import mxnet_compat
        print(json.dumps(mxnet_compat.restore()))
    """)
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                          timeout=120, cwd=REPO / "scripts")
    assert done.returncode == 0, done.stderr
    assert sorted(json.loads(done.stdout)) == sorted(lacking)


@pytest.mark.slow  # over a second on 2 cores
def test_the_pth_file_restores_the_names_before_mxnet_loads_and_imports_nothing_before(
        tmp_path):
    """The .pth file `mxnet-build install-shim` writes loads the shim when the interpreter
    starts; numpy stays unloaded until mxnet is imported, and mxnet then finds its names
    (a stand-in mxnet that reads them at import, as MXNet 1.9.1 does)."""
    site = tmp_path / "site-packages"
    (site / "mxnet").mkdir(parents=True)
    (site / "mxnet/__init__.py").write_text(textwrap.dedent("""
        import numpy as onp
        bool = onp.bool
        PZERO, NINF, NaN = onp.PZERO, onp.NINF, onp.NaN
        alltrue, in1d, msort, trapz, mirr = onp.alltrue, onp.in1d, onp.msort, onp.trapz, onp.mirr
    """))
    pth = mxnet_build.install_shim(site)
    assert pth.name == mxnet_compat.PTH_NAME and pth.name > "__editable__.d2lperf-0.1.0.pth"
    program = textwrap.dedent(f"""
        import site, sys
        site.addsitedir({str(site)!r})  # reads the .pth as the environment's Python does
        before = "numpy" in sys.modules
        import mxnet
        print(before, mxnet.PZERO, mxnet.alltrue([True, False]))
    """)
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "0.0", "False"]

    # without the .pth file, the real failure shows as it is
    pth.unlink()
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode != 0 and "AttributeError" in done.stderr


# --- one line for a Python that cannot build the environments --------------------------------

def pyenv_python(version: str) -> Path | None:
    """This machine's pyenv interpreter of ``version`` (3.12: the newest 3.12.x), or None."""
    root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    found = sorted(root.glob(f"{version}.*/bin/python"),
                   key=lambda p: [int(n) for n in re.findall(r"\d+", p.parent.parent.name)])
    return found[-1] if found else None


@pytest.mark.parametrize("version", [(3, 10, 13), (3, 14, 0), (2, 7, 18)])
def test_any_other_python_is_refused_naming_those_supported_and_python_eq(version):
    why = pythons.problem(version=version, has_ensurepip=True, name="python3")
    assert "\n" not in why
    assert f"is Python {'.'.join(map(str, version))}" in why
    assert "3.11, 3.12 or 3.13" in why and "PYTHON=" in why


def test_a_supported_python_with_ensurepip_passes():
    for version in ((3, 11, 7), (3, 12, 1), (3, 13, 0)):
        assert pythons.problem(version=version, has_ensurepip=True) is None


def test_make_refuses_python_3_10_before_building_anything(tmp_path):
    python = pyenv_python("3.10")
    if python is None:
        pytest.skip("no Python 3.10 under pyenv here")
    done = subprocess.run(["make", "report", f"PYTHON={python}", f"VENV={tmp_path}/v",
                           f"MXVENV={tmp_path}/m"], cwd=REPO, capture_output=True,
                          text=True, timeout=60)
    print(done.stderr)
    assert done.returncode == 2 and done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert "is Python 3.10" in line and "3.11, 3.12 or 3.13" in line and "PYTHON=" in line
    assert list(tmp_path.iterdir()) == []


def test_a_python_without_ensurepip_gets_one_line_naming_the_package(tmp_path):
    """Debian and Ubuntu ship ensurepip in python3-venv: a Python without it (here, this
    one with ensurepip hidden) is named with the package, never with pip's traceback."""
    hide = tmp_path / "hide/ensurepip"
    hide.mkdir(parents=True)
    (hide / "__init__.py").write_text("raise ModuleNotFoundError(\"No module named "
                                      "'ensurepip'\")\n")
    python = tmp_path / "python3"
    python.write_text(f'#!/bin/sh\nPYTHONPATH="{hide.parent}${{PYTHONPATH:+:$PYTHONPATH}}" '
                      f'exec {sys.executable} "$@"\n')
    python.chmod(0o755)
    done = subprocess.run(["make", "-n", "report", f"PYTHON={python}"], cwd=REPO,
                          capture_output=True, text=True, timeout=60)
    print(done.stderr)
    assert done.returncode == 2 and done.stdout == ""
    (line,) = done.stderr.splitlines()
    minor = "python{}.{}-venv".format(*sys.version_info[:2])
    assert "without ensurepip" in line and "python3-venv" in line and minor in line
    assert "Traceback" not in done.stderr


# --- what the records and the machines view say -------------------------------------------

def test_a_run_record_names_the_python_and_the_numpy_that_ran():
    context = provenance.run_context()
    assert context["python"] == ".".join(map(str, sys.version_info[:3]))
    assert context["numpy"] == numpy.__version__


def test_the_machines_view_names_python_and_numpy_where_they_differ(tmp_path):
    facts = {}
    for machine, python, version in [("old", "3.11.7", "1.23.5"), ("new", "3.13.0", "2.2.6")]:
        path = tmp_path / machine / "machine.json"
        path.parent.mkdir()
        path.write_text(json.dumps({
            "cpu": {"model": "AMD EPYC", "logical_cores": 2}, "gpus": [],
            "software": {"python": python, "numpy": version}}))
        facts[machine] = path
    table = compare.machine_facts(list(facts.values()))
    rows = {r["machine"]: r for r in table.astype(str).to_dict("records")}
    assert (rows["old"]["python"], rows["old"]["numpy"]) == ("3.11.7", "1.23.5")
    view = {m: {k: str(v) for k, v in r.items()} for m, r in rows.items()}
    cells = [[{"framework": "MXNet", "verdict": "holds"}],
             [{"framework": "MXNet", "verdict": "does not hold"}]]
    (why,) = differences(cells, ["old", "new"], view)
    print(why)
    assert why == "MXNet: the machines differ in Python 3.11.7 / 3.13.0; numpy 1.23.5 / 2.2.6"
    same = {"old": view["old"], "new": {**view["new"], "python": "3.11.7", "numpy": "1.23.5"}}
    assert "differ in" not in differences(cells, ["old", "new"], same)[0]


# --- slow: the environment built with each Python here, running the CI preset's hybridize ----

def version_of(python: Path) -> str:
    return subprocess.run([str(python), "-c", "import platform; print(platform.python_version())"],
                          capture_output=True, text=True, timeout=60).stdout.strip()


@pytest.fixture(scope="session", params=SUPPORTED)
def mxnet_env(request, tmp_path_factory):
    """MXNet's environment built by the Makefile's own rule with this machine's pyenv
    Python ``param``, once per session in a temporary folder (pip's cache as it is);
    skipped, saying why, where there is no such Python. The environment `make test`
    already built (.venv-mxnet) is taken where it runs the same Python: building it again
    would prove nothing more."""
    version = request.param
    python = pyenv_python(version)
    if python is None:
        pytest.skip(f"no Python {version} here (pyenv install {version} to test it)")
    full = version_of(python)
    if EXPERIMENT_PYTHON.exists() and version_of(EXPERIMENT_PYTHON) == full:
        return EXPERIMENT_PYTHON, full, None
    venv = tmp_path_factory.mktemp(f"mxnet-{version}") / ".venv-mxnet"
    started = time.monotonic()
    done = subprocess.run(["make", "--no-print-directory", f"MXVENV={venv}", f"PYTHON={python}",
                           "MXNET_BUILD=mxnet", f"{venv}/.installed"],
                          cwd=REPO, capture_output=True, text=True, timeout=900)
    seconds = time.monotonic() - started
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    return venv / "bin/python", full, seconds


@pytest.mark.slow
def test_mxnet_environment_runs_hybridize_on_each_python(mxnet_env, tmp_path):
    python, full, built_in = mxnet_env
    version = full.rsplit(".", 1)[0]
    restored = subprocess.run(
        [str(python), "-c", "import json, numpy; from d2lperf import mxnet_compat as c; "
         "print(json.dumps([n for n in c.replacements(numpy) if not c.has(numpy, n)]))"],
        capture_output=True, text=True, timeout=120)
    assert restored.returncode == 0, restored.stderr
    options = {k: v for k, v in for_framework(ci_preset("hybridize"), "mxnet").items()
               if k not in MANAGER_OPTIONS}  # one process, by hand
    done = run_section(python, MXNET_SCRIPT, tmp_path, *cli_args(options),
                       "--threads", "1", "--probe-seconds", "0.02",
                       "--export-dir", str(tmp_path / "model"))
    assert done.returncode == 0, done.stderr[-3000:]
    record = read_run(tmp_path)
    built = "by make test (.venv-mxnet)" if built_in is None else f"in {built_in:.0f} s"
    print(f"Python {full}: numpy {record['numpy']}, built {built}, "
          f"shim restores {json.loads(restored.stdout)}")
    assert record["status"] == "ok"
    assert (record["python"], record["numpy"]) == (full, pins_for(version)["numpy"])
    assert record["mxnet"]["version"] == "1.9.1"
    if version == "3.11":  # the reference archives' environment: nothing put back
        assert json.loads(restored.stdout) == []
    assert record["outputs"]["mlp_output_imperative"]["values"][0] == pytest.approx(
        [-0.1137567, -0.05474834], rel=1e-6)
    assert record["outputs"]["hybridnet_hidden_hybridized"]["text"] == "<Symbol hybridnet0_relu0>"
