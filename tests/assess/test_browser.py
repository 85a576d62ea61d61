"""The HTML report in a real browser: headless Chromium (Debian's chromium + chromium-driver) via selenium.

Skips cleanly when selenium, the browser or its driver is absent (or cannot
start). At 1280 x 800 px, the width the issue names (issue 28): the bottom
line is the first thing on the page and visible without scrolling, it holds
no ``nan``, nothing overflows sideways (the page or a figure), the figures
render, the tables are there, the browser console has no errors
(``goog:loggingPrefs``), and the print layout does not overflow either. A
screenshot of the first screen is saved under the test's tmp folder (and
copied to ``$SIMREC_REPORT_SCREENSHOT`` when set, for the docs).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

BROWSER = next((b for b in ("chromium", "chromium-browser", "google-chrome") if shutil.which(b)), None)
DRIVER = shutil.which("chromedriver") or next(
    (p for p in ("/usr/bin/chromedriver", "/usr/lib/chromium/chromedriver") if os.path.exists(p)), None
)
WIDTH, HEIGHT = 1280, 800


@pytest.fixture(scope="module")
def browser():
    webdriver = pytest.importorskip("selenium.webdriver")
    if BROWSER is None or DRIVER is None:
        pytest.skip("no Chromium and chromedriver (apt-get install chromium chromium-driver)")
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = shutil.which(BROWSER)
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--hide-scrollbars"):
        opts.add_argument(arg)
    opts.add_argument(f"--window-size={WIDTH},{HEIGHT}")
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    try:
        driver = webdriver.Chrome(service=Service(DRIVER), options=opts)
    except Exception as exc:  # a driver that does not match the browser, no display libraries, ...
        pytest.skip(f"cannot start headless Chromium: {type(exc).__name__}: {str(exc).splitlines()[0]}")
    yield driver
    driver.quit()


def _overflow(browser) -> int:
    """How many CSS pixels the page is wider than its viewport (0: no horizontal scroll bar)."""
    return browser.execute_script(
        "const d = document.documentElement; return Math.max(d.scrollWidth, document.body.scrollWidth) - d.clientWidth"
    )


@pytest.mark.slow
def test_report_leads_with_the_bottom_line_and_fits_1280_px(browser, tiny_assessment, tmp_path):
    _, out, _ = tiny_assessment
    browser.set_window_size(WIDTH, HEIGHT)
    browser.get((out / "report.html").resolve().as_uri())
    viewport = browser.execute_script("return [window.innerWidth, window.innerHeight]")
    assert viewport[0] >= 1200, viewport  # the window is the width the issue asks for

    # the bottom line first, its heading and verdicts on the first screen
    first = browser.find_element("css selector", "body > section")
    assert first.get_attribute("id") == "bottom-line"
    top = browser.execute_script("return arguments[0].getBoundingClientRect().top", first)
    rows = browser.find_elements("css selector", "table#bottom-line-values tbody tr")
    assert len(rows) == 2 * 3  # 2 algorithms x 3 metrics
    row_top = browser.execute_script("return arguments[0].getBoundingClientRect().top", rows[0])
    assert 0 <= top < row_top < viewport[1], (top, row_top, viewport)
    text = first.text
    assert "nan" not in text.lower() and "Bottom line" in text and "What to report" in text

    # nothing wider than the window: the page, its tables' boxes, its figures
    assert _overflow(browser) <= 0
    for el in browser.find_elements("css selector", "div.scroll, img"):
        right = browser.execute_script("return arguments[0].getBoundingClientRect().right", el)
        assert right <= viewport[0], (el.tag_name, right)

    images = browser.find_elements("css selector", "img")
    assert len(images) == 4  # errors, ranking, estimators, sim to real
    for img in images:
        w, h = browser.execute_script("return [arguments[0].naturalWidth, arguments[0].naturalHeight]", img)
        assert w > 100 and h > 100
        assert browser.execute_script("return arguments[0].complete", img)
    ids = {t.get_attribute("id") for t in browser.find_elements("css selector", "table")}
    assert {"bottom-line-values", "headline", "ranking", "advice", "estimators", "worlds", "dataset", "errors"} <= ids
    assert {"sim-to-real-table-1", "sim-to-real-table-2"} <= ids  # the sim-to-real check's two tables
    errors = [e for e in browser.get_log("browser") if e["level"] in ("SEVERE", "ERROR")]
    assert errors == []

    shot = tmp_path / "report-1280.png"
    assert browser.save_screenshot(str(shot))
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000
    if os.environ.get("SIMREC_REPORT_SCREENSHOT"):
        shutil.copyfile(shot, Path(os.environ["SIMREC_REPORT_SCREENSHOT"]))

    # the overflow measure can fail: an element wider than the window is seen
    browser.execute_script(
        "const d = document.createElement('div'); d.style.width = '2000px'; d.style.height = '1px'; document.body.append(d)"
    )
    assert _overflow(browser) > 0


@pytest.mark.slow
def test_report_prints_without_overflow(browser, tiny_assessment):
    """Print media (the print CSS): no horizontal overflow at an A4 page's width (~794 CSS px)."""
    _, out, _ = tiny_assessment
    browser.set_window_size(794, HEIGHT)
    try:
        browser.get((out / "report.html").resolve().as_uri())
        browser.execute_cdp_cmd("Emulation.setEmulatedMedia", {"media": "print"})
        assert browser.execute_script("return matchMedia('print').matches")
        assert _overflow(browser) <= 0
    finally:
        browser.execute_cdp_cmd("Emulation.setEmulatedMedia", {"media": ""})
        browser.set_window_size(WIDTH, HEIGHT)
