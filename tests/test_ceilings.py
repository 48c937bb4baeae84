"""The machine's ceilings: every library's, named by kernel, and never beaten by a share."""

import json

import pandas as pd
import pytest

from conftest import REPO
from d2lperf.commands.summarise import add_rates

RUNS = {"mxnet": {"async_computation": {"parameters": {"size": 2000}},
                  "ceilings": {"notes": {"kernels": {
                      "mxnet_dot_2000": "MXNet dot (OpenBLAS 0.3.13 kernel Prescott)"}}}},
        "pytorch": {"async_computation": {"parameters": {"size": 2000}},
                    "ceilings": {"notes": {"kernels": {"torch_mm_4000": "torch mm (mkl)"}}}}}
DOT_GFLOP = 16.0  # 2 x 2000^3


def row(framework, section, case, metric, median, devices="cpu"):
    return {"framework": framework, "section": section, "case": case, "metric": metric,
            "median": median, "devices": devices}


def test_the_ceiling_is_every_librarys_best_and_named_by_its_kernel():
    table = pd.DataFrame([
        row("mxnet", "ceilings", "mxnet_dot_2000", "rate", 28.6),
        row("pytorch", "ceilings", "torch_mm_4000", "rate", 208.0),
        row("pytorch", "async_computation", "dot_wait_to_read", "time", DOT_GFLOP / 100.0),
        row("mxnet", "async_computation", "dot_wait_to_read", "time", DOT_GFLOP / 25.0),
    ])
    rated = add_rates(table, RUNS).set_index(["framework", "case"])
    torch_dot = rated.loc[("pytorch", "dot_wait_to_read")]
    assert torch_dot["achieved"] == pytest.approx(100.0)
    assert torch_dot["ceiling_case"] == "torch_mm_4000"
    assert torch_dot["ceiling_kernel"] == "torch mm (mkl)"
    assert torch_dot["fraction_of_ceiling"] == pytest.approx(100.0 / 208.0)
    assert rated.loc[("mxnet", "dot_wait_to_read")]["fraction_of_ceiling"] == pytest.approx(
        25.0 / 208.0)


def test_no_share_of_a_ceiling_exceeds_one_even_when_a_timing_beats_every_ceiling():
    """Before, the ceilings were MXNet's alone and PyTorch's dot read 284-358% of them."""
    table = pd.DataFrame([
        row("mxnet", "ceilings", "mxnet_dot_2000", "rate", 28.6),
        row("pytorch", "async_computation", "dot_wait_to_read", "time", DOT_GFLOP / 81.0),
        row("pytorch", "async_computation", "dot_asscalar", "time", DOT_GFLOP / 102.0),
    ])
    rated = add_rates(table, RUNS)
    shares = rated["fraction_of_ceiling"].dropna()
    assert len(shares) == 2 and (shares <= 1).all()
    fastest = rated.set_index("case").loc["dot_asscalar"]
    assert fastest["fraction_of_ceiling"] == pytest.approx(1.0)
    assert fastest["ceiling_case"] == "pytorch async_computation dot_asscalar"
    assert "beat every ceiling" in fastest["ceiling_kernel"]


