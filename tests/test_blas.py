"""A system BLAS in place of the wheel's: found or refused clearly, numerics checked
before any timing, and its results kept apart from the stock ones."""

import json
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from conftest import (
    CI_CONFIG,
    CI_MACHINE,
    SNAKEMAKE,
    copy_workflow,
    run_command,
    run_script,
    snakemake,
)
from d2lperf.blas import BlasError, check_is_blas, find_system_blas

MXNET_SCRIPT = "sections/async_computation/async_computation_mxnet.py"  # under scripts/

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
    made = run_command(experiment_python, "blas-reference", "--out", str(reference))
    assert made.returncode == 0, made.stderr
    stored = np.load(reference)
    wrong = tmp_path / "wrong.npz"
    np.savez(wrong, x=stored["x"], dot=stored["dot"] * 1.001)
    out = tmp_path / "run"
    done = run_script(experiment_python, MXNET_SCRIPT, "--size", "100",
                      "--loop-iterations", "2", "--repeats", "1", "--threads", "1",
                      "--blas-reference", str(wrong), "--csv", str(out / "samples.csv"),
                      "--sidecar", str(out / "run.json"))
    assert done.returncode == 0, done.stderr
    run = json.loads((out / "run.json").read_text())
    assert run["status"] == "refused"
    assert "differs from the stock one" in run["reason"]
    assert (out / "samples.csv").read_text().count("\n") == 1  # header only: no figures


# --- the probe against a float64 reference computed without any BLAS --------------------

def test_the_reference_needs_no_blas_and_sees_an_error_anywhere():
    from d2lperf import blas

    a, b = blas.probe_matrices(300)
    reference = blas.Reference(a, b)
    right = a.astype(np.float64) @ b.astype(np.float64)
    assert reference.error(right) < 1e-12
    wrong = right.copy()
    wrong[123, 45] *= 1.01  # one entry, most likely in no checked row or column
    assert reference.error(wrong) > blas.probe_tolerance(300)
    assert reference.error(right[:, :-1]) == float("inf")
    assert reference.error(np.full_like(right, np.nan)) == float("inf")


def test_a_stand_in_blas_that_computes_wrong_refuses_the_section():
    from d2lperf import blas
    from d2lperf.harness import Refused

    record = {}
    with pytest.raises(Refused, match=r"stand-in's float32 matrix product 200x200 .* is off "
                                      r"a float64 reference by 1\.0\de-03"):
        blas.probe("none", record, 200, {("stand-in", "float32"): lambda a, b: (a @ b) * 1.001})
    check = record["blas_probe"]["checks"][0]
    assert check["max_relative_error"] > check["tolerance"] == 200 * 2.0 ** -24
    record = {}
    blas.probe("none", record, 200, {("stand-in", "float32"): lambda a, b: a @ b})
    assert record["blas_probe"]["checks"][0]["max_relative_error"] < 1e-6


def test_products_that_crash_are_refused_with_the_signal(tmp_path, monkeypatch):
    """The probe's process dies of SIGILL (a forced kernel this CPU lacks): the section
    is refused with the signal and the variable, instead of dying with it."""
    from d2lperf import blas
    from d2lperf.harness import Refused

    dies = tmp_path / "python"
    dies.write_text("#!/bin/sh\nkill -ILL $$\n")
    dies.chmod(0o755)
    monkeypatch.setattr("sys.executable", str(dies))
    monkeypatch.setenv("OPENBLAS_CORETYPE", "SkylakeX")
    record = {}
    with pytest.raises(Refused, match=r"OPENBLAS_CORETYPE='SkylakeX': mxnet's matrix products "
                                      r"crashed with SIGILL in the BLAS probe's process"):
        blas.probe_apart("mxnet", record)
    assert record["blas_probe"]["environment"]["OPENBLAS_CORETYPE"] == "SkylakeX"
    assert record["blas_probe"]["crashed"] == "crashed with SIGILL"


def test_coretype_names_are_checked_naming_the_key():
    from d2lperf.blas import check_coretype

    assert check_coretype("skylakex") == "SkylakeX"
    assert check_coretype("") == ""
    with pytest.raises(BlasError, match=r"config key blas_coretype = 'Skylake-X' is not an "
                                        r"OpenBLAS kernel; allowed: Prescott, "):
        check_coretype("Skylake-X")
    with pytest.raises(BlasError, match="config key blas_coretype = 3 is not"):
        check_coretype(3)


