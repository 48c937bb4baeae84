"""Adding a framework from outside, the way docs/design.md's recipe says: four places.

In a copy of the tree the test adds a toy framework ("toy": numpy under a package of its
own, ``toyframe``, on the workflow's interpreter): its registry entry, its module of
d2lperf, its section script (the hybridize section only) and its environment's lock and
conda file. Nothing else is edited: the presets' values per framework fall back for it,
the rules, the schemas, the interface check, the environment's Makefile target and the
report follow from the registry. The CI preset then runs the toy's section beside
MXNet's (the other sections' results copied in from the shared CI run), and the toy's
figures, its verdict on the section's claim and its column reach the report.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
from test_add_a_section import checks_pass, report_view, touched

from conftest import CI_CONFIG, CI_MACHINE, copy_workflow, jobs_planned, snakemake

ENTRY = '''    Framework("toy", "Toy", colour="#6a3d9a", marker="s", shape="square",
              interpreter_key="toy_python", default_interpreter=".venv-toy/bin/python",
              environment="envs/toy.yaml", lock="envs/toy.lock.txt",
              package="toyframe", module="d2lperf.toy",
              build="`make envs FRAMEWORKS=toy` (it builds .venv-toy)"),
'''

MODULE = '''"""The toy framework: numpy, run op by op, on the CPU; nothing is queued."""

from __future__ import annotations

from d2lperf import devices as device_kinds


def devices(kind, count):
    return ["cpu"] * count


def names(devs):
    return ",".join(devs)


def sync(*values):
    """numpy finishes every op before it returns: nothing to wait for."""


def execution(kind):
    return device_kinds.execution(kind, queues_on=(), separate_on=())


def matrix_product(dtype="float32"):
    import numpy as np

    return lambda a, b: np.dot(a.astype(dtype), b.astype(dtype))


def build_info():
    import numpy
    import toyframe

    return {"version": toyframe.__version__, "numpy": numpy.__version__}
'''

SCRIPT = '''"""Hybrid programming, in the toy framework: the MLP op by op, and "compiled" (its three
layers' weights multiplied out where no nonlinearity separates them: none here, as the
toy's MLP is linear)."""

from __future__ import annotations

import sys

from d2lperf import harness, symbolic, timing
from d2lperf import toy as d2l
from d2lperf.results import report


def body(args, rec):
    import numpy as np

    rng = np.random.default_rng(0)
    layers = [rng.standard_normal(s).astype("float32") for s in ((512, 256), (256, 128),
                                                                   (128, 2))]
    folded = layers[0] @ layers[1] @ layers[2]
    x = rng.standard_normal((1, 512)).astype("float32")

    def op_by_op():
        for _ in range(args.forward_passes):
            y = x @ layers[0] @ layers[1] @ layers[2]
        return y

    def compiled():
        for _ in range(args.forward_passes):
            y = x @ folded
        return y

    rec.output("symbolic_program_result", symbolic.run_program())
    samples = timing.compare({"mlp_before_hybridize": op_by_op,
                              "mlp_before_hybridize_twin": op_by_op,
                              "mlp_after_hybridize": compiled}, d2l.sync,
                             warmup=args.warmup, rounds=args.repeats, seed=args.seed,
                             process=args.process)
    rec.timings(samples, devices="cpu")
    report(samples)


if __name__ == "__main__":
    parser = harness.parser("hybridize, the toy", section="hybridize")
    parser.add_argument("--export-dir", required=True)
    sys.exit(harness.main("hybridize", "toy", parser, body))
'''


def add_the_toy(work: Path) -> None:
    """The recipe's four places: the registry entry, the module (and its row in the design
    document's table of layers), the section script, the environment (its lock, and its
    conda file)."""
    registry = work / "scripts/d2lperf/frameworks.py"
    text = registry.read_text(encoding="utf-8")
    end = text.index("\n]}\n")  # the end of REGISTRY
    registry.write_text(text[:end + 1] + ENTRY + text[end + 1:], encoding="utf-8")
    (work / "scripts/d2lperf/toy.py").write_text(MODULE, encoding="utf-8")
    design = work / "docs/design.md"
    row = " 3     | jax memory mxnet torch"
    assert row in design.read_text(encoding="utf-8"), "the recipe's layer row moved"
    design.write_text(design.read_text(encoding="utf-8").replace(
        row, row[:-len("torch")] + "toy torch", 1), encoding="utf-8")
    (work / "scripts/sections/hybridize/hybridize_toy.py").write_text(SCRIPT, encoding="utf-8")
    (work / "envs/toy.lock.txt").write_text("numpy==2.4.6\n", encoding="utf-8")
    (work / "envs/toy.yaml").write_text("dependencies: [python=3.11, pip, {pip: "
                                        "[-r toy.lock.txt]}]\n", encoding="utf-8")


def toy_interpreter(folder: Path) -> Path:
    """The toy's environment: the workflow's interpreter, with the toy's package
    (``toyframe``, a version and nothing else) on its path."""
    package = folder / "site/toyframe"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text('__version__ = "0.1"\n', encoding="utf-8")
    python = folder / "python"
    python.write_text(f'#!/bin/sh\nPYTHONPATH={folder / "site"}${{PYTHONPATH:+:$PYTHONPATH}} '
                      f'exec {sys.executable} "$@"\n', encoding="utf-8")
    python.chmod(0o755)
    return python


def test_a_framework_added_in_four_places_reaches_the_report(ci_run, tmp_path,
                                                             experiment_python):
    _, results = ci_run
    work = copy_workflow(tmp_path / "wf")
    shutil.copytree(results, work / "results" / CI_MACHINE, copy_function=shutil.copy)
    add_the_toy(work)
    assert touched(work) == ["docs/design.md", "envs/toy.lock.txt", "envs/toy.yaml",
                             "scripts/d2lperf/frameworks.py", "scripts/d2lperf/toy.py",
                             "scripts/sections/hybridize/hybridize_toy.py"]
    # what the tree's own tests check of a framework holds for it: the registry and the
    # interface its scripts call, the layers, ruff
    checks_pass(work, "tests/test_layers.py", "tests/test_lint.py::test_ruff",
                "tests/test_frameworks.py::test_every_registered_framework_is_complete")
    # its environment is built and re-pinned by the Makefile from the registry, as any
    # other's: where the config runs it, by make test, by make lock
    for target, wanted in ((".venv-toy/.installed", "envs/toy.lock.txt"),
                           ("all-envs", "-m venv .venv-toy"),
                           ("envs FRAMEWORKS=toy", "-m venv .venv-toy"),
                           ("lock", "mv envs/toy.lock.tmp envs/toy.lock.txt")):
        planned = subprocess.run(["make", "-n", "-B", *target.split()], cwd=work,
                                 capture_output=True, text=True, timeout=120)
        assert wanted in planned.stdout, (target, planned.stdout[-2000:], planned.stderr)

    python = toy_interpreter(tmp_path / "toy-env")
    done = snakemake(work, "--cores", "2", *CI_CONFIG, f"experiment_python={experiment_python}",
                     f"toy_python={python}", "frameworks=[mxnet,toy]")
    assert done.returncode == 0, done.stderr[-5000:]
    ran = set(jobs_planned(done.stdout + done.stderr))
    assert {"hybridize_toy", "report"} <= ran and "hybridize" not in ran
    # the toy has only the hybridize section: no job of another section is planned for it
    assert not {r for r in ran if r.endswith("_toy")} - {"hybridize_toy"}

    out = work / "results" / CI_MACHINE
    summary = pd.read_csv(out / "summary.csv")
    toy = summary[summary["framework"] == "toy"]
    assert set(toy["case"]) >= {"mlp_before_hybridize", "mlp_after_hybridize"}
    verdicts = pd.read_csv(out / "verdicts.csv")
    judged = verdicts[(verdicts["framework"] == "toy") & (verdicts["kind"] == "claim")]
    hybridize = judged[judged["section"] == "hybridize"]
    assert set(hybridize["verdict"]) <= {"holds", "does not hold", "inconclusive"}
    assert len(hybridize) == 1
    shown = report_view(work, out)
    section = next(s for s in shown["sections"] if s["section"] == "hybridize")
    assert "Toy" in section["frameworks"]
    claim = next(c for c in shown["claims"] if c["section"] == "hybridize")
    assert claim["by"]["toy"]["verdict"] == hybridize.iloc[0]["verdict"]
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "Toy here (median, 95% interval)" in page  # its mark in the overview's legend
