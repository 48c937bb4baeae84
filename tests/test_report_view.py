"""The report's view model on a real run, against a stored copy: any change to what the
report shows, however small, fails here.

tests/data/ci-old-format.tar.gz is a CI-preset run of both frameworks (every section, an
older record format). From its run records and samples the tables are made as the
workflow makes them (the rule summarise runs `d2lperf summarise`, the rule
sections_table writes the table of sections); then ``render_report.view`` reads them as
the rule report gives them, without plots. What depends on where the test ran (the
temporary folder) is replaced by a placeholder; the rest is compared, as sorted JSON, with
tests/data/ci-view.json.

A change meant to alter the report regenerates the stored copy, to be reviewed in the
diff: REGENERATE_VIEW=1 .venv/bin/pytest tests/test_report_view.py
"""

from __future__ import annotations

import json
import math
import os
import re
import tarfile
from pathlib import Path
from typing import Any

import pytest

from conftest import REPO, WORKFLOW_PYTHON, run_command
from d2lperf import sections
from d2lperf.commands import render_report
from d2lperf.frameworks import REGISTRY
from d2lperf.results import section_folder

ARCHIVE = REPO / "tests/data/ci-old-format.tar.gz"
STORED = REPO / "tests/data/ci-view.json"
DATA_URI = re.compile(r"data:image/svg\+xml;base64,[A-Za-z0-9+/=]+")


def run_records(results: Path) -> list[Path]:
    """Each job's run record in the workflow's order of jobs (sections in the table's
    order, then frameworks in the registry's), as the rule report lists them."""
    found = [results / section_folder(s, f) / "run.json" for s in sections.names()
             for f in REGISTRY if sections.SECTIONS[s].has(f)]
    return [p for p in found if p.exists()]


def tables(tmp: Path) -> list[str]:
    """The report's command line over the archive's run, its tables made the workflow's
    way."""
    with tarfile.open(ARCHIVE) as archive:
        archive.extractall(tmp, filter="data")
    results = tmp / "ci-test-machine"
    runs = [str(p) for p in run_records(results)]
    out = tmp / "tables"
    out.mkdir()
    done = run_command(WORKFLOW_PYTHON, "summarise", "--runs", *runs,

                      "--schema", str(REPO / "workflow/schemas/samples.schema.yaml"),
                      "--summary", str(out / "summary.csv"),
                      "--outputs", str(out / "outputs.csv"),
                      "--verdicts", str(out / "verdicts.csv"), "--band", "0.05")
    assert done.returncode == 0, done.stderr
    sections.write_csv(out / "sections.csv")
    return ["--machine", str(results / "machine.json"), "--summary", str(out / "summary.csv"),
            "--outputs", str(out / "outputs.csv"), "--verdicts", str(out / "verdicts.csv"),
            "--runs", *runs, "--plots", "--benchmarks",
            "--sections", str(out / "sections.csv"),
            "--template", str(REPO / "report/templates/report.html.j2"),
            "--preset", "ci", "--out", str(tmp / "report.html")]


def plain(value: Any, tmp: str) -> Any:
    """The view as JSON's types (tuples as lists, markup as its text), with the temporary
    folder and any inline image replaced by placeholders; anything else refused, so that
    a new kind of value in the view is seen here rather than written as its repr."""
    if isinstance(value, dict):
        return {str(k): plain(v, tmp) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v, tmp) for v in value]
    if isinstance(value, str):  # Markup is a str
        return DATA_URI.sub("<data-uri>", str(value).replace(tmp, "<tmp>"))
    if isinstance(value, float) and math.isfinite(value):
        # 12 significant digits: a library's last-bit difference (scipy's t quantile
        # against the one computed before it) is not a change of the view
        return float(f"{value:.12g}")
    if value is None or isinstance(value, bool | int | float):
        return value
    raise TypeError(f"not a value of the view: {type(value).__name__} {value!r}")


def as_text(view: dict[str, Any], tmp: Path) -> str:
    return json.dumps(plain(view, str(tmp)), sort_keys=True, indent=1, ensure_ascii=False) + "\n"


@pytest.mark.slow  # over a second on 2 cores
def test_the_view_of_a_stored_run_is_unchanged(tmp_path):
    args = render_report.parser().parse_args(tables(tmp_path))
    got = as_text(render_report.view(args), tmp_path)
    if os.environ.get("REGENERATE_VIEW") == "1":
        STORED.write_text(got, encoding="utf-8")
    assert got.splitlines() == STORED.read_text(encoding="utf-8").splitlines()
