"""d2lperf.frameworks: a missing or unusable framework is named, with the key and the fix,
before any job runs."""

from __future__ import annotations

import stat
import sys

from d2lperf import frameworks


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
