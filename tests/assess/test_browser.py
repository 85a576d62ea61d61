"""The HTML report in a real browser: headless Chromium (Debian's chromium + chromium-driver) via selenium.

Skips cleanly when selenium, the browser or its driver is absent. Asserts the
figures render (``<img>`` with a non-zero natural size), the tables are
there, and the browser console has no errors (``goog:loggingPrefs``).
"""

from __future__ import annotations

import os
import shutil

import pytest

BROWSER = next((b for b in ("chromium", "chromium-browser", "google-chrome") if shutil.which(b)), None)
DRIVER = shutil.which("chromedriver") or next(
    (p for p in ("/usr/bin/chromedriver", "/usr/lib/chromium/chromedriver") if os.path.exists(p)), None
)


@pytest.fixture(scope="module")
def browser():
    webdriver = pytest.importorskip("selenium.webdriver")
    if BROWSER is None or DRIVER is None:
        pytest.skip("no Chromium and chromedriver (apt-get install chromium chromium-driver)")
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = shutil.which(BROWSER)
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1200,900"):
        opts.add_argument(arg)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    try:
        driver = webdriver.Chrome(service=Service(DRIVER), options=opts)
    except Exception as exc:  # a driver that does not match the browser, no display libraries, ...
        pytest.skip(f"cannot start headless Chromium: {type(exc).__name__}: {str(exc).splitlines()[0]}")
    yield driver
    driver.quit()


@pytest.mark.slow
def test_report_renders_with_figures_tables_and_no_console_errors(browser, tiny_assessment):
    _, out, _ = tiny_assessment
    browser.get((out / "report.html").resolve().as_uri())
    images = browser.find_elements("css selector", "img")
    assert len(images) == 3
    for img in images:
        w, h = browser.execute_script("return [arguments[0].naturalWidth, arguments[0].naturalHeight]", img)
        assert w > 100 and h > 100
        assert browser.execute_script("return arguments[0].complete", img)
    ids = {t.get_attribute("id") for t in browser.find_elements("css selector", "table")}
    assert {"headline", "ranking", "advice", "estimators", "worlds", "dataset", "errors"} <= ids
    rows = browser.find_elements("css selector", "table#headline tbody tr")
    assert len(rows) == 2 * 3  # 2 algorithms x 3 metrics
    errors = [e for e in browser.get_log("browser") if e["level"] in ("SEVERE", "ERROR")]
    assert errors == []
