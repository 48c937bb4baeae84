"""The GPU check's kit (scripts/gpu_check_prepare.sh): what a GPU machine without network
needs beyond its own torch, pandas, matplotlib, scipy and jinja2, in one folder under 60 MiB."""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
import uuid

import pytest

from conftest import CI_CONFIG, CI_MACHINE, REPO, WORKFLOW_PYTHON, copy_workflow, snakemake
from d2lperf import data, machine

pytestmark = pytest.mark.slow  # the GPU kit: pip, Snakemake, PyTorch's interpreter

LIMIT = 60 * 1024 * 1024
# What the GPU machines this project is checked on have already (their Python packages).
MACHINE_PACKAGES = ("numpy", "pandas", "matplotlib", "scipy", "Jinja2")
# Beside the PyTorch environment (torch, numpy): what a GPU machine adds of them.
BESIDE_TORCH = ("pandas", "matplotlib", "scipy")


def pins(names):
    lock = (REPO / "envs/workflow.lock.txt").read_text().splitlines()
    return [line for line in lock if line.split("==")[0] in names]


def an_older_kit(folder):
    """A kit as an earlier run of scripts/gpu_check_prepare.sh left it (its marker, a wheel
    the new one no longer holds)."""
    (folder / "wheels").mkdir(parents=True)
    (folder / ".gpu-check-kit").write_text("made by scripts/gpu_check_prepare.sh\n")
    (folder / "wheels/old-1.0-py3-none-any.whl").write_bytes(b"old")
    (folder / "requirements.txt").write_text("old==1.0\n")


def a_kit_folder(tmp_path, before: str):
    """Where a kit is to be made, as it was before: absent, empty, or its own older kit."""
    folder = tmp_path / "kits" / "gpu-check-kit"
    folder.parent.mkdir()
    if before == "empty":
        folder.mkdir()
    if before == "its own kit":
        an_older_kit(folder)
    return folder


def tree(folder):
    """Every path under ``folder`` with its bytes (None for a folder): what it holds."""
    return {str(p.relative_to(folder)): None if p.is_dir() else p.read_bytes()
            for p in sorted(folder.rglob("*"))}


@pytest.fixture(scope="module")
def kit(tmp_path_factory):
    """The kit, made with the real pip, over an older kit in the same folder (a re-run)."""
    folder = tmp_path_factory.mktemp("kit") / "gpu-check-kit"
    an_older_kit(folder)
    python = f"{sys.version_info.major}.{sys.version_info.minor}"  # to install it here
    done = subprocess.run(["bash", str(REPO / "scripts/gpu_check_prepare.sh"), str(folder)],
                          capture_output=True, text=True, timeout=600, cwd=REPO,
                          env={"PATH": "/usr/bin:/bin", "GPU_PYTHON": python,
                               "HOME": str(REPO.parent), "PIP": str(REPO / ".venv/bin/pip")})
    assert done.returncode == 0, done.stderr[-3000:]
    return folder, done.stdout


def test_a_remade_kit_replaces_the_older_one_whole(kit):
    folder, stdout = kit
    assert not (folder / "wheels/old-1.0-py3-none-any.whl").exists()
    assert "old==1.0" not in (folder / "requirements.txt").read_text()
    assert (folder / ".gpu-check-kit").exists()
    assert [p.name for p in folder.parent.iterdir()] == [folder.name]  # nothing left beside
    assert f"GPU check kit: {folder}," in stdout


def test_the_kit_is_under_60_mib_with_verified_fashion_mnist(kit):
    folder, stdout = kit
    size = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
    assert size < LIMIT
    assert "MiB" in stdout
    assert data.verify(folder / "fashion-mnist") == []
    requirements = (folder / "requirements.txt").read_text()
    assert "snakemake==" in requirements and "pytest" not in requirements
    assert "nvidia-ml-py==" in requirements  # NVML for the GPUs' energy and clocks
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
# An NVML stand-in with a GPU whose counters move, ahead of the kit's nvidia-ml-py in every
# process the check starts (its sitecustomize), so that the metering runs in the CPU mode.
NVML_STAND_IN = REPO / "tests/nvml_stand_in"


