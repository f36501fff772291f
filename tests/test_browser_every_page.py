"""Every page, visited once per language and colour scheme, with every check that reads a page as first drawn: axe's
accessibility scan, the Chinese page's words and fit, and the charts' readability. One visit per page serves all the
checks that apply to its sweep (the scans had each visited every page on their own: six sweeps, now four). A sweep
opens its first page by its link and goes on by the sidebar's links, in one session, as a student goes through the
app (support.browser.follow_page_link; a page's link and its state after clicks are tested elsewhere).

- **Accessibility** (en/light and zh-CN/dark: both languages and both themes): axe-core scans every page at 1280x720
  after its first run. The scan and its rules (axe's WCAG 2.0/2.1 A and AA rules plus its best-practice rules; a
  serious or critical violation fails unless support.axe.ALLOWED names it, and so does heading-order) live in
  tests/support/axe.py, which tests/test_browser_axe_states.py shares (the states a class reaches after clicks). What
  axe cannot judge (a chart's meaning, colour alone, keyboard flow, 200% zoom) is tested elsewhere or said in
  docs/teaching.md.
- **Chinese** (zh-CN, light and dark, in a zh-CN browser with the sidebar shown): no English sentence in what the page
  shows (the page's words, scanned as the AppTest check does), nothing wider than the window, every button's label
  inside its button. Screenshots of every page go to $KVVIZ_SCREENSHOTS (default /tmp/kvviz_zh) to be looked at; the
  CJK font comes from Debian's fonts-noto-cjk (tests/install_and_run.sh installs it), and without it Chromium draws
  boxes.
- **Charts readable from the back of a room** (English, light and dark): each chart tab opened and the buttons that
  draw a page's charts pressed (after the other checks: they change the page), then the rendered plotly SVG read:
  every tick label's font size is at least kvviz.figures.MIN_TICK_FONT_PX (the constant the figures use), a legend
  lists at most MAX_LEGEND_ENTRIES entries, and no metric tile's label or value is cut off (its text wider than its
  box).
"""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

import pytest

from kvviz.figures import MAX_LEGEND_ENTRIES, MIN_TICK_FONT_PX
from support import axe
from support.browser import PAGES, assert_no_errors, choose_tab, follow_page_link, goto_drawn, new_tab, wait_idle
from support.i18n_text import ALLOWED, english_leftovers

pytestmark = pytest.mark.browser
WIDTH, HEIGHT = 1280, 720
ALL_PAGES = ["", "step_through", "glossary", "teachers", *PAGES]  # "" is the home page; axe and Chinese: all
CHART_PAGES = ["", *PAGES]  # the pages whose charts are read
SHOTS = Path(os.environ.get("KVVIZ_SCREENSHOTS") or Path(tempfile.gettempdir()) / "kvviz_zh")
CJK = re.compile(r"[\u4e00-\u9fff]")
NAV = ".st-key-kvviz_nav"  # the sidebar's page links (sidebar.sidebar_navigation)
SIDEBAR = '[data-testid="stSidebar"]'

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


# What a reader reads as the page's own words: every text node outside code (the model's English output and the
# prompts are shown as code or typed into text boxes), scripts and styles.
READ_WORDS = """() => {
    const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    const lines = [];
    while (walker.nextNode()) {
        const node = walker.currentNode;
        if (node.parentElement.closest('code, pre, textarea, script, style, noscript')) continue;
        if (node.textContent.trim()) lines.push(node.textContent.trim());
    }
    return lines;
}"""
# Streamlit's own interface text, which it does not translate (its accessibility link, its file uploader).
STREAMLIT_OWN = ("Skip to main content", "Drag and drop file here", "Limit 200MB per file")

# Wider than the window, or a button whose label does not fit inside it.
READ_OVERFLOW = """() => ({
    page: document.documentElement.scrollWidth - window.innerWidth,
    buttons: [...document.querySelectorAll('button')]
        .filter(b => b.offsetParent !== null && b.innerText.trim() && b.scrollWidth > b.clientWidth + 2)
        .map(b => b.innerText.trim()),
})"""


def _chinese_problems(tab, path: str, scheme: str) -> tuple | None:
    """The Chinese page's faults as a reader sees them (English left over, wider than the window, a button's label
    past its edge), or None; its screenshot saved to SHOTS."""
    tab.screenshot(path=str(SHOTS / f"{path or 'home'}_{scheme}.png"))
    assert CJK.search(tab.inner_text("body")), path
    left = english_leftovers(tab.evaluate(READ_WORDS), (*ALLOWED, *STREAMLIT_OWN))
    overflow = tab.evaluate(READ_OVERFLOW)
    return (path, left[:5], overflow) if left or overflow["page"] > 0 or overflow["buttons"] else None


def _charts(tab, path: str, drawn: dict[str, int]) -> None:
    """The page's charts, and each chart tab's, read after the buttons that draw them are pressed."""
    _prepare(tab, path)
    drawn[path] = _check_charts(tab, path or "home", path in MUST_DRAW)
    for name in TABS.get(path, []):
        choose_tab(tab, name)
        drawn[f"{path}/{name}"] = _check_charts(tab, f"{path}, tab {name}", f"{path}/{name}" in MUST_DRAW)


# (language, colour scheme, the checks its sweep makes on each page)
SWEEPS = [
    ("en", "light", ("axe", "charts")),
    ("en", "dark", ("charts",)),
    ("zh-CN", "light", ("chinese",)),
    ("zh-CN", "dark", ("axe", "chinese")),
]


@pytest.mark.parametrize("lang, scheme, checks", SWEEPS, ids=[f"{lang}-{scheme}" for lang, scheme, _ in SWEEPS])
def test_every_page_in_each_language_and_scheme(app_url, browser, lang, scheme, checks):
    """Each page of the sweep as first drawn (with the sidebar and its links on a Chinese page), then each check:
    axe, the Chinese words and fit, the charts (they press buttons, so last)."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    chinese = "chinese" in checks
    tab = new_tab(
        browser,
        width=WIDTH,
        height=HEIGHT,
        timeout_ms=120_000,
        color_scheme=scheme,
        **({"locale": lang} if chinese else {}),
    )
    pages = [p for p in ALL_PAGES if ({"axe", "chinese"} & set(checks)) or p in CHART_PAGES]
    failing_axe, chinese_problems, drawn = {}, [], {}
    for n, path in enumerate(pages):
        if n == 0:  # the sweep's first page by its link, the others by the sidebar's links, as a student goes
            goto_drawn(
                tab,
                app_url,
                path,
                lang=lang,
                drawn=(SIDEBAR, f"{NAV} a") if chinese else (),
                drawn_timeout_ms=120_000,
                settle=axe.settle,
            )
        else:
            follow_page_link(tab, path, settle=axe.settle)
        assert_no_errors(tab)
        if chinese and (problem := _chinese_problems(tab, path, scheme)):
            chinese_problems.append(problem)
        if "axe" in checks and (bad := axe.failing_now(tab)):  # a node seen while drawing is looked at again
            failing_axe[path or "home"] = bad
        if "charts" in checks and path in CHART_PAGES:
            _charts(tab, path, drawn)
            assert_no_errors(tab)
    assert not failing_axe, failing_axe
    assert not chinese_problems, chinese_problems
    if "charts" in checks:
        assert all(drawn[path] > 0 for path in MUST_DRAW), drawn
