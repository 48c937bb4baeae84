"""`make site`: one page for every machine measured (d2lperf site). Built from the
machines this project keeps (report/machines/), the stored archive of an older format and
a copy of it that brings its own report.html, plot and table of sections carrying script,
imported as any archive is; then read in headless Chromium as the report is: no network,
no console error, the filters work, axe-core finds nothing serious, and nothing the
archive brought runs."""

from __future__ import annotations

import base64
import contextlib
import html
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from test_report_browser import AXE, CHROMIUM, FLAGS

from conftest import REPO, WORKFLOW_PYTHON
from d2lperf import archive
from d2lperf.archive import import_archive
from d2lperf.report.claims_view import VERDICT_RANK

pytestmark = pytest.mark.slow  # the site of every kept machine, its plots drawn again

SCHEMA = REPO / "workflow/schemas/samples.schema.yaml"
KEPT = sorted((REPO / "report/machines").glob("*.tar.gz"))
OLD_FORMAT = REPO / "tests/data/ci-old-format.tar.gz"
PLANTED = "planted-by-the-archive"
PLANTED_ID = "planted-box"
# What an archive may bring as markup, each trying to change the title of its own page
# and of the page that opened it (an older site copied report.html byte for byte).
SCRIPT = (f'<script>document.title = "{PLANTED}"; '
          f'try {{ parent.document.title = "{PLANTED}"; }} catch (e) {{}}</script>')
HOSTILE = {
    "report.html": f"<!DOCTYPE html><html><head><title>x</title>{SCRIPT}</head></html>",
    "plots/hybridize.svg": f'<svg xmlns="http://www.w3.org/2000/svg">{SCRIPT}</svg>',
    "sections.csv": f"section,document,heading,title\nhybridize,x,{SCRIPT},{PLANTED}\n",
}
DATA_URI = re.compile(r"data:image/svg\+xml;base64,([A-Za-z0-9+/=]+)")


def build(results: Path, out: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(WORKFLOW_PYTHON), "-m", "d2lperf", "site", "--results",
                           str(results), "--out", str(out)], capture_output=True, text=True,
                          timeout=600, cwd=REPO)


def planted_archive(tmp: Path) -> Path:
    """The older-format archive with HOSTILE among its files, listed in its manifest: an
    archive that imports as any other, markup and all."""
    with archive.open_regular(OLD_FORMAT) as handle:
        members = archive.read_members(OLD_FORMAT, handle)
    listing = json.loads(members.pop(archive.MANIFEST))
    machine = listing["machine"]
    members.update({f"{machine}/{name}": text.encode() for name, text in HOSTILE.items()})
    out = tmp / "planted.tar.gz"
    archive.write_archive(out, machine, members, listing["code"])
    return out


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("site")
    results = tmp / "results"
    for kept in KEPT:
        import_archive(kept, results, SCHEMA, kept=True)
    import_archive(OLD_FORMAT, results, SCHEMA)
    import_archive(planted_archive(tmp), results, SCHEMA, rename=PLANTED_ID)
    done = build(results, tmp / "site")
    assert done.returncode == 0, done.stderr
    return tmp / "site", results, done


def test_every_machine_is_on_the_index_and_its_page_beside_it(site):
    out, results, _ = site
    page = (out / "index.html").read_text(encoding="utf-8")
    machines = sorted(p.name for p in results.iterdir() if (p / "verdicts.csv").exists())
    assert len(machines) == len(KEPT) + 2
    for machine in machines:
        assert f'href="{machine}/report.html"' in page
        assert (out / machine / "report.html").is_file()
    assert "hybridize() speeds up the MLP" in page


def test_no_page_is_an_archives_own_and_no_plot_either(site):
    """Each page is the report's code rendering the machine's checked tables: nothing an
    archive planted in report.html, a plot or its table of sections reaches it, and every
    plot in it is drawn again here (d2lperf plots) and carries no script."""
    out, results, _ = site
    for folder in sorted(p for p in out.iterdir() if p.is_dir()):
        page = (folder / "report.html").read_text(encoding="utf-8")
        assert PLANTED not in page, folder.name
        assert page.count("<script") == REPORT_SCRIPTS
        assert page.lower().startswith("<!doctype html>")
        assert "<title>Computational Performance," in page
        plots = [base64.b64decode(p).decode() for p in DATA_URI.findall(page)]
        assert plots and all("<script" not in p and PLANTED not in p for p in plots)
    assert "<script" in (results / PLANTED_ID / "report.html").read_text(encoding="utf-8")


REPORT_SCRIPTS = (REPO / "report/templates/report.html.j2").read_text(
    encoding="utf-8").count("<script")


def table_rows(page: str, table_id: str) -> list[str]:
    """The row headings of a page's table with this id."""
    table = page[page.index(f'id="{table_id}"'):]
    body = table[table.index("<tbody>"):table.index("</tbody>")]
    return [html.unescape(t) for t in re.findall(r'<th scope="row">(?:<a [^>]*>)?([^<]*)', body)]


