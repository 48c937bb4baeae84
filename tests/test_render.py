"""The report's renderer on small hand-made tables: two frameworks side by side, a
section that failed, one that was skipped, one framework only, the labels table and
the claims' words."""

from __future__ import annotations

import argparse
import csv
import json
import re
from html import unescape
from pathlib import Path

import pytest
import render_report
from markupsafe import escape

from conftest import REPO
from d2lperf import claims as claims_module
from d2lperf import sections as section_table
from d2lperf.labels import Labels
from d2lperf.report import claims_view, sections_view
from d2lperf.report.values import records
from d2lperf.results import section_folder

SUMMARY_COLUMNS = ["document", "variant", "section", "framework", "experiment", "case",
                   "metric", "epoch", "unit", "devices", "label", "document_printed",
                   "document_value", "count", "q1", "median", "q3", "ci_low", "ci_high",
                   "noisy", "outliers", "ratio", "achieved", "achieved_unit", "ceiling_case",
                   "fraction_of_ceiling", "status"]
VERDICT_COLUMNS = ["claim", "name", "section", "verdict", "evidence", "rule", "kind",
                   "framework", "effect", "ratio", "ratio_low", "ratio_high"]
OUTPUT_COLUMNS = ["section", "document", "framework", "experiment", "case", "label",
                  "document_printed", "measured", "match", "rule", "status"]
LOG_TAIL = "Traceback (most recent call last):\nRuntimeError: <no kernel> & 'image'"


def figure(framework, experiment, case, printed, label, median=None, **extra):
    """One summary row: a document's figure (printed) beside one framework's median."""
    value = float(printed) if printed else None
    row = {"document": "seeds/000" if printed else "", "framework": framework,
           "experiment": experiment, "case": case, "metric": "time", "unit": "s",
           "label": label, "document_printed": printed or "",
           "document_value": value if value is not None else "",
           "status": "ok"}
    if median is not None:
        row.update(count=6, q1=median * 0.95, median=median, q3=median * 1.05,
                   ci_low=median * 0.9, ci_high=median * 1.1,
                   ratio=median / value if value else "")
    row.update(extra)
    return row


def verdict(framework, name, section, result, ratio=None, kind="claim", evidence="e"):
    row = {"claim": f"the claim {name}", "name": name, "section": section, "verdict": result,
           "evidence": evidence, "rule": f"the rule of {name}", "kind": kind,
           "framework": framework}
    if ratio is not None:
        row.update(effect="faster" if ratio < 1 else "slower", ratio=ratio,
                   ratio_low=ratio * 0.9, ratio_high=ratio * 1.1)
    return row


def write_csv(path: Path, columns: list[str], rows: list[dict]) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns, lineterminator="\n")
        writer.writeheader()
        writer.writerows([{c: r.get(c, "") for c in columns} for r in rows])
    return path


def run_record(folder: Path, experiment: str, framework: str, status: str, **extra) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    record = {"experiment": experiment, "framework": framework, "status": status,
              "started": "2026-01-02T03:04:00+00:00", "finished": "2026-01-02T03:05:00+00:00",
              "wall_seconds": 1.5, "parameters": {"repeats": 3, "processes": 2, "warmup": 1},
              "threads": {"OMP_NUM_THREADS": "2"}, **extra}
    if framework == "pytorch" and status == "ok":
        record["torch"] = {"version": "2.13.0+cpu", "build": "cpu", "threads":
                           {"intra_op": 2, "inter_op": 2}, "gpus": []}
    (folder / "run.json").write_text(json.dumps(record), encoding="utf-8")
    return folder / "run.json"


