"""The GPU check's kit (scripts/gpu_check_prepare.sh): what a GPU machine without network
needs beyond its own torch, pandas, matplotlib and jinja2, in one folder under 60 MiB."""

from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import REPO
from d2lperf import data

LIMIT = 60 * 1024 * 1024
# What the GPU machines this project is checked on have already (issue 14, item 5).
MACHINE_PACKAGES = ("numpy", "pandas", "matplotlib", "Jinja2")


def pins(names):
    lock = (REPO / "envs/workflow.lock.txt").read_text().splitlines()
    return [line for line in lock if line.split("==")[0] in names]


@pytest.fixture(scope="module")
def kit(tmp_path_factory):
    folder = tmp_path_factory.mktemp("kit") / "gpu-check-kit"
    python = f"{sys.version_info.major}.{sys.version_info.minor}"  # to install it here
    done = subprocess.run(["bash", str(REPO / "scripts/gpu_check_prepare.sh"), str(folder)],
                          capture_output=True, text=True, timeout=600, cwd=REPO,
                          env={"PATH": "/usr/bin:/bin", "GPU_PYTHON": python,
                               "HOME": str(REPO.parent), "PIP": str(REPO / ".venv/bin/pip")})
    assert done.returncode == 0, done.stderr[-3000:]
    return folder, done.stdout


def test_the_kit_is_under_60_mib_with_verified_fashion_mnist(kit):
    folder, stdout = kit
    size = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
    assert size < LIMIT
    assert "MiB" in stdout
    assert data.verify(folder / "fashion-mnist") == []
    requirements = (folder / "requirements.txt").read_text()
    assert "snakemake==" in requirements and "pytest" not in requirements
    assert "pandas==" not in requirements  # the GPU machine's own


def test_snakemake_installs_from_the_kit_alone_beside_the_machines_packages(kit, tmp_path):
    folder, _ = kit
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    pip = [str(venv / "bin/python"), "-m", "pip", "install", "--quiet",
           "--disable-pip-version-check"]
    # the machine's own packages (here from the usual index, as the machine has them)
    subprocess.run([*pip, *pins(MACHINE_PACKAGES)], check=True, timeout=600)
    # then the kit, with no index at all: every dependency must be in it
    done = subprocess.run([*pip, "--no-index", "--find-links", str(folder / "wheels"),
                           "-r", str(folder / "requirements.txt")],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    version = subprocess.run([str(venv / "bin/snakemake"), "--version"], capture_output=True,
                             text=True, timeout=120)
    assert version.stdout.strip() == "9.27.1"
