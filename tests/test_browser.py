"""A real browser against the real app: `streamlit run app.py`, headless Debian Chromium, driven by Playwright.

Opens the step-through page, prefills, clicks Next token a few times, and checks that the cache grew and
that no error or exception is on the page. Then visits every other page and checks it renders cleanly.
"""
from __future__ import annotations

import contextlib
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-dev-shm-usage"]
PAGES = [  # url paths st.navigation derives: every page of the app
    "lesson", "attention_patterns", "attention_ops", "memory_budget", "speedup", "claims", "internals_layout",
    "internals_prefix", "internals_crossattn", "internals_window", "internals_paging", "internals_quant",
    "internals_speculative", "internals_eviction",
]

pytestmark = pytest.mark.browser


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def require_chromium() -> None:
    if not Path(CHROMIUM).exists():
        if os.environ.get("KVVIZ_REQUIRE_BROWSER"):
            pytest.fail(f"{CHROMIUM} is missing but KVVIZ_REQUIRE_BROWSER is set")
        pytest.skip(f"{CHROMIUM} not installed (apt-get install chromium chromium-driver)")


@contextlib.contextmanager
def busy_core():
    """One core kept busy, as on a laptop serving a class (a spinning Python process)."""
    spinner = subprocess.Popen([sys.executable, "-c", "while 1: pass"])
    try:
        yield
    finally:
        spinner.kill()
        spinner.wait(timeout=20)


@contextlib.contextmanager
def fresh_server():
    """A new `streamlit run app.py` process (nothing run yet: a fresh server's first visitor); yields its URL."""
    require_chromium()
    port = _free_port()
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    server = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port),
         "--server.headless", "true", "--browser.gatherUsageStats", "false"],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        try:
            if urllib.request.urlopen(f"{url}/_stcore/health", timeout=2).read() == b"ok":
                break
        except OSError:
            time.sleep(0.5)
    else:
        server.kill()
        pytest.fail("streamlit did not start: " + (server.stdout.read() if server.stdout else ""))
    try:
        yield url
    finally:
        server.terminate()
        server.wait(timeout=20)


@pytest.fixture(scope="module")
def app_url():
    with fresh_server() as url:
        yield url


@pytest.fixture(scope="module")
def page(app_url):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        tab = browser.new_page(viewport={"width": 1400, "height": 1000})
        tab.set_default_timeout(90_000)
        yield tab
        browser.close()


def _wait_idle(tab) -> None:
    """Streamlit shows a 'running' status widget while the script runs; wait until it is gone."""
    tab.wait_for_timeout(300)
    tab.wait_for_selector('[data-testid="stStatusWidget"]', state="detached", timeout=90_000)


def _cache_length(tab) -> int:
    metric = tab.locator('[data-testid="stMetric"]', has_text="Cache length")
    value = metric.locator('[data-testid="stMetricValue"]').inner_text()
    return int(re.match(r"(\d+)", value).group(1))


def _assert_no_errors(tab) -> None:
    assert tab.locator('[data-testid="stException"]').count() == 0
    assert tab.locator('[data-testid="stAlertContentError"]').count() == 0


def test_step_through_in_a_real_browser(app_url, page):
    page.goto(f"{app_url}/step_through")
    page.get_by_role("button", name="Prefill").click()
    page.wait_for_selector('[data-testid="stMetric"]')
    _wait_idle(page)
    start = _cache_length(page)
    for k in range(1, 4):
        page.get_by_role("button", name="Next token").click()
        page.wait_for_function(
            """(n) => [...document.querySelectorAll('[data-testid="stMetricValue"]')]
                        .some(e => e.innerText.startsWith(n + ' tokens'))""",
            arg=start + k,
        )
    _wait_idle(page)
    assert _cache_length(page) == start + 3
    assert page.locator(".js-plotly-plot").count() == 2  # the stage (K, V and attention in one figure), next-token bars
    _assert_no_errors(page)
    page.get_by_role("button", name="Back").click()
    page.wait_for_function(
        """(n) => [...document.querySelectorAll('[data-testid="stMetricValue"]')]
                    .some(e => e.innerText.startsWith(n + ' tokens'))""",
        arg=start + 2,
    )
    _assert_no_errors(page)


@pytest.mark.parametrize("path", ["", *PAGES])
def test_every_page_renders_in_a_real_browser(app_url, page, path):
    page.goto(f"{app_url}/{path}")
    page.wait_for_selector("h1")
    _wait_idle(page)
    _assert_no_errors(page)