# The id the workflow derives from this hardware (a user's own results go there), and the
# GPU check's own results id beside it.
HARDWARE_ID = machine.machine_id()
CHECK_ID = f"{HARDWARE_ID}-gpu-check"
COLLEAGUE = "colleague-box-8c-1xnvidia-a100"
# The reference machines the checkout ships (README: "Archives and comparing machines"):
# a copy of it holds them too, and a check leaves them as they are.
SHIPPED = {p.name for p in (REPO / "report/machines").glob("*.tar.gz")}


def the_users_files(work):
    """What a checkout holds before the GPU check runs in it: the user's own results and
    report of both frameworks under the hardware's id, their archive of them, and an
    archive a colleague sent, newer than anything the check will write."""
    results = work / "results" / HARDWARE_ID
    (results / "async_computation_pytorch").mkdir(parents=True)
    (results / "report.html").write_text("the user's report of both frameworks\n")
    (results / "async_computation_pytorch/run.json").write_text('{"status": "ok", "users": 1}')
    (work / "archives").mkdir()
    (work / f"archives/{HARDWARE_ID}.tar.gz").write_bytes(b"the user's archive")
    colleague = work / f"archives/{COLLEAGUE}.tar.gz"
    colleague.write_bytes(b"a colleague's archive")
    future = time.time() + 10 * 24 * 3600
    os.utime(colleague, (future, future))
    return {path: (path.read_bytes(), path.stat().st_mtime_ns) for path in
            (results / "report.html", results / "async_computation_pytorch/run.json",
             work / f"archives/{HARDWARE_ID}.tar.gz", colleague)}


@pytest.fixture(scope="module")
def gpu_machine(tmp_path_factory, torch_python) -> dict[str, str]:
    """The environment of a GPU machine, less the GPU, that the checks run gpu_check.sh in
    (each adds its HOME and options): the PyTorch environment stands in for the machine's
    interpreter, and what the machine has beside torch (pandas, matplotlib, scipy) is
    installed once into a folder of its own on PYTHONPATH."""
    folder = tmp_path_factory.mktemp("machine-packages")
    subprocess.run([str(torch_python), "-m", "pip", "install", "--quiet",
                    "--disable-pip-version-check", "--target", str(folder),
                    *pins(BESIDE_TORCH)], check=True, timeout=600)
    return {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(folder),
            "GPU_CHECK_PYTHON": str(torch_python), "GPU_CHECK_CORES": "2"}


@pytest.fixture(scope="module")
def cpu_mode_check(kit, gpu_machine, tmp_path_factory):
    """scripts/gpu_check.sh as a GPU machine runs it, less the GPU: an interpreter with
    torch, pandas, matplotlib, scipy and jinja2 (here: the PyTorch environment, with pandas,
    matplotlib and scipy beside it) and the kit; torch sees no GPU, so the CPU mode at the
    CI preset.
    GPU_CHECK_KEEP=1 takes the step a GPU run takes: keeping the archive. The sections are
    those written for GPUs, on their CPU stand-ins, and one that runs on a GPU where there
    is one: every section runs at this preset in the CI run already (conftest.ci_run), so
    here the check's own steps are under test, not the sections again. The checkout holds
    the user's results and archives first (the_users_files)."""
    folder, _ = kit
    tmp_path = tmp_path_factory.mktemp("gpu-check")
    work = copy_workflow(tmp_path / "wf")
    users = the_users_files(work)
    done = subprocess.run(
        ["bash", str(work / "scripts/gpu_check.sh"), str(folder)], capture_output=True,
        text=True, timeout=1500, cwd=tmp_path,
        env={**gpu_machine, "HOME": str(tmp_path),
             "PYTHONPATH": f"{NVML_STAND_IN}:{gpu_machine['PYTHONPATH']}",
             "GPU_CHECK_KEEP": "1", "GPU_CHECK_SECTIONS": " ".join(CHECKED_SECTIONS)})
    assert done.returncode == 0, (done.stdout + done.stderr)[-5000:]
    return work, done.stdout, users


