"""A real browser against the real app: Debian's headless Chromium (driven by Playwright), a fresh server, a busy
core, and what every browser test reads off a page. The fixtures (app_url, page) live in tests/conftest.py."""
from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.server import streamlit_server

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-dev-shm-usage"]
PAGES = [  # url paths st.navigation derives: every page of the app
    "lesson", "attention_patterns", "attention_ops", "memory_budget", "speedup", "claims", "internals_layout",
    "internals_prefix", "internals_crossattn", "internals_window", "internals_paging", "internals_quant",
    "internals_speculative", "internals_eviction",
]


def require(path: str, package: str) -> None:
    """Skip when an OS package's program is missing; fail when tests/install_and_run.sh installed it (it must be
    there: KVVIZ_REQUIRE_BROWSER)."""
    if not Path(path).exists():
        if os.environ.get("KVVIZ_REQUIRE_BROWSER"):
            pytest.fail(f"{path} is missing but KVVIZ_REQUIRE_BROWSER is set")
        pytest.skip(f"{path} not installed (apt-get install {package})")


def require_chromium() -> None:
    require(CHROMIUM, "chromium chromium-driver")


@contextlib.contextmanager
def busy_core() -> Iterator[None]:
    """One core kept busy, as on a laptop serving a class (a spinning Python process)."""
    spinner = subprocess.Popen([sys.executable, "-c", "while 1: pass"])
    try:
        yield
    finally:
        spinner.kill()
        spinner.wait(timeout=20)


@contextlib.contextmanager
def fresh_server() -> Iterator[str]:
    """A new `streamlit run app.py` process for a browser (nothing run yet: a fresh server's first visitor);
    yields its URL."""
    require_chromium()
    with streamlit_server() as url:
        yield url


def wait_idle(tab) -> None:
    """Streamlit shows a 'running' status widget while the script runs; wait until it is gone."""
    tab.wait_for_timeout(300)
    tab.wait_for_selector('[data-testid="stStatusWidget"]', state="detached", timeout=90_000)


def cache_length(tab) -> int:
    metric = tab.locator('[data-testid="stMetric"]', has_text="Cache length")
    value = metric.locator('[data-testid="stMetricValue"]').inner_text()
    return int(re.match(r"(\d+)", value).group(1))


def assert_no_errors(tab) -> None:
    assert tab.locator('[data-testid="stException"]').count() == 0
    assert tab.locator('[data-testid="stAlertContentError"]').count() == 0
