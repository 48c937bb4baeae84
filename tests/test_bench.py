"""The benchmark scripts run end to end (on the CI preset: what they print is checked for
shape, never for speed)."""

import subprocess

from conftest import REPO, WORKFLOW_PYTHON


def test_verdict_stability_prints_verdicts_contradictions_and_aa_ratios():
    done = subprocess.run([str(WORKFLOW_PYTHON), str(REPO / "bench/verdict_stability.py"),
                           "--runs", "2", "--preset", "ci", "--sections", "small_ops_parallel",
                           "--frameworks", "mxnet", "pytorch"], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    assert "== verdicts over 2 runs of preset ci" in out
    assert "mxnet/small_ops_no_overlap" in out and "pytorch/small_ops_no_overlap" in out
    assert "sync_call_slows_loop" not in out  # a section not asked for
    assert "contradictions: " in out
    for framework in ("mxnet", "pytorch"):
        line = next(line for line in out.splitlines()
                    if line.startswith(f"{framework}/aa_small_ops "))
        assert line.count("|") == 1  # one ratio per run
    assert "drift" in out and "generate_x_and_y" in out


def test_verdict_stability_refuses_bad_counts_and_bands():
    for args, message in ((["--runs", "0"], "--runs: must be a positive integer"),
                          (["--band", "-0.1"], "--band: must be a number between 0 and 1"),
                          (["--preset", "nope"], "unknown preset 'nope'")):
        done = subprocess.run([str(WORKFLOW_PYTHON), str(REPO / "bench/verdict_stability.py"),
                               *args], capture_output=True, text=True, timeout=60)
        assert done.returncode == 2 and message in done.stderr, done.stderr
