"""The rendered report in a real headless browser (Debian's chromium, driven by Playwright)."""

import shutil
from pathlib import Path

import pytest

from conftest import REPO

ARTIFACTS = REPO / "tests" / "artifacts"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
# Flags for a closed network: no background connections, no first-run work.
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]
SECTIONS = ["hybridize", "async_computation", "async_memory", "auto_parallelism",
            "small_ops_parallel", "multi_gpu_scratch", "multi_gpu_gluon", "ceilings"]


@pytest.fixture(scope="module")
def page(ci_run):
    if CHROMIUM is None:
        pytest.skip("chromium is not installed (make test installs Debian's chromium as root)")
    from playwright.sync_api import sync_playwright

    _, results = ci_run
    problems: list[str] = []
    requests: list[str] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = browser.new_page(viewport={"width": 1000, "height": 1400})
        page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}")
                if m.type in ("error", "warning") else None)
        page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
        page.on("request", lambda r: requests.append(r.url))
        page.goto(Path(results / "report.html").as_uri(), wait_until="load")
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "report.png"), full_page=True)
        page.set_viewport_size({"width": 390, "height": 844})  # a phone
        page.screenshot(path=str(ARTIFACTS / "report-phone.png"))
        yield page, problems, requests
        browser.close()


def test_loads_without_console_errors(page):
    _, problems, _ = page
    assert problems == []


def test_makes_no_network_request(page):
    _, _, requests = page
    assert all(url.startswith(("file://", "data:")) for url in requests), requests


def test_every_image_is_decoded(page):
    p, _, _ = page
    images = p.evaluate("""async () => Promise.all(Array.from(document.images).map(
        img => img.decode().then(() => [img.alt, img.naturalWidth], () => [img.alt, 0])))""")
    assert len(images) == len(SECTIONS)
    assert all(width > 0 for _, width in images), images


def test_every_section_has_its_table(page):
    p, _, _ = page
    for section in SECTIONS:
        assert p.locator(f"section#{section} table").count() >= 1, section
    assert p.locator("text=Does the chapter hold here?").count() == 1


def test_screenshot_kept(page):
    assert (ARTIFACTS / "report.png").stat().st_size > 10_000