def tables(tmp: Path, frameworks=("mxnet", "pytorch")) -> argparse.Namespace:
    """hybridize ran in every framework (with an extra measurement each); MXNet's
    auto_parallelism failed; multi_gpu_gluon was skipped everywhere (no GPU)."""
    summary, verdicts, runs = [], [], []
    for n, framework in enumerate(frameworks):
        speed = 1 + n  # PyTorch's figures differ from MXNet's
        summary += [
            figure(framework, "hybridize", "mlp_before_hybridize", "0.4270",
                   "MLP, before hybridize()", 0.1234 * speed),
            figure(framework, "hybridize", "mlp_after_hybridize", "0.2341",
                   "MLP, after hybridize()", 0.0567 * speed),
            figure(framework, "auto_parallelism", "cpu_only", "0.8423", "Run on CPU",
                   None if framework == "mxnet" else 0.5, status="failed"
                   if framework == "mxnet" else "ok"),
            figure(framework, "multi_gpu_gluon", "resnet18_1_device", "13.2",
                   "ResNet-18, 1 GPU: sec/epoch", status="skipped"),
        ]
        verdicts += [
            verdict(framework, "aa_hybridize", "hybridize", "holds", 1.01, kind="check"),
            verdict(framework, "machine_steadiness", "all", "holds", kind="check",
                    evidence="probe 0.2 s; 0 of 3 sections flagged"),
            verdict(framework, "hybridize_speeds_up_mlp", "hybridize", "holds", 0.46),
            verdict(framework, "two_devices_speed_up_resnet", "multi_gpu_gluon",
                    "not applicable", evidence="multi_gpu_gluon was skipped"),
        ]
        folder = section_folder
        runs += [
            run_record(tmp / folder("hybridize", framework), "hybridize", framework, "ok",
                       steadiness={"probe_before_s": 0.2, "probe_after_s": 0.21,
                                   "probe_moved": 0.05, "steal_share": 0.0, "flags": []}),
            run_record(tmp / folder("multi_gpu_gluon", framework), "multi_gpu_gluon",
                       framework, "skipped", reason="needs 1 GPU, found 0"),
        ]
        if framework == "mxnet":
            runs.append(run_record(tmp / "auto_parallelism", "auto_parallelism", "mxnet",
                                   "failed", exit_code=1, log="logs/auto_parallelism.log",
                                   log_tail=LOG_TAIL))
        else:
            runs.append(run_record(tmp / folder("auto_parallelism", framework),
                                   "auto_parallelism", framework, "ok"))
    summary.append(figure("mxnet", "hybridize", "mlp_before_hybridize_twin", None, "",
                          0.125))
    if "pytorch" in frameworks:
        summary.append(figure("pytorch", "hybridize", "mlp_torch_compile", None, "", 0.03))
    outputs = [{"section": "s", "document": "seeds/000", "framework": f,
                "experiment": "hybridize", "case": "mlp_output_imperative",
                "label": "MLP output, imperative", "document_printed": "[[-0.11 <0.05>]]",
                "measured": "[[-0.11 0.05]]", "match": "yes", "rule": "numbers",
                "status": "ok"} for f in frameworks]
    plot = tmp / "plots" / "hybridize.svg"
    plot.parent.mkdir()
    plot.write_text('<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"/>')
    (tmp / "machine.json").write_text(json.dumps(
        {"machine": "test-box", "cpu": {"model": "A CPU", "logical_cores": 2},
         "gpus": [], "software": {"python": "3.11", "numpy": "1.23.5",
                                  "mxnet": {"version": "1.9.1", "features": ["OPENMP"]}}}))
    return argparse.Namespace(
        machine=tmp / "machine.json",
        summary=write_csv(tmp / "summary.csv", SUMMARY_COLUMNS, summary),
        outputs=write_csv(tmp / "outputs.csv", OUTPUT_COLUMNS, outputs),
        verdicts=write_csv(tmp / "verdicts.csv", VERDICT_COLUMNS, verdicts),
        runs=runs, plots=[plot], benchmarks=[], sections=sections_csv(tmp),
        labels=None, claims=None, comparison=None, comparison_verdicts=None,
        comparison_plot=None, template=REPO / "report/templates/report.html.j2",
        preset="documents", out=tmp / "report.html")


def section(page: str, experiment: str) -> str:
    found = re.search(rf'<section id="{experiment}"[^>]*>(.*?)</section>', page, re.S)
    assert found, experiment
    return found.group(1)


def text(html: str) -> str:
    return unescape(re.sub(r"<[^>]+>", " ", html))


@pytest.fixture
def page(tmp_path):
    return render_report.render(tables(tmp_path))


def test_claims_have_a_verdict_per_framework_and_the_documents_ratio(page):
    claims = re.search(r'<table class="claims stack" id="claims">(.*?)</table>', page, re.S)
    row = next(r for r in claims.group(1).split("<tr>") if "hybridize() speeds up" in r)
    cells = re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)
    assert [text(c).split()[0] for c in cells[:2]] == ["holds", "holds"]
    assert "2.2× faster [2.0–2.4]" in text(cells[0])  # 1 / 0.46, interval 1/(0.46 × 1.1)
    assert "1.8× faster" in text(cells[2])  # the document: 0.2341 / 0.4270
    assert "MXNet here" in claims.group(1) and "PyTorch here" in claims.group(1)


