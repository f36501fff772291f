"""Screen-reader labels on Chinese pages (headless Debian Chromium): Streamlit writes its own aria-labels in English
(the number box's Increment and Decrement, Open, the sidebar's, "Shortcut P" ...); kvviz.ui.language draws
streamlit_labels.js, which puts the page's words there. No English label of that list is left on a Chinese page,
and an English page keeps Streamlit's own.
"""

from __future__ import annotations

import pytest

from kvviz.ui.language import STREAMLIT_LABELS
from support.browser import close_tab, open_tab, wait_settled

pytestmark = pytest.mark.browser
LABELS = """() => [...document.querySelectorAll('[aria-label]')].map(e => e.getAttribute('aria-label'))"""


@pytest.mark.parametrize("path", ["memory_budget", "step_through"])
def test_streamlits_own_labels_speak_chinese_on_a_chinese_page(app_url, browser, path):
    tab = open_tab(browser, app_url, path, lang="zh-CN")
    wait_settled(tab, timeout_ms=120_000)
    tab.wait_for_timeout(500)
    labels = tab.evaluate(LABELS)
    english = [label for label in labels if label in STREAMLIT_LABELS or label.startswith("Shortcut ")]
    assert not english, english
    assert any(label in ("增加", "收起侧边栏") or label.startswith("快捷键") for label in labels), labels
    close_tab(tab)
    english_tab = open_tab(browser, app_url, path, lang="en")
    wait_settled(english_tab, timeout_ms=120_000)
    assert "Collapse sidebar" in english_tab.evaluate(LABELS)
    close_tab(english_tab)
