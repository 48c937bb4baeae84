"""d2lperf.energy: a GPU's energy, clocks and throttle reasons through a timed region, read
through an NVML stand-in (tests/nvml_stand_in/pynvml.py) whose counters move, so that the
GPU's code path runs here; and without NVML, a reason instead, never a crash."""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import threading
import time

import jsonschema
import pytest
import yaml

from conftest import REPO
from d2lperf import energy, harness, results, training
from d2lperf.results import Recorder

STAND_IN = REPO / "tests/nvml_stand_in"


def load_stand_in():
    spec = importlib.util.spec_from_file_location("pynvml", STAND_IN / "pynvml.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def nvml(monkeypatch):
    """The stand-in as pynvml, one H200 drawing 300 W, nothing hidden or throttled."""
    for name in ("CUDA_VISIBLE_DEVICES", "FAKE_NVML_GPUS", "FAKE_NVML_NO_ENERGY_COUNTER",
                 "FAKE_NVML_THROTTLE", "FAKE_NVML_INIT_FAILS", "FAKE_NVML_WATTS"):
        monkeypatch.delenv(name, raising=False)
    module = load_stand_in()
    monkeypatch.setitem(sys.modules, "pynvml", module)
    energy._nvml.cache_clear()
    yield module
    energy._nvml.cache_clear()


@pytest.fixture
def no_nvml(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import pynvml: ImportError
    energy._nvml.cache_clear()
    yield
    energy._nvml.cache_clear()


def metered(seconds=0.2, ordinals=None):
    with energy.Meter(ordinals) as meter:
        time.sleep(seconds)
    return meter.reading()


def test_the_energy_counter_gives_joules_clocks_and_reasons_at_both_ends(nvml):
    reading = metered(0.2)
    assert reading["source"] == "NVML" and "not the wall's" in reading["what"]
    assert reading["seconds"] == pytest.approx(0.2, abs=0.1)
    [gpu] = reading["gpus"]
    assert gpu["name"] == "NVIDIA H200" and gpu["index"] == 0 and gpu["cuda_ordinal"] == 0
    assert gpu["energy_source"] == "total_energy_counter"
    assert gpu["energy_j"] == pytest.approx(300 * reading["seconds"], rel=0.2)
    assert gpu["mean_w"] == pytest.approx(300, rel=0.2)
    for end in ("start", "end"):
        assert gpu[end]["memory_mhz"] == 2619 and 1900 <= gpu[end]["sm_mhz"] <= 1980
        assert gpu[end]["throttle"] == []
    assert gpu["start"]["sm_mhz"] != gpu["end"]["sm_mhz"]  # the stand-in's clock moves
    assert reading["throttled"] is False
    assert energy.joules(reading) == gpu["energy_j"]
    json.dumps(reading)  # as a run record keeps it


@pytest.mark.slow  # over half a second on 2 cores
def test_without_the_counter_a_thread_samples_the_power_through_the_region(nvml,
                                                                          monkeypatch):
    monkeypatch.setenv("FAKE_NVML_NO_ENERGY_COUNTER", "1")
    threads = threading.active_count()
    reading = metered(0.3)
    [gpu] = reading["gpus"]
    assert gpu["energy_source"] == "power_samples" and gpu["power_samples"] >= 5
    assert gpu["energy_j"] == pytest.approx(300 * reading["seconds"], rel=0.2)
    assert threading.active_count() == threads  # the sampler is gone


@pytest.mark.parametrize("mask, reasons, throttled", [
    (0x0, [], False), (0x1, ["gpu_idle"], False),
    (0x4, ["sw_power_cap"], True), (0x1 | 0x40, ["gpu_idle", "hw_thermal_slowdown"], True)])
def test_throttle_reasons_by_name_and_a_throttled_end(nvml, monkeypatch, mask, reasons,
                                                      throttled):
    monkeypatch.setenv("FAKE_NVML_THROTTLE", hex(mask))
    reading = metered(0.01)
    assert reading["gpus"][0]["end"]["throttle"] == reasons
    assert reading["throttled"] is throttled


def test_cuda_visible_devices_and_ordinals_choose_the_gpus(nvml, monkeypatch):
    monkeypatch.setenv("FAKE_NVML_GPUS", "3")
    assert [g["index"] for g in metered(0.01)["gpus"]] == [0, 1, 2]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,0")
    reading = metered(0.05)
    assert [(g["index"], g["cuda_ordinal"]) for g in reading["gpus"]] == [(2, 0), (0, 1)]
    assert reading["gpus"][0]["mean_w"] == pytest.approx(320, rel=0.2)  # GPU 2's draw
    assert [g["index"] for g in metered(0.01, [1])["gpus"]] == [0]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-00000001")
    assert [g["index"] for g in metered(0.01)["gpus"]] == [1]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert metered(0.01)["reason"] == "CUDA_VISIBLE_DEVICES='' hides every GPU"


def test_the_devices_a_framework_names_give_their_cuda_ordinals():
    assert energy.gpu_ordinals(["cuda:0", "cuda:1"]) == [0, 1]
    assert energy.gpu_ordinals(["gpu(1)", "gpu(0)", "gpu(1)"]) == [1, 0]
    assert energy.gpu_ordinals(["gpu:0"]) == [0]
    assert energy.gpu_ordinals(["cpu", "cpu(0)", "TFRT_CPU_0"]) == []


@pytest.mark.parametrize("how", ["no package", "no driver", "work on the CPU"])
def test_without_nvml_a_reading_says_why(how, monkeypatch):
    energy._nvml.cache_clear()
    if how == "no package":
        monkeypatch.setitem(sys.modules, "pynvml", None)
    else:
        monkeypatch.setitem(sys.modules, "pynvml", load_stand_in())
        monkeypatch.setenv("FAKE_NVML_INIT_FAILS", "NVML Shared Library Not Found")
    try:
        reading = metered(0.01, [] if how == "work on the CPU" else None)
    finally:
        energy._nvml.cache_clear()
    assert set(reading) == {"reason"}
    assert reading["reason"] == {
        "no package": "no NVML: the nvidia-ml-py package (pynvml) is not installed",
        "no driver": "no NVML: NVML Shared Library Not Found",
        "work on the CPU": "the work ran on no GPU"}[how]
    assert energy.joules(reading) is None


def test_a_real_nvidia_ml_py_without_a_driver_gives_a_reason():
    pytest.importorskip("pynvml")  # where the workflow's environment has nvidia-ml-py
    energy._nvml.cache_clear()
    try:
        reading = metered(0.01)
    finally:
        energy._nvml.cache_clear()
    assert "gpus" in reading or reading["reason"].startswith(("no NVML", "NVML"))


def rows_of(rec, metric):
    return [(r["case"], r["epoch"], r["unit"], r["value"]) for r in rec.rows
            if r["metric"] == metric]


def test_an_epoch_on_a_gpu_records_its_joules_beside_its_seconds(nvml):
    rec = Recorder("multi_gpu_gluon", "pytorch")
    with energy.Meter(energy.gpu_ordinals(["cuda:0"])) as meter:
        time.sleep(0.1)
    training.record_epoch(rec, "resnet18_1_device", 1, 0.1, 2.3, 0.1, ["cuda:0"],
                          meter=meter, images=500)
    [(case, epoch, unit, joules)] = rows_of(rec, "energy")
    assert (case, epoch, unit) == ("resnet18_1_device", 1, "J")
    assert joules == pytest.approx(300 * meter.seconds, rel=0.2)
    [(_, _, unit, per_1000)] = rows_of(rec, "energy_per_1000_images")
    assert unit == "J" and per_1000 == pytest.approx(joules * 2)
    assert rows_of(rec, "time")[0][3] == 0.1  # the epoch's seconds, as before
    kept = rec.notes["gpu_energy_epochs"]["resnet18_1_device"]["1"]
    assert kept["gpus"][0]["end"]["sm_mhz"] and kept["throttled"] is False


def test_an_epoch_on_the_cpu_or_without_nvml_records_no_joules_and_says_why(no_nvml):
    rec = Recorder("multi_gpu_scratch", "pytorch")
    for devices in (["cpu", "cpu"], ["cuda:0"]):
        with energy.Meter(energy.gpu_ordinals(devices)) as meter:
            pass
        training.record_epoch(rec, "lenet_2_devices", len(devices), 0.1, 2.3, 0.1, devices,
                              meter=meter, images=500)
    assert rows_of(rec, "energy") == [] and rows_of(rec, "energy_per_1000_images") == []
    kept = rec.notes["gpu_energy_epochs"]["lenet_2_devices"]
    assert kept == {"2": {"reason": "the work ran on no GPU"},
                    "1": {"reason": "no NVML: the nvidia-ml-py package (pynvml) is not "
                                    "installed"}}
    training.record_epoch(rec, "lenet_1_device", 1, 0.1, 2.3, 0.1, ["cpu"])  # as before
    assert {r["metric"] for r in rec.rows} == {"time", "accuracy", "loss"}


def harness_record(body):
    args = argparse.Namespace(process=1, threads=1)
    record, _ = harness._run_body("toy", "pytorch", args, body)
    return record


def test_the_harness_meters_the_section_body(nvml):
    record = harness_record(lambda args, rec: time.sleep(0.05))
    reading = record["notes"]["gpu_energy"]
    assert reading["gpus"][0]["energy_j"] > 0 and reading["seconds"] >= 0.05
    assert reading["gpus"][0]["start"]["throttle"] == []


def test_the_harness_says_why_it_metered_nothing(no_nvml):
    def skipped(args, rec):
        raise harness.Skipped("needs 1 GPU, found 0")

    for body in (lambda args, rec: None, skipped):
        record = harness_record(body)
        assert record["notes"]["gpu_energy"] == {
            "reason": "no NVML: the nvidia-ml-py package (pynvml) is not installed"}


def test_records_with_readings_pass_the_run_schema_and_bad_ones_do_not(nvml, tmp_path):
    rec = Recorder("multi_gpu_gluon", "pytorch")
    with energy.Meter([0]) as meter:
        pass
    training.record_epoch(rec, "resnet18_1_device", 1, 0.1, 2.3, 0.1, ["cuda:0"],
                          meter=meter, images=500)
    with energy.Meter() as whole:
        pass
    record = {"format_version": results.FORMAT_VERSION, "section": "multi_gpu_gluon",
              "framework": "pytorch", "status": "ok", "parameters": {"train_limit": None},
              "notes": {**rec.notes, "gpu_energy": whole.reading()}}
    results.check_run(json.loads(json.dumps(record)), "run.json", "multi_gpu_gluon_pytorch")
    results.check_run({**record, "notes": {"gpu_energy": {"reason": "no NVML"}}}, "run.json",
                      "multi_gpu_gluon_pytorch")
    bad = json.loads(json.dumps(record))
    bad["notes"]["gpu_energy"]["gpus"][0]["energy_j"] = "a lot"
    with pytest.raises(results.RecordError, match="gpu_energy.gpus.0.energy_j"):
        results.check_run(bad, "run.json", "multi_gpu_gluon_pytorch")
    bad = json.loads(json.dumps(record))
    bad["notes"]["gpu_energy_epochs"]["resnet18_1_device"]["1"]["gpus"][0]["end"][
        "throttle"] = "sw_power_cap"
    with pytest.raises(results.RecordError, match="throttle"):
        results.check_run(bad, "run.json", "multi_gpu_gluon_pytorch")


def test_a_region_shorter_than_the_records_resolution_keeps_a_record_that_passes(nvml):
    """NVML counts whole millijoules: 1 mJ over a region of 0.1 us reads 9280 W. The record
    keeps its seconds to the microsecond (0.0 here), and a mean computed from the unrounded
    seconds was then judged against the record's own: refused as more than a GPU draws.
    (It failed a busy machine's test run at random, where the empty region took 0.1 us.)"""
    with energy.Meter([0]) as meter:
        pass
    meter.seconds, meter.gpus[0]["energy_j"] = 1.077e-7, 0.001
    reading = meter.reading()
    record = {"format_version": results.FORMAT_VERSION, "section": "multi_gpu_gluon",
              "framework": "pytorch", "status": "ok", "parameters": {"train_limit": None},
              "notes": {"gpu_energy": reading}}
    results.check_run(json.loads(json.dumps(record)), "run.json", "multi_gpu_gluon_pytorch")
    assert "mean_w" not in reading["gpus"][0]  # no mean over a region the record keeps as 0 s
    meter.seconds = 2.4
    assert meter.reading()["gpus"][0]["mean_w"] == round(0.001 / 2.4, 3)


def test_an_energy_sample_passes_the_samples_schema():
    schema = yaml.safe_load((REPO / "workflow/schemas/samples.schema.yaml").read_text())
    row = {"section": "multi_gpu_gluon", "framework": "pytorch", "case": "resnet18_1_device",
           "unit": "J", "process": 0, "repeat": 0, "value": 812.5, "epoch": 1}
    for metric in ("energy", "energy_per_1000_images"):
        jsonschema.validate({**row, "metric": metric}, schema)
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate({**row, "metric": metric, "value": -1.0}, schema)