def test_a_skipped_claim_says_why(page):
    claims = re.search(r'id="claims">(.*?)</table>', page, re.S).group(1)
    row = next(r for r in claims.split("<tr>") if "ResNet-18" in r)
    assert "skipped: needs 1 GPU, found 0" in text(row)


def test_figures_side_by_side_in_the_document_order(page):
    hybridize = section(page, "hybridize")
    table = re.search(r"The document&#39;s figures</caption>(.*?)</table>", hybridize,
                      re.S).group(1)
    rows = [text(r) for r in table.split("<tr>")[2:]]
    assert rows[0].split() == ["MLP,", "before", "hybridize()", "0.4270", "s", "0.1234", "s",
                               "[0.1111–0.1357]", "·", "n", "6", "·", "0.29×", "the",
                               "document", "0.2468", "s", "[0.2221–0.2715]", "·", "n", "6",
                               "·", "0.58×", "the", "document"]
    assert rows[1].startswith(" MLP, after hybridize()")


def test_extra_measurements_are_labelled_and_marked(page):
    hybridize = section(page, "hybridize")
    extras = re.search(r"Extra measurements \(the documents printed none\)</caption>(.*?)"
                       r"</table>", hybridize, re.S).group(1)
    rows = [text(r) for r in extras.split("<tr>")[2:]]
    assert len(rows) == 2 and all("extra measurement" in r for r in rows)
    assert "a second copy timed beside the first (A/A pair)" in rows[0]
    assert "after torch.compile()" in rows[1] and "not measured" in rows[1]  # MXNet: none
    assert "mlp_before_hybridize_twin" not in text(hybridize)


def test_a_failed_section_shows_its_log_tail(page):
    failed = section(page, "auto_parallelism")
    assert '<span class="status-failed">failed</span>' in failed
    assert str(escape(LOG_TAIL)) in failed
    assert '<details open class="wide">' in failed
    assert "Run on CPU" in failed and "0.5000 s" in failed  # PyTorch's run is still there
    runs = section(page, "provenance")
    assert '<tr data-run="auto_parallelism" data-status="failed">' in runs
    assert '<tr data-run="auto_parallelism_pytorch" data-status="ok">' in runs
    assert runs.count('data-status="failed"') == 1


def test_a_section_that_ran_nowhere_is_one_line_with_its_command(page):
    skipped = section(page, "multi_gpu_gluon")
    lines = re.findall(r"<p>(.*?)</p>", skipped, re.S)
    assert len(lines) == 1  # both frameworks, for the same reason
    assert "(MXNet, PyTorch): needs 1 GPU, found 0" in lines[0]
    assert ("<code>snakemake --cores all --forcerun multi_gpu_gluon multi_gpu_gluon_pytorch "
            "--config gpu_sections_on_cpu=True</code>") in lines[0]
    assert "<img" not in skipped
    assert "13.2" in re.search(r"<details>(.*?)</details>", skipped, re.S).group(1)


def test_every_document_figure_and_output_is_on_the_page(page):
    for printed in ("0.4270", "0.2341", "0.8423", "13.2", "[[-0.11 &lt;0.05&gt;]]"):
        assert printed in page, printed


def test_overview_draws_a_mark_per_framework_with_a_text_alternative(page):
    svg = re.search(r"<svg[^>]*>.*?</svg>", page, re.S).group(0)
    assert 'role="img"' in svg and 'aria-labelledby="overview-title overview-desc"' in svg
    assert re.search(r'<title id="overview-title">[^<]+</title>', svg)
    # hybridize's two figures and PyTorch's cpu_only: three figures measured, two marks
    # each for hybridize; and a legend mark per framework
    assert svg.count("<circle") == 2 + 1 and svg.count("<path") == 3 + 1
    assert "not measured" in svg  # resnet18 ran nowhere
    table = re.search(r"The figure as a table.*?</table>", page, re.S).group(0)
    assert "0.289× [0.26–0.318]" in table  # 0.1234 / 0.4270 with its interval


def test_provenance_lists_both_stacks(page):
    provenance = section(page, "provenance")
    assert "MXNet 1.9.1" in provenance and "PyTorch 2.13.0+cpu (cpu build)" in provenance
    assert provenance.count('class="status-') >= 6  # every run, each framework


