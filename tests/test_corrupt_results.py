"""Corrupt results on disk are refused by name (file, row, column, or what is wrong), and
one machine's bad table never stops the comparison of the others."""

import csv
import json
import os
import subprocess

import pytest
from test_render import tables

from conftest import REPO, WORKFLOW_PYTHON
from d2lperf import hostlock
from d2lperf.commands import summarise
from d2lperf.frameworks import REGISTRY
from d2lperf.results import RecordError
from d2lperf.tables import TableError

SCHEMA = REPO / "workflow/schemas/samples.schema.yaml"
HEADER = "section,framework,case,metric,unit,process,repeat,position,value,epoch,devices\n"
ROW = "hybridize,mxnet,mlp_before_hybridize,time,s,0,{repeat},0,{value},,\n"


def own_lock(tmp_path) -> dict[str, str]:
    """The environment of a step run here: a host lock of the test's own, so the step does
    not wait for the timings of other runs on the host (it times nothing)."""
    return {**os.environ, hostlock.LOCK_VARIABLE: str(tmp_path / "host.lock")}


def section(root, values=("0.4", "0.5"), record=None, folder="hybridize"):
    out = root / folder
    out.mkdir(parents=True)
    (out / "samples.csv").write_text(HEADER + "".join(
        ROW.format(repeat=i, value=v) for i, v in enumerate(values)))
    (out / "run.json").write_text(record if record is not None else json.dumps(
        {"section": "hybridize", "framework": "mxnet", "status": "ok"}))
    return out / "run.json"


def refusal(sidecar) -> str:
    """What summarise refuses the section's results with (its message, as it prints it)."""
    with pytest.raises((TableError, RecordError)) as refused:
        summarise.load_runs([sidecar], SCHEMA)
    return str(refused.value)


@pytest.mark.parametrize("value, message", [
    ("nan", "row 3: value: 'nan' is not of type 'number'"),
    ("inf", "row 3: value: 'inf' is not of type 'number'"),
    ("-5.0", "row 3: value: -5.0 is less than or equal to the minimum of 0"),
])
def test_a_corrupt_sample_is_refused_naming_file_row_and_column(tmp_path, value, message):
    sidecar = section(tmp_path / "r", values=("0.4", value))
    assert refusal(sidecar) == f"{sidecar.with_name('samples.csv')}: {message}"


@pytest.mark.parametrize("record, message", [
    ('{"section": "hybr', "not JSON (cut short or corrupt?)"),
    ("[]", "not a run record: the record: [] is not of type 'object'"),
    ('{"status": "ok"}', "not a run record: the record: 'section' is a required property"),
    ('{"section": "hybridize", "status": "fine"}', "not a run record: field 'status': 'fine'"),
    ('{"section": "hybridize", "framework": "tensorflow", "status": "ok"}',
     "not a run record: field 'framework': 'tensorflow' is not one of "
     + str(list(REGISTRY))),
    ('{"section": "async_computation", "framework": "mxnet", "status": "ok",'
     ' "parameters": {"size": 500}}',
     "the run record of async_computation"),
    ('{"section": "hybridize", "framework": "pytorch", "status": "ok"}',
     "the run record of hybridize_pytorch"),
])
def test_a_corrupt_run_record_is_refused_naming_the_file(tmp_path, record, message):
    sidecar = section(tmp_path / "r", record=record)
    assert refusal(sidecar).startswith(f"{sidecar}: {message}")


SUMMARY = ["section", "case", "metric", "epoch", "unit", "devices", "label", "count",
           "min", "median", "max", "ci_low", "ci_high", "status", "framework"]


def machine(root, name, median, ci_low, ci_high):
    folder = root / name
    folder.mkdir(parents=True)
    with open(folder / "summary.csv", "w", newline="") as handle:
        writer = csv.DictWriter(handle, SUMMARY)
        writer.writeheader()
        writer.writerow({"section": "hybridize", "case": "mlp", "metric": "time",
                         "unit": "s", "count": 6, "min": median / 2, "median": median,
                         "max": median * 2, "ci_low": ci_low, "ci_high": ci_high,
                         "status": "ok", "framework": "mxnet"})
    (folder / "verdicts.csv").write_text("framework,name,claim,verdict\n"
                                         "mxnet,hybridize_speeds_up_mlp,c,holds\n")
    return folder


