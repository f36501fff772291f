"""Accessibility: axe-core scans every page of the app at 1280x720 after its first run, in English with
the light theme and in Chinese with the dark theme (the two languages and the two themes, each page scanned twice).

The scan and its rules (axe's WCAG 2.0/2.1 A and AA rules plus its best-practice rules; a serious or critical
violation fails unless support.axe.ALLOWED names it, and so does heading-order) live in tests/support/axe.py, which
tests/test_browser_axe_states.py shares (the states a class reaches after clicks). What axe cannot judge (a chart's
meaning, colour alone, keyboard flow, 200% zoom) is tested elsewhere or said in docs/teaching.md.
"""

from __future__ import annotations

import pytest

from support import axe
from support.browser import PAGES, goto_drawn, new_tab

pytestmark = pytest.mark.browser
ALL_PAGES = ["", "step_through", "glossary", "teachers", *PAGES]  # "" is the home page


@pytest.mark.parametrize("lang, scheme", [("en", "light"), ("zh-CN", "dark")])
def test_every_page_passes_axe(app_url, browser, lang, scheme):
    failing = {}
    tab = new_tab(browser, width=1280, height=720, timeout_ms=120_000, color_scheme=scheme)
    for path in ALL_PAGES:
        goto_drawn(tab, app_url, path, lang=lang, drawn=(), settle=axe.settle)
        if bad := axe.failing_now(tab):  # a node seen while the page was still drawing is looked at again
            failing[path or "home"] = bad
    assert not failing, failing
