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
from markupsafe import escape

from conftest import REPO
from d2lperf import claims as claims_module
from d2lperf import results
from d2lperf import sections as section_table
from d2lperf.commands import render_report
from d2lperf.labels import Labels
from d2lperf.report import claims_view, sections_view
from d2lperf.report.values import records
from d2lperf.results import section_folder

SUMMARY_COLUMNS = ["document", "variant", "heading", "framework", "section", "case",
                   "metric", "epoch", "unit", "devices", "label", "document_printed",
                   "document_value", "count", "q1", "median", "q3", "ci_low", "ci_high",
                   "noisy", "outliers", "ratio", "achieved", "achieved_unit", "ceiling_case",
                   "fraction_of_ceiling", "status"]
VERDICT_COLUMNS = ["claim", "name", "section", "verdict", "evidence", "rule", "kind",
                   "framework", "effect", "ratio", "ratio_low", "ratio_high", "identical_work"]
OUTPUT_COLUMNS = ["heading", "document", "framework", "section", "case", "label",
                  "document_printed", "measured", "match", "rule", "status"]
LOG_TAIL = "Traceback (most recent call last):\nRuntimeError: <no kernel> & 'image'"


def figure(framework, section, case, printed, label, median=None, **extra):
    """One summary row: a document's figure (printed) beside one framework's median."""
    value = float(printed) if printed else None
    row = {"document": "seeds/000" if printed else "", "framework": framework,
           "section": section, "case": case, "metric": "time", "unit": "s",
           "label": label, "document_printed": printed or "",
           "document_value": value if value is not None else "",
           "status": "ok"}
    if median is not None:
        row.update(count=6, q1=median * 0.95, median=median, q3=median * 1.05,
                   ci_low=median * 0.9, ci_high=median * 1.1,
                   ratio=median / value if value else "")
    row.update(extra)
    return row


def verdict(framework, name, section, result, ratio=None, kind="claim", evidence="e",
            identical_work=False):
    row = {"claim": f"the claim {name}", "name": name, "section": section, "verdict": result,
           "evidence": evidence, "rule": f"the rule of {name}", "kind": kind,
           "framework": framework, "identical_work": identical_work}
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