@pytest.mark.slow  # over a second on 2 cores
def test_one_machines_meaningless_interval_never_stops_the_comparison(tmp_path):
    """An interval below its median (ci_high < median) once made every later run fail
    drawing the plot; now that machine is skipped, named in the log, and the rest compared."""
    here = machine(tmp_path, "here", 0.4, 0.35, 0.45)
    good = machine(tmp_path, "good", 0.2, 0.15, 0.25)
    bad = machine(tmp_path, "bad", 0.4, 0.1, 0.3)
    folders = [here, good, bad]
    done = subprocess.run(
        [str(WORKFLOW_PYTHON), "-m", "d2lperf", "compare",
         "--summaries", *[str(f / "summary.csv") for f in folders],
         "--verdicts", *[str(f / "verdicts.csv") for f in folders], "--baseline", "here",
         "--table", str(tmp_path / "comparison.csv"),
         "--verdicts-table", str(tmp_path / "by_machine.csv"),
         "--plot", str(tmp_path / "plots/comparison.svg")],
        capture_output=True, text=True, timeout=300, env=own_lock(tmp_path))
    assert done.returncode == 0, done.stderr
    assert "machine bad skipped" in done.stderr
    assert "row 2: median 0.4 is above ci_high 0.3" in done.stderr
    with open(tmp_path / "comparison.csv", newline="") as handle:
        compared = {r["machine"] for r in csv.DictReader(handle)}
    assert compared == {"here", "good"}
    assert (tmp_path / "plots/comparison.svg").exists()


def run_summarise(tmp_path, sidecar):
    """d2lperf summarise on one run record, as the rule runs it."""
    return subprocess.run(
        [str(WORKFLOW_PYTHON), "-m", "d2lperf", "summarise", "--runs", str(sidecar),
          "--schema", str(SCHEMA),
         "--summary", str(tmp_path / "summary.csv"), "--outputs", str(tmp_path / "o.csv"),
         "--verdicts", str(tmp_path / "v.csv")], capture_output=True, text=True, timeout=300,
        env=own_lock(tmp_path))


@pytest.mark.slow  # over a second on 2 cores
def test_summarise_says_which_file_and_ends_1(tmp_path):
    sidecar = section(tmp_path / "r", record="[]")
    done = run_summarise(tmp_path, sidecar)
    assert done.returncode == 1
    assert f"error: {sidecar}: not a run record" in done.stderr
    assert "Traceback" not in done.stderr


# Fields a step reads (summarise, the claims, the report's views), each with a value of
# the wrong kind: each was once let through by the schema and crashed a later step.
STEADY = {"probe_before_s": 0.2, "probe_after_s": 0.21, "probe_moved": 0.05, "flags": []}
WRONG_FIELDS = [
    ({"started": 5}, "field 'started': 5 is not of type 'string'"),
    ({"finished": "yesterday"}, "field 'finished': 'yesterday' does not match"),
    ({"code": "x"}, "field 'code': 'x' is not of type 'object'"),
    ({"code": {"commit": 7}}, "field 'code.commit': 7 is not of type 'string', 'null'"),
    ({"steadiness": {"probe_s": "fast"}},
     "field 'steadiness': 'probe_before_s' is a required property"),
    ({"steadiness": {**STEADY, "probe_after_s": "fast"}},
     "field 'steadiness.probe_after_s': 'fast' is not of type 'number'"),
    ({"steadiness": {**STEADY, "flags": "none"}},
     "field 'steadiness.flags': 'none' is not of type 'array'"),
    ({"steadiness": {**STEADY, "steal_share": 2}},
     "field 'steadiness.steal_share': 2 is greater than the maximum of 1"),
    ({"wall_seconds": "long"}, "field 'wall_seconds': 'long' is not of type 'number'"),
    ({"parameters": {"repeats": "3"}}, "field 'parameters.repeats': '3' is not of type"),
    ({"parameters": {"size": 0}}, "field 'parameters.size': 0 is less than the minimum of 1"),
    ({"threads": {"OMP_NUM_THREADS": 2}},
     "field 'threads.OMP_NUM_THREADS': 2 is not of type 'string', 'null'"),
    ({"notes": {"runs_not_run": {"lenet_2_devices": {"devices": "two", "reason": "r"}}}},
     "field 'notes.runs_not_run.lenet_2_devices.devices': 'two' is not of type"),
    ({"notes": {"kernels": {"mxnet_dot_500": 3}}},
     "field 'notes.kernels.mxnet_dot_500': 3 is not of type 'string'"),
    ({"stages": {"count": "two"}}, "field 'stages.count': 'two' is not of type 'integer'"),
    ({"processes": [{"started": 5}]}, "field 'processes.0.started': 5 is not of type"),
    ({"outputs": {"b1": {"text": 5}}}, "field 'outputs.b1.text': 5 is not of type 'string'"),
    ({"outputs": {"b1": {"text": "[1 2]", "values": [1, "2"]}}},
     "field 'outputs.b1.values': [1, '2'] is not valid under any of the given schemas"),
    ({"execution": {"device_kind": 1}},
     "field 'execution.device_kind': 1 is not of type 'string'"),
    ({"execution": {"device_kind": "cpu", "queues_work": "yes"}},
     "field 'execution.queues_work': 'yes' is not of type 'boolean'"),
    ({"mxnet": {"features": "OPENMP"}}, "field 'mxnet.features': 'OPENMP' is not of type"),
    ({"torch": {"threads": 2}}, "field 'torch.threads': 2 is not of type 'object'"),
    ({"status": "failed", "exit_code": "137"},
     "field 'exit_code': '137' is not of type 'integer'"),
    ({"status": "failed", "log_tail": ["x"]}, "field 'log_tail': ['x'] is not of type"),
    ({"status": "failed", "previous": {"path": 5, "samples": 18}},
     "field 'previous.path': 5 is not of type 'string'"),
]


