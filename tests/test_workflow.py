"""End to end: the CI preset through real Snakemake in a temporary copy of the workflow."""

import json
import shutil
import statistics
import zipfile

import pandas as pd
import pytest
from markupsafe import escape

from conftest import (
    CI_CONFIG,
    REPO,
    WORKFLOW_PYTHON,
    copy_workflow,
    crashing_python,
    jobs_planned,
    snakemake,
)
from d2lperf import sections as section_table
from d2lperf.results import FORMAT_VERSION
from d2lperf.tables import load_reference, load_samples

SECTIONS = [s for s in section_table.names() if section_table.SECTIONS[s].has("pytorch")]


def test_every_section_ran_and_its_samples_match_the_schema(ci_run):
    _, results = ci_run
    for section in SECTIONS:
        entry = section_table.SECTIONS[section]
        for folder, framework in ((results / section, "mxnet"),
                                  (results / f"{section}_pytorch", "pytorch")):
            if not entry.has(framework):  # MXNet has no data-parallel section
                assert not folder.exists()
                continue
            run = json.loads((folder / "run.json").read_text())
            assert run["status"] == "ok", (section, framework, run.get("log_tail"))
            assert run["framework"] == framework
            assert run["format_version"] == FORMAT_VERSION
            frame = load_samples(folder / "samples.csv",
                                 REPO / "workflow/schemas/samples.schema.yaml")
            assert len(frame) > 0, (section, framework)
            assert set(frame["framework"]) == {framework}
    assert json.loads((results / "hybridize_pytorch/run.json").read_text())["torch"]["version"]
    hybridize = pd.read_csv(results / "hybridize/samples.csv")
    # three cases (one an A/A twin), three rounds in each of two processes (CI preset)
    assert len(hybridize) == 3 * 3 * 2
    assert sorted(hybridize["process"].unique()) == [0, 1]


def test_report_shows_every_document_figure(ci_run):
    _, results = ci_run
    page = (results / "report.html").read_text(encoding="utf-8")
    reference = load_reference()
    for printed in reference["printed"]:
        assert str(escape(printed)) in page, printed
    assert "http://" not in page.replace("http://www.w3.org", "")  # no network requests


def test_printed_outputs_match_where_deterministic(ci_run):
    _, results = ci_run
    outputs = pd.read_csv(results / "outputs.csv", keep_default_na=False)
    compared = outputs[outputs["match"].isin(["yes", "no"])]
    mxnet = compared[compared["framework"] == "mxnet"]
    assert set(mxnet["match"]) == {"yes"}, mxnet[mxnet["match"] == "no"]
    assert {"mlp_output_imperative", "allreduce_after", "split_output"} <= set(mxnet["case"])
    # PyTorch's twins print what the document printed where no random generator or print
    # format is involved; b1's gradient is None before a backward pass, not zeros: a
    # difference of design, shown as such and not compared.
    pytorch = compared[compared["framework"] == "pytorch"].set_index("case")["match"]
    assert dict(pytorch) == {"b1_weight": "yes", "allreduce_before": "yes",
                             "allreduce_after": "yes", "split_input": "yes",
                             "split_output": "yes", "net_outputs": "yes"}
    twins = outputs[outputs["framework"] == "pytorch"].set_index("case")["match"]
    assert twins["b1_grad"] == "by design"
    assert twins["mlp_output_imperative"] == "counterpart"
    assert twins["hybridnet_F_imperative"] == "by design"


def test_report_medians_are_those_of_the_raw_samples(ci_run):
    _, results = ci_run
    summary = pd.read_csv(results / "summary.csv")
    page = (results / "report.html").read_text(encoding="utf-8")
    for section, folder, framework in [
            (section, results / f"{section}{sub}", framework) for section in SECTIONS
            for sub, framework in (("", "mxnet"), ("_pytorch", "pytorch"))
            if section_table.SECTIONS[section].has(framework)]:
        samples = pd.read_csv(folder / "samples.csv")
        for (case, metric, epoch), group in samples.groupby(["case", "metric", "epoch"],
                                                            dropna=False):
            median = statistics.median(group["value"])
            row = summary[(summary["section"] == section) & (summary["case"] == case)
                          & (summary["framework"] == framework)
                          & (summary["metric"] == metric)
                          & ((summary["epoch"] == epoch) | (summary["epoch"].isna()
                                                            & pd.isna(epoch)))]
            assert len(row) >= 1, (section, framework, case, metric, epoch)
            assert row["median"].iloc[0] == pytest.approx(median, rel=1e-12)
    hybridize = summary[(summary["section"] == "hybridize")].dropna(subset=["median"])
    for median in hybridize["median"]:
        assert f"{median:.4f} s" in page


def test_every_claim_has_a_verdict_and_a_rule(ci_run):
    _, results = ci_run
    verdicts = pd.read_csv(results / "verdicts.csv", keep_default_na=False)
    assert len(verdicts) >= 10
    assert set(verdicts["verdict"]) <= {"holds", "does not hold", "inconclusive",
                                        "not measured", "does not apply"}
    assert all(verdicts["rule"]) and all(verdicts["evidence"])
    by_framework = verdicts.set_index(["framework", "name"])["verdict"]
    assert by_framework.loc[("mxnet", "outputs_reproduced")] == "holds"
    # PyTorch's b1 gradient is None, not the document's zeros: by design, not compared
    assert by_framework.loc[("pytorch", "outputs_reproduced")] == "holds"
    # eager PyTorch on this CPU queues nothing: the queueing claim is not about it
    assert by_framework.loc[("pytorch", "queueing_returns_at_once")] == "does not apply"
    assert {"mxnet", "pytorch"} == set(verdicts["framework"])


