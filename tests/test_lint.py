"""The code stays clean by the project's own rules: ruff (pyproject.toml), snakefmt,
`snakemake --lint`, and no function of scripts/ that radon grades E or F (a cyclomatic
complexity over 30: split it into named steps)."""

import re
import subprocess

import pytest

from conftest import REPO, WORKFLOW_PYTHON, snakemake

BIN = WORKFLOW_PYTHON.parent


def run(*command):
    return subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=300)


def test_ruff():
    done = run(str(BIN / "ruff"), "check", "scripts", "tests", "bench")
    assert done.returncode == 0, done.stdout


@pytest.mark.slow  # over a second on 2 cores
def test_snakefmt():
    done = run(str(BIN / "snakefmt"), "--check", "Snakefile", "workflow/rules")
    assert done.returncode == 0, done.stderr


@pytest.mark.slow  # Snakemake
def test_snakemake_lint():
    done = snakemake(REPO, "--lint")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Congratulations" in done.stdout + done.stderr


@pytest.mark.slow  # over a second on 2 cores
def test_no_function_is_graded_e_or_f_by_radon():
    done = run(str(BIN / "radon"), "cc", "--min", "E", "--show-complexity", "scripts")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "", done.stdout


def _anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation but '-' and '_' dropped,
    spaces as '-'."""
    words = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return words.replace(" ", "-")


def test_the_design_documents_contents_list_every_heading():
    """docs/design.md opens with its contents; a heading added, renamed or removed
    without them fails here (the reader's map never drifts from the document)."""
    text = (REPO / "docs/design.md").read_text(encoding="utf-8")
    body = text.split("\n## Contents\n", 1)[1]
    contents, rest = body.split("\n## ", 1)
    headings = re.findall(r"^(##+) (.+)$", "## " + rest, re.M)
    listed = re.findall(r"^( *)- \[(.+)\]\(#(.+)\)$", contents, re.M)
    assert [(len(indent) // 2, title, anchor) for indent, title, anchor in listed] == [
        (len(level) - 2, title, _anchor(title)) for level, title in headings]
