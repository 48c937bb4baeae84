"""The data-parallel section (PyTorch DistributedDataParallel), run for real: processes of
one thread on the CPU, gloo between them, Fashion-MNIST shards, at the CI preset (the CI
run's results) and by hand where a test needs other options."""

import math
import os
import re
import signal
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from conftest import REPO, ci_preset, from_the_ci_run, read_rows, read_run, run_section

SCRIPT = "sections/pytorch/data_parallel.py"
PRESET = ci_preset("data_parallel")
# A tiny run: 512 images per sample, 2 steps on one device, 1 on two.
TINY = ["--models", "lenet", "--images", "512", "--learning-rates", "0.2",
        "--device-counts", "1", "2", "--train-limit", "1024", "--warmup", "0",
        "--repeats", "2", "--threads", "2", "--probe-seconds", "0.05"]


@pytest.fixture(scope="module")
def ci_result(ci_run):
    return from_the_ci_run(ci_run, "data_parallel", "pytorch")


def test_every_device_count_that_fits_is_timed_side_by_side_with_its_startup_apart(ci_result):
    out, record, log = ci_result
    assert record["status"] == "ok"
    rows = read_rows(out)
    counts = [n for n in PRESET["device_counts"] if n <= 2]  # the CI machine's two cores
    cases = [f"lenet_{n}_device" + ("s" if n > 1 else "") for n in counts]
    timed = [r for r in rows if r["metric"] == "time"]
    processes = {r["process"] for r in timed}
    assert len(processes) >= PRESET["processes"]
    for case, n in zip(cases, counts):
        mine = [r for r in timed if r["case"] == case]
        # every round of every process, each with its position in the round
        assert len(mine) == PRESET["repeats"] * len(processes)
        assert {r["position"] for r in mine} == {str(i) for i in range(len(cases))}
        assert {r["devices"] for r in mine} == {",".join(["cpu"] * n)}
        startup = [r for r in rows if r["case"] == case and r["metric"] == "startup"]
        assert len(startup) == len(processes) and all(float(r["value"]) > 0 for r in startup)
    assert "gloo" in record["notes"]["design"]
    assert record["notes"]["images_per_sample"] == {"lenet": PRESET["images"][0]}
    assert record["notes"]["learning_rate_per_device_count"]["lenet"] == {
        str(n): PRESET["learning_rates"][0] * n for n in counts}
    assert "images/s at best" in log


def test_the_summary_has_each_counts_images_per_second_and_efficiency(ci_run):
    _, results = ci_run
    summary = pd.read_csv(results / "summary.csv")
    mine = summary[(summary["section"] == "data_parallel")
                   & (summary["framework"] == "pytorch")].set_index(["case", "metric"])
    images = PRESET["images"][0]
    time_one = mine.loc[("lenet_1_device", "time"), "median"]
    rate_one = mine.loc[("lenet_1_device", "throughput")]
    assert rate_one["unit"] == "images/s"
    assert rate_one["median"] == pytest.approx(images / time_one, rel=0.2)
    efficiency = mine.loc[("lenet_2_devices", "efficiency")]
    assert efficiency["unit"] == "fraction"
    assert efficiency["ci_low"] <= efficiency["median"] <= efficiency["ci_high"]
    speedup = time_one / mine.loc[("lenet_2_devices", "time"), "median"]
    assert efficiency["median"] == pytest.approx(speedup / 2, rel=0.25)
    # each epoch-free sample has a rate and a share of the CPU's ceiling (MFU)
    for case in ("lenet_1_device", "lenet_2_devices"):
        row = mine.loc[(case, "time")]
        assert row["achieved_unit"] == "GFLOP/s" and row["achieved"] > 0
        assert 0 < row["fraction_of_ceiling"] <= 1


