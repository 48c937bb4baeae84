"""The GPU check's kit (scripts/gpu_check_prepare.sh): what a GPU machine without network
needs beyond its own torch, pandas, matplotlib and jinja2, in one folder under 60 MiB."""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
import sys
import time

import pytest

from conftest import CI_CONFIG, CI_MACHINE, REPO, WORKFLOW_PYTHON, copy_workflow, snakemake
from d2lperf import data

LIMIT = 60 * 1024 * 1024
# What the GPU machines this project is checked on have already (their Python packages).
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


CHECKED_SECTIONS = ("async_computation", "multi_gpu_scratch", "auto_parallelism")


@pytest.fixture(scope="module")
def cpu_mode_check(kit, tmp_path_factory, torch_python):
    """scripts/gpu_check.sh as a GPU machine runs it, less the GPU: an interpreter with
    torch, pandas, matplotlib and jinja2 (here: the PyTorch environment, with pandas and
    matplotlib beside it) and the kit; torch sees no GPU, so the CPU mode at the CI preset.
    GPU_CHECK_KEEP=1 takes the step a GPU run takes: keeping the archive. The sections are
    those written for GPUs, on their CPU stand-ins, and one that runs on a GPU where there
    is one: every section runs at this preset in the CI run already (conftest.ci_run), so
    here the check's own steps are under test, not the sections again."""
    folder, _ = kit
    tmp_path = tmp_path_factory.mktemp("gpu-check")
    machine = tmp_path / "machine-packages"
    subprocess.run([str(torch_python), "-m", "pip", "install", "--quiet",
                    "--disable-pip-version-check", "--target", str(machine),
                    *pins(MACHINE_PACKAGES[1:3])], check=True, timeout=600)
    work = copy_workflow(tmp_path / "wf")
    done = subprocess.run(
        ["bash", str(work / "scripts/gpu_check.sh"), str(folder)], capture_output=True,
        text=True, timeout=1500, cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PYTHONPATH": str(machine),
             "GPU_CHECK_PYTHON": str(torch_python), "GPU_CHECK_CORES": "2",
             "GPU_CHECK_KEEP": "1", "GPU_CHECK_SECTIONS": " ".join(CHECKED_SECTIONS)})
    assert done.returncode == 0, (done.stdout + done.stderr)[-5000:]
    return work, done.stdout


def test_the_gpu_check_runs_here_in_its_cpu_mode(cpu_mode_check):
    work, stdout = cpu_mode_check
    assert "gpu_check: cpu mode, preset ci" in stdout
    reports = list((work / "results").glob("*/report.html"))
    assert len(reports) == 1
    results = reports[0].parent
    for section in CHECKED_SECTIONS:
        run = json.loads((results / f"{section}_pytorch/run.json").read_text())
        assert run["status"] == "ok", (section, run.get("log_tail"))
    assert not (results / "async_computation").exists()  # MXNet's sections: not asked for
    assert not (results / "hybridize_pytorch").exists()  # nor the other sections
    archives = list((work / "archives").glob("*.tar.gz"))
    assert [a.name for a in archives] == [f"{results.name}.tar.gz"]
    kept = list((work / "report/machines").iterdir())
    assert [k.name for k in kept] == [f"{results.name}-{time.strftime('%Y-%m-%d', time.gmtime())}"
                                      ".tar.gz"]
    assert kept[0].read_bytes() == archives[0].read_bytes()
    assert f"kept as report/machines/{kept[0].name} (commit it)" in stdout


