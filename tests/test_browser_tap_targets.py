"""A phone's tap targets (headless Debian Chromium at 390x844, touch): every button, pill, segment and page link a
student taps on the lesson (its glossary chips too), the stage, the glossary and the join page is at least 44x44 px
(WCAG 2.5.5; Apple and Google ask 44-48), and the lesson's step picker's numbers are not packed edge to edge.
"""

from __future__ import annotations

import pytest

from support.browser import close_tab, open_tab, wait_settled

pytestmark = pytest.mark.browser
PHONE = {"width": 390, "height": 844, "is_mobile": True, "has_touch": True, "device_scale_factor": 2}
# Each visible button of the main column, and each page link (the lesson's glossary chips): its label (or test id)
# and its size in CSS pixels. A chart's toolbars (plotly's mode bar, Streamlit's fullscreen and download, shown over
# the chart) are left out: grown, they covered the chart's title (tests/test_browser_layout.py).
TARGETS = """() => [...document.querySelectorAll('[data-testid="stMain"] button, [data-testid="stMain"] [data-testid="stPageLink"] a')]
    .filter(b => !b.closest('[data-testid="stElementToolbar"], .modebar'))
    .filter(b => b.getClientRects().length && getComputedStyle(b).visibility !== 'hidden')
    .map(b => { const r = b.getBoundingClientRect();
                return [(b.innerText || b.getAttribute('aria-label') || b.dataset.testid || '').trim().slice(0, 30),
                        Math.round(r.width * 10) / 10, Math.round(r.height * 10) / 10]; })"""
PAGES = [
    ("lesson", {"step": "2"}, ".st-key-step"),
    ("step_through", {"prompt": "ROMEO:", "steps": "2"}, ".kvviz-strip"),
    ("glossary", {}, "h1"),
    ("join", {}, "input"),
]


@pytest.mark.parametrize("path, query, drawn", PAGES, ids=[p[0] for p in PAGES])
def test_every_tap_target_on_a_phone_is_at_least_44_px(app_url, browser, path, query, drawn):
    tab = open_tab(browser, app_url, path, lang="en", query=query, drawn=(drawn,), **PHONE)
    wait_settled(tab, timeout_ms=120_000)
    targets = tab.evaluate(TARGETS)
    assert targets, "no button found"
    small = [t for t in targets if t[1] < 44 or t[2] < 44]
    assert not small, small
    close_tab(tab)
