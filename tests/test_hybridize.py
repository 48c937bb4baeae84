"""The hybridize section, run for real in the MXNet environment on a small workload."""

import csv
import json

import pytest

from conftest import measure, run_script
from d2lperf.results import FORMAT_VERSION

MXNET_SCRIPT = "sections/hybridize/hybridize_mxnet.py"  # under scripts/


@pytest.fixture(scope="module")
def hybridize_run(tmp_path_factory, experiment_python):
    out = tmp_path_factory.mktemp("hybridize")
    done = measure(experiment_python, MXNET_SCRIPT, "--forward-passes",
                      "20", "--warmup", "1", "--repeats", "2", "--processes", "2",
                      # one stage: these tests are about fresh processes (test_stages: stages)
                      "--budget-seconds", "0.01",
                      "--threads", "1", "--probe-seconds", "0.02",
                      "--csv", str(out / "samples.csv"), "--sidecar", str(out / "run.json"),
                      "--export-dir", str(out / "model"))
    assert done.returncode == 0, done.stderr
    return out, json.loads((out / "run.json").read_text())


CASES = ["mlp_after_hybridize", "mlp_before_hybridize", "mlp_before_hybridize_twin"]


def test_every_round_of_every_process_is_a_row_with_its_position(hybridize_run):
    out, _ = hybridize_run
    with open(out / "samples.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert list(rows[0]) == ["section", "framework", "case", "metric", "unit", "process",
                             "repeat", "position", "value", "epoch", "devices",
                             "format_version"]
    assert {row["framework"] for row in rows} == {"mxnet"}
    assert {row["format_version"] for row in rows} == {str(FORMAT_VERSION)}
    for process in ("0", "1"):
        mine = [row for row in rows if row["process"] == process]
        for repeat in ("0", "1"):  # each round times every case once, positions 0..2
            in_round = [row for row in mine if row["repeat"] == repeat]
            assert sorted(row["case"] for row in in_round) == CASES
            assert sorted(row["position"] for row in in_round) == ["0", "1", "2"]
    # the processes take turns at leading: a different case leads each one
    leads = {row["process"]: row["case"] for row in rows
             if row["repeat"] == "0" and row["position"] == "0"}
    assert len(set(leads.values())) == 2
    assert all(float(row["value"]) > 0 for row in rows)


def test_documents_printed_outputs_are_reproduced(hybridize_run):
    _, run = hybridize_run
    outputs = run["outputs"]
    assert outputs["mlp_output_imperative"]["values"][0] == pytest.approx(
        [-0.1137567, -0.05474834], rel=1e-6)
    assert outputs["mlp_output_hybridized"]["values"] == outputs["mlp_output_imperative"]["values"]
    assert outputs["mlp_symbolic_output"]["text"] == "<Symbol dense5_fwd>"
    assert outputs["hybridnet_F_imperative"]["text"] == "mxnet.ndarray"
    assert outputs["hybridnet_F_hybridized"]["text"] == "mxnet.symbol"
    assert outputs["hybridnet_hidden_hybridized"]["text"] == "<Symbol hybridnet0_relu0>"
    assert outputs["hybridnet_output_imperative"]["values"][0] == pytest.approx(
        [-0.00318543, 0.00871998], rel=1e-5)
    assert outputs["hybridnet_prints_after_first_hybridized_call"]["text"] == "0"
    assert outputs["symbolic_program_result"]["text"] == "10"


def test_run_record_says_how_it_ran(hybridize_run):
    out, run = hybridize_run
    assert run["status"] == "ok"
    assert run["parameters"] == {"threads": 1, "warmup": 1, "repeats": 2, "forward_passes": 20,
                                 "export_dir": str(out / "model"), "processes": 2, "seed": 0,
                                 "probe_seconds": 0.02, "budget_seconds": 0.01, "band": 0.05}
    assert [p["status"] for p in run["processes"]] == ["ok", "ok"]
    assert len({p["pid"] for p in run["processes"]}) == 2  # fresh processes
    steady = run["steadiness"]
    assert len(steady["before"]["probe_s"]) == len(steady["after"]["probe_s"]) == 5
    assert steady["probe_before_s"] > 0 and isinstance(steady["flags"], list)
    assert run["threads"]["OMP_NUM_THREADS"] == "1"
    assert run["mxnet"]["version"] == "1.9.1"
    assert "OpenBLAS" in (run["mxnet"]["blas"] or {}).get("config", "")
    assert sorted(run["artifacts"]) == ["my_mlp-0000.params", "my_mlp-symbol.json"]
    assert (out / "model" / "my_mlp-symbol.json").exists()


def test_rejects_zero_repeats(experiment_python, tmp_path):
    done = run_script(experiment_python, MXNET_SCRIPT, "--repeats", "0",
                      "--csv", "x", "--sidecar", "y", "--export-dir", str(tmp_path))
    assert done.returncode == 2
    assert "--repeats: must be a positive integer, got 0" in done.stderr


@pytest.mark.parametrize("option, value", [("--probe-seconds", "0"), ("--probe-seconds", "-1"),
                                           ("--probe-seconds", "x"), ("--seed", "-1")])
def test_rejects_bad_probe_and_seed(experiment_python, tmp_path, option, value):
    done = run_script(experiment_python, MXNET_SCRIPT, option, value,
                      "--csv", "x", "--sidecar", "y", "--export-dir", str(tmp_path))
    assert done.returncode == 2
    assert f"argument {option}: must be" in done.stderr


@pytest.mark.parametrize("option, value", [("--processes", "0"), ("--processes", "-2"),
                                           ("--processes", "two"), ("--budget-seconds", "0"),
                                           ("--band", "1")])
def test_the_manager_rejects_bad_processes_budget_and_band(experiment_python, tmp_path,
                                                           option, value):
    done = measure(experiment_python, MXNET_SCRIPT, option, value,
                   "--csv", "x", "--sidecar", "y", "--export-dir", str(tmp_path))
    assert done.returncode == 2
    assert f"argument {option}: must be" in done.stderr


def test_a_worker_refuses_what_only_the_manager_does(experiment_python, tmp_path):
    """Run by hand, a section measures in one process: asked for more, it says where to."""
    done = run_script(experiment_python, MXNET_SCRIPT, "--processes", "2",
                      "--csv", "x", "--sidecar", "y", "--export-dir", str(tmp_path))
    assert done.returncode == 2
    assert "unrecognized arguments: --processes 2" in done.stderr