def test_the_gpu_check_runs_here_in_its_cpu_mode(cpu_mode_check):
    work, stdout, _ = cpu_mode_check
    assert "gpu_check: cpu mode, preset ci" in stdout
    results = work / "results" / CHECK_ID  # its own results id, beside the user's
    assert f"gpu_check: report results/{CHECK_ID}/report.html" in stdout
    assert (results / "report.html").exists()
    for section in CHECKED_SECTIONS:
        run = json.loads((results / f"{section}_pytorch/run.json").read_text())
        assert run["status"] == "ok", (section, run.get("log_tail"))
    assert not (results / "async_computation").exists()  # MXNet's sections: not asked for
    assert not (results / "hybridize_pytorch").exists()  # nor the other sections
    archive = work / "archives" / f"{CHECK_ID}.tar.gz"
    assert f"gpu_check: archive archives/{archive.name}\n" in stdout
    kept = [p for p in (work / "report/machines").iterdir() if p.name not in SHIPPED]
    today = time.strftime("%Y-%m-%d", time.gmtime())
    assert [k.name for k in kept] == [f"{HARDWARE_ID}-{today}.tar.gz"]
    assert kept[0].read_bytes() == archive.read_bytes()
    assert f"kept as report/machines/{kept[0].name} (commit it)" in stdout


def test_the_gpu_checks_records_and_report_hold_the_gpus_energy_and_clocks(cpu_mode_check):
    """Through the NVML stand-in (an H200 at 300 W): every section's record keeps the GPU's
    energy, clocks and throttle reasons through its body; a training epoch on the CPU
    stand-in says why it has no joules; the report shows them, and what they are."""
    work, stdout, _ = cpu_mode_check
    assert "gpu_check: NVML: 1 GPU(s) metered (NVIDIA H200)" in stdout
    results = work / "results" / CHECK_ID
    for section in CHECKED_SECTIONS:
        run = json.loads((results / f"{section}_pytorch/run.json").read_text())
        [gpu] = run["notes"]["gpu_energy"]["gpus"]
        assert gpu["name"] == "NVIDIA H200" and gpu["energy_j"] > 0, section
        assert gpu["energy_source"] == "total_energy_counter"
        for end in ("start", "end"):
            assert gpu[end]["sm_mhz"] > 0 and gpu[end]["throttle"] == [], section
    epochs = json.loads((results / "multi_gpu_scratch_pytorch/run.json").read_text())[
        "notes"]["gpu_energy_epochs"]
    assert epochs and all(reading == {"reason": "the work ran on no GPU"}
                          for case in epochs.values() for reading in case.values())
    with open(results / "multi_gpu_scratch_pytorch/samples.csv", newline="") as handle:
        assert "energy" not in {row["metric"] for row in csv.DictReader(handle)}
    page = (results / "report.html").read_text(encoding="utf-8")
    assert '<section id="gpus">' in page and "not the wall" in page
    assert "NVIDIA H200" in page and "SM 19" in page


def test_the_gpu_check_leaves_the_users_results_and_others_archives_alone(cpu_mode_check):
    """A checkout with the user's results: the check once re-ran their sections, replaced
    their report of both frameworks with its own, and kept a colleague's archive (the
    newest in archives/) as its own. It works under its own id, and keeps only the archive
    its own run wrote."""
    work, stdout, users = cpu_mode_check
    for path, (content, mtime) in users.items():
        assert (path.read_bytes(), path.stat().st_mtime_ns) == (content, mtime), path
    assert sorted(p.name for p in (work / "results" / HARDWARE_ID).rglob("*")) == [
        "async_computation_pytorch", "report.html", "run.json"]
    assert COLLEAGUE not in stdout
    assert sorted(p.name for p in (work / "archives").iterdir()) == sorted(
        [f"{CHECK_ID}.tar.gz", f"{HARDWARE_ID}.tar.gz", f"{COLLEAGUE}.tar.gz"])