def test_checks_one_line_each_on_the_first_screen(page):
    facts = re.search(r'<dl class="facts">(.*?)</dl>', page, re.S).group(1)
    assert "MXNet 1.9.1; PyTorch 2.13.0+cpu" in text(facts)
    aa = " ".join(text(re.search(r"Identical work \(A/A\).*?</dd>", facts, re.S).group(0))
                  .split())
    assert "MXNet holds 1% apart · PyTorch holds 1% apart" in aa


def test_mxnet_only(tmp_path):
    page = render_report.render(tables(tmp_path, frameworks=("mxnet",)))
    assert "PyTorch" not in text(page)
    assert "MXNet here" in page
    assert "0.1234 s" in page


def test_effect_words():
    words = claims_view.effect_words
    assert words("speedup", 0.25, 0.2, 0.5) == "4.0× faster [2.0–5.0]"
    assert words("speedup", 2.0, 1.5, 2.5) == "2.0× slower [1.5–2.5]"
    assert words("speedup", 1.01, 0.98, 1.03, "no meaningful difference") == (
        "no meaningful difference (×1.0)")
    assert words("share", 0.02, 0.01, 0.11) == "queued in 2% of the wait [1–11%]"
    assert words("share", 150, 4.4, 290) == "queueing 150× the wait [4.4–290]"
    assert words("overlap", 0.55, 0.5, 0.6) == "together 55% of the sum [50–60%]"
    assert words("more", 1.2, None, None) == "1.2× the memory"
    assert words("speedup", None, None, None) == ""


def test_labels_exact_before_pattern_and_per_epoch_only_for_epochs():
    labels = Labels([
        {"experiment": "e", "case": "x_*", "metric": "time", "label": "pattern {suffix}"},
        {"experiment": "e", "case": "x_2", "metric": "time", "label": "exact"},
        {"experiment": "e", "case": "x_*", "metric": "loss", "label": "epoch {epoch} of x"},
    ])
    assert labels("e", "x_2", "time") == "exact"
    assert labels("e", "x_5", "time") == "pattern 5"
    assert labels("e", "x_5", "loss", 3.0) == "epoch 3 of x"
    assert labels("e", "x_5", "loss") is None
    assert labels("other", "x_5", "time") is None


def test_labels_refuse_an_incomplete_row():
    with pytest.raises(ValueError, match="labels row 2: empty label"):
        Labels([{"experiment": "e", "case": "c", "metric": "time", "label": ""}])


def test_every_claim_says_how_the_report_words_it():
    table = claims_view.wording()
    names = {c.name for c in claims_module.CLAIMS} | {
        "lenet_accuracy_as_documented", "resnet_accuracy_as_documented", "outputs_reproduced"}
    assert names == set(table)
    for name, claim in table.items():
        assert claim.name == name and claim.short and claim.form in claims_module.FORMS, name
        if claim.form in ("speedup", "share", "overlap", "more"):
            assert all(claim.figures), name
    assert table["resnet_accuracy_as_documented"].figures[0] == (
        "resnet18_1_device+resnet18_2_devices")


def sections_csv(folder: Path) -> Path:
    """The sections' order and headings, as the rule sections_table writes them."""
    path = folder / "sections.csv"
    section_table.write_csv(path)
    return path


def test_labels_csv_names_known_sections():
    sections = set(section_table.names())
    labels = Labels.read(REPO / "report/labels.csv")
    assert {r["experiment"] for r in labels.rows} <= sections