def section_run(python, tmp_path, env=None, extra=()):
    out = tmp_path / "run"
    done = run_script(python, MXNET_SCRIPT, "--size", "100",
                      "--loop-iterations", "2", "--repeats", "1", "--threads", "1", *extra,
                      "--csv", str(out / "samples.csv"), "--sidecar", str(out / "run.json"),
                      env=None if env is None else {**os.environ, **env})
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads((out / "run.json").read_text()), (out / "samples.csv").read_text()


def test_every_run_is_probed_and_records_its_blas_variables(tmp_path, experiment_python):
    run, samples = section_run(experiment_python, tmp_path)
    assert run["status"] == "ok" and samples.count("\n") > 1
    checks = {(c["library"], c["dtype"]): c for c in run["blas_probe"]["checks"]}
    assert set(checks) == {("mxnet", "float32"), ("mxnet", "float64"), ("numpy", "float32"),
                           ("numpy", "float64")}
    assert checks["mxnet", "float32"]["size"] == 2000  # the documents' side
    assert all(c["max_relative_error"] <= c["tolerance"] for c in checks.values())
    assert "kernel" in checks["mxnet", "float32"]["kernel"]
    assert run["blas_probe"]["environment"]["OMP_NUM_THREADS"] == "1"


def test_the_probe_runs_in_a_process_of_its_own(tmp_path, experiment_python):
    """Products of the probe's size in the timing process change what is timed after
    them (MXNet's hybridized MLP ran 3-4x slower after the probe in its process, on the
    build machine): the probe runs in a fresh process of the same interpreter and
    environment, never in the one that times."""
    run, _ = section_run(experiment_python, tmp_path)
    assert run["blas_probe"]["pid"] != run["pid"]
    assert run["blas_probe"]["checks"]  # and its findings are the section's record


# numpy's own products in the MXNet environment against einsum's loops (no BLAS), in
# float32 and float64; a wrong kernel is off by percent, rounding by under 1e-5 here.
WRONG_HERE = """
import numpy as np
rng = np.random.default_rng(0)
a, b = rng.random((500, 500)), rng.random((500, 500))
exact = np.einsum("ij,jk->ik", a, b)
print(max(float(np.abs(a.astype(t) @ b.astype(t) - exact).max() / exact.max())
          for t in ("float32", "float64")))
"""


def numpy_computes_wrong(python, coretype: str) -> bool:
    """Whether numpy's BLAS, loaded under OPENBLAS_CORETYPE=``coretype`` in this
    interpreter, computes wrong on
    this CPU, by a check of its own (not the project's probe): what such a kernel does
    depends on the CPU (on the AVX-512 build machine an empty OPENBLAS_CORETYPE and a
    forced Cooperlake were off by percent; on an AVX2 one both compute right)."""
    done = subprocess.run([str(python), "-c", WRONG_HERE], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "OPENBLAS_CORETYPE": coretype},
                          check=True)
    return float(done.stdout) > 1e-3


def assert_refused_exactly_where_it_computes_wrong(python, tmp_path, coretype, words):
    """The section is refused before any timing, naming ``words``, where numpy's BLAS
    computes wrong under OPENBLAS_CORETYPE=``coretype`` on this CPU; where it computes
    right, it runs, its probe within tolerance and the variable recorded."""
    run, samples = section_run(python, tmp_path, env={"OPENBLAS_CORETYPE": coretype})
    if numpy_computes_wrong(python, coretype):
        assert run["status"] == "refused"
        assert all(word in run["reason"] for word in words), run["reason"]
        assert samples.count("\n") == 1  # header only: no figures
    else:
        assert run["status"] == "ok", run.get("reason")
        assert all(c["max_relative_error"] <= c["tolerance"]
                   for c in run["blas_probe"]["checks"])
        assert samples.count("\n") > 1
    assert run["blas_probe"]["environment"]["OPENBLAS_CORETYPE"] == coretype
    return run