def test_the_kept_archive_is_compared_by_the_next_report(cpu_mode_check, ci_run, tmp_path,
                                                         experiment_python):
    """What `make report` does on a checkout that keeps a GPU check's archive (PyTorch's
    sections only) beside a run of both frameworks: it is imported under its file name and
    the report compares against it, framework by framework."""
    check, _ = cpu_mode_check
    work, results = ci_run
    fresh = copy_workflow(tmp_path / "fresh")
    shutil.copytree(results, fresh / "results" / CI_MACHINE, copy_function=shutil.copy)
    shutil.copytree(check / "report/machines", fresh / "report/machines")
    kept = next((fresh / "report/machines").iterdir()).name[: -len(".tar.gz")]
    for _ in range(2):  # the second time: already imported, nothing changes
        imported = subprocess.run(
            [str(WORKFLOW_PYTHON), "scripts/import_results.py", "--kept", "report/machines"],
            cwd=fresh, capture_output=True, text=True, timeout=300)
        assert imported.returncode == 0, imported.stderr
    assert imported.stdout.strip().endswith("already imported")
    done = snakemake(fresh, "--cores", "2", *CI_CONFIG, f"experiment_python={experiment_python}")
    assert done.returncode == 0, done.stderr[-3000:]
    page = (fresh / "results" / CI_MACHINE / "report.html").read_text(encoding="utf-8")
    assert "Across machines" in page and kept in page
    with open(fresh / "results" / CI_MACHINE / "comparison.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    theirs = [r for r in rows if r["machine"] == kept]
    assert theirs and {r["framework"] for r in theirs} == {"pytorch"}
    assert all(r["speedup"] for r in theirs if r["epoch"] == "")  # each against ours


def prepare(folder, pip="/bin/false"):
    """scripts/gpu_check_prepare.sh FOLDER with a pip that fails at once: what happens to
    FOLDER before any download."""
    return subprocess.run(["bash", str(REPO / "scripts/gpu_check_prepare.sh"), str(folder)],
                          capture_output=True, text=True, timeout=120, cwd=REPO,
                          env={"PATH": "/usr/bin:/bin", "HOME": str(REPO.parent), "PIP": pip})


@pytest.mark.parametrize("name", ["results", "report"])
def test_prepare_refuses_a_folder_it_did_not_make(tmp_path, name):
    """A mistyped kit folder (the user's results, the tracked report/) once lost all it
    held: it is refused, named, and left as it was."""
    folder = tmp_path / name
    (folder / "machines").mkdir(parents=True)
    (folder / "reference.csv").write_text("kept\n")
    (folder / "machines/gpu.tar.gz").write_bytes(b"kept")
    done = prepare(folder)
    assert done.returncode == 2
    assert f"refusing {folder}: it is not empty and no kit made by this script" in done.stderr
    assert (folder / "reference.csv").read_text() == "kept\n"
    assert sorted(p.name for p in folder.rglob("*")) == ["gpu.tar.gz", "machines",
                                                          "reference.csv"]


def test_prepare_refuses_a_link_or_a_file(tmp_path):
    target = tmp_path / "elsewhere"
    target.mkdir()
    (target / "keep").write_text("x")
    (tmp_path / "link").symlink_to(target)
    (tmp_path / "file").write_text("x")
    for path in (tmp_path / "link", tmp_path / "file"):
        done = prepare(path)
        assert done.returncode == 2 and f"refusing {path}: not a folder" in done.stderr
    assert (target / "keep").exists() and (tmp_path / "file").read_text() == "x"


@pytest.mark.parametrize("before", ["absent", "empty", "its own kit"])
def test_prepare_writes_into_a_new_empty_or_own_folder(tmp_path, before):
    folder = tmp_path / "kit"
    if before != "absent":
        folder.mkdir()
    if before == "its own kit":
        (folder / ".gpu-check-kit").write_text("made by scripts/gpu_check_prepare.sh\n")
        (folder / "wheels").mkdir()
        (folder / "wheels/old-1.0-py3-none-any.whl").write_bytes(b"old")
    done = prepare(folder)  # gets as far as the download (a pip that fails)
    assert "refusing" not in done.stderr and done.returncode not in (0, 2)
    assert (folder / ".gpu-check-kit").exists() and (folder / "requirements.txt").exists()
    assert not (folder / "wheels/old-1.0-py3-none-any.whl").exists()


def test_a_kit_path_with_a_hash_and_a_colon_reaches_the_run_whole(kit, tmp_path,
                                                                   torch_python):
    """Snakemake reads --config values as YAML: 'kit #1' lost its end, 'a: b' became a
    mapping. The check's configuration goes in a JSON file instead (planned, not run)."""
    folder, _ = kit
    odd = tmp_path / "kits #1: the GPU check"
    shutil.copytree(folder, odd)
    machine = tmp_path / "machine-packages"
    subprocess.run([str(torch_python), "-m", "pip", "install", "--quiet",
                    "--disable-pip-version-check", "--target", str(machine),
                    *pins(MACHINE_PACKAGES[1:3])], check=True, timeout=600)
    work = copy_workflow(tmp_path / "wf #2")  # (no colon: PYTHONPATH holds it)
    done = subprocess.run(
        ["bash", str(work / "scripts/gpu_check.sh"), str(odd)], capture_output=True,
        text=True, timeout=900, cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PYTHONPATH": str(machine),
             "GPU_CHECK_PYTHON": str(torch_python), "GPU_CHECK_CORES": "2",
             "GPU_CHECK_DRY_RUN": "1"})
    said = done.stdout + done.stderr
    assert done.returncode == 0, said[-3000:]
    assert "Invalid configuration" not in said and "hybridize_pytorch" in said
    config = json.loads((work / ".gpu-check/config.json").read_text())
    assert config["data_dir"] == f"{odd}/fashion-mnist"
