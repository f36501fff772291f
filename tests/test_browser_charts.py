"""Every chart readable from the back of a room, in a real browser at 1280x720.

Visits every page, opens each chart tab and presses the buttons that draw a page's charts, then reads the rendered
plotly SVG: every tick label's font size is at least kvviz.figures.MIN_TICK_FONT_PX (the constant the figures
use), a legend lists at most MAX_LEGEND_ENTRIES entries, and no metric tile's label or value is cut off
(its text wider than its box). Light and dark colour schemes alike (Streamlit follows the system's).
"""

from __future__ import annotations

import pytest

from kvviz.figures import MAX_LEGEND_ENTRIES, MIN_TICK_FONT_PX
from support.browser import PAGES, assert_no_errors, choose_tab, goto_drawn, new_tab, wait_idle

pytestmark = pytest.mark.browser
WIDTH, HEIGHT = 1280, 720

# Per page: tabs to open (each draws its own charts) and buttons to press first (results drawn on request).
TABS = {
    "attention_ops": ["Cumulative", "Ratio", "Per component", "Per pass"],
    "memory_budget": ["Size vs context", "Per layer", "Paged vs flat"],
}
BUTTONS = {
    "internals_prefix": ["Prefill both and compare"],
    "speedup": ["Run benchmark"],
}
SETUP = {  # widgets to set before pressing (a tiny benchmark: seconds, not a minute)
    "speedup": {"Prompt tokens": "4", "New tokens": "5", "Rounds": "1"},
}

# The rendered SVG: tick labels of every axis (subplots and colour bars too), legend entries, per chart.
READ_CHARTS = """() => [...document.querySelectorAll('.js-plotly-plot')].map(plot => ({
    ticks: [...plot.querySelectorAll('.xaxislayer-above text, .yaxislayer-above text, .cbaxis text')]
        .filter(t => t.textContent.trim())
        .map(t => ({text: t.textContent, px: parseFloat(getComputedStyle(t).fontSize)})),
    legend: plot.querySelectorAll('g.legend g.traces').length,
    title: (plot.querySelector('.gtitle') || {}).textContent || '',
}))"""
# A metric tile's label or value cut off: its text is wider than the box that shows it.
READ_CLIPPED = """() => [...document.querySelectorAll(
        '[data-testid="stMetricLabel"] *, [data-testid="stMetricValue"] *')]
    .filter(e => e.children.length === 0 && e.textContent.trim() && e.scrollWidth > e.clientWidth + 1)
    .map(e => e.textContent)"""


def _prepare(tab, path: str) -> None:
    for label, value in SETUP.get(path, {}).items():
        tab.get_by_label(label, exact=True).fill(value)
    for name in BUTTONS.get(path, []):
        tab.get_by_role("button", name=name).first.click()
        wait_idle(tab)


# Pages and tabs that must draw at least one chart (on load, or after the button above): the check saw real charts.
MUST_DRAW = {
    "attention_patterns",
    "internals_prefix",
    "speedup",
    "attention_ops/Per component",
    "memory_budget/Size vs context",
    "internals_speculative",
    "internals_quant",
    "internals_window",
}


def _check_charts(tab, where: str, must_draw: bool) -> int:
    if must_draw:  # plotly draws after the script run ends
        tab.wait_for_selector(".js-plotly-plot .xaxislayer-above text", timeout=120_000)
    tab.wait_for_timeout(600)
    charts = tab.evaluate(READ_CHARTS)
    for chart in charts:
        small = [t for t in chart["ticks"] if t["px"] < MIN_TICK_FONT_PX]
        assert not small, f"{where}, chart {chart['title']!r}: tick labels below {MIN_TICK_FONT_PX} px: {small[:5]}"
        assert chart["legend"] <= MAX_LEGEND_ENTRIES, f"{where}, chart {chart['title']!r}: {chart['legend']} entries"
    clipped = tab.evaluate(READ_CLIPPED)
    assert not clipped, f"{where}: metric text cut off: {clipped}"
    return len(charts)


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_every_chart_is_readable_at_1280x720(app_url, browser, scheme):
    drawn = {}
    tab = new_tab(browser, width=WIDTH, height=HEIGHT, timeout_ms=120_000, color_scheme=scheme)
    for path in ["", *PAGES]:
        goto_drawn(tab, app_url, path)
        _prepare(tab, path)
        drawn[path] = _check_charts(tab, path or "home", path in MUST_DRAW)
        for name in TABS.get(path, []):
            choose_tab(tab, name)
            drawn[f"{path}/{name}"] = _check_charts(tab, f"{path}, tab {name}", f"{path}/{name}" in MUST_DRAW)
        assert_no_errors(tab)
    assert all(drawn[path] > 0 for path in MUST_DRAW), drawn
