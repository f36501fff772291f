"""A hybrid model on the Memory budget page in a real browser (headless Debian Chromium): the Qwen3-Next and Jamba
presets at 1280x720 and on a phone (390x844, touch), in English and in Chinese. The two-part chart (fixed state and
K/V) and the layer strip (one cell per layer, coloured by kind) are drawn, the strip has one cell per layer, the
tiles show the two parts, and nothing scrolls sideways. Screenshots go to test-artifacts/memory_hybrid/."""

from __future__ import annotations

import pytest

from kvviz import i18n
from support.browser import ARTIFACTS as ALL_ARTIFACTS
from support.browser import choose_tab, close_tab, open_tab, wait_settled

pytestmark = pytest.mark.browser
ARTIFACTS = ALL_ARTIFACTS / "memory_hybrid"
DEVICES = {
    "desktop": {"width": 1280, "height": 720},
    "phone": {"width": 390, "height": 844, "is_mobile": True, "has_touch": True, "device_scale_factor": 2},
}
SETTLE_MS = 180_000
PRESETS = {"qwen3-next-80b-a3b": (48, "24 KiB"), "jamba-1-5-mini": (32, "16 KiB")}
# the cells the strip draws: one bar per layer across its kinds' traces
STRIP_CELLS_JS = """() => {
  const plot = document.querySelector('.st-key-mem_chart_strip .js-plotly-plot');
  return plot ? plot.data.reduce((n, trace) => n + trace.x.length, 0) : -1;
}"""


@pytest.mark.parametrize("lang", ["en", "zh-CN"])
@pytest.mark.parametrize("device", list(DEVICES))
@pytest.mark.parametrize("preset", list(PRESETS))
def test_a_hybrid_preset_shows_its_layer_strip_and_its_two_parts(app_url, browser, preset, device, lang):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    layers, per_token = PRESETS[preset]
    with i18n.language(lang):
        per_layer_tab = i18n._("Per layer")
    tab = open_tab(
        browser,
        app_url,
        "memory_budget",
        lang=lang,
        query={"mem_preset": preset},
        timeout_ms=SETTLE_MS,
        **DEVICES[device],
    )
    wait_settled(tab, timeout_ms=SETTLE_MS)
    tab.wait_for_selector(".st-key-mem_chart_parts .js-plotly-plot .main-svg")
    tiles = tab.locator('.st-key-mem_metrics [data-testid="stMetricValue"]')
    assert tiles.first.inner_text() == per_token
    tab.screenshot(path=str(ARTIFACTS / f"{preset}_{device}_{lang}_parts.png"), full_page=False)
    choose_tab(tab, per_layer_tab)
    strip = tab.locator(".st-key-mem_chart_strip .js-plotly-plot .main-svg").first
    strip.wait_for()
    strip.scroll_into_view_if_needed()
    assert tab.evaluate(STRIP_CELLS_JS) == layers
    tab.screenshot(path=str(ARTIFACTS / f"{preset}_{device}_{lang}_strip.png"), full_page=False)
    width = DEVICES[device]["width"]
    assert tab.evaluate("() => document.documentElement.scrollWidth") <= width + 1
    close_tab(tab)
