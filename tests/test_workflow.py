"""End to end: the CI preset through real Snakemake in a temporary copy of the workflow."""

import json
import statistics

import pandas as pd
import pytest
from markupsafe import escape

from conftest import REPO, WORKFLOW_PYTHON, copy_workflow, snakemake
from d2lperf.tables import load_reference, load_samples

MACHINE = "ci-test-machine"
RESULTS = f"results/{MACHINE}"


@pytest.fixture(scope="module")
def ci_run(tmp_path_factory, experiment_python):
    work = copy_workflow(tmp_path_factory.mktemp("ci") / "wf")
    done = snakemake(work, "--cores", "2", "--config", "preset=ci", f"machine={MACHINE}",
                     f"experiment_python={experiment_python}")
    assert done.returncode == 0, done.stderr[-3000:]
    return work, done


def test_samples_match_their_schema(ci_run):
    work, _ = ci_run
    frame = load_samples(work / RESULTS / "hybridize/samples.csv",
                         REPO / "workflow/schemas/samples.schema.yaml")
    assert len(frame) == 2 * 3  # two cases, three repeats in the CI preset


def test_report_shows_every_document_figure(ci_run):
    work, _ = ci_run
    page = (work / RESULTS / "report.html").read_text(encoding="utf-8")
    reference = load_reference(REPO / "report/reference.csv")
    for printed in reference["printed"]:
        assert str(escape(printed)) in page, printed
    assert "http://" not in page.replace("http://www.w3.org", "")  # no network requests
    assert page.count('class="match-yes"') == len(reference[reference["metric"] == "output"])


def test_report_medians_are_those_of_the_raw_samples(ci_run):
    work, _ = ci_run
    samples = pd.read_csv(work / RESULTS / "hybridize/samples.csv")
    summary = pd.read_csv(work / RESULTS / "summary.csv").set_index("case")
    page = (work / RESULTS / "report.html").read_text(encoding="utf-8")
    for case, group in samples.groupby("case"):
        median = statistics.median(group["value"])
        assert summary.loc[case, "median"] == pytest.approx(median, rel=1e-12)
        assert f"{median:.4f} s" in page


def test_machine_and_provenance_recorded(ci_run):
    work, _ = ci_run
    machine = json.loads((work / RESULTS / "machine.json").read_text())
    assert machine["machine"] == MACHINE
    assert machine["software"]["mxnet"]["version"] == "1.9.1"
    run = json.loads((work / RESULTS / "hybridize/run.json").read_text())
    assert run["parameters"]["forward_passes"] == 100
    assert run["threads"]["OMP_NUM_THREADS"] is not None


def test_second_run_has_nothing_to_do(ci_run, experiment_python):
    work, _ = ci_run
    done = snakemake(work, "--cores", "2", "--config", "preset=ci", f"machine={MACHINE}",
                     f"experiment_python={experiment_python}")
    assert done.returncode == 0
    assert "Nothing to be done" in done.stderr + done.stdout


def test_failed_experiment_is_reported_with_its_log(tmp_path):
    """An experiment that crashes (here: no MXNet in its interpreter) is shown as failed,
    with its log, and the pipeline still produces the report."""
    work = copy_workflow(tmp_path / "wf")
    done = snakemake(work, "--cores", "2", "--config", "preset=ci", "machine=broken",
                     f"experiment_python={WORKFLOW_PYTHON}")
    assert done.returncode == 0, done.stderr[-3000:]
    run = json.loads((work / "results/broken/hybridize/run.json").read_text())
    assert run["status"] == "failed" and run["exit_code"] == 1
    assert "No module named 'mxnet'" in run["log_tail"]
    page = (work / "results/broken/report.html").read_text(encoding="utf-8")
    assert 'class="status-failed">failed' in page
    assert "No module named &#39;mxnet&#39;" in page
