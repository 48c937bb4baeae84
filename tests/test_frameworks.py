"""d2lperf.frameworks: a missing or unusable framework is named, with the key and the fix,
before any job runs."""

from __future__ import annotations

import ast
import stat
import sys
from collections.abc import Iterable
from pathlib import Path

import pytest

from conftest import REPO, copy_workflow
from d2lperf import frameworks, sections


def fake_python(tmp_path, printed: str, code: int = 0):
    """An executable that answers the version question as an interpreter would."""
    path = tmp_path / "python"
    path.write_text(f"#!/bin/sh\necho '{printed}'\nexit {code}\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_the_torch_environment_passes(torch_python):
    assert frameworks.problem("pytorch", torch_python) is None


def test_the_mxnet_environment_passes(experiment_python):
    assert frameworks.problem("mxnet", experiment_python) is None


def test_a_missing_interpreter_names_the_key_and_the_fix(tmp_path):
    message = frameworks.problem("pytorch", tmp_path / "nowhere/bin/python")
    assert message.startswith("config key torch_python = ")
    assert "no such file" in message and "make envs" in message and "frameworks" in message


def test_an_interpreter_without_the_framework_says_so():
    message = frameworks.problem("pytorch", sys.executable)  # the workflow env: no torch
    assert "cannot import torch" in message and "No module named 'torch'" in message
    assert "config key torch_python" in message


def test_a_torch_too_old_is_refused(tmp_path):
    message = frameworks.problem("pytorch", fake_python(tmp_path, "1.13.1+cu117"))
    assert "torch 1.13.1+cu117 is too old" in message and "torch >= 2.1" in message


def test_a_failing_interpreter_shows_its_last_words(tmp_path):
    message = frameworks.problem("mxnet", fake_python(tmp_path, "boom", code=3))
    assert message.startswith("config key experiment_python = ")
    assert "cannot import mxnet" in message


def test_a_file_that_cannot_run_is_named(tmp_path):
    path = tmp_path / "python"
    path.write_text("not a program")  # no execute bit
    message = frameworks.problem("pytorch", path)
    assert "cannot run it" in message


# What every framework's module of d2lperf offers the harness, the claims' applicability
# and the BLAS probe (``blas_kernel`` is optional: without it the probe reads the
# OpenBLAS); beyond these, a module implements what its own section scripts call.
LIBRARY_CALLS = {"build_info", "execution", "matrix_product"}


def defined_in(source: Path) -> set[str]:
    """The functions a module defines at its top level (read from its source: importing
    it needs the framework)."""
    tree = ast.parse(source.read_text(encoding="utf-8"))
    return {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}


def called_by_scripts(scripts: Iterable[Path], alias: str = "d2l") -> set[str]:
    """The functions a framework's section scripts call on its module (``d2l.sync(...)``,
    the module imported as ``d2l`` as d2l's books do)."""
    found = set()
    for script in scripts:
        for node in ast.walk(ast.parse(script.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.value.id == alias):
                found.add(node.attr)
    return found


def test_every_registered_framework_is_complete():
    """A framework is its entry, a script in sections' folders, its environment and lock, and
    a module with what the library calls and what its section scripts call; every script
    in a section's folder is a registered framework's, but its declaration and claims."""
    assert frameworks.FRAMEWORKS[0] == frameworks.DOCUMENTS
    for name, entry in frameworks.REGISTRY.items():
        scripts = sorted(sections.script(s, name) for s in sections.names()
                         if sections.script(s, name).is_file())
        assert scripts, name
        assert (REPO / entry.environment).is_file(), entry.environment
        assert (REPO / entry.lock).is_file(), entry.lock
        defined = defined_in(REPO / "scripts" / (entry.module.replace(".", "/") + ".py"))
        wanted = LIBRARY_CALLS | called_by_scripts(scripts)
        assert wanted <= defined, (name, sorted(wanted - defined))
    for script in (REPO / "scripts/sections").glob("*/*.py"):
        section = script.parent.name
        assert script.stem in {"section", "claims", *(f"{section}_{f}" for f in
                                                      frameworks.FRAMEWORKS)}, script


def test_the_interface_check_reads_what_the_scripts_call(tmp_path):
    (tmp_path / "toy.py").write_text("from d2lperf import jax as d2l\nd2l.sync(d2l.seed(0))\n")
    assert called_by_scripts([tmp_path / "toy.py"]) == {"sync", "seed"}
    assert {"devices", "sync", "load_data"} <= called_by_scripts(
        (REPO / "scripts/sections").glob(f"*/*_{frameworks.DOCUMENTS}.py"))


def test_rule_names_carry_the_framework_except_the_documents():
    assert frameworks.rule_name("hybridize") == "hybridize"
    assert frameworks.rule_name("hybridize", "pytorch") == "hybridize_pytorch"


def test_version_problem_only_where_the_registry_sets_a_minimum():
    assert frameworks.version_problem("mxnet", "0.1") is None
    assert "torch 2.0.1 is too old" in frameworks.version_problem("pytorch", "2.0.1")
    assert "not a torch version" in frameworks.version_problem("pytorch", "unknown")


def test_every_frameworks_environment_stays_out_of_git():
    """`make envs` builds a folder per framework in the checkout: git ignores each (a
    committed environment is hundreds of MB of someone else's wheels)."""
    import subprocess

    for folder in frameworks.environments():
        done = subprocess.run(["git", "check-ignore", "-q", f"{folder}/bin/python"], cwd=REPO)
        assert done.returncode == 0, f"{folder} is not ignored by git"


def test_a_copy_of_the_workflow_leaves_every_frameworks_environment_behind(tmp_path):
    """The tests run the workflow in copies of the checkout, which name the interpreters: a
    copied environment (JAX's is 0.75 GB) costs seconds of every such test and disk."""
    copy = copy_workflow(tmp_path / "wf")
    assert (copy / "Snakefile").is_file()
    for folder in [".venv", *frameworks.environments()]:
        assert not (copy / folder).exists(), f"{folder} was copied"


def test_the_configured_frameworks_come_from_the_configs_list(tmp_path):
    config = tmp_path / "config.yaml"
    config.write_text("preset: documents\nframeworks: [mxnet, pytorch]  # the default\n")
    assert frameworks.configured(config) == ["mxnet", "pytorch"]
    config.write_text("frameworks:\n  - pytorch\n  - jax\nthreads: auto\n")
    assert frameworks.configured(config) == ["pytorch", "jax"]


def test_a_config_without_a_readable_list_builds_every_framework(tmp_path):
    config = tmp_path / "config.yaml"
    config.write_text("preset: documents\n")  # absent: every framework runs
    assert frameworks.configured(config) == frameworks.names()
    config.write_text("frameworks: [mxnet, caffe]\n")  # not the registry's: the check says
    assert frameworks.configured(config) == frameworks.names()
    assert frameworks.configured(tmp_path / "nowhere.yaml") == frameworks.names()


def _planned(target: str) -> str:
    """What `make -n -B <target>` would run here (every rule as if out of date; nothing
    runs)."""
    import subprocess

    done = subprocess.run(["make", "-n", "-B", target], cwd=REPO, capture_output=True,
                          text=True, check=True)
    return done.stdout


@pytest.mark.slow  # over a second on 2 cores
def test_make_report_builds_only_the_environments_the_config_runs():
    planned = _planned("report")
    assert "python3 -m venv .venv-torch" in planned and "python3 -m venv .venv-mxnet" in planned
    assert ".venv-jax" not in planned  # the default config runs MXNet and PyTorch


@pytest.mark.slow  # over a second on 2 cores
def test_make_test_builds_every_frameworks_environment():
    planned = _planned("test")
    for folder in frameworks.environments():
        assert f"-m venv {folder}" in planned
