"""Adding a section from outside, the way docs/design.md's recipe says.

In a copy of the tree the test writes a small section as one new folder (its declaration,
with its claim that the sum is faster and its entry in both presets; its script in both
frameworks, one sum over a vector against adding its elements one by one; the labels of
its cases), and runs the CI preset. The other sections' results are copied in from the
shared CI run, so only the new section and the steps after it run. The section, its
figure and both frameworks' verdicts must then be in the report, and no file outside the
folder may be touched: the recipe's promise, counted.
"""

from __future__ import annotations

import filecmp
import json
import shutil
import subprocess
from pathlib import Path

import pandas as pd

from conftest import (
    CI_CONFIG,
    CI_MACHINE,
    REPO,
    WORKFLOW_PYTHON,
    copy_workflow,
    jobs_planned,
    snakemake,
)

NAME = "vector_sum"
CLAIM = "one_sum_beats_adding_one_by_one"

SCRIPT = '''\
"""One sum over a vector against adding its elements one by one ({framework})."""

from __future__ import annotations

import sys

{devices}from d2lperf import harness, timing
from d2lperf import {module} as d2l
from d2lperf.results import Recorder, report


def body(args, rec: Recorder) -> None:
{make}
    def sum_at_once():
        return x.sum()

    def sum_one_by_one():
        total = x[0]
        for i in range(1, args.size):
            total = total + x[i]
        return total

    samples = timing.compare({{"sum_at_once": sum_at_once, "sum_one_by_one": sum_one_by_one}},
                             d2l.sync, warmup=args.warmup, rounds=args.repeats,
                             seed=args.seed, process=args.process)
    rec.timings(samples, devices="cpu")
    report(samples, f"of {{args.size}} elements")


if __name__ == "__main__":
    parser = harness.parser(__doc__.splitlines()[0], section="{name}")
{options}    sys.exit(harness.main("{name}", "{framework}", parser, body))
'''
# Each framework's d2lperf module, its vector, and its command line beyond the table's
# (PyTorch runs on a GPU where there is one: its sections take --on).
MAKE = {
    "mxnet": ("mxnet", "    from mxnet import nd\n\n    x = nd.arange(args.size)\n", ""),
    "pytorch": ("torch", "    import torch\n\n    x = torch.arange(args.size, dtype=torch."
                "float32, device=d2l.devices(args.on, 1)[0])\n",
                '    device_options.add_argument(parser, default="cpu")\n'),
}

DECLARATION = f'''"""The section: vector sums (a section added from outside)."""

from __future__ import annotations

from d2lperf.sections import REPEATED, REPEATED_REQUIRED, SIZE, Section, SpeedClaim

SECTION = Section(
    order=10,
    title="Vector sums (a section added from outside)",
    plot_title="One sum against adding one by one",
    options={{"size": {{**SIZE, "description": "elements of the vector"}}, **REPEATED}},
    required=("size", *REPEATED_REQUIRED),
    claims=(SpeedClaim("{CLAIM}",
                       "one sum over a vector is faster than adding its elements one "
                       "by one", "one sum beats adding one by one",
                       faster="sum_at_once", slower="sum_one_by_one"),),
    # the documents' preset runs the document's size (the tree's own test holds it to that)
    presets={{"documents": {{"size": 1000, "warmup": 1, "repeats": 3, "processes": 2}},
              "ci": {{"size": 50, "warmup": 1, "repeats": 3, "processes": 2}}}},
)
'''
def register(work: Path) -> None:
    """Steps 2 and 4 of the recipe: its declaration (with its entry in both presets) and the
    labels of its cases, in its folder."""
    (work / "scripts/sections" / NAME / "section.py").write_text(DECLARATION, encoding="utf-8")
    # the cases the documents did not print are labelled (summarise plans by them)
    (work / "scripts/sections" / NAME / "labels.csv").write_text(
        "section,case,metric,label\n"
        f"{NAME},sum_at_once,time,One sum over the vector\n"
        f"{NAME},sum_one_by_one,time,Adding its elements one by one\n", encoding="utf-8")


