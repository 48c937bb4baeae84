"""The report's GPU part (d2lperf.report.gpu_view): the ceilings measured on a GPU against its
datasheet's peaks (report/gpu_peaks.csv, d2lperf.peaks), and the energy, clocks and
throttle reasons NVML gave, per training epoch beside its seconds; on a stand-in machine
that names an NVIDIA H200, with hand-made ceilings and readings."""

from __future__ import annotations

import csv
import json

import pytest
from test_render import SUMMARY_COLUMNS, cell_text, section, tables, write_csv

from conftest import REPO
from d2lperf import peaks
from d2lperf.commands import render_report
from d2lperf.results import section_folder


def test_the_datasheet_table_has_every_gpu_asked_for_with_its_source():
    with open(REPO / "report/gpu_peaks.csv", newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert [r["gpu"] for r in rows] == ["A100 SXM 80GB", "H100 SXM", "H200 SXM", "L4",
                                        "RTX 4090", "B200"]
    for row in rows:
        assert row["source"] and "with sparsity" in row["note"], row["gpu"]
        for column in peaks.NUMBERS:
            assert float(row[column]) > 0, (row["gpu"], column)
        # dense tensor figures: bf16 twice TF32 on these GPUs (as rounded on the datasheets),
        # never below fp32; a figure "with sparsity" entered by mistake is twice off
        bf16, tf32 = float(row["bf16_tflops"]), float(row["tf32_tflops"])
        assert bf16 == pytest.approx(2 * tf32, rel=0.05), row["gpu"]
        assert float(row["tf32_tflops"]) >= float(row["fp32_tflops"])


@pytest.mark.parametrize("name, gpu", [
    ("NVIDIA H200", "H200 SXM"), ("NVIDIA H100 80GB HBM3", "H100 SXM"),
    ("NVIDIA A100-SXM4-80GB", "A100 SXM 80GB"), ("NVIDIA GeForce RTX 4090", "RTX 4090"),
    ("NVIDIA L4", "L4"), ("NVIDIA B200", "B200"), ("nvidia h200", "H200 SXM"),
    ("NVIDIA H100 PCIe", None), ("NVIDIA H200 NVL", None), ("Tesla T4", None)])
def test_a_gpu_is_matched_by_the_name_machine_json_records(name, gpu):
    found = peaks.datasheet(name)
    assert (found and found["gpu"]) == gpu


def test_the_h200_row_holds_its_dense_datasheet_figures():
    h200 = peaks.datasheet("NVIDIA H200")
    assert (h200["fp32_tflops"], h200["tf32_tflops"], h200["memory_tb_s"],
            h200["host_gb_s_each_way"]) == (67, 494.5, 4.8, 64)
    assert h200["bf16_tflops"] == h200["fp16_tflops"] == pytest.approx(989, abs=1)


def test_a_malformed_datasheet_table_is_refused_naming_the_row(tmp_path):
    bad = tmp_path / "peaks.csv"
    bad.write_text(",".join(peaks.COLUMNS) + "\nX,NVIDIA X,a lot,1,1,1,1,PCIe,1,s,n\n")
    with pytest.raises(ValueError, match="row 2: fp32_tflops is not a number"):
        peaks.datasheet("NVIDIA X", bad)


def rate(case, median, unit):
    return {"framework": "pytorch", "section": "ceilings", "case": case, "metric": "rate",
            "unit": unit, "median": median, "count": 5, "status": "ok", "devices": "cuda:0"}


# Hand-made ceilings of an H200, as PyTorch measured them there (bf16 8192³ at 769-798
# TFLOP/s, a device copy at about 4.3 TB/s), and a pageable copy far under the link.
CEILINGS = [rate("gpu0_torch_mm_8192", 51_000.0, "GFLOP/s"),
            rate("gpu0_torch_mm_tf32_8192", 370_000.0, "GFLOP/s"),
            rate("gpu0_torch_mm_bf16_8192", 780_000.0, "GFLOP/s"),
            rate("gpu0_torch_copy", 4_300.0, "GB/s"),
            rate("gpu0_torch_host_to_device_pinned", 55.0, "GB/s"),
            rate("gpu0_torch_device_to_host_pageable", 20.0, "GB/s"),
            rate("torch_mm_2000", 90.0, "GFLOP/s")]


def clocks(sm, throttle):
    return {"sm_mhz": sm, "memory_mhz": 3201, "throttle": throttle}


def reading(joules, seconds, throttle):
    return {"source": "NVML", "what": "w", "seconds": seconds, "throttled": bool(
        set(throttle) - {"gpu_idle"}), "gpus": [{
            "index": 0, "cuda_ordinal": 0, "name": "NVIDIA H200", "energy_j": joules,
            "energy_source": "total_energy_counter", "mean_w": joules / seconds,
            "start": clocks(1980, []), "end": clocks(1755, throttle)}]}


def epoch_rows(case, joules, seconds, images=60_000):
    rows = []
    for epoch, (j, s) in enumerate(zip(joules, seconds), start=1):
        common = {"framework": "pytorch", "section": "multi_gpu_gluon", "case": case,
                  "epoch": epoch, "count": 1, "status": "ok", "devices": "cuda:0"}
        rows += [{**common, "metric": "time", "unit": "s", "median": s},
                 {**common, "metric": "energy", "unit": "J", "median": j},
                 {**common, "metric": "energy_per_1000_images", "unit": "J",
                  "median": 1000 * j / images}]
    rows.append({"framework": "pytorch", "section": "multi_gpu_gluon", "case": case,
                 "metric": "time", "unit": "s", "median": sorted(seconds)[len(seconds) // 2],
                 "count": len(seconds), "status": "ok", "devices": "cuda:0"})
    return rows


def gpu_tables(tmp_path, throttle=("sw_power_cap",)):
    """test_render's tables on a machine with an H200: PyTorch's GPU ceilings, and a
    ResNet-18 run of three epochs metered, whose last ended power-capped."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    args = tables(tmp_path)
    machine = json.loads(args.machine.read_text())
    machine["gpus"] = [{"name": "NVIDIA H200", "driver": "570.86", "memory": "143771 MiB"}]
    args.machine.write_text(json.dumps(machine))
    with open(args.summary, newline="", encoding="utf-8") as handle:
        summary = list(csv.DictReader(handle))
    summary += CEILINGS + epoch_rows("resnet18_1_device", [820.0, 800.0, 810.0],
                                     [4.1, 4.0, 4.05])
    write_csv(args.summary, SUMMARY_COLUMNS, summary)
    folder = tmp_path / section_folder("multi_gpu_gluon", "pytorch")
    record = json.loads((folder / "run.json").read_text())
    record.update(status="ok", execution={"device_kind": "gpu", "queues_work": True,
                                          "separate_devices": True})
    record["parameters"]["train_limit"] = None  # every image
    record.pop("reason", None)
    record["notes"] = {
        "gpu_energy": reading(2500.0, 13.0, list(throttle)),
        "gpu_energy_epochs": {"resnet18_1_device": {
            "1": reading(820.0, 4.1, []), "2": reading(800.0, 4.0, ["gpu_idle"]),
            "3": reading(810.0, 4.05, list(throttle))}}}
    (folder / "run.json").write_text(json.dumps(record))
    return args


def test_the_gpu_ceilings_are_set_against_the_h200_datasheet(tmp_path):
    view = render_report.view(gpu_tables(tmp_path))
    [gpu] = view["gpu_datasheet"]["gpus"]
    assert (gpu["name"], gpu["datasheet"]) == ("NVIDIA H200", "H200 SXM")
    shares = {r["case"]: (round(r["share"], 3), r["disagrees"]) for r in gpu["rows"]}
    assert shares == {
        "gpu0_torch_mm_8192": (round(51 / 67, 3), None),
        "gpu0_torch_mm_tf32_8192": (round(370 / 494.5, 3), None),
        "gpu0_torch_mm_bf16_8192": (round(780 / 989.5, 3), None),
        "gpu0_torch_copy": (round(4.3 / 4.8, 3), None),
        "gpu0_torch_host_to_device_pinned": (round(55 / 64, 3), None),
        "gpu0_torch_device_to_host_pageable": (round(20 / 64, 3), "under half the datasheet")}
    assert "torch_mm_2000" not in shares  # the CPU's ceilings have no datasheet here


def test_the_page_shows_the_shares_and_where_they_disagree(tmp_path):
    page = render_report.render(gpu_tables(tmp_path))
    part = cell_text(section(page, "gpus"))
    assert "against the H200 SXM datasheet" in part
    assert "780,000.0" not in part and "780.0 TFLOP/s" in part and "989.5 TFLOP/s" in part
    assert "79%" in part and "90%" in part  # bf16, and the copy's 4.3 of 4.8 TB/s
    assert "disagrees: under half the datasheet" in part
    assert "with sparsity" in part and "NVIDIA H200 Tensor Core GPU datasheet" in part


def test_a_measured_figure_over_the_datasheet_disagrees(tmp_path):
    args = gpu_tables(tmp_path)
    with open(args.summary, newline="", encoding="utf-8") as handle:
        summary = list(csv.DictReader(handle))
    summary.append(rate("gpu0_torch_mm_bf16_4096", 1_200_000.0, "GFLOP/s"))
    write_csv(args.summary, SUMMARY_COLUMNS, summary)
    rows = render_report.view(args)["gpu_datasheet"]["gpus"][0]["rows"]
    assert next(r for r in rows if r["case"] == "gpu0_torch_mm_bf16_4096")["disagrees"] == (
        "over the datasheet")


def test_a_gpu_without_a_datasheet_row_says_so(tmp_path):
    args = gpu_tables(tmp_path)
    machine = json.loads(args.machine.read_text())
    machine["gpus"][0]["name"] = "Tesla T4"
    args.machine.write_text(json.dumps(machine))
    [gpu] = render_report.view(args)["gpu_datasheet"]["gpus"]
    assert gpu["rows"] == [] and gpu["missing"] == "report/gpu_peaks.csv has no row for Tesla T4"


def test_joules_per_epoch_beside_seconds_and_a_throttled_run_marked(tmp_path):
    view = render_report.view(gpu_tables(tmp_path))
    [epochs] = view["gpu_energy"]["epochs"]
    assert epochs["case"] == "resnet18_1_device" and epochs["epochs"] == 3
    assert epochs["joules_per_epoch"] == 810.0 and epochs["seconds_per_epoch"] == 4.05
    assert epochs["joules_per_1000_images"] == pytest.approx(13.5)
    assert epochs["watts"] == pytest.approx(200)
    assert epochs["throttled"] and epochs["throttle"] == "sw_power_cap"
    [run] = view["gpu_energy"]["runs"]
    assert run["throttled"] and run["ran_on"] == "gpu"
    assert "SM 1980→1755 MHz" in run["gpus"][0] and "sw_power_cap" in run["gpus"][0]
    assert view["gpu_energy"]["throttled"] == ["multi_gpu_gluon (PyTorch)"]
    page = cell_text(section(render_report.render(gpu_tables(tmp_path / "again")), "gpus"))
    assert "Throttled: multi_gpu_gluon (PyTorch)" in page
    assert "not the wall's" in page and "810.0" in page and "13.50" in page


def test_an_idle_end_is_not_throttled(tmp_path):
    view = render_report.view(gpu_tables(tmp_path, throttle=("gpu_idle",)))
    assert view["gpu_energy"]["throttled"] == []
    assert not view["gpu_energy"]["epochs"][0]["throttled"]
    page = render_report.render(gpu_tables(tmp_path / "again", throttle=("gpu_idle",)))
    assert "Throttled:" not in page


@pytest.mark.slow  # over half a second on 2 cores
def test_without_nvml_the_report_says_why_and_without_gpus_shows_nothing(tmp_path):
    args = gpu_tables(tmp_path)
    folder = tmp_path / section_folder("multi_gpu_gluon", "pytorch")
    record = json.loads((folder / "run.json").read_text())
    record["notes"] = {"gpu_energy": {"reason": "no NVML: NVML Shared Library Not Found"}}
    (folder / "run.json").write_text(json.dumps(record))
    view = render_report.view(args)
    assert view["gpu_energy"]["reasons"] == [{
        "reason": "no NVML: NVML Shared Library Not Found",
        "runs": "multi_gpu_gluon (PyTorch)"}]
    assert "no NVML: NVML Shared Library Not Found" in render_report.render(args)
    (tmp_path / "cpu").mkdir()
    plain = tables(tmp_path / "cpu")  # a CPU machine, records from before the meter
    view = render_report.view(plain)
    assert "gpu_energy" not in view and "gpu_datasheet" not in view
    assert '<section id="gpus">' not in render_report.render(plain)