def test_the_claim_is_judged_and_the_plot_drawn(ci_run):
    _, results = ci_run
    verdicts = pd.read_csv(results / "verdicts.csv")
    claim = verdicts[(verdicts["name"] == "two_devices_train_lenet_faster")
                     & (verdicts["framework"] == "pytorch")]
    assert len(claim) == 1 and claim["evidence"].iloc[0].startswith("2 devices/1 device")
    svg = (results / "plots" / "data_parallel.svg").read_text(encoding="utf-8")
    assert "images/s" in svg and "scaling efficiency" in svg


def test_counts_above_the_cores_are_not_run_and_say_why(tmp_path, torch_python):
    done = run_section(torch_python, SCRIPT, tmp_path, *TINY, "--device-counts", "1", "4",
                       "--images", "1024")
    assert done.returncode == 0, done.stderr
    record = read_run(tmp_path)
    assert record["notes"]["runs_not_run"] == {"lenet_4_devices": {
        "devices": 4, "reason": "needs 4 devices, this machine has 2 cores (one process of "
                                "one thread each)"}}
    assert {r["case"] for r in read_rows(tmp_path)} == {"lenet_1_device"}


def test_images_that_do_not_split_into_whole_steps_are_refused(tmp_path, torch_python):
    done = run_section(torch_python, SCRIPT, tmp_path, *TINY, "--images", "768")
    assert done.returncode == 2
    assert "--images 768 for lenet does not split into whole steps" in done.stderr
    assert f"take a multiple of {256 * math.lcm(1, 2)}" in done.stderr


def test_a_model_without_its_images_is_refused(tmp_path, torch_python):
    done = run_section(torch_python, SCRIPT, tmp_path, *TINY, "--models", "lenet", "resnet18")
    assert done.returncode == 2
    assert "--models, --images and --learning-rates need one value per model" in done.stderr


def test_a_process_that_dies_ends_the_section_naming_it(tmp_path, torch_python):
    """The coordinator waits on each process's pipe and looks whether the process is still
    alive: a rank killed in the middle of training (as the kernel's OOM killer would) ends
    the section with an error naming the process, instead of a wait forever."""
    args = [a if a != "512" else "51200" for a in TINY]  # 200 steps a sample: seconds
    worker = subprocess.Popen(
        [str(torch_python), str(REPO / "scripts" / SCRIPT), *args, "--repeats", "50",
         "--csv", str(tmp_path / "samples.csv"), "--sidecar", str(tmp_path / "run.json")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for line in worker.stdout:
            if line.startswith("lenet_2_devices: started"):
                break
        children = Path(f"/proc/{worker.pid}/task/{worker.pid}/children").read_text().split()
        os.kill(int(children[-1]), signal.SIGKILL)
        _, stderr = worker.communicate(timeout=120)
    finally:
        worker.kill()
    assert worker.returncode != 0
    assert re.search(r"RuntimeError: process \d of \d died", stderr), stderr[-3000:]
    assert not (tmp_path / "run.json").exists()


def test_on_gpus_a_machine_without_one_skips_saying_what_it_needs(tmp_path, torch_python):
    done = run_section(torch_python, SCRIPT, tmp_path, *TINY, "--on", "gpu")
    assert done.returncode == 0, done.stderr
    record = read_run(tmp_path)
    assert record["status"] == "skipped"
    assert record["reason"] == "needs 1 device, found 0 GPUs"
    assert record["notes"]["runs_not_run"]["lenet_2_devices"]["needs"]



def test_each_process_computes_on_a_core_of_its_own(torch_python):
    """A CPU device is one core: process r keeps the r-th core it may use, whatever thread
    pools its framework sizes by the machine (XLA's do)."""
    code = ("import os; from d2lperf import groups; allowed = sorted(os.sched_getaffinity(0)); "
            "core = groups.pin(1); print(core == allowed[1 % len(allowed)], "
            "os.sched_getaffinity(0) == {core})")
    done = subprocess.run([str(torch_python), "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.split() == ["True", "True"]
