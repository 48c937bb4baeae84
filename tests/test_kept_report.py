"""The report lists the kept archives that were refused, each with its reason."""

import json

from test_render import section, tables, text

from d2lperf.commands import render_report


def test_refused_kept_archives_are_listed_with_their_reasons(tmp_path):
    args = tables(tmp_path)
    args.kept = tmp_path / "kept-archives.json"
    args.kept.write_text(json.dumps({"folder": "report/machines", "archives": [
        {"archive": "gpu-box-2026-12-01.tar.gz", "outcome": "imported"},
        {"archive": "broken.tar.gz", "outcome": "refused: truncated or not a gzip'd tar "
                                                "archive (unexpected end of data)"}]}))
    refused = " ".join(text(section(render_report.render(args), "kept-refused")).split())
    assert "broken.tar.gz : truncated or not a gzip'd tar archive" in refused
    assert "gpu-box-2026-12-01" not in refused


def test_no_note_when_every_kept_archive_was_imported(tmp_path):
    args = tables(tmp_path)
    args.kept = tmp_path / "kept-archives.json"
    args.kept.write_text(json.dumps({"folder": "report/machines", "archives": [
        {"archive": "gpu-box-2026-12-01.tar.gz", "outcome": "imported"}]}))
    assert 'id="kept-refused"' not in render_report.render(args)


def test_a_claim_of_a_failed_section_reads_failed(tmp_path):
    """MXNet's auto_parallelism failed in these tables: its claim says so, not that it
    does not apply; PyTorch's (which ran) keeps its own verdict."""
    args = tables(tmp_path)
    with open(args.verdicts, "a", newline="") as handle:
        for framework, result in (("mxnet", "not measured"), ("pytorch", "holds")):
            handle.write(f"the claim cpu_gpu_overlap,cpu_gpu_overlap,auto_parallelism,"
                         f"{result},e,rule,claim,{framework},,,,\n")
    html = render_report.render(args)
    row = next(r for r in html.split("<tr>") if "CPU and GPU work overlap" in r).split("</tr>")[0]
    cells = " ".join(text(row).split())
    assert "failed its log is in the section" in cells
    assert "not measured" not in cells and "holds" in cells