def run_record(folder: Path, section: str, framework: str, status: str, **extra) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    record = {"section": section, "framework": framework, "status": status,
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
            verdict(framework, "aa_hybridize", "hybridize", "holds", 1.01, kind="check",
                    identical_work=True),
            verdict(framework, "machine_steadiness", "all", "holds", kind="check",
                    evidence="probe 0.2 s; 0 of 3 sections flagged"),
            verdict(framework, "hybridize_speeds_up_mlp", "hybridize", "holds", 0.46),
            verdict(framework, "two_devices_speed_up_resnet", "multi_gpu_gluon",
                    "not measured", evidence="multi_gpu_gluon was skipped"),
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
                                   "auto_parallelism", framework, "ok", parameters={
                                       "repeats": 3, "processes": 2, "warmup": 1, "dots": 10,
                                       "cpu_size": 2000, "gpu_size": 6000}))
    summary.append(figure("mxnet", "hybridize", "mlp_before_hybridize_twin", None, "",
                          0.125))
    if "pytorch" in frameworks:
        summary.append(figure("pytorch", "hybridize", "mlp_torch_compile", None, "", 0.03))
    outputs = [{"heading": "s", "document": "seeds/000", "framework": f,
                "section": "hybridize", "case": "mlp_output_imperative",
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


def section(page: str, name: str) -> str:
    found = re.search(rf'<section id="{name}"[^>]*>(.*?)</section>', page, re.S)
    assert found, name
    return found.group(1)


def text(html: str) -> str:
    return unescape(re.sub(r"<[^>]+>", " ", html))


def cell_text(html: str) -> str:
    """A table cell's words, white space folded."""
    return " ".join(text(html).split())


@pytest.fixture
def args(tmp_path):
    return tables(tmp_path)


@pytest.fixture
def view(args):
    return render_report.view(args)


@pytest.fixture
def page(args):
    return render_report.render(args)


def claim_of(view: dict, name: str) -> dict:
    return next(c for c in view["claims"] if c["name"] == name)


def section_of(view: dict, section: str) -> dict:
    return next(s for s in view["sections"] if s["section"] == section)


def test_claims_have_a_verdict_per_framework_and_the_documents_ratio(view):
    assert view["frameworks"] == ["MXNet", "PyTorch"]
    row = claim_of(view, "hybridize_speeds_up_mlp")
    assert row["short"] == "hybridize() speeds up the MLP"
    assert [c["verdict"] for c in row["cells"]] == ["holds", "holds"]
    assert row["cells"][0]["line"] == "2.2× faster [2.0–2.4×]"  # 1 / 0.46, 1/(0.46 × 1.1)
    assert row["document"] == "1.8× faster"  # the document: 0.2341 / 0.4270


def test_the_claims_table_shows_the_views_verdicts_a_column_per_framework(view, page):
    """The template: a column per framework the view names, then the documents'; a cell
    is its verdict with its first-screen line."""
    claims = re.search(r'<table class="claims stack" id="claims">(.*?)</table>', page,
                       re.S).group(1)
    head = [cell_text(h) for h in re.findall(r'<th scope="col">(.*?)</th>', claims)]
    assert head == ["claim", "MXNet here", "PyTorch here", "the documents (2019)"]
    row = next(r for r in claims.split("<tr>") if "hybridize() speeds up" in r)
    cells = [cell_text(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
    mine = claim_of(view, "hybridize_speeds_up_mlp")
    assert cells == [f"{c['verdict']} {c['line']}" for c in mine["cells"]] + [mine["document"]]
    reading = cell_text(re.search(r'<details class="reading">(.*?)</details>', page,
                                  re.S).group(1))  # folded: the method, not the first words
    chance = view["chance"]
    assert (f"of this run's {chance['decisive']} decisive verdicts, at most "
            f"{chance['expected']:.2g} are expected wrong") in reading


def test_a_skipped_claim_says_why(view):
    row = claim_of(view, "two_devices_speed_up_resnet")
    assert [c["line"] for c in row["cells"]] == ["skipped: needs 1 GPU, found 0"] * 2


def test_figures_side_by_side_in_the_document_order(view):
    figures = section_of(view, "hybridize")["figures"]
    assert [r["label"] for r in figures] == ["MLP, before hybridize()", "MLP, after hybridize()"]
    first = figures[0]
    assert (first["document_printed"], first["unit"], first["extra"]) == ("0.4270", "s", False)
    assert [(c["text"], c["notes"]) for c in first["cells"]] == [
        ("0.1234 s", "[0.1111–0.1357] · n 6 · 0.29× the document"),
        ("0.2468 s", "[0.2221–0.2715] · n 6 · 0.58× the document")]


def test_the_figures_table_shows_every_part_of_a_cell(view, page):
    """The template: a figure's row is its label, the document's figure and unit, then
    each framework's median, its interval, count and ratio."""
    table = re.search(r"The document&#39;s figures</caption>(.*?)</table>",
                      section(page, "hybridize"), re.S).group(1)
    row = text(table.split("<tr>")[2]).split()
    first = section_of(view, "hybridize")["figures"][0]
    expected = [first["label"], first["document_printed"], first["unit"]]
    for cell in first["cells"]:
        expected += [cell["text"], cell["notes"]]
    assert row == " ".join(expected).split()


def test_extra_measurements_are_labelled_and_marked(view, page):
    extras = section_of(view, "hybridize")["extras"]
    assert len(extras) == 2 and all(r["extra"] and r["labelled"] for r in extras)
    assert extras[0]["label"] == ("MLP forward passes, imperative: a second copy timed beside "
                                  "the first (A/A pair)")
    assert "after torch.compile()" in extras[1]["label"]
    assert [c["text"] for c in extras[1]["cells"]] == ["not measured", "0.0300 s"]  # MXNet: none
    hybridize = section(page, "hybridize")
    assert text(hybridize).count("extra measurement") == 2  # the template marks each
    assert "mlp_before_hybridize_twin" not in text(hybridize)  # never the bare case name


def test_a_failed_section_shows_its_log_tail(view):
    failed = section_of(view, "auto_parallelism")
    assert failed["ran"]
    assert [(r["framework"], r["status"]) for r in failed["runs"]] == [("MXNet", "failed"),
                                                                      ("PyTorch", "ok")]
    assert [(f["framework"], f["run"]["log_tail"]) for f in failed["failed"]] == [
        ("MXNet", LOG_TAIL)]
    cpu_only = next(r for r in failed["figures"] if r["label"] == "Run on CPU")
    assert [c["text"] for c in cpu_only["cells"]] == ["failed", "0.5000 s"]  # PyTorch's still
    runs = [(r["job"], r["run"]["status"]) for r in view["runs"]]
    assert ("auto_parallelism", "failed") in runs and ("auto_parallelism_pytorch", "ok") in runs
    assert [status for _, status in runs].count("failed") == 1


def test_a_failed_sections_log_tail_is_escaped_and_unfolded(page):
    failed = section(page, "auto_parallelism")
    assert '<span class="status-failed">failed</span>' in failed
    assert str(escape(LOG_TAIL)) in failed
    assert '<details open class="wide">' in failed
    runs = section(page, "provenance")
    assert '<tr data-run="auto_parallelism" data-status="failed">' in runs
    assert '<tr data-run="auto_parallelism_pytorch" data-status="ok">' in runs
    assert runs.count('data-status="failed"') == 1


def test_a_section_that_ran_nowhere_is_one_line_with_its_command(view):
    skipped = section_of(view, "multi_gpu_gluon")
    assert not skipped["ran"] and skipped["plot"] is None
    assert [(n["frameworks"], n["reason"], n["command"]) for n in skipped["not_run"]] == [
        (["MXNet", "PyTorch"], "needs 1 GPU, found 0",  # both frameworks, for the same reason
         "snakemake --cores all --forcerun multi_gpu_gluon multi_gpu_gluon_pytorch "
         "--config gpu_sections_on_cpu=True")]
    assert [r["document_printed"] for r in skipped["figures"]] == ["13.2"]


def test_a_section_that_ran_nowhere_reads_as_its_lines_and_its_folded_figures(view, page):
    """The template: one paragraph per reason with its command as code, no plot, the
    document's figures folded."""
    skipped = section(page, "multi_gpu_gluon")
    lines = re.findall(r"<p>(.*?)</p>", skipped, re.S)
    (line,) = section_of(view, "multi_gpu_gluon")["not_run"]
    assert len(lines) == 1
    assert f"({', '.join(line['frameworks'])}): {line['reason']}" in lines[0]
    assert f"<code>{line['command']}</code>" in lines[0]
    assert "<img" not in skipped
    assert "13.2" in re.search(r"<details>(.*?)</details>", skipped, re.S).group(1)


def test_every_document_figure_and_output_is_on_the_page(page):
    for printed in ("0.4270", "0.2341", "0.8423", "13.2", "[[-0.11 &lt;0.05&gt;]]"):
        assert printed in page, printed


def test_overview_has_a_mark_per_framework_that_measured_each_figure(view):
    rows = view["overview"]["rows"]
    assert [r["label"] for r in rows] == ["MLP, before hybridize()", "MLP, after hybridize()",
                                          "Run on CPU", "ResNet-18, 1 GPU: sec/epoch"]
    measured = [[m["framework"] if m else None for m in r["marks"]] for r in rows]
    assert measured == [["mxnet", "pytorch"], ["mxnet", "pytorch"], [None, "pytorch"],
                        [None, None]]  # resnet18 ran nowhere
    mark = rows[0]["marks"][0]  # 0.1234 / 0.4270 with its interval
    assert (mark["ratio"], mark["low"], mark["high"]) == pytest.approx(
        (0.1234 / 0.4270, 0.9 * 0.1234 / 0.4270, 1.1 * 0.1234 / 0.4270))
    assert view["overview"]["range"] == (0.1, 10)


def test_overview_draws_a_mark_per_framework_with_a_text_alternative(page):
    svg = re.search(r"<svg[^>]*>.*?</svg>", page, re.S).group(0)
    assert 'role="img"' in svg and 'aria-labelledby="overview-title overview-desc"' in svg
    assert re.search(r'<title id="overview-title">[^<]+</title>', svg)
    # hybridize's two figures and PyTorch's cpu_only: three figures measured, two marks
    # each for hybridize; and a legend mark per framework
    assert svg.count("<circle") == 2 + 1 and svg.count("<path") == 3 + 1
    assert "not measured" in svg  # resnet18 ran nowhere
    table = re.search(r"The figure as a table.*?</table>", page, re.S).group(0)
    assert "0.289× [0.26–0.318]" in table  # the template's three figures of the view's ratio


def test_provenance_lists_both_stacks(view):
    assert [(name, rows["version"]) for name, rows in view["stacks"].items()] == [
        ("MXNet", "MXNet 1.9.1"), ("PyTorch", "PyTorch 2.13.0+cpu (cpu build)")]
    assert sorted((r["section"], r["framework"]) for r in view["runs"]) == sorted(
        (s, f) for s in ("hybridize", "auto_parallelism", "multi_gpu_gluon")
        for f in ("MXNet", "PyTorch"))  # every run, each framework


def test_checks_one_line_each_on_the_first_screen(view):
    aa = next(c for c in view["checks"] if c["title"] == "Identical work (A/A)")
    assert aa["cells"] == [{"framework": f, "verdict": "holds", "state": None, "text": "1% apart"}
                           for f in ("MXNet", "PyTorch")]


def test_under_the_claims_each_stack_and_check_reads_in_one_line(page):
    """Above the claims only the machine and the preset (the first screen holds every
    verdict); the frameworks' versions and the checks follow the table."""
    top = re.search(r'<dl class="facts">(.*?)</dl>', page, re.S).group(1)
    assert "Machine" in text(top) and "Preset" in text(top) and "Frameworks" not in text(top)
    assert page.index('<dl class="facts after">') > page.index('id="claims"')
    facts = re.search(r'<dl class="facts after">(.*?)</dl>', page, re.S).group(1)
    assert "MXNet 1.9.1; PyTorch 2.13.0+cpu" in text(facts)
    aa = " ".join(text(re.search(r"Identical work \(A/A\).*?</dd>", facts, re.S).group(0))
                  .split())
    assert "MXNet holds 1% apart · PyTorch holds 1% apart" in aa


def test_mxnet_only(tmp_path):
    args = tables(tmp_path, frameworks=("mxnet",))
    view = render_report.view(args)
    assert view["frameworks"] == ["MXNet"] and list(view["stacks"]) == ["MXNet"]
    assert all(len(c["cells"]) == 1 for c in view["claims"])
    assert all(len(r["marks"]) == 1 for r in view["overview"]["rows"])
    first = section_of(view, "hybridize")["figures"][0]
    assert [c["text"] for c in first["cells"]] == ["0.1234 s"]
    page = render_report.render(args)
    assert "PyTorch" not in text(page)  # nothing of the template's own names another
    assert "MXNet here" in page


def test_effect_words():
    words = claims_view.effect_words
    assert words("speedup", 0.25, 0.2, 0.5) == "4.0× faster [2.0–5.0×]"
    assert words("speedup", 2.0, 1.5, 2.5) == "2.0× slower [1.5–2.5×]"
    assert words("speedup", 1.01, 0.98, 1.03, "no meaningful difference") == (
        "no meaningful difference (×1.0)")
    assert words("share", 0.02, 0.01, 0.11) == "queued in 2% of the wait [1–11%]"
    assert words("share", 150, 4.4, 290) == "queueing 150× the wait [4.4–290×]"
    assert words("overlap", 0.55, 0.5, 0.6) == "together 55% of the sum [50–60%]"
    assert words("more", 1.2, None, None) == "1.2× the memory"
    assert words("speedup", None, None, None) == ""
    # An interval that holds 1 with ends more than 10x apart says nothing: it says so.
    assert words("speedup", 0.38, 0.042, 3.5, processes=2) == "too few processes to tell (2 ran)"
    assert words("overlap", 1.29, 0.0, 58477.0) == "too few processes to tell"
    assert words("speedup", 0.38, 0.12, 1.1) == "2.6× faster [0.91–8.3×]"  # 9.2x apart


def test_no_number_is_written_in_e_notation():
    from d2lperf.report.values import number
    assert [number(v) for v in (6e-14, 0.0004, 0.0031, 0.042, 1.5, 59966157187531.0)] == [
        "<0.001", "<0.001", "0.003", "0.042", "1.5", "59966157187531"]


def test_labels_exact_before_pattern_and_per_epoch_only_for_epochs():
    labels = Labels([
        {"section": "e", "case": "x_*", "metric": "time", "label": "pattern {suffix}"},
        {"section": "e", "case": "x_2", "metric": "time", "label": "exact"},
        {"section": "e", "case": "x_*", "metric": "loss", "label": "epoch {epoch} of x"},
    ])
    assert labels("e", "x_2", "time") == "exact"
    assert labels("e", "x_5", "time") == "pattern 5"
    assert labels("e", "x_5", "loss", 3.0) == "epoch 3 of x"
    assert labels("e", "x_5", "loss") is None
    assert labels("other", "x_5", "time") is None


def test_labels_refuse_an_incomplete_row():
    with pytest.raises(ValueError, match="labels row 2: empty label"):
        Labels([{"section": "e", "case": "c", "metric": "time", "label": ""}])


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
    labels = Labels.read(*section_table.tables("labels"))
    assert {r["section"] for r in labels.rows} <= sections


def across_machines(tmp_path: Path) -> argparse.Namespace:
    """The tables with two machines' comparison: test-box the baseline, gpu-box five times
    faster; a claim's verdicts differ between them, and a check is among the verdicts."""
    args = tables(tmp_path)
    columns = ["framework", "section", "case", "metric", "epoch", "unit", "devices",
               "label", "machine", "count", "median", "ci_low", "ci_high", "speedup",
               "speedup_low", "speedup_high"]
    rows = [{"framework": f, "section": "hybridize", "case": "mlp_after_hybridize",
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
    args.comparison_machines = write_csv(
        tmp_path / "machines_compared.csv", ["machine", "cpu", "cores", "vector", "kernel",
                                             "gpus"],
        [{"machine": "test-box", "cpu": "AMD EPYC", "cores": 2, "vector": "AVX-512",
          "kernel": "Barcelona", "gpus": "none"},
         {"machine": "gpu-box", "cpu": "AMD EPYC", "cores": 16, "vector": "AVX-512",
          "kernel": "Barcelona", "gpus": "NVIDIA H200"}])
    args.comparison_plot = args.plots[0]
    return args


def test_across_machines_a_verdict_per_framework_and_machine(tmp_path):
    across = render_report.view(across_machines(tmp_path))["comparison"]
    assert across["machines"] == ["test-box", "gpu-box"]  # the baseline first
    (row,) = across["verdicts"]  # the checks stay in each machine's own report
    assert row["short"] == "hybridize() speeds up the MLP"
    assert row["cells"] == [
        [{"framework": "MXNet", "verdict": "holds"}, {"framework": "PyTorch", "verdict": "holds"}],
        [{"framework": "MXNet", "verdict": "inconclusive"},
         {"framework": "PyTorch", "verdict": "does not hold"}]]
    assert [(r["label"], r["framework"], [c["speedup"] for c in r["cells"]])
            for r in across["rows"]] == [("MLP, after hybridize()", f, [1.0, 5.0])
                                         for f in ("MXNet", "PyTorch")]
    assert across["plot"].startswith("data:image/svg+xml;base64,")


def test_the_facts_say_what_this_machine_is_compared_with(tmp_path):
    def facts(args):
        page = render_report.render(args)
        text = cell_text(re.search(r'<dl class="facts after">(.*?)</dl>', page, re.S).group(1))
        return text.replace(" :", ":")  # cell_text spaces every tag

    assert "Compared with 1 other machine: gpu-box" in facts(across_machines(tmp_path / "a"))
    alone = facts(tables(tmp_path / "b"))
    assert "Compared with no other machine yet" in alone and "d2lperf import" in alone


def test_across_machines_reads_a_cell_per_machine_and_folds_the_plot(tmp_path):
    across = section(render_report.render(across_machines(tmp_path)), "across-machines")
    row = next(r for r in across.split("<tr>") if "hybridize() speeds up" in r)
    cells = [cell_text(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
    assert cells == ["MXNet holds · PyTorch holds", "MXNet inconclusive · PyTorch does not hold"]
    assert re.search(r"<details><summary>Speed-ups against test-box, as a plot</summary>\s*<img",
                     across)
    assert "5.00×" in across
    assert "MLP, after hybridize() (PyTorch)" in " ".join(text(across).split())


def test_a_training_run_the_machine_cannot_hold_is_named_with_its_reason():
    # one H200: the documents' 1-GPU run trains, the 2-GPU one is named, not just missing
    # the device count is the record's field, not read from the case's name
    line = sections_view.run_line({
        "status": "ok", "wall_seconds": 61.0, "parameters": {},
        "notes": {"runs_not_run": {"resnet18_pair": {
            "devices": 2, "reason": "needs 2 GPUs, found 1", "needs": "gpus"}}}})
    assert line["status"] == "ok"
    assert line["text"] == "61 s, the 2-device run not run: needs 2 GPUs, found 1"


# Two models at each device count the machine cannot hold: four runs, one reason.
CORES = "this machine has 2 cores (one process of one thread each)"
NOT_FITTING = {f"{model}_{n}_devices": {"devices": n, "reason": f"needs {n} devices, {CORES}"}
               for model in ("lenet", "resnet18") for n in (4, 8)}


def test_the_runs_a_machine_cannot_hold_are_named_once_by_their_counts():
    """Four runs (two models at 4 and 8 devices) that did not fit: the counts once, the
    reason once, not a phrase a run."""
    line = sections_view.run_line({"status": "ok", "wall_seconds": 61.0, "parameters": {},
                                   "notes": {"runs_not_run": NOT_FITTING}})
    assert line["text"] == f"61 s, the 4- and 8-device runs not run: need 4 and 8 devices, {CORES}"


def test_a_section_says_once_which_runs_did_not_fit_and_once_that_the_machine_was_steady(
        args):
    """Every framework skipped the same runs, the machine steady for each: the section
    names the runs and the steadiness once, each framework's facts on one line."""
    for path in args.runs:
        record = json.loads(path.read_text(encoding="utf-8"))
        if record["section"] == "hybridize":
            record.update(format_version=results.FORMAT_VERSION,
                          notes={"runs_not_run": NOT_FITTING})
            path.write_text(json.dumps(record), encoding="utf-8")
    hybridize = section(render_report.render(args), "hybridize")
    words = " ".join(text(hybridize).split()).replace(" ,", ",")
    assert words.count("not run") == 1 and words.count(CORES) == 1
    assert (f"MXNet, PyTorch: the 4- and 8-device runs not run: need 4 and 8 devices, {CORES}."
            in words)
    assert words.count("the machine was steady") == 1
    assert ("MXNet: ok, 2 s, measured in 2 fresh processes, 2 threads; PyTorch: ok, 2 s, "
            "measured in 2 fresh processes, 2 threads. For each, the machine was steady."
            in words)


def test_a_section_measured_nowhere_takes_one_row_of_the_overview(page):
    """Gluon's ResNet-18 ran in no framework: one row says its figures were not measured
    (the table under the figure lists each)."""
    svg = re.search(r"<svg[^>]*>.*?</svg>", page, re.S).group(0)
    assert "its 1 figure" in svg and "ResNet-18, 1 GPU" not in svg
    table = re.search(r"The figure as a table.*?</table>", page, re.S).group(0)
    assert "ResNet-18, 1 GPU: sec/epoch" in table


@pytest.mark.slow  # matplotlib: about 2 s on 2 cores
def test_a_timing_plot_has_a_bar_only_for_what_measured_each_case(tmp_path):
    """The ceilings: each case a framework's own kernel, so one bar a case; the plot is
    no taller than those bars, not a slot for every framework in every case."""
    import pandas as pd

    from d2lperf.commands import plots

    def height(rows: list[dict]) -> float:
        summary = pd.DataFrame(rows).assign(document_value=float("nan"))
        samples = summary[["case", "metric", "framework"]].assign(value=summary["median"])
        out = tmp_path / f"{len(rows)}.svg"
        plots.timing_bars(summary, samples, "t", out, Labels([]), unit="rate")
        return float(re.search(r'height="([\d.]+)pt"', out.read_text()).group(1))

    def row(case: str, framework: str) -> dict:
        return {"case": case, "framework": framework, "metric": "rate", "section": "ceilings",
                "label": case, "median": 10.0, "q1": 9.0, "q3": 11.0}

    frameworks = ("mxnet", "pytorch", "jax")
    own = height([row(f"{f}_dot_{n}", f) for f in frameworks for n in range(4)])
    shared = height([row(f"dot_{n}", f) for f in frameworks for n in range(12)])
    # 12 cases of one bar: each the least room a case takes (its label's two lines); of
    # three bars each, three bars' room (a slot for every framework and the document in
    # every case made both 0.7 + 12 x 0.8 inches)
    assert own == pytest.approx(72 * (0.7 + 12 * (plots.LEAST + plots.GAP)), abs=1)
    assert shared == pytest.approx(72 * (0.7 + 12 * (3 * plots.BAR + plots.GAP)), abs=1)
    assert own < shared < 72 * (0.7 + 12 * 0.8) * 0.75


@pytest.mark.parametrize("needs, note", [
    ("gpus", "on a machine with the GPUs"),
    ("gpu_code", "on a machine with a GPU this build has code for"),
    (None, ""),
])
def test_how_to_run_a_skipped_section_follows_its_needs_not_its_words(needs, note):
    """The same words under each need: the command and its note follow the field."""
    mine = {"mxnet": {"status": "skipped", "reason": "zu wenige Grafikkarten",
                      **({"needs": needs} if needs else {})}}
    line, = sections_view.not_run_lines("multi_gpu_gluon", mine, {"mxnet": "skipped"})
    assert ("gpu_sections_on_cpu=True" in line["command"]) == bool(needs)
    assert line["note"].endswith(note)
    assert line["reason"] == "zu wenige Grafikkarten"


def test_first_screen_never_says_does_not_hold_for_a_claim_that_does_not_apply(tmp_path):
    """Eager PyTorch on a CPU: the queueing claim's row reads 'does not apply' with the
    reason and the measurement beside it; the documents' own verdict by the same rule."""
    args = tables(tmp_path)
    rows = list(csv.DictReader(open(args.verdicts, encoding="utf-8")))
    columns = VERDICT_COLUMNS + ["finding", "applies", "document_verdict",
                                 "document_evidence", "document_by_variant"]
    for framework, result in (("mxnet", "holds"), ("pytorch", "does not apply")):
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
    view = render_report.view(args)
    queue = claim_of(view, "queueing_returns_at_once")
    mxnet, pytorch = queue["cells"]
    assert mxnet["verdict"] == "holds"
    assert pytorch["verdict"] == "does not apply"
    assert pytorch["line"] == ""  # the reason and the measurement folded under the verdict
    assert pytorch["more"].startswith("eager PyTorch on a CPU: each op finishes before it "
                                      "returns; measured: queueing 2180× the wait")
    shown = [queue["claim"], queue["short"], queue["document"], queue["document_verdict"],
             queue["document_by_variant"]] + [c[k] for c in queue["cells"]
                                               for k in ("verdict", "line", "more")]
    assert not [words for words in shown if "does not hold" in words]
    assert queue["document_verdict"] == "holds"  # the documents' figures: not in this summary
    # 3 decisive (2 + MXNet's queueing), in two frameworks: 2 x 0.025
    assert view["chance"]["decisive"] == 3
    assert view["chance"]["expected"] == pytest.approx(0.05)
    view = claims_view.claim_rows(records(args.verdicts), ["mxnet", "pytorch"], {}, [], {}, {})
    queue = next(c for c in view if c["name"] == "queueing_returns_at_once")
    assert queue["document_evidence"].startswith("holds (queued/finished 0.11")
    assert queue["cells"][1]["finding"] == "queued/finished 2.18e+03"


def test_the_overview_legend_keeps_every_framework_inside_the_figure_with_its_own_mark():
    """Three frameworks: the third entry wraps to a row of its own instead of running off
    the figure, and each framework keeps its registry shape (JAX's triangle, not a
    diamond)."""
    import re

    from d2lperf.report.overview import OVERVIEW, overview_svg

    rows = [{"label": "a figure", "section": "hybridize",
             "marks": [{"framework": f, "ratio": 1.0, "low": 0.9, "high": 1.1}
                       for f in ("mxnet", "pytorch", "jax")]}]
    svg = str(overview_svg(rows, ["mxnet", "pytorch", "jax"], {}, 0.1, 10))
    legend = re.findall(r'<text x="(\d+)" y="(\d+)">(\w+) here', svg)
    assert [name for _, _, name in legend] == ["MXNet", "PyTorch", "JAX"]
    assert all(int(x) + 240 <= OVERVIEW["width"] for x, _, _ in legend)
    assert legend[2][1] > legend[0][1]  # its own row
    height = float(re.search(r'viewBox="0 0 \d+ ([\d.]+)"', svg).group(1))
    assert all(int(y) < height for _, y, _ in legend)
    assert "l5 9 l-10 0 z" in svg  # the triangle


def test_where_a_verdict_differs_between_machines_the_report_says_what_sets_them_apart(
        tmp_path):
    """The cores and the GPUs differ, the CPU, vector unit and kernel do not: only the
    first two are named, for each framework whose verdicts differ."""
    across = render_report.view(across_machines(tmp_path))["comparison"]
    (row,) = across["verdicts"]
    assert row["why"] == [
        "MXNet: the machines differ in cores 2 / 16; GPUs none / NVIDIA H200",
        "PyTorch: the machines differ in cores 2 / 16; GPUs none / NVIDIA H200"]


def test_the_same_hardware_says_the_difference_is_run_to_run():
    from d2lperf.report.comparison import differences

    same = {"cpu": "x", "cores": "2", "vector": "AVX2", "kernel": "Haswell", "gpus": "none"}
    cells = [[{"framework": "MXNet", "verdict": "holds"}],
             [{"framework": "MXNet", "verdict": "inconclusive"}],
             [{"framework": "MXNet", "verdict": "not measured"}]]
    facts = {"a": same, "b": dict(same), "c": {**same, "cores": "64"}}
    assert differences(cells, ["a", "b", "c"], facts) == [
        "MXNet: the machines' recorded hardware is the same: the difference is the "
        "measurement's, run to run"]  # c did not judge it: its cores do not count
    agreeing = [[{"framework": "MXNet", "verdict": "holds"}]] * 2
    assert differences(agreeing, ["a", "c"], facts) == []
    assert differences(cells, ["a", "b", "c"], {}) == []  # an archive without the table
