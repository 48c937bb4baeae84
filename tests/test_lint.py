"""The code stays clean by the project's own rules: ruff (pyproject.toml), snakefmt, and
`snakemake --lint`."""

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
