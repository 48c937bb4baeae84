"""`make site`: one page for every machine measured (scripts/site.py). Built from the
machines this project keeps (report/machines/) and the stored archive of an older format,
imported as any archive is; then read in headless Chromium as the report is: no network,
no console error, the filters work, axe-core finds nothing serious."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from test_report_browser import AXE, CHROMIUM, FLAGS

from conftest import REPO, WORKFLOW_PYTHON
from d2lperf.archive import import_archive

SCHEMA = REPO / "workflow/schemas/samples.schema.yaml"
KEPT = sorted((REPO / "report/machines").glob("*.tar.gz"))


def build(results: Path, out: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(WORKFLOW_PYTHON), str(REPO / "scripts/site.py"), "--results",
                           str(results), "--out", str(out)], capture_output=True, text=True,
                          timeout=300, cwd=REPO)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("site")
    results = tmp / "results"
    for archive in KEPT:
        import_archive(archive, results, SCHEMA, kept=True)
    import_archive(REPO / "tests/data/ci-old-format.tar.gz", results, SCHEMA)
    done = build(results, tmp / "site")
    assert done.returncode == 0, done.stderr
    return tmp / "site", results


def test_every_machine_is_on_the_index_and_its_report_beside_it(site):
    out, results = site
    page = (out / "index.html").read_text(encoding="utf-8")
    machines = sorted(p.name for p in results.iterdir() if (p / "verdicts.csv").exists())
    assert len(machines) == len(KEPT) + 1
    for machine in machines:
        assert machine in page
        if (results / machine / "report.html").exists():
            assert f'href="{machine}/report.html"' in page
            assert (out / machine / "report.html").read_bytes() == \
                (results / machine / "report.html").read_bytes()
        else:
            assert f"{machine} (no report)" in page
    assert "hybridize() speeds up the MLP" in page


def test_a_machine_that_cannot_be_read_is_left_out_and_named(site, tmp_path):
    _, results = site
    copy = tmp_path / "results"
    shutil.copytree(results, copy)
    broken = next(p for p in copy.iterdir() if p.is_dir())
    (broken / "machine.json").chmod(0o644)
    (broken / "machine.json").write_text('{"cpu": "x"}', encoding="utf-8")
    done = build(copy, tmp_path / "site")
    assert done.returncode == 0, done.stderr
    assert f"site: left out {broken.name}: " in done.stderr
    page = (tmp_path / "site/index.html").read_text(encoding="utf-8")
    assert broken.name not in page and "1 machine:" in page


@pytest.fixture(scope="module")
def page(site):
    if CHROMIUM is None:
        pytest.skip("chromium is not installed (make test installs Debian's chromium as root)")
    from playwright.sync_api import sync_playwright

    out, _ = site
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        problems, requests = [], []
        page.on("console", lambda m: problems.append(m.text)
                if m.type in ("error", "warning") else None)
        page.on("pageerror", lambda e: problems.append(str(e)))
        page.on("request", lambda r: requests.append(r.url))
        page.goto((out / "index.html").as_uri(), wait_until="load")
        yield page, problems, requests
        browser.close()


def test_the_index_loads_alone_without_errors(page):
    p, problems, requests = page
    assert problems == []
    assert all(url.startswith(("file://", "data:")) for url in requests), requests


def visible_columns(p, framework: str) -> int:
    return p.eval_on_selector_all(
        f'#verdicts [data-framework="{framework}"]',
        "els => els.filter(e => e.offsetParent !== null).length")


def test_the_filters_hide_a_framework_and_machines_by_device(page):
    p, _, _ = page
    assert visible_columns(p, "pytorch") > 0
    p.uncheck('input[name=framework][value="pytorch"]')
    assert visible_columns(p, "pytorch") == 0 and visible_columns(p, "mxnet") > 0
    p.check('input[name=framework][value="pytorch"]')
    p.check('input[name=device][value="gpu"]')  # the kept machines have no GPU
    shown = p.eval_on_selector_all("#machines tbody tr",
                                   "els => els.filter(e => e.offsetParent !== null).length")
    assert shown == 0
    p.check('input[name=device][value="all"]')
    assert p.eval_on_selector_all("#machines tbody tr", "els => els.length") >= 2


def test_no_serious_accessibility_violation(page):
    p, _, _ = page
    if not AXE.exists():
        pytest.fail(f"{AXE} missing: `make browser` installs axe-core")
    p.add_script_tag(path=str(AXE))
    result = p.evaluate("axe.run(document)")
    found = [(v["impact"], v["id"], [n["target"] for n in v["nodes"][:3]])
             for v in result["violations"]]
    print(found)
    assert [f for f in found if f[0] in ("serious", "critical")] == []