def test_the_gpu_ceiling_paths_run_on_a_cpu_stand_in(tmp_path, torch_python):
    """The PyTorch ceilings' GPU code (mm in fp32, TF32, bf16, fp16; device and host copies) takes
    any device: here the CPU stands in for a GPU."""
    program = f"""
import argparse, json, sys
sys.path[:0] = [{str(REPO / 'scripts')!r}]
import torch
from d2lperf.sections import load_script
ceilings = load_script("pytorch", "ceilings")
from d2lperf.results import Recorder
rec = Recorder("ceilings", "pytorch", 0)
args = argparse.Namespace(dot_sizes=[64], copy_mb=1, warmup=1, repeats=2)
cpu = torch.device("cpu")
ceilings.mm_rates(rec, args, cpu, "gpu0_torch", ceilings.PRECISIONS)
ceilings.copy_rates(rec, args, cpu, "gpu0_torch", host_memory=("pageable",))
print(json.dumps({{"cases": sorted({{r["case"] for r in rec.rows if r["metric"] == "rate"}}),
                  "kernels": rec.notes["kernels"]}}))
"""
    import subprocess

    done = subprocess.run([str(torch_python), "-c", program], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["cases"] == ["gpu0_torch_copy", "gpu0_torch_device_to_host_pageable",
                            "gpu0_torch_host_to_device_pageable", "gpu0_torch_mm_64",
                            "gpu0_torch_mm_bf16_64", "gpu0_torch_mm_fp16_64",
                            "gpu0_torch_mm_tf32_64"]
    assert "bf16" in got["kernels"]["gpu0_torch_mm_bf16_64"]
    assert "fp16" in got["kernels"]["gpu0_torch_mm_fp16_64"]


@pytest.mark.slow  # over half a second on 2 cores
def test_the_page_names_a_narrow_kernel_first_and_which_ceiling_a_share_is_of(tmp_path):
    from test_render import SUMMARY_COLUMNS, figure, run_record, tables, write_csv

    from d2lperf.commands import render_report
    from d2lperf.report.values import records

    args = tables(tmp_path)
    machine = json.loads(args.machine.read_text())
    machine["cpu"].update(
        vector={"instructions": "AVX-512", "bits": 512, "fma": True},
        peak_float32={"gflops_low": 166.0, "gflops_high": 332.0, "how": "2 cores x 2.60 GHz"})
    machine["software"]["mxnet"]["blas_libraries"] = [
        {"path": "/x/mxnet/libopenblas.so.0", "core": "Prescott",
         "config": "OpenBLAS 0.3.13 DYNAMIC_ARCH USE_OPENMP"}]
    args.machine.write_text(json.dumps(machine))
    summary = list(records(args.summary))
    rate = {"metric": "rate", "unit": "GFLOP/s"}
    summary += [figure("mxnet", "ceilings", "mxnet_dot_2000", None, "", 28.6, **rate),
                figure("pytorch", "ceilings", "torch_mm_4000", None, "", 208.0, **rate),
                figure("pytorch", "async_computation", "dot_wait_to_read", None, "", 0.08,
                       achieved=200.0, achieved_unit="GFLOP/s", ceiling_case="torch_mm_4000",
                       ceiling_kernel="torch mm (mkl)", fraction_of_ceiling=200 / 208)]
    write_csv(args.summary, SUMMARY_COLUMNS + ["ceiling_kernel"], summary)
    run = json.loads(args.runs[0].read_text())
    ceilings = tmp_path / "ceilings_pytorch"
    ceilings.mkdir()
    (ceilings / "run.json").write_text(json.dumps({
        **run, "section": "ceilings", "framework": "pytorch",
        "notes": {"kernels": {"torch_mm_4000": "torch mm (mkl)"}}}))
    args.runs += [ceilings / "run.json", run_record(tmp_path / "async_computation_pytorch",
                                                    "async_computation", "pytorch", "ok",
                                                    parameters={"size": 2000})]
    page = render_report.render(args)
    # among the facts right under the claims, first of the notices
    facts = page.split('<dl class="facts after">')[1].split("</dl>")[0]
    assert ("OpenBLAS 0.3.13 runs its Prescott kernel (128-bit) on this 512-bit AVX-512 CPU: "
            "MXNet&#39;s dot reaches 29 GFLOP/s, 14% of the machine&#39;s best (torch mm (mkl), "
            "208 GFLOP/s); fix: --config blas_coretype=&lt;kernel&gt;") in facts
    assert ("96% of the machine&#39;s best, torch_mm_4000 (torch mm (mkl)), at the limit"
            in page)
    assert ("torch_mm_4000 208.0 GFLOP/s (torch mm (mkl), 63–125% of the CPU&#39;s float32 peak, "
            "2 or 1 FMA units a core)") in page


@pytest.mark.slow  # over a second on 2 cores
def test_the_kernels_bench_prints_stock_and_forced_kernels_beside_the_ceilings():
    import subprocess

    from conftest import WORKFLOW_PYTHON

    done = subprocess.run([str(WORKFLOW_PYTHON), str(REPO / "bench/blas_kernels.py"),
                           "--size", "200", "--repeats", "1", "--threads", "1",
                           "--kernels", "Haswell"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    for name in ("MXNet dot, stock kernel", "MXNet dot, OPENBLAS_CORETYPE=Haswell",
                 "numpy matmul (MXNet env)", "numpy matmul (workflow env)", "PyTorch mm"):
        row = next(line for line in lines if line.startswith(name))
        assert "%" in row and "e-0" in row  # a rate with its shares, and the error checked
    from d2lperf import machine

    if machine.clock_ghz()[0]:
        assert any(line.startswith("CPU peak ") for line in lines)


def test_a_forced_kernel_variant_that_ran_is_set_against_this_runs_dot(tmp_path):
    from d2lperf.report.provenance_view import forced_kernel_ratios

    table = tmp_path / "comparison.csv"
    pd.DataFrame([
        {"machine": m, "framework": "mxnet", "section": "ceilings", "case": c,
         "metric": "rate", "median": v}
        for m, c, v in (("box", "mxnet_dot_2000", 25.0), ("box", "mxnet_dot_4000", 26.0),
                        ("box--haswell-kernel", "mxnet_dot_4000", 70.2),
                        ("box--system-blas", "mxnet_dot_4000", 26.5),
                        ("other-box", "mxnet_dot_4000", 300.0))]).to_csv(table, index=False)
    assert forced_kernel_ratios(table, "box") == [
        "box--haswell-kernel: 70 GFLOP/s, 2.70× this run's mxnet_dot_4000"]
    assert forced_kernel_ratios(None, "box") == []


CEILINGS_BODY = """
import argparse, json, sys
sys.path[:0] = [{scripts!r}]
from d2lperf.sections import load_script
ceilings = load_script({framework!r}, "ceilings")
from d2lperf.results import Recorder
rec = Recorder("ceilings", {framework!r}, 0)
args = argparse.Namespace(dot_sizes=[64], copy_mb=1, warmup=1, repeats=2)
{call}
print(json.dumps({{"cases": sorted({{r["case"] for r in rec.rows if r["metric"] == "rate"}}),
                  "kernels": rec.notes["kernels"], "notes": rec.notes}}))
"""


def ceilings_run(python, framework: str, call: str) -> dict:
    import subprocess

    program = CEILINGS_BODY.format(scripts=str(REPO / "scripts"), framework=framework,
                                   call=call)
    done = subprocess.run([str(python), "-c", program], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_cpu_ceilings_add_bfloat16_where_the_cpu_has_a_bfloat16_unit(torch_python,
                                                                         jax_python):
    """On a CPU with AVX512_BF16 or AMX (this build machine's Xeon has both) PyTorch's mm
    and JAX's dot are measured in bfloat16 beside float32, each a ceiling of its own;
    elsewhere the run record says why not."""
    from d2lperf import machine, workloads

    has_unit = "bf16" in workloads.cpu_precisions(machine.cpu_flags())
    torch_got = ceilings_run(torch_python, "pytorch", "ceilings.body(args, rec)")
    jax_got = ceilings_run(jax_python, "jax", "ceilings.body(args, rec)")
    assert "torch_mm_64" in torch_got["cases"] and "jax_dot_64" in jax_got["cases"]
    assert ("torch_mm_bf16_64" in torch_got["cases"]) == has_unit
    assert ("jax_dot_bf16_64" in jax_got["cases"]) == has_unit
    if has_unit:
        assert torch_got["kernels"]["torch_mm_bf16_64"].startswith("torch mm (oneDNN")
        assert "bf16" in jax_got["kernels"]["jax_dot_bf16_64"]
    else:
        assert "no bfloat16 unit" in torch_got["notes"]["cpu_bf16"]
        assert "no bfloat16 unit" in jax_got["notes"]["cpu_bf16"]


def test_the_jax_gpu_products_run_in_every_precision_on_a_cpu_stand_in(jax_python):
    got = ceilings_run(jax_python, "jax", "import jax\n"
                       "ceilings.dot_rates(rec, args, jax.devices('cpu')[0], 'gpu0_jax', "
                       "ceilings.PRECISIONS)")
    assert got["cases"] == ["gpu0_jax_dot_64", "gpu0_jax_dot_bf16_64", "gpu0_jax_dot_fp16_64"]
    assert "fp16" in got["kernels"]["gpu0_jax_dot_fp16_64"]


def test_every_products_label_names_its_precision_the_most_specific_row_winning():
    from d2lperf import sections
    from d2lperf.labels import Labels

    labels = Labels.read(*sections.tables("labels"))
    expected = {"torch_mm_2048": "PyTorch mm of two 2048×2048 float32 matrices",
                "torch_mm_bf16_2048": "PyTorch mm of two 2048×2048 bfloat16 matrices",
                "jax_dot_2048": "JAX dot of two 2048×2048 float32 matrices",
                "jax_dot_bf16_2048": "JAX dot of two 2048×2048 bfloat16 matrices",
                "mxnet_dot_2048": "MXNet dot of two 2048×2048 float32 matrices",
                "numpy_dot_2048": "numpy dot of two 2048×2048 float32 matrices",
                "gpu0_dot_4096": "MXNet dot of two 4096×4096 float32 matrices on a GPU",
                "gpu1_torch_mm_4096": "PyTorch mm of two 4096×4096 float32 matrices on a GPU",
                "gpu0_torch_mm_tf32_4096": "PyTorch mm of two 4096×4096 float32 matrices on "
                                           "a GPU, TF32 products allowed",
                "gpu0_torch_mm_bf16_4096": "PyTorch mm of two 4096×4096 bfloat16 matrices on "
                                           "a GPU",
                "gpu0_torch_mm_fp16_4096": "PyTorch mm of two 4096×4096 float16 matrices on "
                                           "a GPU",
                "gpu0_jax_dot_4096": "JAX dot of two 4096×4096 float32 matrices on a GPU",
                "gpu0_jax_dot_bf16_4096": "JAX dot of two 4096×4096 bfloat16 matrices on a GPU",
                "gpu0_jax_dot_fp16_4096": "JAX dot of two 4096×4096 float16 matrices on a GPU"}
    for case, label in expected.items():
        assert labels("ceilings", case, "rate") == f"{label}: rate", case
        assert labels("ceilings", case, "time") == f"{label}: time", case
    # the most specific pattern wins wherever it stands in the file
    either = [{"section": "e", "case": "x_*", "metric": "rate", "label": "wide {suffix}"},
              {"section": "e", "case": "x_bf16_*", "metric": "rate", "label": "bf16 {suffix}"}]
    for rows in (either, either[::-1]):
        assert Labels(rows)("e", "x_bf16_5", "rate") == "bf16 5"
        assert Labels(rows)("e", "x_5", "rate") == "wide 5"


def test_the_ceilings_text_sets_each_bfloat16_product_beside_float32():
    """The CPU's float32 peak is a float32 share: a bfloat16 ceiling is set against the same
    library's float32 product instead, and one slower than float32 says so."""
    from d2lperf.report.provenance_view import ceilings_text

    def rate(case, median):
        return {"section": "ceilings", "metric": "rate", "unit": "GFLOP/s", "case": case,
                "median": median}

    summary = [rate("torch_mm_2048", 200.0), rate("torch_mm_bf16_2048", 1100.0),
               rate("jax_dot_2048", 180.0), rate("jax_dot_bf16_2048", 9.0),
               {**rate("torch_copy", 20.0), "unit": "GB/s"}]
    runs = {("pytorch", "ceilings"): {"notes": {"kernels": {
        "torch_mm_bf16_2048": "torch mm (oneDNN, ATen AVX512, bf16)"}}}}
    machine = {"cpu": {"peak_float32": {"gflops_low": 166.0, "gflops_high": 332.0,
                                        "how": "2 cores x 2.60 GHz"}}}
    text = ceilings_text(summary, runs, machine)
    assert ("torch_mm_bf16_2048 1100.0 GFLOP/s (torch mm (oneDNN, ATen AVX512, bf16), "
            "5.50× float32 torch_mm_2048)") in text
    assert ("jax_dot_bf16_2048 9.0 GFLOP/s (0.05× float32 jax_dot_2048: slower than "
            "float32, not a bfloat16 unit's rate)") in text
    assert ("torch_mm_2048 200.0 GFLOP/s (60–120% of the CPU's float32 peak, 2 or 1 FMA units "
            "a core)") in text
    assert "torch_copy 20.0 GB/s;" in text  # a copy has no precision to set it beside
