"""The automatic-parallelism section, run for real in the MXNet environment: on CPU
contexts (cpu(1) standing in for the GPU) with tiny matrices, and skipped without a GPU."""

import json
import os
import subprocess
import time

import pytest

from conftest import REPO, SINGLE_PROCESS, read_rows, run_section
from d2lperf import hostlock

MXNET_SCRIPT = "sections/auto_parallelism/auto_parallelism_mxnet.py"  # under scripts/

SMALL = ("--cpu-size", "100", "--gpu-size", "150", "--dots", "3",
         "--warmup", "1", "--repeats", "2")
CASES = {  # case: devices, in the document's order
    "cpu_only": "cpu(0)",
    "gpu_only": "cpu(1)",
    "cpu_and_gpu": "cpu(0),cpu(1)",
    "gpu_compute": "cpu(1)",
    "copy_to_cpu": "cpu(1),cpu(0)",
    "compute_and_copy": "cpu(1),cpu(0)",
}
# A run that hangs (see test_two_threads_per_queue_are_refused) fails instead of stalling.
TIMEOUT = 120


def run(python, out, *args):
    return run_section(python, MXNET_SCRIPT, out, *args, timeout=TIMEOUT)


rows = read_rows


@pytest.fixture(scope="module")
def on_cpu(tmp_path_factory, experiment_python):
    out = tmp_path_factory.mktemp("auto_parallelism")
    done = run(experiment_python, out, *SMALL, "--on", "cpu", "--threads", "1")
    assert done.returncode == 0, done.stderr
    return out, json.loads((out / "run.json").read_text()), done.stdout


def test_every_repeat_of_every_case_is_a_row_naming_its_devices(on_cpu):
    out, _, _ = on_cpu
    table = rows(out)
    assert sorted((r["section"], r["case"], r["metric"], r["unit"], r["repeat"], r["devices"])
                  for r in table) == sorted(("auto_parallelism", case, "time", "s", str(repeat),
                                             where)
                                            for case, where in CASES.items() for repeat in range(2))
    assert all(float(r["value"]) > 0 for r in table)


def test_run_record_says_what_stood_in_for_the_gpu(on_cpu):
    _, run_record, _ = on_cpu
    assert run_record["status"] == "ok"
    assert run_record["parameters"] == {**SINGLE_PROCESS, "threads": 1, "warmup": 1,
                                        "repeats": 2, "cpu_size": 100, "gpu_size": 150,
                                        "dots": 3, "on": "cpu"}
    notes = run_record["notes"]
    assert notes["gpu_context"] == "cpu(1)"
    assert "cpu(1) stands in for gpu(0)" in notes["stand_in"]
    assert "sharing one processor" in notes["stand_in"]
    assert "cpu(1)'s own queue" in notes["copy_queue"]
    assert "MXNET_CPU_TEMP_COPY=4 temporary-space resources" in notes["temp_space"]
    assert notes["gflops_basis"].startswith("2 n^3 flop per nd.dot(x, x)")
    assert notes["matrix_sizes"] == {"x_cpu": [100, 100], "x_gpu": [150, 150]}
    assert notes["copy_to_cpu_bytes"] == 3 * 150 * 150 * 4
    assert notes["copy_to_cpu_GBps"] > 0
    assert set(notes["gflops"]) == set(CASES) - {"copy_to_cpu"}
    assert all(value > 0 for value in notes["gflops"].values())


def test_prints_a_progress_line_per_case(on_cpu):
    _, _, stdout = on_cpu
    assert [line.split(":")[0] for line in stdout.splitlines()] == list(CASES)


def test_the_progress_lines_are_the_same_when_the_section_waited_for_the_lock(
        tmp_path, experiment_python):
    """Another run's timing holds the host's lock as the section starts: it waits, says so
    in its log, and prints the same lines (the lock's go to stderr)."""
    lock = tmp_path / "host.lock"
    stderr = tmp_path / "stderr.txt"
    timing = hostlock.acquire("a timing of another run", lock, out=open(os.devnull, "w"))
    try:
        with open(stderr, "w") as errors:
            section = subprocess.Popen(
                [str(experiment_python),
                 str(REPO / "scripts" / MXNET_SCRIPT), *SMALL, "--on",
                 "cpu", "--threads", "1", "--csv", str(tmp_path / "samples.csv"),
                 "--sidecar", str(tmp_path / "run.json")],
                stdout=subprocess.PIPE, stderr=errors, text=True,
                env={**os.environ, hostlock.LOCK_VARIABLE: str(lock)})
        deadline = time.monotonic() + TIMEOUT
        while "waiting for the host's timing lock" not in stderr.read_text() and (
                time.monotonic() < deadline and section.poll() is None):
            time.sleep(0.1)
    finally:
        hostlock.release(timing)
    stdout = section.communicate(timeout=TIMEOUT)[0]
    assert section.returncode == 0, stderr.read_text()
    assert "auto_parallelism: waiting for the host's timing lock" in stderr.read_text()
    assert [line.split(":")[0] for line in stdout.splitlines()] == list(CASES)


def test_without_a_gpu_the_section_is_skipped(tmp_path, experiment_python):
    done = run(experiment_python, tmp_path, *SMALL, "--on", "gpu")
    assert done.returncode == 0, done.stderr
    run_record = json.loads((tmp_path / "run.json").read_text())
    if run_record["mxnet"]["gpus_visible"]:
        pytest.skip("this machine has a GPU")
    assert run_record["status"] == "skipped"
    assert run_record["reason"] == "needs 1 GPU, found 0"
    assert run_record["needs"] == "gpus"  # what the report's command follows, as a field
    assert rows(tmp_path) == []
    assert (tmp_path / "samples.csv").read_text() == (
        "section,framework,case,metric,unit,process,repeat,position,value,epoch,devices,"
        "format_version\n")
    assert "auto_parallelism: skipped: needs 1 GPU, found 0" in done.stdout


def test_two_threads_per_queue_are_refused_where_openblas_would_hang(tmp_path, experiment_python):
    """The wheel's OpenBLAS (USE_OPENMP) hangs for good when two engine queues call its
    multithreaded sgemm at once: --on cpu with --threads 2 must stop before any work."""
    done = run(experiment_python, tmp_path, *SMALL, "--on", "cpu", "--threads", "2")
    assert done.returncode == 0, done.stderr
    run_record = json.loads((tmp_path / "run.json").read_text())
    if "USE_OPENMP" not in (run_record["mxnet"]["blas"] or {}).get("config", ""):
        assert run_record["status"] == "ok"
        return
    assert run_record["status"] == "skipped"
    assert run_record["reason"].startswith("CPU contexts need --threads 1 with OpenBLAS")
    assert run_record["reason"].endswith("got --threads 2")
    assert rows(tmp_path) == []


@pytest.mark.parametrize("option, message", [
    (("--dots", "0"), "argument --dots: must be a positive integer, got 0"),
    (("--cpu-size", "-3"), "argument --cpu-size: must be a positive integer, got -3"),
    (("--on", "tpu"), "argument --on: invalid choice: 'tpu' (choose from 'gpu', 'cpu')"),
])
def test_rejects_bad_options(tmp_path, experiment_python, option, message):
    done = run(experiment_python, tmp_path, *option)
    assert done.returncode == 2
    assert message in done.stderr
    assert not (tmp_path / "run.json").exists()