def test_the_index_lists_every_claim_the_reports_do(site):
    """The claims of every machine's page (its report's first screen), the accuracy and
    printed outputs claims among them, are the index's rows, in the same words, each
    once: a claim that only a newer archive judged (the data-parallel ones) is a row too,
    with a dash for the machines whose archive predates it."""
    out, _, _ = site
    page = (out / "index.html").read_text(encoding="utf-8")
    index = table_rows(page, "verdicts")
    pages = [table_rows((f / "report.html").read_text(encoding="utf-8"), "claims")
             for f in out.iterdir() if f.is_dir()]
    assert sorted(set().union(*pages)) == sorted(index), (index, pages)
    assert len(index) == 13
    assert "printed outputs reproduced" in index and "LeNet accuracy as documented" in index
    older = [p for p in pages if "2 devices train LeNet faster" not in p]
    assert older, "an archive from before the data-parallel section is kept"
    body = page[page.index('id="verdicts"'):]
    row = body[body.index("2 devices train LeNet faster"):]
    row = row[:row.index("</tr>")]
    assert ">–</td>" in row  # the older machines' cells: not judged there


def test_the_index_colours_every_verdict_the_report_words(site):
    out, _, _ = site
    page = (out / "index.html").read_text(encoding="utf-8")
    shown = set(re.findall(r'<td [^>]*class="([a-z-]+)"', page)) - {"num", "name"}  # not verdicts
    assert shown and shown <= {v.replace(" ", "-") for v in VERDICT_RANK}


def test_a_machine_that_cannot_be_read_is_left_out_and_named(site, tmp_path):
    _, results, _ = site
    copy = tmp_path / "results"
    shutil.copytree(results, copy)
    broken = next(p for p in copy.iterdir() if p.is_dir())
    (broken / "machine.json").chmod(0o644)
    (broken / "machine.json").write_text('{"cpu": "x"}', encoding="utf-8")
    done = build(copy, tmp_path / "site")
    assert done.returncode == 0, done.stderr
    assert f"site: left out {broken.name}: {copy / broken.name / 'machine.json'}" in done.stderr
    page = (tmp_path / "site/index.html").read_text(encoding="utf-8")
    assert broken.name not in page and f"{len(KEPT) + 1} machines:" in page


def test_a_machine_whose_page_lacks_an_input_is_listed_without_one(site, tmp_path):
    _, results, _ = site
    copy = tmp_path / "results"
    shutil.copytree(results, copy)
    (copy / PLANTED_ID / "outputs.csv").unlink()
    done = build(copy, tmp_path / "site")
    assert done.returncode == 0, done.stderr
    assert f"site: {PLANTED_ID}: no page: no {PLANTED_ID}/outputs.csv, which its page " \
        "needs" in done.stderr
    page = (tmp_path / "site/index.html").read_text(encoding="utf-8")
    assert f"{PLANTED_ID} <small>(no page: " in page
    assert not (tmp_path / "site" / PLANTED_ID).exists()
    assert all((tmp_path / "site" / m / "report.html").is_file()
               for m in (p.name for p in copy.iterdir() if p.name != PLANTED_ID))


@contextlib.contextmanager
def opened(path: Path):
    """``path`` in headless Chromium at 1280x800: the page, every console problem and every
    request it made."""
    if CHROMIUM is None:
        pytest.skip("chromium is not installed (make test installs Debian's chromium as root)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        yield open_page(browser, path)
        browser.close()


def open_page(browser, path: Path, viewport: tuple[int, int] = (1280, 800)):
    """``path`` in a new page of ``browser``: the page, every console problem and every
    request it made."""
    page = browser.new_page(viewport={"width": viewport[0], "height": viewport[1]})
    problems, requests = [], []
    page.on("console", lambda m: problems.append(m.text)
            if m.type in ("error", "warning") else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.on("request", lambda r: requests.append(r.url))
    page.goto(path.as_uri(), wait_until="load")
    return page, problems, requests


@pytest.fixture(scope="module")
def page(site):
    with opened(site[0] / "index.html") as found:
        yield found


def test_nothing_an_archive_brought_runs_in_the_browser(site):
    """The index, then the planted machine's page through its link: every title is the
    site's own, nothing failed, nothing left the folder."""
    out, _, _ = site
    with opened(out / "index.html") as (p, problems, requests):
        index_title = p.title()
        p.click(f'a[href="{PLANTED_ID}/report.html"]')
        p.wait_for_load_state("load")
        assert p.url.endswith(f"{PLANTED_ID}/report.html")
        assert p.title().startswith("Computational Performance, reproduced on")
        assert PLANTED not in p.title() and PLANTED not in p.content()
        p.go_back(wait_until="load")
        assert p.title() == index_title == "Computational performance, every machine measured"
        assert problems == []
        assert all(url.startswith(("file://", "data:")) for url in requests), requests


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


@pytest.mark.parametrize("viewport", [(1280, 800), (390, 844)])
def test_every_verdict_of_three_frameworks_is_on_the_first_screen(site, page, viewport):
    """The kept reference runs measured MXNet, PyTorch and JAX: on a laptop's screen and on
    a phone's, every claim's verdict for each of them shows before any scrolling."""
    out, results, _ = site
    browser = page[0].context.browser
    for kept in KEPT:
        machine = kept.name.removesuffix(".tar.gz")
        p, problems, _ = open_page(browser, out / machine / "report.html", viewport)
        try:
            assert problems == []
            heads = p.eval_on_selector_all("#claims thead th", "els => els.length")
            assert heads == 5, f"{machine}: three frameworks' columns expected"
            boxes = p.eval_on_selector_all(
                "#claims .verdict",
                "els => els.map(e => [e.textContent, e.getBoundingClientRect().bottom])")
            assert len(boxes) >= 3 * 10, machine
            below = [(text, round(bottom)) for text, bottom in boxes
                     if not 0 < bottom <= viewport[1]]
            assert below == [], f"{machine} at {viewport}: below the first screen: {below}"
        finally:
            p.close()