def checks_pass(work: Path, *tests: str) -> None:
    """The tree's own tests, run in the copy (its conftest, its scripts): what they check
    of every section and framework must hold for the one the recipe added."""
    done = subprocess.run([str(WORKFLOW_PYTHON), "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           *tests], cwd=work, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]


def touched(work: Path) -> list[str]:
    """The files of the copy that differ from this tree's or are new, but its results."""
    changed = []
    for path in sorted(work.rglob("*")):
        relative = path.relative_to(work)
        if not path.is_file() or relative.parts[0] in ("results", ".snakemake"):
            continue
        if "__pycache__" in relative.parts:
            continue
        original = REPO / relative
        if not original.exists() or not filecmp.cmp(path, original, shallow=False):
            changed.append(str(relative))
    return changed


def test_a_section_added_by_the_recipe_reaches_the_report(ci_run, tmp_path, experiment_python):
    _, results = ci_run
    work = copy_workflow(tmp_path / "wf")
    # the other sections' results, copied now, so newer than their scripts: not re-run
    shutil.copytree(results, work / "results" / CI_MACHINE, copy_function=shutil.copy)
    (work / "scripts/sections" / NAME).mkdir()
    for framework, (module, make, options) in MAKE.items():
        script = work / "scripts/sections" / NAME / f"{NAME}_{framework}.py"
        devices = "from d2lperf import devices as device_options\n" if options else ""
        script.write_text(SCRIPT.format(framework=framework, module=module, name=NAME,
                                        make=make, options=options, devices=devices),
                          encoding="utf-8")
    register(work)
    assert touched(work) == [f"scripts/sections/{NAME}/labels.csv",
                             f"scripts/sections/{NAME}/section.py",
                             f"scripts/sections/{NAME}/{NAME}_mxnet.py",
                             f"scripts/sections/{NAME}/{NAME}_pytorch.py"]
    # what the tree's own tests check of every section holds for this one: the table and
    # the presets, its scripts' command lines made from its options, which frameworks have
    # it, the layers, ruff
    checks_pass(work, "tests/test_sections.py", "tests/test_options.py", "tests/test_layers.py",
                "tests/test_lint.py::test_ruff")

    done = snakemake(work, "--cores", "2", *CI_CONFIG, f"experiment_python={experiment_python}")
    assert done.returncode == 0, done.stderr[-5000:]
    ran = set(jobs_planned(done.stdout + done.stderr))
    assert {NAME, f"{NAME}_pytorch", "report"} <= ran and "hybridize" not in ran

    out = work / "results" / CI_MACHINE
    summary = pd.read_csv(out / "summary.csv")
    mine = summary[summary["section"] == NAME]
    assert set(zip(mine["framework"], mine["case"])) == {
        (f, c) for f in MAKE for c in ("sum_at_once", "sum_one_by_one")}
    verdicts = pd.read_csv(out / "verdicts.csv")
    judged = verdicts[verdicts["name"] == CLAIM].set_index("framework")
    assert set(judged.index) == set(MAKE)
    assert set(judged["verdict"]) <= {"holds", "does not hold", "inconclusive"}
    assert (out / "plots" / f"{NAME}.svg").stat().st_size > 0
    shown = report_view(work, out)
    section = next(s for s in shown["sections"] if s["section"] == NAME)
    assert section["title"]["title"] == "Vector sums (a section added from outside)"
    assert section["ran"] and section["plot"].startswith("data:image/svg+xml")
    # cases the documents did not print are the section's extras
    assert {r["case"] for r in section["figures"] + section["extras"]} == {
        "sum_at_once", "sum_one_by_one"}
    claim = next(c for c in shown["claims"] if c["name"] == CLAIM)
    assert claim["short"] == "one sum beats adding one by one"
    assert set(claim["by"]) == set(MAKE)
    assert all(claim["by"][f]["verdict"] == judged.loc[f, "verdict"] for f in MAKE)
    page = (out / "report.html").read_text(encoding="utf-8")
    assert f'<section id="{NAME}">' in page  # and the page shows it


# The copy's render_report, given what the rule report gives it: its view model as JSON.
VIEW = """
import json, sys
sys.path.insert(0, "scripts")
from d2lperf.commands import render_report
print(json.dumps(render_report.view(render_report.parser().parse_args(sys.argv[1:])),
                 default=str))
"""


def report_view(work: Path, out: Path) -> dict:
    runs = sorted(str(p) for p in out.glob("*/run.json"))
    plots = sorted(str(p) for p in (out / "plots").glob("*.svg") if p.stem != "comparison")
    done = subprocess.run(
        [str(WORKFLOW_PYTHON), "-c", VIEW, "--machine", str(out / "machine.json"),
         "--summary", str(out / "summary.csv"), "--outputs", str(out / "outputs.csv"),
         "--verdicts", str(out / "verdicts.csv"), "--runs", *runs, "--plots", *plots,
         "--sections", str(out / "sections.csv"), "--template",
         "report/templates/report.html.j2", "--preset", "ci", "--out", "unused"],
        cwd=work, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)
