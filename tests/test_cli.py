"""One package, one command: `d2lperf` and its subcommands (d2lperf.cli), installed by
`make` in every environment, and a section script that runs by hand as one file."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from conftest import EXPERIMENT_PYTHON, REPO, TORCH_PYTHON, WORKFLOW_PYTHON, run_command
from d2lperf import cli


def without_pythonpath() -> dict[str, str]:
    """This process's environment without the tests' PYTHONPATH: what a user's shell has."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def test_the_command_alone_lists_every_step():
    done = run_command(WORKFLOW_PYTHON, "--help")
    assert done.returncode == 0, done.stderr
    for name, command in cli.COMMANDS.items():
        assert f"  {name} " in done.stdout and command.summary in done.stdout


def test_an_unknown_step_is_refused_naming_the_allowed_ones():
    done = run_command(WORKFLOW_PYTHON, "summarize")
    assert done.returncode == 2
    assert done.stderr.startswith("d2lperf: unknown command 'summarize'; allowed: machine-info,")
    assert "summarise" in done.stderr


@pytest.mark.slow  # over a second on 2 cores
def test_a_step_says_its_own_usage_under_its_command_name():
    done = run_command(WORKFLOW_PYTHON, "summarise", "--help")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: d2lperf summarise ")


@pytest.mark.slow  # each framework's interpreter
@pytest.mark.parametrize("python", [WORKFLOW_PYTHON, EXPERIMENT_PYTHON, TORCH_PYTHON])
def test_make_installs_the_package_of_this_tree_in_each_environment(tmp_path, python):
    """Outside the tree and with no PYTHONPATH, each environment imports this tree's
    d2lperf (installed editable by `make`), and the workflow's has the command."""
    done = subprocess.run([str(python), "-c", "import d2lperf; print(d2lperf.__file__)"],
                          capture_output=True, text=True, cwd=tmp_path, env=without_pythonpath(),
                          timeout=120)
    assert done.returncode == 0, f"{python}: {done.stderr[-2000:]}"
    assert done.stdout.strip() == str(REPO / "scripts/d2lperf/__init__.py")
    if python == WORKFLOW_PYTHON:
        command = subprocess.run([str(python.parent / "d2lperf")], capture_output=True,
                                 text=True, env=without_pythonpath(), timeout=120)
        assert command.returncode == 0 and "usage: d2lperf COMMAND" in command.stdout


@pytest.mark.slow  # MXNet's interpreter
def test_a_section_script_runs_by_hand_as_one_file(tmp_path):
    """As the README says: the framework's interpreter and the script's path, nothing else."""
    done = subprocess.run([str(EXPERIMENT_PYTHON),
                           str(REPO / "scripts/sections/hybridize/hybridize_mxnet.py"), "--help"],
                          capture_output=True, text=True, cwd=tmp_path,
                          env=without_pythonpath(), timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "--repeats" in done.stdout


@pytest.mark.slow  # over half a second on 2 cores
def test_the_system_python_chooses_mxnets_build_before_any_environment():
    """The Makefile runs `d2lperf mxnet-build` from the tree with the system's Python (no
    environment exists yet), as PYTHONPATH=scripts python3 -m d2lperf."""
    done = subprocess.run([shutil.which("python3") or sys.executable, "-m", "d2lperf",
                           "mxnet-build", "choose"],
                          capture_output=True, text=True, cwd=REPO, timeout=120,
                          env={**without_pythonpath(), "PYTHONPATH": "scripts"})
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip()
