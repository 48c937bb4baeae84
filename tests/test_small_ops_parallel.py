"""The small-operations section, run for real in the MXNet environment on small draws."""

import json

import pytest

from conftest import SINGLE_PROCESS, read_rows, run_section

MXNET_SCRIPT = "sections/small_ops_parallel/small_ops_parallel_mxnet.py"  # under scripts/

CASES = ["generate_x", "generate_y", "generate_x_and_y"]


def run(python, out, *args):
    return run_section(python, MXNET_SCRIPT, out, *args, timeout=120)


@pytest.fixture(scope="module")
def small_ops_run(tmp_path_factory, experiment_python):
    out = tmp_path_factory.mktemp("small_ops_parallel")
    done = run(experiment_python, out, "--size", "200", "--warmup", "1", "--repeats", "2",
               "--threads", "1")
    assert done.returncode == 0, done.stderr
    return out, json.loads((out / "run.json").read_text()), done.stdout


def test_every_repeat_of_every_case_is_a_row_on_cpu0(small_ops_run):
    out, _, _ = small_ops_run
    table = read_rows(out)
    assert sorted((r["section"], r["case"], r["metric"], r["unit"], r["repeat"], r["devices"])
                  for r in table) == [("small_ops_parallel", case, "time", "s", str(repeat),
                                       "cpu(0)") for case in sorted(CASES) for repeat in range(2)]
    assert all(float(r["value"]) > 0 for r in table)


def test_run_record_says_how_it_ran(small_ops_run):
    _, run_record, stdout = small_ops_run
    assert run_record["status"] == "ok"
    assert run_record["parameters"] == {**SINGLE_PROCESS, "threads": 1, "warmup": 1,
                                        "repeats": 2, "size": 200}
    assert run_record["threads"]["OMP_NUM_THREADS"] == "1"
    notes = run_record["notes"]
    assert (notes["context"], notes["matrix_size"]) == ("cpu(0)", [200, 200])
    assert "MXNET_CPU_PARALLEL_RAND_COPY=1 random-number resources" in notes["random_resource"]
    # one line per case, in the order of the first round (the seeded order's, not the
    # table's)
    assert sorted(line.split(":")[0] for line in stdout.splitlines()) == sorted(CASES)


@pytest.mark.parametrize("option, message", [
    (("--size", "0"), "argument --size: must be a positive integer, got 0"),
    (("--repeats", "0"), "argument --repeats: must be a positive integer, got 0"),
    (("--on", "cpu"), "unrecognized arguments: --on cpu"),
])
def test_rejects_bad_options(tmp_path, experiment_python, option, message):
    done = run(experiment_python, tmp_path, *option)
    assert done.returncode == 2
    assert message in done.stderr
    assert not (tmp_path / "run.json").exists()
