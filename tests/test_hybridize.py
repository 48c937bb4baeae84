"""The hybridize section, run for real in the experiment environment on a small workload."""

import json

import pytest

from conftest import run_script


@pytest.fixture(scope="module")
def hybridize_run(tmp_path_factory, experiment_python):
    out = tmp_path_factory.mktemp("hybridize")
    done = run_script(experiment_python, "hybridize.py", "--forward-passes", "20",
                      "--warmup", "1", "--repeats", "2", "--threads", "1",
                      "--csv", str(out / "samples.csv"), "--sidecar", str(out / "run.json"),
                      "--export-dir", str(out / "model"))
    assert done.returncode == 0, done.stderr
    return out, json.loads((out / "run.json").read_text())


def test_every_repeat_is_a_row(hybridize_run):
    out, _ = hybridize_run
    lines = (out / "samples.csv").read_text().splitlines()
    assert lines[0] == "experiment,case,metric,unit,repeat,value,epoch,devices"
    cases = [line.split(",")[1] for line in lines[1:]]
    assert cases == ["mlp_before_hybridize"] * 2 + ["mlp_after_hybridize"] * 2
    assert all(float(line.split(",")[5]) > 0 for line in lines[1:])


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
                                 "export_dir": str(out / "model")}
    assert run["threads"]["OMP_NUM_THREADS"] == "1"
    assert run["mxnet"]["version"] == "1.9.1"
    assert "OpenBLAS" in (run["mxnet"]["blas"] or {}).get("config", "")
    assert sorted(run["artifacts"]) == ["my_mlp-0000.params", "my_mlp-symbol.json"]
    assert (out / "model" / "my_mlp-symbol.json").exists()


def test_rejects_zero_repeats(experiment_python, tmp_path):
    done = run_script(experiment_python, "hybridize.py", "--repeats", "0", "--csv", "x",
                      "--sidecar", "y", "--export-dir", str(tmp_path))
    assert done.returncode == 2
    assert "--repeats: must be a positive integer, got 0" in done.stderr
