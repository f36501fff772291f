"""The stage on the bundled hybrid in a real browser (headless Debian Chromium), as issue 53 asks: at 1280x720 and on
a phone (390x844, touch), in English and in Chinese, Prefill and 5 Next: the attention layer's K/V tile has 5 more
rows, the state tile keeps its bytes, a linear layer draws its state per head (8 heatmaps: 4 states, 4 conv inputs)
with the same shape and bytes, and no error box shows."""

from __future__ import annotations

import re

import pytest

from kvviz import i18n
from kvviz.model.loading import BUNDLED_HYBRID
from support.browser import ARTIFACTS, assert_no_errors, close_tab, open_tab, wait_idle

pytestmark = pytest.mark.browser
METRIC_VALUES = """() => [...document.querySelectorAll('[data-testid="stMetricValue"]')].map(e => e.innerText)"""
SHOWN = """(shown) => [...document.querySelectorAll('[data-testid="stMetricValue"]')]
    .some(e => e.innerText.startsWith(shown))"""


def _said(lang: str, msgid: str, plural: str | None = None, n: int = 1, **fields) -> str:
    with i18n.language(lang):
        return (i18n.ngettext(msgid, plural, n) if plural else i18n._(msgid)).format(n=n, **fields)


def _kv_rows(tab, lang: str) -> int:
    """The K/V tile's rows: the metric value that ends as the stage writes "(grows)" in `lang`."""
    grows = _said(lang, "{n} row, {size} (grows)", "{n} rows, {size} (grows)", n=2, size="@").split("@", 1)[1]
    # drawn by the run after Prefill, which may end a moment after the strip shows
    tab.wait_for_function(f"(grows) => ({METRIC_VALUES})().some(v => v.endsWith(grows))", arg=grows, timeout=60_000)
    value = next(v for v in tab.evaluate(METRIC_VALUES) if v.endswith(grows))
    return int(re.match(r"(\d+)", value).group(1))


@pytest.mark.parametrize("lang", [i18n.ENGLISH, i18n.CHINESE])
@pytest.mark.parametrize("width,height,touch", [(1280, 720, False), (390, 844, True)], ids=["projector", "phone"])
def test_the_hybrid_steps_its_kv_grows_and_its_state_keeps_its_bytes(app_url, browser, lang, width, height, touch):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    tab = open_tab(
        browser,
        app_url,
        "step_through",
        lang=lang,
        query={"model": BUNDLED_HYBRID},
        width=width,
        height=height,
        has_touch=touch,
        is_mobile=touch,
        timeout_ms=120_000,
    )
    tab.locator(".st-key-step_btn_prefill button").click()
    tab.wait_for_selector(".kvviz-strip")
    wait_idle(tab)
    start = _kv_rows(tab, lang)
    state = _said(lang, "{size} (fixed)", size="66 KiB")
    assert state in tab.evaluate(METRIC_VALUES)
    for k in range(1, 6):
        tab.locator(".st-key-step_btn_next button").click()
        shown = _said(lang, "{n} row, {size} (grows)", "{n} rows, {size} (grows)", n=start + k, size=f"{start + k} KiB")
        tab.wait_for_function(SHOWN, arg=shown, timeout=60_000)
    wait_idle(tab)
    assert state in tab.evaluate(METRIC_VALUES)
    assert_no_errors(tab)
    tab.screenshot(path=str(ARTIFACTS / f"hybrid_stage_{lang}_{width}x{height}.png"))
    tab.locator(".st-key-step_layer button", has_text="L0").click()  # a linear-attention layer: its state
    tab.wait_for_function("() => document.querySelectorAll('.js-plotly-plot .heatmaplayer image').length >= 8")
    wait_idle(tab)
    assert state in tab.evaluate(METRIC_VALUES)
    assert _kv_rows(tab, lang) == start + 5
    assert_no_errors(tab)
    tab.screenshot(path=str(ARTIFACTS / f"hybrid_state_{lang}_{width}x{height}.png"))
    close_tab(tab)