def test_a_run_record_without_its_samples_is_refused(tmp_path):
    sidecar = section(tmp_path / "r")
    sidecar.with_name("samples.csv").unlink()
    assert refusal(sidecar) == (f"{sidecar.with_name('samples.csv')}: cannot be read "
                                f"(No such file or directory); its run record is {sidecar}")


@pytest.mark.parametrize("fields, message", WRONG_FIELDS)
def test_every_field_a_step_reads_is_checked_naming_file_and_field(tmp_path, fields, message):
    record = {"format_version": 3, "section": "hybridize", "framework": "mxnet",
              "status": "ok", "started": "2026-01-02T03:04:00+00:00", **fields}
    sidecar = section(tmp_path / "r", record=json.dumps(record))
    assert refusal(sidecar).startswith(f"{sidecar}: not a run record: {message}")


@pytest.mark.parametrize("section_name, parameters, missing", [
    ("async_computation", {"repeats": 2}, "size"),
    ("auto_parallelism", {"dots": 10, "cpu_size": 2000}, "gpu_size"),
])
def test_a_good_run_without_the_parameters_its_rates_need_is_refused(tmp_path, section_name,
                                                                      parameters, missing):
    """The rates of these sections are computed from their parameters (workloads.work):
    a record without one is refused naming it, not a KeyError in a later step."""
    record = {"section": section_name, "framework": "mxnet", "status": "ok",
              "parameters": parameters}
    sidecar = section(tmp_path / "r", record=json.dumps(record), folder=section_name)
    assert refusal(sidecar) == (f"{sidecar}: not a run record: field 'parameters': "
                                f"{missing!r} is a required property")


def test_a_run_record_as_the_harness_writes_it_passes(tmp_path):
    record = {"format_version": 3, "section": "hybridize", "framework": "mxnet",
              "status": "ok", "started": "2026-01-02T03:04:00+00:00",
              "finished": "2026-01-02T03:04:05.25+00:00", "wall_seconds": 5.2,
              "code": {"commit": None, "dirty": None},
              "parameters": {"repeats": 3, "processes": 2, "warmup": 1, "size": 500},
              "threads": {"OMP_NUM_THREADS": "2", "MKL_NUM_THREADS": None},
              "steadiness": {**STEADY, "steal_share": None, "before": {"probe_s": [0.2]}},
              "stages": {"count": 1, "confidence_per_look": 1 - 0.05 / 3, "history": []},
              "processes": [{"pid": 1, "started": None, "status": "ok"}],
              "execution": {"device_kind": "cpu", "queues_work": True,
                            "separate_devices": False},
              "outputs": {"dot_sum": {"text": "[[1. 2.]]", "values": [[1.0, 2]]},
                          "flag": {"text": "True", "values": True}}}
    sidecar = section(tmp_path / "r", record=json.dumps(record))
    runs, samples = summarise.load_runs([sidecar], SCHEMA)
    assert runs["mxnet"]["hybridize"]["steadiness"]["probe_moved"] == 0.05
    assert len(samples) == 2


