"""The report in plain words: with every fold closed, what a reader sees has no statistics
jargon and no number in e-notation; an interval too wide to say anything says so.

Two pages: the report of the stored CI run (tests/data/ci-old-format.tar.gz, made as
test_report_view makes its view), whose intervals from two processes are as wide as a
busy 2-core machine makes them, and the report of this test session's CI run, whose short
sections are measured in stages. Each is read in headless Chromium, as a reader sees it
(text inside a closed <details> is not rendered, so innerText leaves it out).
"""

from __future__ import annotations

import re
import shutil

import pytest
from test_report_browser import FLAGS
from test_report_view import tables

from d2lperf.commands import render_report

pytestmark = pytest.mark.slow  # a browser

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
# The method's words: they belong in the folds ("How to read this table", each section's
# "How this was measured"), not in what a reader meets first.
JARGON = re.compile(r"\b(Bonferroni|Holm\w*|looks?|stages?|pooled|p-values?|t-interval|"
                    r"bootstrap|quartiles?|IQR|Tukey|crossover|degrees of freedom|"
                    r"confidence|significan\w+)\b", re.I)
E_NOTATION = re.compile(r"\b\d+(\.\d+)?e[-+]?\d+\b", re.I)
LOOK_CONFIDENCE = re.compile(r"\b9\d\.\d+%")  # a look's share of the 95%, e.g. 98.3%
ABSURD = re.compile(r"\d{6,}")  # an interval's end in the millions says nothing


@pytest.fixture(scope="module", params=["stored", "live"])
def visible_text(request, tmp_path_factory):
    if CHROMIUM is None:
        pytest.skip("chromium is not installed (make test installs Debian's chromium as root)")
    from playwright.sync_api import sync_playwright

    if request.param == "stored":
        tmp = tmp_path_factory.mktemp("words")
        args = render_report.parser().parse_args(tables(tmp))
        args.out.write_text(render_report.render(args), encoding="utf-8")
        report = args.out
    else:
        report = request.getfixturevalue("ci_run")[1] / "report.html"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        page.goto(report.as_uri(), wait_until="load")
        page.evaluate("document.querySelectorAll('details').forEach(d => d.open = false)")
        text = page.inner_text("body")
        page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
        opened = page.inner_text("body")
        browser.close()
    return text, opened, request.param


def test_what_a_reader_meets_first_has_no_statistics_jargon(visible_text):
    text, opened, _ = visible_text
    assert JARGON.search(opened)  # the method is still there, folded: the pattern is right
    found = sorted({m.group(0) for m in JARGON.finditer(text)})
    lines = [line for line in text.splitlines() if JARGON.search(line)]
    assert found == [], lines[:8]
    assert LOOK_CONFIDENCE.findall(text) == []


def test_no_number_in_e_notation_and_no_absurd_interval(visible_text):
    text, _, _ = visible_text
    assert E_NOTATION.findall(text) == [], [line for line in text.splitlines()
                                            if E_NOTATION.search(line)][:5]
    assert [line for line in text.splitlines() if ABSURD.search(line)] == []


def test_an_interval_too_wide_to_say_anything_says_so(visible_text):
    text, _, which = visible_text
    if which == "live" and "too few processes to tell" not in text:
        pytest.skip("every interval of this run says something")
    assert re.search(r"too few processes to tell \(\d+ ran\)", text)


def test_each_section_says_how_it_was_measured_and_whether_the_machine_was_steady(
        visible_text):
    text, opened, _ = visible_text
    lines = [line for line in text.splitlines() if "measured in" in line]
    assert lines, "no section says how it was measured"
    assert all("the machine was" in line for line in lines), lines
    assert opened.count("How this was measured") >= 3


def busy_run(threads: int, others: float, cores: int = 2) -> dict:
    """A section's run record whose every stage was measured while other programs kept
    ``others`` of the machine's ``cores`` busy, timed with ``threads`` threads."""
    load = {"wall_s": 30.0, "own_cores": float(threads), "others_cores": others, "cores": cores}
    history = [{"stage": k, "busy": True, "load": load, "pooled": True} for k in (1, 2)]
    return {"status": "ok", "wall_seconds": 60.0, "threads": {"OMP_NUM_THREADS": str(threads)},
            "parameters": {"repeats": 10, "processes": 4, "threads": threads},
            "processes": [{}] * 4,
            "stages": {"count": 2, "all_busy": True, "history": history, "processes_pooled": 4}}


def test_a_thread_count_a_busy_machine_made_harmful_is_named():
    """Two timing threads on two cores, one of them kept busy by another program: every
    threaded step waits for the thread that shares a core, and the line says so, with the
    count that fits what was free."""
    from d2lperf.report.sections_view import run_line

    text = run_line(busy_run(threads=2, others=0.97))["text"]
    assert "busy throughout" in text
    assert "other programs kept 0.97 of its 2 cores busy" in text
    assert "its 2 timing threads shared a core with them" in text
    assert "threads: 1 fits what was free" in text
    assert not JARGON.search(text), JARGON.search(text)
    # one thread beside one busy core of two: nothing to name; nor on a quiet machine
    assert "shared a core" not in run_line(busy_run(threads=1, others=0.97))["text"]
    quiet = busy_run(threads=2, others=0.0)
    for entry in quiet["stages"]["history"]:
        entry["busy"] = False
    quiet["stages"]["all_busy"] = False
    assert "shared a core" not in run_line(quiet)["text"]
