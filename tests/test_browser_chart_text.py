"""Charts for those who cannot see them, in a real browser: a chart's text drawn as an element of its own
(kvviz.ui.screen_reader_text) is in the page for a screen reader, yet takes no room on screen: its element is out of
the page's flow (kvviz.ui.READABLE_CSS), 1 px and clipped, so the page keeps the layout it had without it."""

from __future__ import annotations

import pytest

from support.browser import assert_no_errors, wait_idle

pytestmark = pytest.mark.browser

# Each hidden chart text on the page: its text, and its element container's box and position.
READ_HIDDEN = """() => [...document.querySelectorAll('.kvviz-sr-only')].map(e => {
    const box = e.closest('[data-testid="stElementContainer"]');
    const r = box.getBoundingClientRect();
    return {text: e.textContent, position: getComputedStyle(box).position, width: r.width, height: r.height};
})"""


def test_the_memory_pages_chart_texts_are_in_the_page_and_take_no_room(page, app_url):
    page.goto(f"{app_url}/memory_budget?mem_preset=gemma-3-4b")
    page.wait_for_selector("h1")
    wait_idle(page)
    page.wait_for_selector(".js-plotly-plot")
    assert_no_errors(page)
    hidden = page.evaluate(READ_HIDDEN)
    assert len(hidden) == 3, hidden  # size vs context, per layer, paged vs flat (the first four tabs always run)
    assert hidden[0]["text"].startswith("Chart: KV cache size against context length")
    for h in hidden:
        assert h["position"] == "absolute" and h["width"] <= 1 and h["height"] <= 1, h
