"""The memory helper, and the async-memory section as the CI run ran it (the CI preset)."""

import statistics
import sys
import time

import psutil
import pytest

from conftest import (
    CI_PROBE_SECONDS,
    ci_preset,
    from_the_ci_run,
    read_rows,
    run_script,
    samples_by_case,
)
from d2lperf import memory

ALLOCATION = 200_000_000  # bytes: 200 MB


def test_rss_is_this_process():
    assert memory.rss_bytes() == pytest.approx(psutil.Process().memory_info().rss, rel=0.05)


@pytest.mark.slow  # over half a second on 2 cores
def test_peak_catches_an_allocation_freed_inside_the_region():
    with memory.PeakRSS() as tracker:
        block = bytearray(ALLOCATION)
        time.sleep(0.05)
        del block
    peak = tracker.result
    assert peak.increase_mb == pytest.approx(ALLOCATION / memory.MB, abs=10)
    assert abs(peak.after - peak.before) < ALLOCATION / 4
    assert peak.peak >= max(peak.before, peak.after)
    assert peak.method in ("VmHWM", "sampling")
    assert peak.samples > 10


@pytest.mark.slow  # over half a second on 2 cores
def test_sampling_alone_where_the_kernel_keeps_no_peak(monkeypatch, tmp_path):
    monkeypatch.setattr(memory, "CLEAR_REFS", tmp_path / "absent" / "clear_refs")
    with memory.PeakRSS() as tracker:
        block = bytearray(ALLOCATION)
        time.sleep(0.05)
        del block
    assert tracker.result.method == "sampling"
    assert tracker.result.increase_mb == pytest.approx(ALLOCATION / memory.MB, abs=10)


@pytest.mark.slow  # over half a second on 2 cores
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="VmHWM is Linux's")
def test_kernel_high_water_mark_catches_what_sampling_misses():
    if not memory.reset_high_water_mark():
        pytest.skip("/proc/self/clear_refs is not writable here")
    with memory.PeakRSS(interval=60) as tracker:  # one reading at the start, none after
        time.sleep(0.05)  # let that reading happen before the allocation
        block = bytearray(ALLOCATION)
        del block
    assert tracker.result.samples == 1
    assert tracker.result.method == "VmHWM"
    assert tracker.result.increase_mb == pytest.approx(ALLOCATION / memory.MB, abs=10)


def test_high_water_mark_is_read_in_bytes(monkeypatch, tmp_path):
    status = tmp_path / "status"
    status.write_text("VmPeak:\t  999 kB\nVmHWM:\t    1234 kB\nVmRSS:\t 1000 kB\n")
    monkeypatch.setattr(memory, "STATUS", status)
    assert memory.high_water_mark_bytes() == 1234 * 1024
    monkeypatch.setattr(memory, "STATUS", tmp_path / "absent")
    assert memory.high_water_mark_bytes() is None


MODES = ("sync", "async")
# The CI run's: batches 10, a report every 5, 2 repeats (config/config.yaml).
PRESET = ci_preset("async_memory")
REPEATS = PRESET["repeats"]
MARKS = [f"batch_{b}" for b in range(PRESET["report_every"], PRESET["batches"] + 1,
                                     PRESET["report_every"])]
CASES = [f"{mode}_{figure}" for mode in MODES
         for figure in (*MARKS, "total", "memory_increase", "peak_memory_increase")
         ] + [f"{mode}_warmed_{figure}" for mode in MODES
              for figure in ("total", "memory_increase", "peak_memory_increase")]


@pytest.fixture(scope="module")
def memory_run(ci_run):
    out, record, log = from_the_ci_run(ci_run, "async_memory", "mxnet")
    rows = read_rows(out)
    return rows, samples_by_case(rows), record, log


def test_every_case_and_repeat_is_a_row(memory_run):
    rows, samples, _, _ = memory_run
    assert list(samples) == CASES
    assert all(len(values) == REPEATS for values in samples.values())
    for row in rows:
        expected = ("memory", "MB") if "memory" in row["case"] else ("time", "s")
        assert (row["metric"], row["unit"]) == expected


def test_totals_include_the_batches(memory_run):
    _, samples, _, _ = memory_run
    for mode in MODES:
        for repeat in range(REPEATS):
            figures = [samples[f"{mode}_{case}"][repeat] for case in (*MARKS, "total")]
            assert 0 < figures[0] and figures == sorted(figures)  # each mark after the last


def test_peak_is_at_least_the_final_increase(memory_run):
    _, samples, run, _ = memory_run
    for mode in MODES:
        for final, peak in zip(samples[f"{mode}_memory_increase"],
                               samples[f"{mode}_peak_memory_increase"]):
            assert peak >= final
            assert peak > 0
        assert len(run["notes"]["peak_memory_method"][mode]) == REPEATS


def test_children_print_as_the_document_did(memory_run):
    _, _, _, stdout = memory_run
    # the document's way and the warmed one, 2 modes x a fresh process per repeat each
    assert stdout.count(f"batch {PRESET['batches']}, time ") == 4 * REPEATS
    assert stdout.count("increased memory: ") == 4 * REPEATS


def test_the_documents_figures_are_measured_without_a_warm_up(memory_run):
    """The seed's warm-up lines are commented out: its increase includes allocating the
    parameters, so the document's counterpart does too; the warmed runs are the extra."""
    _, samples, run, _ = memory_run
    for mode in MODES:
        assert statistics.median(samples[f"{mode}_memory_increase"]) > statistics.median(
            samples[f"{mode}_warmed_memory_increase"])
    assert "without a warm-up" in run["notes"]["warm_up"]


def test_run_record_says_how_it_ran(memory_run):
    _, _, run, _ = memory_run
    assert run["status"] == "ok"
    threads = int(run["threads"]["OMP_NUM_THREADS"])  # one per core of this machine
    assert run["parameters"] == {"threads": threads, "probe_seconds": CI_PROBE_SECONDS,
                                 **PRESET}
    assert run["mxnet"]["version"] == "1.9.1"
    assert "queue" in run["notes"]["batch_times"]


@pytest.mark.parametrize("args, message", [
    (["--batches", "0"], "argument --batches: must be a positive integer, got 0"),
    (["--batches", "4", "--report-every", "5"], "--report-every (5) must not exceed --batches (4)"),
])
def test_rejects_bad_options(experiment_python, tmp_path, args, message):
    done = run_script(experiment_python, "sections/async_memory/async_memory_mxnet.py", *args,
                      "--csv", str(tmp_path / "x.csv"), "--sidecar", str(tmp_path / "y.json"))
    assert done.returncode == 2
    assert message in done.stderr
    assert not (tmp_path / "y.json").exists()
