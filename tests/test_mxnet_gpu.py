"""MXNet on GPU machines, without a GPU: a stand-in nvidia-smi on the PATH says which
GPUs there are; two small libraries built once with CUDA 13's nvcc carry real fat
binaries (tests/data/add_one.cu):

  nvcc -shared -Xcompiler -fPIC -cudart shared -gencode arch=compute_80,code=sm_80 \\
       -gencode arch=compute_86,code=sm_86 [-gencode arch=compute_90,code=compute_90] \\
       -o tests/data/libfatbin_sm80_sm86[_ptx90].so tests/data/add_one.cu && strip ...

libfatbin_sm80_sm86.so has the part of MXNet 1.9.1's archs (sm_50 60 70 80 86, no PTX)
that CUDA 13 still builds, so the four GPUs below get the verdicts MXNet's own library
would give them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import REPO, run_command, run_section
from d2lperf import cuda_arch, mxnet_gpu, provenance
from d2lperf.commands import mxnet_build

MXNET_SCRIPT = "sections/multi_gpu_scratch/multi_gpu_scratch_mxnet.py"  # under scripts/

DATA = REPO / "tests" / "data"
MXNET_LIKE = DATA / "libfatbin_sm80_sm86.so"
WITH_PTX = DATA / "libfatbin_sm80_sm86_ptx90.so"

# name, compute capability; what `make envs` installs; the code MXNet's archs run there
GPUS = {
    "a100": ("NVIDIA A100-SXM4-80GB", "8.0", "mxnet-cu117", "sm_80"),
    "rtx4090": ("NVIDIA GeForce RTX 4090", "8.9", "mxnet-cu117", "sm_86"),
    "h200": ("NVIDIA H200", "9.0", "mxnet", None),
    "b200": ("NVIDIA B200", "10.0", "mxnet", None),
}
FAILING = "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."


def fake_nvidia_smi(folder: Path, gpus: list[tuple[str, str]], fails: str | None = None) -> Path:
    """An nvidia-smi that answers --query-gpu=... --format=csv,noheader for ``gpus``
    ((name, compute capability) each), or fails as a broken driver does."""
    folder.mkdir(parents=True, exist_ok=True)
    table = [{"index": str(i), "uuid": f"GPU-{i:08d}-fake", "name": name, "compute_cap": cap,
              "driver_version": "570.86", "memory.total": "81559 MiB",
              "pci.bus_id": f"00000000:{i + 1:02X}:00.0"} for i, (name, cap) in enumerate(gpus)]
    script = folder / "nvidia-smi"
    script.write_text(textwrap.dedent(f"""\
        #!{sys.executable}
        import sys
        if {fails!r} is not None:
            print({fails!r})
            sys.exit(9)
        query = [a.split("=", 1)[1] for a in sys.argv[1:] if a.startswith("--query-gpu=")]
        if not query:
            print("| NVIDIA-SMI 570.86   Driver Version: 570.86   CUDA Version: 12.8 |")
            sys.exit(0)
        for gpu in {table!r}:
            print(", ".join(gpu[field] for field in query[0].split(",")))
        """))
    script.chmod(0o755)
    return folder


@pytest.fixture
def on_machine(tmp_path, monkeypatch):
    """Put a stand-in nvidia-smi for these GPUs first on the PATH."""
    def use(*keys: str, fails: str | None = None) -> None:
        gpus = [GPUS[k][:2] for k in keys]
        folder = fake_nvidia_smi(tmp_path / "bin", gpus, fails)
        monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
        monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    return use


# --- what `make envs` installs ------------------------------------------------------

def make_would_install(tmp_path: Path, *make_args: str) -> tuple[str, list[str]]:
    """Run `make -n` for the MXNet environment, then the one step it prints that
    decides what pip gets (`d2lperf mxnet-build requirements`): its line, and the pins."""
    venv = tmp_path / "venv"
    venv.mkdir(exist_ok=True)
    dry = subprocess.run(
        ["make", "-n", "-B", f"MXVENV={venv}", f"PYTHON={sys.executable}", *make_args,
         f"{venv}/.installed"],
        cwd=REPO, capture_output=True, text=True, timeout=60)
    assert dry.returncode == 0, dry.stderr
    steps = [line for line in dry.stdout.splitlines() if "mxnet-build requirements" in line]
    assert len(steps) == 1, dry.stdout
    assert any(f"-r {venv}/requirements.txt" in line for line in dry.stdout.splitlines())
    assert any("mxnet-build link-cuda-libs" in line for line in dry.stdout.splitlines())
    done = subprocess.run(["bash", "-c", steps[0]], cwd=REPO, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip(), (venv / "requirements.txt").read_text().split()


@pytest.mark.slow  # over a second on 2 cores
@pytest.mark.parametrize("gpu", GPUS)
def test_make_envs_installs_the_build_that_has_kernels_for_the_gpu(gpu, on_machine, tmp_path):
    name, capability, build, _ = GPUS[gpu]
    on_machine(gpu)
    said, pins = make_would_install(tmp_path)
    assert said.startswith(f"MXNet build: {build} (")
    assert "\n" not in said  # why, in one line
    mxnet_pins = [p for p in pins if p.startswith("mxnet")]
    assert mxnet_pins == [f"{build}==1.9.1"]
    cuda_pins = [p for p in pins if p.startswith("nvidia-")]
    if build == "mxnet":
        assert cuda_pins == []
        assert (f"MXNet 1.9.1 has no kernels for {name}, compute capability {capability} (its "
                "CUDA builds carry SASS for sm_50 sm_60 sm_70 sm_80 sm_86 and no PTX)") in said
        assert said.endswith("the PyTorch sections use the GPU")
    else:
        assert "nvidia-cudnn-cu11==8.9.6.50" in cuda_pins
        assert "nvidia-cuda-nvrtc-cu11==11.8.89" in cuda_pins
        assert len(cuda_pins) == 10
        assert f"{name}, compute capability {capability}, runs MXNet 1.9.1's" in said
    assert "numpy==1.23.5" in pins


@pytest.mark.slow  # over a second on 2 cores
def test_a_failing_driver_gets_the_cpu_build_and_says_why(on_machine, tmp_path):
    on_machine("a100", fails=FAILING)
    said, pins = make_would_install(tmp_path)
    assert said == f"MXNet build: mxnet (the CPU build): nvidia-smi failed (exit 9): {FAILING}"
    assert "mxnet==1.9.1" in pins
    assert not [p for p in pins if p.startswith("nvidia-")]


def test_no_driver_gets_the_cpu_build(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    done = subprocess.run([sys.executable, "-m", "d2lperf", "mxnet-build", "choose"], cwd=REPO,
                          capture_output=True, text=True, env={"PATH": str(empty)}, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["mxnet", "no NVIDIA driver answers (no nvidia-smi)"]


def test_a_machine_with_both_kinds_gets_the_cuda_build(on_machine):
    on_machine("a100", "h200")
    build, why = mxnet_gpu.choose_build()
    assert build == "mxnet-cu117"
    assert "NVIDIA A100-SXM4-80GB, compute capability 8.0, runs MXNet 1.9.1's sm_80 code" in why
    assert "no kernels for NVIDIA H200, compute capability 9.0" in why
    assert why.endswith("sections skip it")


@pytest.mark.slow  # over a second on 2 cores
def test_mxnet_build_overrides_the_choice(on_machine, tmp_path):
    on_machine("h200")
    said, pins = make_would_install(tmp_path, "MXNET_BUILD=mxnet-cu117")
    assert said.endswith(": set by MXNET_BUILD")
    assert "mxnet-cu117==1.9.1" in pins and "mxnet==1.9.1" not in pins
    said, pins = make_would_install(tmp_path, "MXNET_BUILD=mxnet-cu112")
    assert "mxnet-cu112==1.9.1" in pins and "nvidia-cublas-cu11==11.11.3.6" in pins


def test_an_unknown_build_is_refused_naming_what_is_allowed(tmp_path):
    done = subprocess.run([sys.executable, "-m", "d2lperf", "mxnet-build", "requirements",
                           "--build", "mxnet-cu90; rm -rf /", "--out", str(tmp_path / "r")],
                          cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.strip() == ("mxnet_build.py: error: MXNET_BUILD='mxnet-cu90; rm -rf /'; "
                                   "allowed: auto, mxnet, mxnet-cu112, mxnet-cu117")
    assert not (tmp_path / "r").exists()


def test_the_cuda_lock_pins_the_cpu_locks_mxnet_version():
    cpu = mxnet_build.pinned(mxnet_build.BASE_LOCK)
    cuda = mxnet_build.pinned(mxnet_build.CUDA_LOCK)
    assert [p for p in cpu if p.startswith("mxnet")] == ["mxnet==1.9.1"]
    assert [p for p in cuda if p.startswith("mxnet")] == ["mxnet-cu117==1.9.1"]
    assert not [p for p in cpu if p.startswith("nvidia-")]


def test_cuda_libraries_are_linked_beside_libmxnet(tmp_path):
    """libmxnet.so's RPATH is ${ORIGIN}: links in mxnet/ are where it looks."""
    packages = tmp_path / "venv/lib/python3.11/site-packages"
    (packages / "mxnet").mkdir(parents=True)
    (packages / "mxnet/libmxnet.so").write_bytes(b"\x7fELF")
    (packages / "mxnet/libgfortran.so.3").write_bytes(b"the wheel's own")
    for package, library in [("cudnn", "libcudnn.so.8"), ("cudnn", "libcudnn_ops_infer.so.8"),
                             ("cublas", "libcublas.so.11"), ("cuda_nvrtc", "libnvrtc.so.11.2"),
                             ("other", "libgfortran.so.3")]:
        (packages / "nvidia" / package / "lib").mkdir(parents=True, exist_ok=True)
        (packages / "nvidia" / package / "lib" / library).write_text(library)
    for _ in range(2):  # a second `make envs` finds the links there
        done = subprocess.run([sys.executable, "-m", "d2lperf", "mxnet-build", "link-cuda-libs",
                               "--venv", str(tmp_path / "venv")],
                              cwd=REPO, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == "linked 4 CUDA libraries beside libmxnet.so"
    link = packages / "mxnet/libnvrtc.so.11.2"
    assert os.readlink(link) == "../nvidia/cuda_nvrtc/lib/libnvrtc.so.11.2"
    assert link.read_text() == "libnvrtc.so.11.2"
    assert (packages / "mxnet/libgfortran.so.3").read_text() == "the wheel's own"


def test_the_cpu_build_links_nothing(tmp_path):
    (tmp_path / "venv/lib/python3.11/site-packages/mxnet").mkdir(parents=True)
    assert mxnet_build.link_cuda_libraries(
        mxnet_build.site_packages(tmp_path / "venv")) == []


# --- the arch reader ------------------------------------------------------------------

def test_arch_reader_finds_the_sass_and_ptx_of_a_real_fatbin():
    code = cuda_arch.read_device_code(WITH_PTX)
    assert (code.sass, code.ptx) == ((80, 86), (90,))
    assert code.fatbins == 2  # the kernel's, and the CUDA runtime's
    assert code.as_dict() == {"sass": ["sm_80", "sm_86"], "ptx": ["compute_90"], "fatbins": 2}
    assert cuda_arch.read_device_code(MXNET_LIKE).ptx == ()


def test_arch_reader_on_the_installed_build_and_on_other_files(experiment_python, tmp_path):
    said = subprocess.run(
        [str(experiment_python), "-c", "import mxnet, os; print(mxnet.runtime.Features()"
         ".is_enabled('CUDA')); print(os.path.join(os.path.dirname(mxnet.__file__), "
         "'libmxnet.so'))"], capture_output=True, text=True, timeout=120).stdout.split()
    code = cuda_arch.read_device_code(said[1])
    if said[0] == "False":  # the CPU build: no device code at all
        assert (code.sass, code.ptx, code.fatbins) == ((), (), 0)
    else:  # PyPI's CUDA builds
        assert code.sass == (50, 60, 70, 80, 86) and code.ptx == ()
    (tmp_path / "notes.txt").write_text("not a library")
    with pytest.raises(cuda_arch.NotAnElfLibrary, match="not an ELF file"):
        cuda_arch.read_device_code(tmp_path / "notes.txt")


@pytest.mark.parametrize("capability, sass, ptx, runs", [
    ("8.0", (50, 60, 70, 80, 86), (), "sm_80"),
    ("8.6", (50, 60, 70, 80, 86), (), "sm_86"),
    ("8.9", (50, 60, 70, 80, 86), (), "sm_86"),  # same major, lower minor
    ("7.5", (50, 60, 70, 80, 86), (), "sm_70"),
    ("9.0", (50, 60, 70, 80, 86), (), None),  # no SASS of major 9, no PTX
    ("10.0", (50, 60, 70, 80, 86), (), None),
    ("3.7", (50, 60, 70, 80, 86), (), None),
    ("8.0", (86,), (), None),  # sm_86 code does not run on 8.0
    ("9.0", (80, 86), (90,), "compute_90"),  # PTX runs on its own and later GPUs
    ("12.0", (80,), (70, 90), "compute_90"),
    ("8.6", (80,), (90,), "sm_80"),
])
def test_which_code_runs_on_which_gpu(capability, sass, ptx, runs):
    assert cuda_arch.runnable_code(cuda_arch.sm_number(capability), sass, ptx) == runs


@pytest.mark.parametrize("text", ["", "9", "9.0.1", "N/A", "[N/A]", "8.10"])
def test_a_compute_capability_is_major_dot_minor(text):
    with pytest.raises(ValueError, match="not a compute capability"):
        cuda_arch.sm_number(text)


# --- the preflight ----------------------------------------------------------------------

@pytest.mark.parametrize("gpu", GPUS)
def test_preflight_verdict_for_each_gpu(gpu, on_machine, experiment_python):
    """Verdicts from the archs read out of a library; the smoke test runs for real,
    with the CPU build, so it fails, and the GPU is then not usable."""
    name, capability, _, runs = GPUS[gpu]
    on_machine(gpu)
    report = mxnet_gpu.preflight(MXNET_LIKE, python=str(experiment_python), timeout=120)
    assert report["device_code"] == {"sass": ["sm_80", "sm_86"], "ptx": [], "fatbins": 2}
    [entry] = report["gpus"]
    assert (entry["name"], entry["compute_capability"]) == (name, capability)
    assert entry["supported"] is (runs is not None)
    assert entry["runnable_code"] == runs
    if runs is None:
        assert entry["reason"].startswith(
            f"MXNet 1.9.1 has no kernels for {name}, compute capability {capability} "
            "(the installed libmxnet.so carries SASS for sm_80 sm_86 and no PTX)")
    smoke = entry["smoke_test"]
    assert smoke["ok"] is False and smoke["error"]
    assert entry["usable"] is False


def test_preflight_with_ptx_runs_on_later_gpus(on_machine):
    on_machine("h200", "b200")
    verdicts = mxnet_gpu.installed_verdicts(mxnet_gpu.query_gpus(), WITH_PTX)
    assert [v.runnable_code for v in verdicts] == ["compute_90", "compute_90"]


def test_preflight_when_nvidia_smi_fails(on_machine):
    on_machine("a100", fails=FAILING)
    report = mxnet_gpu.preflight(MXNET_LIKE)
    assert report["nvidia_smi"] == f"nvidia-smi failed (exit 9): {FAILING}"
    assert report["gpus"] == []


@pytest.mark.parametrize("gpu", ["a100", "h200"])
def test_machine_info_records_the_preflight(gpu, on_machine, experiment_python, tmp_path):
    """The real machine_info step in the MXNet environment (the CPU build here):
    no smoke test on a CPU build, and a reason that says what would run."""
    name, capability, build, _ = GPUS[gpu]
    on_machine(gpu)
    done = run_command(experiment_python, "machine-info", "--machine", "m",
                      "--out", str(tmp_path / "machine.json"))
    assert done.returncode == 0, done.stderr
    facts = json.loads((tmp_path / "machine.json").read_text())
    support = facts["mxnet_gpu_support"]
    assert support["library"].endswith("mxnet/libmxnet.so")
    [entry] = support["gpus"]
    assert (entry["name"], entry["compute_capability"]) == (name, capability)
    if support["device_code"]["sass"]:  # a CUDA build: the smoke test ran
        assert entry["smoke_test"]["ok"] is not None
    else:
        assert entry["usable"] is False and entry["supported"] is False
        assert entry["smoke_test"]["ok"] is None
        if build == "mxnet":
            assert entry["reason"].startswith(
                f"MXNet 1.9.1 has no kernels for {name}, compute capability {capability}")
        else:
            assert entry["reason"].startswith("the installed MXNet 1.9.1 is its CPU build; "
                                              "`make MXNET_BUILD=mxnet-cu117 envs`")
        assert f"GPU 0: not usable by MXNet: {entry['reason']}" in done.stdout
    assert facts["mxnet_gpu_settings"]["MXNET_CUDNN_AUTOTUNE_DEFAULT"]["default"] == "1"


def test_a_gpu_section_on_an_h200_is_skipped_with_the_reason(on_machine, experiment_python,
                                                             tmp_path):
    on_machine("h200")
    done = run_section(experiment_python, MXNET_SCRIPT, tmp_path,
                       "--on", "gpu",
                       "--devices", "1", "--batch-sizes", "64", "--learning-rates", "0.1")
    assert done.returncode == 0, done.stderr
    record = json.loads((tmp_path / "run.json").read_text())
    assert record["status"] == "skipped"
    assert record["reason"].startswith(
        "MXNet 1.9.1 has no kernels for NVIDIA H200, compute capability 9.0 (")
    assert record["reason"].endswith("; the PyTorch sections run on it")
    assert record["mxnet_gpu_settings"]["NVIDIA_TF32_OVERRIDE"] == {
        "value": None, "default": None, "effective": None}


def test_more_gpus_than_there_are_still_says_how_many(on_machine, experiment_python, tmp_path):
    on_machine("h200")
    done = run_section(experiment_python, MXNET_SCRIPT, tmp_path,
                       "--on", "gpu",
                       "--devices", "64", "--batch-sizes", "64", "--learning-rates", "0.1")
    assert done.returncode == 0, done.stderr
    assert json.loads((tmp_path / "run.json").read_text())["reason"].startswith("needs 64 GPUs")


def test_visible_gpus_follow_cuda_visible_devices():
    gpus = [mxnet_gpu.Gpu(0, "GPU-a", "NVIDIA A100", "8.0"),
            mxnet_gpu.Gpu(1, "GPU-h", "NVIDIA H200", "9.0")]
    verdicts = mxnet_gpu.wheel_verdicts(gpus)
    names = [v.gpu.name for v in mxnet_gpu.visible(verdicts, {"CUDA_VISIBLE_DEVICES": "0"})]
    assert names == ["NVIDIA A100"]
    assert [v.gpu.index for v in mxnet_gpu.visible(verdicts, {"CUDA_VISIBLE_DEVICES": "GPU-h"})
            ] == [1]
    assert len(mxnet_gpu.visible(verdicts, {})) == 2
    assert len(mxnet_gpu.visible(verdicts, {"CUDA_VISIBLE_DEVICES": "MIG-x"})) == 2


# --- what a run records ---------------------------------------------------------------

def test_mxnet_gpu_variables_are_recorded_with_their_defaults():
    settings = provenance.mxnet_gpu_settings({"MXNET_USE_FUSION": "0",
                                              "MXNET_EXEC_BULK_EXEC_MAX_NODE_TRAIN": "30"})
    assert settings["MXNET_USE_FUSION"] == {"value": "0", "default": "1", "effective": "0"}
    assert settings["MXNET_GPU_MEM_POOL_TYPE"] == {"value": None, "default": "Naive",
                                                   "effective": "Naive"}
    assert settings["MXNET_EXEC_BULK_EXEC_MAX_NODE_TRAIN_FWD"]["effective"] == "30"
    assert set(settings) >= {"MXNET_CUDNN_AUTOTUNE_DEFAULT", "MXNET_GPU_WORKER_NTHREADS",
                             "MXNET_EXEC_BULK_EXEC_TRAIN", "MXNET_EXEC_BULK_EXEC_INFERENCE",
                             "NVIDIA_TF32_OVERRIDE"}
    assert "mxnet_gpu_settings" in provenance.run_context("mxnet")
    assert "mxnet_gpu_settings" not in provenance.run_context("pytorch")  # MXNet's own


def test_ceilings_leave_out_gpus_mxnet_cannot_run_on(on_machine, experiment_python, tmp_path):
    on_machine("h200")
    done = run_section(experiment_python, "sections/ceilings/ceilings_mxnet.py", tmp_path,
                       "--dot-sizes", "64",
                       "--copy-mb", "1", "--warmup", "0", "--repeats", "1")
    assert done.returncode == 0, done.stderr
    record = json.loads((tmp_path / "run.json").read_text())
    assert record["status"] == "ok"
    assert record["notes"]["gpu_ceilings"].startswith(
        "not measured: MXNet 1.9.1 has no kernels for NVIDIA H200, compute capability 9.0")