def test_the_kept_archive_is_compared_by_the_next_report(cpu_mode_check, ci_run, tmp_path,
                                                         experiment_python):
    """What `make report` does on a checkout that keeps a GPU check's archive (PyTorch's
    sections only) beside a run of both frameworks: it is imported under its file name and
    the report compares against it, framework by framework."""
    check, _, _ = cpu_mode_check
    work, results = ci_run
    fresh = copy_workflow(tmp_path / "fresh")
    shutil.copytree(results, fresh / "results" / CI_MACHINE, copy_function=shutil.copy)
    shutil.copytree(check / "report/machines", fresh / "report/machines", dirs_exist_ok=True)
    kept = next(p for p in (fresh / "report/machines").iterdir()
                if p.name not in SHIPPED).name[: -len(".tar.gz")]
    for _ in range(2):  # the second time: already imported, nothing changes
        imported = subprocess.run(
            [str(WORKFLOW_PYTHON), "-m", "d2lperf", "import", "--kept", "report/machines"],
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


def test_a_second_check_keeps_the_archive_it_wrote_itself(cpu_mode_check, kit, gpu_machine):
    """The check run again where it ran (the checkout of cpu_mode_check, so this test comes
    after the others that read it): nothing is left to measure, yet the archive is written
    again by this run and that one is kept, not the earlier check's file left in archives/
    (which Snakemake would call up to date). A kept archive of the same name with other
    content (another check the same day) stays: this one is kept beside it."""
    work, _, _ = cpu_mode_check
    folder, _ = kit
    archive = work / "archives" / f"{CHECK_ID}.tar.gz"
    os.utime(archive, (1e9, 1e9))  # an earlier check's, long ago
    today = time.strftime("%Y-%m-%d", time.gmtime())
    (work / f"report/machines/{HARDWARE_ID}-{today}.tar.gz").write_bytes(b"another check's")
    measured = work / "results" / CHECK_ID / "async_computation_pytorch/run.json"
    measured_at = measured.stat().st_mtime_ns
    kept_before = tree(work / "report/machines")
    started = time.time()
    done = subprocess.run(
        ["bash", str(work / "scripts/gpu_check.sh"), str(folder)], capture_output=True,
        text=True, timeout=900, cwd=work.parent,
        env={**gpu_machine, "HOME": str(work.parent),
             "GPU_CHECK_KEEP": "1", "GPU_CHECK_SECTIONS": " ".join(CHECKED_SECTIONS)})
    assert done.returncode == 0, (done.stdout + done.stderr)[-5000:]
    assert measured.stat().st_mtime_ns == measured_at  # nothing measured again
    assert archive.stat().st_mtime >= started - 1  # written by this run
    assert f"gpu_check: archive archives/{archive.name}\n" in done.stdout
    kept = done.stdout.split("gpu_check: kept as ")[1].split(" (commit it)")[0]
    assert kept == f"report/machines/{HARDWARE_ID}-{today}-2.tar.gz"
    assert (work / kept).read_bytes() == archive.read_bytes()
    for name, content in kept_before.items():  # the earlier kept archive, untouched
        assert (work / "report/machines" / name).read_bytes() == content


def prepare(folder, pip="/bin/false", cwd=REPO):
    """scripts/gpu_check_prepare.sh FOLDER run from ``cwd``, by default with a pip that fails
    at once: what happens to FOLDER when the download fails (no network)."""
    return subprocess.run(["bash", str(REPO / "scripts/gpu_check_prepare.sh"), str(folder)],
                          capture_output=True, text=True, timeout=300, cwd=cwd,
                          env={"PATH": "/usr/bin:/bin", "HOME": str(REPO.parent), "PIP": pip,
                               "GPU_PYTHON": "3.12"})


def fake_pip(folder, fails=None, says_nothing=False):
    """A pip without network: `download` and `wheel` write an empty file named as the wheel
    of each pin (name-version-py3-none-any.whl, '-' in a name written '_'), so the kit is
    made in seconds; with ``fails`` that command fails instead, after writing half of its
    wheels (a download cut off half way), or, ``says_nothing``, succeeds all the same."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / (f"pip-failing-at-{fails}-{says_nothing}" if fails else "pip")
    path.write_text(f"#!{sys.executable}\n" + textwrap.dedent(f"""\
        import sys
        from pathlib import Path
        args = sys.argv[1:]
        out = Path(args[args.index("-d" if args[0] == "download" else "-w") + 1])
        pins = [line.strip() for line in open(args[args.index("-r") + 1]) if line.strip()]
        if args[0] == {fails!r}:
            pins = pins[: len(pins) // 2]
        for pin in pins:
            name, version = pin.split("==")
            wheel = f"{{name.replace('-', '_')}}-{{version}}-py3-none-any.whl"
            (out / wheel).write_bytes(b"")
        if args[0] == {fails!r} and not {says_nothing!r}:
            sys.exit("ERROR: Could not find a version that satisfies the requirement (offline)")
        """))
    path.chmod(0o755)
    return path


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
@pytest.mark.parametrize("fails", ["at once", "download", "wheel", "download unsaid"])
def test_a_failed_prepare_leaves_the_folder_as_it_was(tmp_path, before, fails):
    """Re-run without network, the script once emptied a good kit before its download
    failed, and a GPU machine without network cannot make another. The new kit is made in
    a folder beside it and put in its place only when complete: a failure at any step
    (pip failing at once, a download or a build cut off half way, a download short of
    wheels that pip did not report) leaves the folder exactly as it was, and nothing
    beside it."""
    folder = a_kit_folder(tmp_path, before)
    was = tree(folder.parent)
    pip = ("/bin/false" if fails == "at once" else
           fake_pip(tmp_path / "bin", fails.split()[0], says_nothing="unsaid" in fails))
    done = prepare(folder, pip=str(pip))
    assert done.returncode == 1, done.stderr[-3000:]
    assert tree(folder.parent) == was
    assert f"gpu_check_prepare: no kit made; {folder} is as it was" in done.stderr
    if fails == "download unsaid":  # the kit's own check found it short
        assert "is incomplete: no wheel for " in done.stderr


@pytest.mark.parametrize("before", ["absent", "empty", "its own kit"])
def test_a_complete_kit_takes_the_folders_place(tmp_path, before):
    folder = a_kit_folder(tmp_path, before)
    done = prepare(folder, pip=str(fake_pip(tmp_path / "bin")))
    assert done.returncode == 0, done.stderr[-3000:]
    assert [p.name for p in folder.parent.iterdir()] == [folder.name]
    assert (folder / ".gpu-check-kit").exists() and (folder / "python-version").exists()
    assert not (folder / "wheels/old-1.0-py3-none-any.whl").exists()
    wheels = sorted(p.name for p in (folder / "wheels").iterdir())
    assert "snakemake-9.27.1-py3-none-any.whl" in wheels
    assert len(wheels) == len((folder / "requirements.txt").read_text().split())
    assert data.verify(folder / "fashion-mnist") == []


def test_a_relative_kit_name_lands_in_the_callers_folder(tmp_path):
    """`scripts/gpu_check_prepare.sh my-kit` from another folder once made the kit in the
    checkout, not where it was run."""
    caller = tmp_path / "caller"
    caller.mkdir()
    name = f"kit-{uuid.uuid4().hex[:8]}"
    try:
        done = prepare(name, pip=str(fake_pip(tmp_path / "bin")), cwd=caller)
        assert done.returncode == 0, done.stderr[-3000:]
        assert not (REPO / name).exists()
        assert (caller / name / ".gpu-check-kit").exists()
        assert f"GPU check kit: {caller / name}," in done.stdout
    finally:  # where the script once put it
        shutil.rmtree(REPO / name, ignore_errors=True)


def test_a_kit_path_with_a_hash_and_a_colon_reaches_the_run_whole(kit, gpu_machine, tmp_path):
    """Snakemake reads --config values as YAML: 'kit #1' lost its end, 'a: b' became a
    mapping. The check's configuration goes in a JSON file instead (planned, not run)."""
    folder, _ = kit
    odd = tmp_path / "kits #1: the GPU check"
    shutil.copytree(folder, odd)
    work = copy_workflow(tmp_path / "wf #2")  # (no colon: PYTHONPATH holds it)
    done = subprocess.run(  # named relative to where it is run, as a user names it
        ["bash", str(work / "scripts/gpu_check.sh"), odd.name], capture_output=True,
        text=True, timeout=900, cwd=tmp_path,
        env={**gpu_machine, "HOME": str(tmp_path), "GPU_CHECK_DRY_RUN": "1"})
    said = done.stdout + done.stderr
    assert done.returncode == 0, said[-3000:]
    assert "Invalid configuration" not in said and "hybridize_pytorch" in said
    config = json.loads((work / ".gpu-check/config.json").read_text())
    assert config["data_dir"] == f"{odd}/fashion-mnist"
    # its own results id: nothing planned in the user's results/<hardware id>/
    assert config["machine"] == CHECK_ID
    assert f"results/{CHECK_ID}/report.html" in said and f"results/{HARDWARE_ID}/" not in said