ACCURACY = "multi_gpu_scratch,mxnet,lenet_1_device,accuracy,fraction,0,0,,{value},1,\n"


@pytest.mark.parametrize("value, message", [
    ("5.0", "row 2: value: 5.0 is greater than the maximum of 1"),
    ("-0.1", "row 2: value: -0.1 is less than the minimum of 0"),
])
def test_an_accuracy_outside_0_to_1_is_refused(tmp_path, value, message):
    """An accuracy of 5.0 was once summarised and shown as 50x the document's."""
    folder = tmp_path / "r" / "multi_gpu_scratch"
    folder.mkdir(parents=True)
    (folder / "samples.csv").write_text(HEADER + ACCURACY.format(value=value))
    (folder / "run.json").write_text(json.dumps(
        {"section": "multi_gpu_scratch", "framework": "mxnet", "status": "ok",
         "parameters": {"train_limit": None}}))  # what an epoch's rate counts
    assert refusal(folder / "run.json") == f"{folder / 'samples.csv'}: {message}"


def test_a_summary_accuracy_outside_0_to_1_is_refused():
    from d2lperf.tables import check_summary_rows, summary_schema

    row = {"section": "multi_gpu_scratch", "case": "lenet_1_device", "metric": "accuracy",
           "epoch": "1", "median": "5.0"}
    with pytest.raises(TableError, match=r"other/summary.csv: row 2: median: 5.0 is greater "
                                         r"than the maximum of 1"):
        check_summary_rows([row], "other/summary.csv", summary_schema(SCHEMA.parent))


