"""The code stays clean by the project's own rules: ruff (pyproject.toml), snakefmt,
`snakemake --lint`, and no function of scripts/ that radon grades E or F (a cyclomatic
complexity over 30: split it into named steps)."""

import subprocess

from conftest import REPO, WORKFLOW_PYTHON, snakemake

BIN = WORKFLOW_PYTHON.parent


def run(*command):
    return subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=300)


def test_ruff():
    done = run(str(BIN / "ruff"), "check", "scripts", "tests", "bench")
    assert done.returncode == 0, done.stdout


def test_snakefmt():
    done = run(str(BIN / "snakefmt"), "--check", "Snakefile", "workflow/rules")
    assert done.returncode == 0, done.stderr


def test_snakemake_lint():
    done = snakemake(REPO, "--lint")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Congratulations" in done.stdout + done.stderr


def test_no_function_is_graded_e_or_f_by_radon():
    done = run(str(BIN / "radon"), "cc", "--min", "E", "--show-complexity", "scripts")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "", done.stdout
