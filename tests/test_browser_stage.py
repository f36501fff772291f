"""The classroom stage in a real browser (headless Debian Chromium): at 1280x720 in light and dark theme,
Prefill, then 30 presses of the Right arrow key. After every press the cache length is checked; at the end
the newest K row, the Next-token button and the attention bars must be inside the viewport (also at
1366x768), no metric value may be cut off at 1024, 1280 or 1920 wide, and no error box may show.
Screenshots are saved under test-artifacts/ (or $KVVIZ_ARTIFACTS) to be looked at.
"""

from __future__ import annotations

import re

import pytest

from support.browser import ARTIFACTS, assert_no_errors, cache_length, inside, open_tab, wait_cache_length, wait_idle

pytestmark = pytest.mark.browser
PRESSES = 30

# Metric labels and values whose text is wider than their box (CSS ellipsis or clipping), and a literal "…".
CUT_METRICS_JS = """() => [...document.querySelectorAll('[data-testid="stMetric"] *')]
    .filter(e => e.children.length === 0 && (e.scrollWidth > e.clientWidth + 1 || (e.innerText || '').endsWith('…')))
    .map(e => e.innerText || e.tagName)"""


def _assert_stage_in_view(tab, width: int, height: int, name: str) -> None:
    tab.set_viewport_size({"width": width, "height": height})
    tab.wait_for_timeout(800)  # plotly relayouts on resize
    stage = tab.locator(".js-plotly-plot").first  # K | V | attention: one figure, one row axis
    newest_row = stage.locator(".shapelayer path").last  # the outline of the newest K/V row
    attention = stage.locator(".barlayer .point").last  # the newest query's weight on the newest row
    nxt = tab.get_by_role("button", name=re.compile("^Next token"))
    for what, loc in (("newest K row", newest_row), ("attention", attention), ("Next token button", nxt)):
        assert inside(loc.bounding_box(), width, height), f"{what} is not inside the {width}x{height} viewport"
    tab.screenshot(path=str(ARTIFACTS / f"stage_{name}_{width}x{height}.png"))


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_stage_fits_a_projector_and_follows_the_keyboard(app_url, scheme, browser):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    tab = open_tab(browser, app_url, "step_through", timeout_ms=90_000, color_scheme=scheme)
    tab.get_by_role("button", name=re.compile("^Prefill")).wait_for()
    # The module's server is fresh and this deep link is its first page: the router (app.py) must still
    # run it, with the sidebar's model picker (kvviz.ui works around Streamlit's pages/ detection when first imported).
    assert tab.locator('[data-testid="stSidebar"]').get_by_text("Which model").count() == 1
    tab.screenshot(path=str(ARTIFACTS / f"stage_{scheme}_before.png"))
    tab.keyboard.press("p")  # P = Prefill
    tab.wait_for_selector(".kvviz-strip")
    wait_idle(tab)
    start = cache_length(tab)
    for k in range(1, PRESSES + 1):
        tab.keyboard.press("ArrowRight")
        wait_cache_length(tab, start + k, timeout_ms=60_000)
        assert tab.locator(".kvviz-strip span[data-pos]").count() > 0  # the strip is never empty
    wait_idle(tab)
    assert tab.locator('.kvviz-strip span[data-pos="next"]').count() == 1
    assert_no_errors(tab)
    _assert_stage_in_view(tab, 1280, 720, scheme)
    _assert_stage_in_view(tab, 1366, 768, scheme)
    for width in (1024, 1280, 1920):
        tab.set_viewport_size({"width": width, "height": 800})
        tab.wait_for_timeout(500)
        assert tab.evaluate(CUT_METRICS_JS) == [], f"a metric is cut off at {width} px wide"
    tab.keyboard.press("ArrowLeft")  # Left = Back
    wait_cache_length(tab, start + PRESSES - 1, timeout_ms=60_000)
    assert_no_errors(tab)