def test_machine_and_provenance_recorded(ci_run):
    _, results = ci_run
    machine = json.loads((results / "machine.json").read_text())
    assert machine["machine"] == "ci-test-machine"
    assert machine["software"]["mxnet"]["version"] == "1.9.1"
    run = json.loads((results / "hybridize/run.json").read_text())
    assert run["parameters"]["forward_passes"] == 100
    assert run["threads"]["OMP_NUM_THREADS"] is not None


def test_second_run_has_nothing_to_do(ci_run, experiment_python):
    work, _ = ci_run
    done = snakemake(work, "--cores", "2", *CI_CONFIG, f"experiment_python={experiment_python}")
    assert done.returncode == 0
    assert "Nothing to be done" in done.stderr + done.stdout


def test_template_change_rerenders_only_the_report(ci_run, experiment_python):
    work, _ = ci_run
    template = work / "report/templates/report.html.j2"
    template.write_text(template.read_text() + "\n", encoding="utf-8")
    done = snakemake(work, "-n", "--cores", "2", *CI_CONFIG,
                     f"experiment_python={experiment_python}")
    jobs = jobs_planned(done.stdout)
    assert sorted(jobs) == ["all", "report"], done.stdout[-2000:]


def test_snakemake_report_zip(ci_run, experiment_python):
    work, _ = ci_run
    done = snakemake(work, "--cores", "1", *CI_CONFIG, f"experiment_python={experiment_python}",
                     "--report", "report.zip")
    assert done.returncode == 0, done.stderr[-3000:]
    names = zipfile.ZipFile(work / "report.zip").namelist()
    assert any(n.endswith("hybridize.svg") for n in names)
    assert any(n.endswith("verdicts.csv") for n in names)


CUDA_ERROR = "RuntimeError: CUDA error: no kernel image is available for execution"


@pytest.mark.slow  # Snakemake
def test_failed_section_is_reported_with_its_log(tmp_path):
    """A section that crashes (here: every PyTorch section) is shown as failed, with
    its log, and the pipeline still produces the report."""
    work = copy_workflow(tmp_path / "wf")
    torch = crashing_python(tmp_path, "torch", CUDA_ERROR)
    done = snakemake(work, "--cores", "2", "--config", "preset=ci", "machine=broken",
                     "frameworks=[pytorch]", f"torch_python={torch}")
    assert done.returncode == 0, done.stderr[-3000:]
    run = json.loads((work / "results/broken/hybridize_pytorch/run.json").read_text())
    assert run["status"] == "failed" and run["exit_code"] == 1
    assert run["framework"] == "pytorch"
    assert "no kernel image is available" in run["log_tail"]
    page = (work / "results/broken/report.html").read_text(encoding="utf-8")
    assert 'class="status-failed">failed' in page
    assert "no kernel image is available" in page
    assert not (work / "results/broken/hybridize/run.json").exists()  # MXNet's: not asked for


@pytest.mark.parametrize("key, value, says", [
    ("experiment_python", str(WORKFLOW_PYTHON), "cannot import mxnet"),
    ("torch_python", str(WORKFLOW_PYTHON), "cannot import torch"),
    ("torch_python", "/nowhere/bin/python", "no such file"),
])
def test_a_missing_framework_stops_before_any_job(tmp_path, experiment_python, torch_python,
                                                  key, value, says):
    work = copy_workflow(tmp_path / "wf")
    interpreters = {"experiment_python": experiment_python, "torch_python": torch_python,
                    key: value}
    done = snakemake(work, "--cores", "1", "--config", "preset=ci", "machine=none",
                     *(f"{k}={v}" for k, v in interpreters.items()))
    assert done.returncode != 0
    assert f"config key {key} = " in done.stderr and says in done.stderr, done.stderr[-2000:]
    assert "make envs" in done.stderr
    assert not (work / "results").exists()


def test_bad_samples_stop_the_report_naming_file_and_row(ci_run, tmp_path, experiment_python):
    work = copy_workflow(tmp_path / "wf")
    results = work / "results/ci-test-machine"
    # copied now, so newer than the copied scripts: only the forced job reruns
    shutil.copytree(ci_run[1], results, copy_function=shutil.copy)
    samples = results / "small_ops_parallel/samples.csv"
    lines = samples.read_text().splitlines()
    lines[2] = lines[2].replace(",time,", ",speed,")
    samples.write_text("\n".join(lines) + "\n")
    done = snakemake(work, "--cores", "1", *CI_CONFIG, f"experiment_python={experiment_python}",
                     "--forcerun", "summarise")
    assert done.returncode != 0
    log = (results / "logs/summarise.log").read_text()
    assert f"{samples.relative_to(work)}: row 3: metric: 'speed' is not one of" in log