def test_an_empty_openblas_coretype_refuses_the_section_where_it_computes_wrong(
        tmp_path, experiment_python):
    """Set but empty, OPENBLAS_CORETYPE made numpy 1.23's OpenBLAS 0.3.20 pick a kernel
    whose double product was off by percent on the AVX-512 build machine (MXNet's 0.3.13
    falls back to its generic kernel, slow but right): there the probe sees it and nothing
    is timed; where the kernel computes right, the run goes on, the variable named."""
    run = assert_refused_exactly_where_it_computes_wrong(
        experiment_python, tmp_path, "",
        ["is off a float64 reference", "set but empty: OPENBLAS_CORETYPE"])
    assert run["blas_probe"]["empty"] == ["OPENBLAS_CORETYPE"]


STAND_IN_BLAS = r"""
/* cblas_sgemm that returns ones: a BLAS that computes wrong numbers, fast */
void cblas_sgemm(int order, int ta, int tb, int m, int n, int k, float alpha,
                 const float *a, int lda, const float *b, int ldb, float beta,
                 float *c, int ldc) {
    for (int i = 0; i < m; i++) for (int j = 0; j < n; j++) c[i * ldc + j] = 1.0f;
}
"""


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler for the stand-in BLAS")
def test_a_preloaded_stand_in_blas_that_computes_wrong_is_refused(tmp_path, experiment_python):
    source = tmp_path / "wrong.c"
    source.write_text(STAND_IN_BLAS)
    library = tmp_path / "libwrongblas.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-O1", "-o", str(library), str(source)],
                   check=True)
    run, samples = section_run(experiment_python, tmp_path, env={"LD_PRELOAD": str(library)})
    assert run["status"] == "refused"
    assert run["reason"].startswith("mxnet's float32 matrix product 2000x2000")
    assert run["blas_probe"]["environment"]["LD_PRELOAD"] == str(library)
    assert samples.count("\n") == 1


# --- a forced kernel as its own variant -----------------------------------------------

@pytest.fixture(scope="module")
def workflow_copy(tmp_path_factory):
    return copy_workflow(tmp_path_factory.mktemp("coretype") / "wf")


def dry_run(work, *config, env=None):
    done = subprocess.run([str(SNAKEMAKE), "-n", "-p", "--cores", "1", *CI_CONFIG, *config],
                          cwd=work, capture_output=True, text=True, timeout=600,
                          env=None if env is None else {**os.environ, **env})
    return done, done.stdout + done.stderr


def test_a_bad_coretype_is_refused_naming_the_key(workflow_copy):
    done, said = dry_run(workflow_copy, "blas_coretype=Skylake-X")
    assert done.returncode != 0
    assert "config key blas_coretype = 'Skylake-X' is not an OpenBLAS kernel" in said


def test_a_forced_kernel_is_a_variant_of_mxnet_runs_beside_the_stock_one(workflow_copy):
    done, said = dry_run(workflow_copy, "blas_coretype=haswell")
    assert done.returncode == 0, said[-3000:]
    variant = f"results/{CI_MACHINE}--haswell-kernel"
    assert f"{variant}/async_computation/run.json" in said
    assert "OPENBLAS_CORETYPE=Haswell" in said
    assert "_pytorch" not in said  # PyTorch's BLAS is not the one forced: its runs are stock's
    # checked against the stock kernel's dot too, beside the float64 probe of every run
    assert f"results/{CI_MACHINE}/blas_reference.npz" in said


def test_an_empty_blas_variable_is_never_passed_on(workflow_copy):
    done, said = dry_run(workflow_copy, env={"OPENBLAS_CORETYPE": ""})
    assert done.returncode == 0, said[-3000:]
    commands = [line for line in said.splitlines()
                if MXNET_SCRIPT in line and "--sidecar" in line]
    assert commands and all("env -u OPENBLAS_CORETYPE " in line for line in commands)


def test_a_forced_kernel_that_computes_wrong_here_is_refused_before_any_timing(
        tmp_path, experiment_python):
    """Forced to Cooperlake, numpy 1.23's OpenBLAS 0.3.20 (loaded beside MXNet's, and
    reading the same variable) computed float64 products off by percent on the AVX-512
    build machine: refused there, before any timing; run where it computes right."""
    assert_refused_exactly_where_it_computes_wrong(
        experiment_python, tmp_path, "Cooperlake",
        ["OPENBLAS_CORETYPE='Cooperlake'"])
