"""`make site` and the archive follow no link they did not make: a link planted in a
machine's results (to a secret, to another machine's folder) is never read, a link planted
in the site's folder (a machine's folder, index.html) never written through; each is
named with what to do, and the other machines are still written."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from test_site import OLD_FORMAT, SCHEMA, build

from conftest import REPO, WORKFLOW_PYTHON
from d2lperf.archive import import_archive

pytestmark = pytest.mark.slow  # the site, built with its plots drawn again

SECRET = "SECRET-BYTES-NEVER-PUBLISHED"
NO_LINK = "is a symbolic link, and the site follows no link it did not make"


@pytest.fixture(scope="module")
def machine(tmp_path_factory) -> Path:
    """One imported machine, copied for each case."""
    return import_archive(OLD_FORMAT, tmp_path_factory.mktemp("one") / "results", SCHEMA)


def add(results: Path, source: Path, name: str) -> Path:
    shutil.copytree(source, results / name)
    return results / name


def relink(path: Path, target: Path) -> None:
    """``path`` replaced by a link to ``target``."""
    path.unlink()
    path.symlink_to(target)


@pytest.fixture(scope="module")
def planted(machine, tmp_path_factory):
    """A results folder of two good machines and one of each planted link, and a site
    folder where one machine's folder is a link to a folder elsewhere; built once."""
    tmp = tmp_path_factory.mktemp("planted")
    (tmp / "secret").write_text(SECRET, encoding="utf-8")
    results = tmp / "results"
    results.mkdir()
    add(results, machine, "good")
    add(results, machine, "site-linked")
    (add(results, machine, "link-report") / "report.html").symlink_to(tmp / "secret")
    relink(add(results, machine, "link-machine") / "machine.json", machine / "machine.json")
    relink(add(results, machine, "link-run") / "hybridize/run.json",
           machine / "hybridize/run.json")
    fifo = add(results, machine, "fifo-verdicts") / "verdicts.csv"
    fifo.unlink()
    os.mkfifo(fifo)
    (results / "link-folder").symlink_to(add(tmp, machine, "elsewhere"))
    elsewhere = tmp / "their-folder"
    elsewhere.mkdir()
    (tmp / "site").mkdir()
    (tmp / "site/site-linked").symlink_to(elsewhere)
    return tmp, build(results, tmp / "site")


@pytest.mark.parametrize("name, path", [
    ("link-report", "link-report/report.html"),
    ("link-machine", "link-machine/machine.json"),
    ("link-run", "link-run/hybridize/run.json"),
    ("link-folder", "link-folder"),
])
def test_a_link_in_results_is_never_read_and_named(planted, name, path):
    tmp, done = planted
    assert done.returncode == 1, done.stderr
    assert f"site: refused {name}: {tmp / 'results' / path} {NO_LINK}" in done.stderr
    index = (tmp / "site/index.html").read_text(encoding="utf-8")
    assert f">{name}<" not in index and f"{name} <small>" not in index


def test_a_fifo_in_results_is_refused_without_waiting_on_it(planted):
    tmp, done = planted
    assert f"site: refused fifo-verdicts: {tmp / 'results/fifo-verdicts/verdicts.csv'}: " \
           "a FIFO, not a regular file" in done.stderr


def test_a_link_in_the_site_is_never_written_through(planted):
    tmp, done = planted
    target = tmp / "site/site-linked"
    assert f"site: refused {target} {NO_LINK}; remove it; the site makes {target} itself" \
        in done.stderr
    assert list((tmp / "their-folder").iterdir()) == []
    index = (tmp / "site/index.html").read_text(encoding="utf-8")
    assert "site-linked <small>(no page: " in index
    assert 'href="good/report.html"' in index and (tmp / "site/good/report.html").is_file()


def test_nothing_planted_is_published(planted):
    tmp, _ = planted
    published = [p for p in (tmp / "site").rglob("*") if p.is_file() and not p.is_symlink()]
    assert published and all(SECRET not in p.read_text(encoding="utf-8") for p in published)


def test_an_index_that_is_a_link_is_refused_and_the_pages_still_written(machine, tmp_path):
    results = tmp_path / "results"
    results.mkdir()
    add(results, machine, "good")
    theirs = tmp_path / "theirs.html"
    theirs.write_text("theirs", encoding="utf-8")
    (tmp_path / "site").mkdir()
    (tmp_path / "site/index.html").symlink_to(theirs)
    done = build(results, tmp_path / "site")
    assert done.returncode == 1
    index = tmp_path / "site/index.html"
    assert f"site: refused {index} {NO_LINK}; remove it; the site writes {index} itself" \
        in done.stderr
    assert theirs.read_text(encoding="utf-8") == "theirs" and index.is_symlink()
    assert (tmp_path / "site/good/report.html").is_file()


def test_an_archive_holds_no_link(machine, tmp_path):
    """d2lperf archive refuses a results folder with a link in it, naming it,
    rather than archive what the link points at."""
    folder = add(tmp_path, machine, "box")
    (folder / "report.html").symlink_to("/etc/passwd")
    out = tmp_path / "box.tar.gz"
    done = subprocess.run([str(WORKFLOW_PYTHON), "-m", "d2lperf", "archive",
                           "--results", str(folder), "--out", str(out)],
                          capture_output=True, text=True, timeout=120, cwd=REPO)
    assert done.returncode == 1 and not out.exists()
    assert f"{folder / 'report.html'} is a symbolic link" in done.stderr
