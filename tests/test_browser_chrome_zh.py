"""Plotly's and Streamlit's own words on a Chinese page, in headless Chromium: the words they let a page set are
Chinese (plotly's mode bar through its locale, the multiselect's placeholder); what they do not (Streamlit's
Fullscreen button on the mode bar, the file uploader's Upload and size line) is listed in the README."""

from __future__ import annotations

import pytest

from support.browser import assert_no_errors, close_tab, open_tab

pytestmark = pytest.mark.browser

# Every mode bar button's title and the multiselect's placeholder, as the browser draws them.
READ_CHROME = """() => ({
    titles: [...document.querySelectorAll('.modebar-btn')].map(b => b.getAttribute('data-title')),
    placeholders: [...document.querySelectorAll('[data-testid="stMultiSelect"] input')]
        .map(i => i.getAttribute('placeholder') || ''),
    shown: document.querySelector('[data-testid="stMultiSelect"]')?.innerText || '',
})"""


def test_the_mode_bar_and_the_placeholder_speak_chinese(app_url, browser):
    tab = open_tab(
        browser,
        app_url,
        "memory_budget",
        lang="zh-CN",
        locale="zh-CN",
        drawn=("h1", ".modebar-btn", '[data-testid="stMultiSelect"]'),
        drawn_timeout_ms=120_000,
    )
    chrome = tab.evaluate(READ_CHROME)
    titles = [t for t in chrome["titles"] if t not in ("Fullscreen", "Close fullscreen")]  # Streamlit's own
    assert titles and "下载图表（PNG 图片）" in titles and "自动缩放" in titles, chrome["titles"]
    assert not [t for t in titles if t.isascii()], chrome["titles"]
    assert "Choose" not in chrome["shown"] and "请选择" in chrome["shown"] + "".join(chrome["placeholders"]), chrome
    assert_no_errors(tab)
    close_tab(tab)