@pytest.mark.parametrize("column, value, message", [
    ("section", "async_computation",
     "row 3: section: 'async_computation' is not the section of its folder's run record "
     "('hybridize')"),
    ("framework", "pytorch",
     "row 3: framework: 'pytorch' is not the framework of its folder's run record "
     "('mxnet')"),
])
def test_samples_of_another_section_are_refused_naming_row_and_column(tmp_path, column,
                                                                      value, message):
    """A row that names another section or framework than its folder's run record would
    be filed under a section that never ran here."""
    sidecar = section(tmp_path / "r")
    table = sidecar.with_name("samples.csv")
    rows = list(csv.DictReader(table.open()))
    rows[1][column] = value
    with open(table, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    assert refusal(sidecar) == f"{table}: {message}"


def render_command(args) -> list[str]:
    """The report's command line for the arguments ``test_render.tables`` made."""
    return [str(WORKFLOW_PYTHON), "-m", "d2lperf", "report",
            "--machine", str(args.machine), "--summary", str(args.summary),
            "--outputs", str(args.outputs), "--verdicts", str(args.verdicts),
            "--runs", *map(str, args.runs), "--plots", *map(str, args.plots),
            "--sections", str(args.sections), "--template", str(args.template),
            "--preset", args.preset, "--out", str(args.out)]


@pytest.mark.slow  # over a second on 2 cores
@pytest.mark.parametrize("text, message", [
    ('{"cpu": {"mod', "not JSON (cut short or corrupt?)"),
    ("", "not JSON (cut short or corrupt?)"),
    ("[]", "not a machine record: the record: [] is not of type 'object'"),
    ('{"gpus": []}', "not a machine record: the record: 'cpu' is a required property"),
    ('{"cpu": "x", "gpus": []}', "not a machine record: field 'cpu': 'x' is not of type"),
    ('{"cpu": {"logical_cores": "2"}, "gpus": []}',
     "not a machine record: field 'cpu.logical_cores': '2' is not of type 'integer'"),
    ('{"cpu": {}, "gpus": [{"name": "A100"}]}',
     "not a machine record: field 'gpus.0': 'driver' is a required property"),
    ('{"cpu": {}, "gpus": [], "memory_bytes": "lots"}',
     "not a machine record: field 'memory_bytes': 'lots' is not of type"),
    ('{"cpu": {"peak_float32": {"gflops_low": 0, "gflops_high": 1, "how": ""}}, "gpus": []}',
     "not a machine record: field 'cpu.peak_float32.gflops_low': 0 is less than or equal"),
    ('{"cpu": {}, "gpus": [], "software": {"mxnet": {"blas_libraries": ["x"]}}}',
     "not a machine record: field 'software.mxnet.blas_libraries.0': 'x' is not of type"),
])
def test_the_report_refuses_a_corrupt_machine_record_naming_file_and_field(tmp_path, text,
                                                                           message):
    args = tables(tmp_path)
    args.machine.write_text(text)
    done = subprocess.run(render_command(args), capture_output=True, text=True, timeout=300,
                          env=own_lock(tmp_path))
    assert done.returncode == 1, done.stderr
    assert done.stderr.startswith(f"error: {args.machine}: {message}"), done.stderr
    assert "Traceback" not in done.stderr
    assert not args.out.exists()


@pytest.mark.slow  # over a second on 2 cores
@pytest.mark.parametrize("fields, message", WRONG_FIELDS[:3])
def test_the_report_refuses_a_corrupt_run_record_naming_file_and_field(tmp_path, fields,
                                                                      message):
    """The report reads every run record itself: one changed after summarise ran (or
    given to it directly) is refused, not a crash in a view."""
    args = tables(tmp_path)
    record = json.loads(args.runs[0].read_text())
    args.runs[0].write_text(json.dumps({**record, **fields}))
    done = subprocess.run(render_command(args), capture_output=True, text=True, timeout=300,
                          env=own_lock(tmp_path))
    assert done.returncode == 1, done.stderr
    assert done.stderr.startswith(f"error: {args.runs[0]}: not a run record: {message}")
    assert "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1  # one paragraph


@pytest.mark.slow  # over a second on 2 cores
def test_summarise_refuses_a_field_of_the_wrong_kind_and_ends_1(tmp_path):
    sidecar = section(tmp_path / "r", record=json.dumps(
        {"section": "hybridize", "framework": "mxnet", "status": "ok", "started": 5}))
    done = run_summarise(tmp_path, sidecar)
    assert done.returncode == 1
    assert done.stderr.startswith(
        f"error: {sidecar}: not a run record: field 'started': 5 is not of type 'string'")
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "summary.csv").exists()


@pytest.mark.slow  # over a second on 2 cores
def test_a_case_its_section_does_not_plan_is_refused_by_name(tmp_path):
    """A worker wrote rows of a case whose name fits the pattern but that its section does
    not plan (no document figure, no label): summarise refuses them, naming the section,
    the case and the cases allowed."""
    sidecar = section(tmp_path / "r")
    samples = sidecar.with_name("samples.csv")
    samples.write_text(samples.read_text() + ROW.replace("mlp_before_hybridize", "mlp_befor")
                       .format(repeat=2, value="0.5"))
    message = refusal(sidecar)
    assert message.startswith(f"{samples}: row 4: case 'mlp_befor' is not one section "
                              "hybridize plans; allowed: mlp_before_hybridize, "), message
    assert "mlp_before_hybridize_twin" in message and "torch_compile_cold" in message
    done = run_summarise(tmp_path, sidecar)
    assert done.returncode == 1
    assert "case 'mlp_befor' is not one section hybridize plans" in done.stderr
    assert not (tmp_path / "summary.csv").exists()


@pytest.mark.slow  # over a second on 2 cores
def test_every_case_the_stored_runs_hold_is_planned(tmp_path):
    """The cases of the stored and kept runs (every framework's) are all planned: the
    refusal above never meets a case a section script writes."""
    import tarfile

    from d2lperf.tables import case_plan, check_planned, load_samples

    plan = case_plan()
    for stored in [REPO / "tests/data/ci-old-format.tar.gz",
                   *sorted((REPO / "report/machines").glob("*.tar.gz"))]:
        with tarfile.open(stored) as archive:
            archive.extractall(tmp_path / stored.name, filter="data")
        for table in (tmp_path / stored.name).rglob("samples.csv"):
            check_planned(load_samples(table, SCHEMA), plan, table)