def test_across_machines_a_verdict_per_framework_and_machine(tmp_path):
    args = tables(tmp_path)
    columns = ["framework", "experiment", "case", "metric", "epoch", "unit", "devices",
               "label", "machine", "count", "median", "ci_low", "ci_high", "speedup",
               "speedup_low", "speedup_high"]
    rows = [{"framework": f, "experiment": "hybridize", "case": "mlp_after_hybridize",
             "metric": "time", "unit": "s", "label": "MLP, after hybridize()", "machine": m,
             "count": 6, "median": median, "ci_low": median, "ci_high": median,
             "speedup": speedup, "speedup_low": speedup, "speedup_high": speedup}
            for f in ("mxnet", "pytorch")
            for m, median, speedup in (("test-box", 0.05, 1.0), ("gpu-box", 0.01, 5.0))]
    args.comparison = write_csv(tmp_path / "comparison.csv", columns, rows)
    args.comparison_verdicts = write_csv(
        tmp_path / "verdicts_by_machine.csv", ["framework", "name", "claim", "test-box",
                                               "gpu-box"],
        [{"framework": "mxnet", "name": "hybridize_speeds_up_mlp", "claim": "c",
          "test-box": "holds", "gpu-box": "inconclusive"},
         {"framework": "pytorch", "name": "hybridize_speeds_up_mlp", "claim": "c",
          "test-box": "holds", "gpu-box": "does not hold"},
         {"framework": "mxnet", "name": "aa_hybridize", "claim": "a check",
          "test-box": "holds", "gpu-box": "holds"}])
    args.comparison_plot = args.plots[0]
    across = section(render_report.render(args), "across-machines")
    row = next(r for r in across.split("<tr>") if "hybridize() speeds up" in r)
    cells = [" ".join(text(c).split()) for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
    assert cells == ["MXNet holds · PyTorch holds", "MXNet inconclusive · PyTorch does not hold"]
    assert "a check" not in across  # the checks stay in each machine's own report
    assert re.search(r"<details><summary>Speed-ups against test-box, as a plot</summary>\s*<img",
                     across)
    assert "5.00×" in across
    assert "MLP, after hybridize() (PyTorch)" in " ".join(text(across).split())


def test_a_training_run_the_machine_cannot_hold_is_named_with_its_reason():
    # one H200: the documents' 1-GPU run trains, the 2-GPU one is named, not just missing
    line = sections_view.run_line({
        "status": "ok", "wall_seconds": 61.0, "parameters": {},
        "notes": {"runs_not_run": {"resnet18_2_devices": "needs 2 GPUs, found 1"}}})
    assert line["status"] == "ok"
    assert line["text"] == "61.0 s; the 2-device run not run: needs 2 GPUs, found 1"


def test_first_screen_never_says_does_not_hold_for_a_claim_that_does_not_apply(tmp_path):
    """Eager PyTorch on a CPU: the queueing claim's row reads 'not applicable here' with the
    reason and the measurement beside it; the documents' own verdict by the same rule."""
    args = tables(tmp_path)
    rows = list(csv.DictReader(open(args.verdicts, encoding="utf-8")))
    columns = VERDICT_COLUMNS + ["finding", "applies", "document_verdict",
                                 "document_evidence", "document_by_variant"]
    for framework, result in (("mxnet", "holds"), ("pytorch", "not applicable here")):
        row = verdict(framework, "queueing_returns_at_once", "async_computation", result,
                      evidence="eager PyTorch on a CPU: each op finishes before it returns"
                      if framework == "pytorch" else "queued/finished 0.01")
        row.update(ratio=2180.0 if framework == "pytorch" else 0.01, ratio_low=2000.0
                   if framework == "pytorch" else 0.008, ratio_high=2300.0
                   if framework == "pytorch" else 0.012,
                   finding="queued/finished 2.18e+03" if framework == "pytorch" else "",
                   document_verdict="holds",
                   document_evidence="holds (queued/finished 0.11 of the wait)")
        rows.append(row)
    write_csv(args.verdicts, columns, rows)
    page = render_report.render(args)
    claims = re.search(r'id="claims">(.*?)</table>', page, re.S).group(1)
    row = next(r for r in claims.split("<tr>") if "front end returns at once" in r)
    cells = [text(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
    assert cells[0].split()[0] == "holds"
    assert cells[1].split(" measured")[0].strip().startswith("not applicable here")
    assert "does not hold" not in row
    assert "each op finishes before it returns; measured: queueing 2180× the wait" in cells[1]
    assert cells[2].split()[0] == "holds"  # the documents' figures are not in this summary
    caption = re.search(r"<caption>(.*?)</caption>", claims, re.S).group(1)
    # 3 decisive (2 + MXNet's queueing), in two frameworks: 2 x 0.025
    assert "of this run's 3 decisive verdicts, at most 0.05 are expected wrong" in caption
    view = claims_view.claim_rows(records(args.verdicts), ["mxnet", "pytorch"], {}, [], {}, {})
    queue = next(c for c in view if c["name"] == "queueing_returns_at_once")
    assert queue["document_evidence"].startswith("holds (queued/finished 0.11")
    assert queue["cells"][1]["finding"] == "queued/finished 2.18e+03"
