"""A system BLAS in place of the wheel's: found or refused clearly, numerics checked
before any timing, and its results kept apart from the stock ones."""

import json
from pathlib import Path

import numpy as np
import pytest

from conftest import CI_CONFIG, CI_MACHINE, run_script, snakemake
from d2lperf.blas import BlasError, check_is_blas, find_system_blas

DEBIAN_OPENBLAS = Path("/usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblas.so.0")
needs_openblas = pytest.mark.skipif(
    not DEBIAN_OPENBLAS.exists(),
    reason="Debian's libopenblas0-pthread is not installed (make blas installs it as root)")


def test_missing_path_is_refused():
    with pytest.raises(BlasError, match="system_blas_path '/nonexistent/libx.so' does not exist"):
        find_system_blas("/nonexistent/libx.so")


def test_a_library_that_is_not_a_blas_is_refused():
    libz = next(p for p in (Path("/usr/lib/x86_64-linux-gnu/libz.so.1"), Path("/lib/libz.so.1"),
                            Path("/usr/lib/libz.so.1")) if p.exists())
    with pytest.raises(BlasError, match="is not a BLAS: no cblas_sgemm"):
        check_is_blas(libz)


def test_a_file_that_is_not_a_library_is_refused(tmp_path):
    text = tmp_path / "libfake.so"
    text.write_text("not a library")
    with pytest.raises(BlasError, match="is not a loadable library"):
        find_system_blas(str(text))


@needs_openblas
def test_debian_openblas_is_found():
    assert find_system_blas("") == DEBIAN_OPENBLAS


def test_snakemake_refuses_a_bad_blas_before_any_job(ci_run):
    work, _ = ci_run
    done = snakemake(work, "-n", "--cores", "1", *CI_CONFIG, "blas=system",
                     "system_blas_path=/nonexistent/libopenblas.so")
    assert done.returncode != 0
    said = done.stdout + done.stderr
    assert "system_blas_path '/nonexistent/libopenblas.so' does not exist" in said


@needs_openblas
def test_variant_is_kept_apart_and_matches_stock_numerics(ci_run, experiment_python):
    work, stock = ci_run
    before = (stock / "async_computation/samples.csv").read_bytes()
    variant = work / "results" / f"{CI_MACHINE}--system-blas"
    done = snakemake(work, str(variant.relative_to(work) / "async_computation/run.json"),
                     "--cores", "1", *CI_CONFIG, f"experiment_python={experiment_python}",
                     "blas=system")
    assert done.returncode == 0, done.stderr[-3000:]
    run = json.loads((variant / "async_computation/run.json").read_text())
    assert run["status"] == "ok"
    assert run["blas_check"]["max_relative_error"] <= run["blas_check"]["tolerance"]
    assert "0.3.21" in run["mxnet"]["blas"]["config"]  # Debian's, not the wheel's 0.3.13
    # a preloaded BLAS reads its thread count at process start: it must be the configured one
    assert run["mxnet"]["blas"]["threads"] == run["parameters"]["threads"]
    assert (stock / "async_computation/samples.csv").read_bytes() == before
    stock_run = json.loads((stock / "async_computation/run.json").read_text())
    assert "0.3.13" in stock_run["mxnet"]["blas"]["config"]


def test_a_blas_that_computes_something_else_is_refused(tmp_path, experiment_python):
    reference = tmp_path / "reference.npz"
    made = run_script(experiment_python, "blas_reference.py", "--out", str(reference))
    assert made.returncode == 0, made.stderr
    stored = np.load(reference)
    wrong = tmp_path / "wrong.npz"
    np.savez(wrong, x=stored["x"], dot=stored["dot"] * 1.001)
    out = tmp_path / "run"
    done = run_script(experiment_python, "sections/mxnet/async_computation.py", "--size", "100",
                      "--loop-iterations", "2", "--repeats", "1", "--threads", "1",
                      "--blas-reference", str(wrong), "--csv", str(out / "samples.csv"),
                      "--sidecar", str(out / "run.json"))
    assert done.returncode == 0, done.stderr
    run = json.loads((out / "run.json").read_text())
    assert run["status"] == "refused"
    assert "differs from the stock one" in run["reason"]
    assert (out / "samples.csv").read_text().count("\n") == 1  # header only: no figures
