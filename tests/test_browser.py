"""A real browser against the real app: `streamlit run app.py`, headless Debian Chromium, driven by Playwright.

Opens the step-through page, prefills, clicks Next token a few times, and checks that the cache grew and
that no error or exception is on the page. Every page opened by its own link with no error or exception on it is
checked where a sweep opens each page that way anyway: tests/test_browser_axe_states.py's phone sweep (each page by
its link), and tests/test_browser_every_page.py's sweeps (each page in each language and colour scheme).
"""

from __future__ import annotations

import pytest

from support.browser import assert_no_errors, cache_length, wait_cache_length, wait_idle

pytestmark = pytest.mark.browser


def test_step_through_in_a_real_browser(app_url, page):
    page.goto(f"{app_url}/step_through")
    page.get_by_role("button", name="Prefill").click()
    page.wait_for_selector('[data-testid="stMetric"]')
    wait_idle(page)
    start = cache_length(page)
    for k in range(1, 4):
        page.get_by_role("button", name="Next token").click()
        wait_cache_length(page, start + k)
    wait_idle(page)
    assert cache_length(page) == start + 3
    assert page.locator(".js-plotly-plot").count() == 2  # the stage (K, V and attention in one figure), next-token bars
    assert_no_errors(page)
    page.get_by_role("button", name="Back").click()
    wait_cache_length(page, start + 2)
    assert_no_errors(page)
