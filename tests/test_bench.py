"""The benchmark scripts run end to end (on the CI preset: what they print is checked for
shape, never for speed)."""

import re
import subprocess

import pytest

from conftest import REPO, WORKFLOW_PYTHON

pytestmark = pytest.mark.slow  # the benchmarks run the pipeline and time it


def test_verdict_stability_prints_quiet_and_busy_runs_side_by_side():
    done = subprocess.run([str(WORKFLOW_PYTHON), str(REPO / "bench/verdict_stability.py"),
                           "--runs", "1", "--preset", "ci", "--sections", "small_ops_parallel",
                           "--frameworks", "mxnet", "pytorch", "--modes", "quiet", "busy",
                           "--busy-limit", "300"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    for mode in ("quiet", "busy"):
        assert f"== {mode}: verdicts over 1 runs of preset ci" in out
        for framework in ("mxnet", "pytorch"):
            line = next(line for line in out.splitlines()
                        if line.startswith(f"{framework}/aa_small_ops "))
            assert line.count("|") == 0  # one ratio per run
    assert "mxnet/small_ops_no_overlap" in out and "pytorch/small_ops_no_overlap" in out
    assert "sync_call_slows_loop" not in out  # a section not asked for
    assert "contradictions: " in out and "drift" in out and "generate_x_and_y" in out
    side = out[out.index("== side by side: quiet vs busy"):]
    block = side[side.index("\nmxnet/small_ops_no_overlap\n") + 1:].splitlines()[1:3]
    assert block[0].startswith("  quiet  ") and block[1].startswith("  busy   ")
    assert "[" in block[0]  # the interval beside the verdict
    assert "stages per section" in side and "stopped" not in side.split("stages per")[0]
    stage_lines = side[side.index("\npytorch/small_ops_parallel\n") + 1:].splitlines()[1:3]
    # eager PyTorch on a CPU: its claim does not apply, and the A/A check is not waited for
    assert all(" s" in line and "nothing to decide" in line for line in stage_lines), stage_lines
    stage_lines = side[side.index("\nmxnet/small_ops_parallel\n") + 1:].splitlines()[1:3]
    assert all(" s" in line and ("decided" in line or "budget" in line or "max" in line)
               for line in stage_lines), stage_lines
    assert "busy against quiet: " in side and "x the quiet runs'" in side


def test_verdict_stability_refuses_bad_counts_and_bands():
    for args, message in ((["--runs", "0"], "--runs: must be a positive integer"),
                          (["--band", "-0.1"], "--band: must be a number between 0 and 1"),
                          (["--preset", "nope"], "unknown preset 'nope'")):
        done = subprocess.run([str(WORKFLOW_PYTHON), str(REPO / "bench/verdict_stability.py"),
                               *args], capture_output=True, text=True, timeout=60)
        assert done.returncode == 2 and message in done.stderr, done.stderr


def load_bench():
    import importlib.util
    spec = importlib.util.spec_from_file_location(
        "verdict_stability", REPO / "bench/verdict_stability.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_tally_leaves_claims_that_do_not_apply_out_of_decisive_and_contradictions():
    from d2lperf import verdicts
    bench = load_bench()

    def v(name, verdict, kind="claim", ratio=(0.5, 0.4, 0.6)):
        return verdicts.Verdict("c", name, "s", verdict, "e", "r", kind=kind,
                              framework="pytorch", ratio=ratio[0], ratio_low=ratio[1],
                              ratio_high=ratio[2])

    runs = [{"pytorch/hy": v("hy", "holds"), "pytorch/q": v("q", "does not apply"),
             "pytorch/s": v("s", "holds"),
             "pytorch/aa_hybridize": v("aa_hybridize", "holds", "check", (1.01, 0.98, 1.03))},
            {"pytorch/hy": v("hy", "inconclusive"), "pytorch/q": v("q", "does not apply"),
             "pytorch/s": v("s", "not measured"),
             "pytorch/aa_hybridize": v("aa_hybridize", "does not hold", "check",
                                       (1.07, 1.06, 1.08))},
            {"pytorch/hy": v("hy", "holds"), "pytorch/q": v("q", "does not apply"),
             "pytorch/s": v("s", "does not hold"),
             "pytorch/aa_hybridize": v("aa_hybridize", "inconclusive", "check",
                                       (1.0, 0.9, 1.1))}]
    found = bench.tally(runs, "pytorch")
    assert found["decisive"] == {"pytorch/hy": (2, 3), "pytorch/s": (2, 2)}
    assert found["not_here"] == ["pytorch/q"]
    assert found["contradictions"] == 2  # s: holds and does not hold; the A/A pair too
    assert found["aa"]["pytorch/aa_hybridize"] == [
        ("holds", True), ("does not hold", False), ("inconclusive", True)]
    assert bench.tally(runs, "mxnet")["decisive"] == {}


def record(out, *command, timeout=600):
    return subprocess.run([str(WORKFLOW_PYTHON), str(REPO / "bench/record.py"), "--out",
                           str(out), *command], capture_output=True, text=True, timeout=timeout)


def test_make_bench_writes_what_each_benchmark_printed_into_the_measurements_file(tmp_path):
    """A real benchmark (the BLAS kernels, tiny): its printed table lands in its own part, under
    a heading naming the machine and commit; a second part is added beside it, and running the
    first again replaces it alone."""
    out = tmp_path / "measurements.md"
    kernels = ("blas", "bench/blas_kernels.py", "--size", "64", "--repeats", "1",
               "--kernels", "Haswell")
    done = record(out, *kernels)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "float32 matrix product 64x64" in done.stdout  # shown as it ran
    text = out.read_text()
    assert text.startswith("# Measurements\n")
    assert "## blas: Which kernel each BLAS here runs" in text
    assert "float32 matrix product 64x64" in text and "GFLOP/s" in text
    from d2lperf import machine
    assert f"on `{machine.machine_id()}`" in text and "load average" in text
    done = record(out, "refusals", "bench/verdict_stability.py", "--runs", "0")
    assert done.returncode == 2  # a failing benchmark changes nothing
    assert out.read_text() == text
    assert "keeps its earlier figures" in done.stderr
    blas_part = text[text.index("<!-- bench:blas -->"):]
    done = record(out, "again", "bench/blas_kernels.py", "--size", "32", "--repeats", "1",
                  "--kernels", "Haswell")
    assert done.returncode == 0, done.stderr[-3000:]
    done = record(out, *kernels[:3], "48", *kernels[4:])
    both = out.read_text()
    assert both.count("<!-- bench:blas -->") == 1 and "64x64" not in both
    assert "48x48" in both and "32x32" in both  # the other part stayed
    assert blas_part not in both


def test_the_recorder_runs_only_scripts_in_bench(tmp_path):
    for command in (("x", "scripts/sections/hybridize/hybridize_mxnet.py"), ("x", "/bin/true"),
                    ("Bad Name", "bench/record.py")):
        done = record(tmp_path / "m.md", *command, timeout=60)
        assert done.returncode == 2 and "bench/record.py: " in done.stderr, done.stderr
    assert not (tmp_path / "m.md").exists()


def test_frameworks_cost_prints_both_runs_and_their_ratio():
    """What a framework adds to a run: the base run, then only the added framework's jobs
    (a section that is skipped without a GPU: the bench's mechanics, in seconds)."""
    done = subprocess.run([str(WORKFLOW_PYTHON), str(REPO / "bench/frameworks_cost.py"),
                           "--preset", "ci", "--base", "mxnet", "--add", "jax",
                           "--sections", "auto_parallelism"],
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert lines[1].startswith("  mxnet: ") and lines[1].endswith(" s end to end")
    assert "auto_parallelism " in lines[2] and "auto_parallelism_jax" not in lines[2]
    assert lines[3].startswith("  then mxnet, jax (only the added jobs run): ")
    assert "auto_parallelism_jax " in lines[4]
    assert re.fullmatch(r"end to end: mxnet \d+ s; mxnet, jax from nothing at most \d+ s = "
                        r"\d\.\d\dx \(jax add \d+ s\)", lines[-1]), lines[-1]


def test_the_accuracy_spread_trains_each_seed_and_prints_the_spread():
    """A tiny run of the seed-to-seed bench: two seeds of PyTorch's LeNet, one epoch on 256
    images, each run's accuracy printed, then the spread beside the claims' margin."""
    done = subprocess.run([str(WORKFLOW_PYTHON), str(REPO / "bench/accuracy_spread.py"),
                           "--seeds", "2", "--frameworks", "pytorch", "--epochs", "1",
                           "--train-limit", "256"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert [line.split(":")[0] for line in lines[1:3]] == ["pytorch seed 0", "pytorch seed 1"]
    assert lines[3].startswith("pytorch: after epoch 1: lowest ")
    from d2lperf.claims import ACCURACY_MARGIN

    assert f"over 2 seeds (the claims' margin: {ACCURACY_MARGIN})" in lines[3]
