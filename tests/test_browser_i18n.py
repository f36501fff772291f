"""The app in a zh-CN browser, in headless Chromium at 1280x720.

A browser whose language is zh-CN gets Chinese without asking (Streamlit's st.context.locale), and the URL then
says so (?lang=zh-CN); an en-US browser gets English; ?lang=en in a zh-CN browser gives English back. A fresh
server's first visitor sees the page and nothing else; the language round trip keeps the page and the model. Every
page in Chinese, light and dark (no English sentence, nothing wider than the window), is checked in
tests/test_browser_every_page.py's sweeps; the CJK font comes from Debian's fonts-noto-cjk
(tests/install_and_run.sh installs it), and without it Chromium draws boxes.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import time

import pytest

from support.browser import (
    CHECKED_MODEL,
    assert_no_errors,
    busy_core,
    chromium,
    close_tab,
    fresh_server,
    new_tab,
    open_tab,
    wait_idle,
)

pytestmark = pytest.mark.browser
WIDTH, HEIGHT = 1280, 720
CJK = re.compile(r"[\u4e00-\u9fff]")
NAV = ".st-key-kvviz_nav"  # the sidebar's page links (sidebar.sidebar_navigation)
SIDEBAR = '[data-testid="stSidebar"]'
# A page drawn with its sidebar and the sidebar's page links (their component loads on its first use); the tab's
# other waits keep Playwright's own 30 s.
WITH_SIDEBAR = {
    "drawn": (SIDEBAR, f"{NAV} a"),
    "drawn_timeout_ms": 120_000,
    "timeout_ms": None,
    "width": WIDTH,
    "height": HEIGHT,
}


def test_a_cjk_font_is_installed_for_chromium():
    assert shutil.which("fc-list"), "fontconfig is missing"
    fonts = subprocess.run(["fc-list", ":lang=zh-cn", "family"], capture_output=True, text=True).stdout
    assert fonts.strip(), "no font covers zh-CN: install Debian's fonts-noto-cjk (tests/install_and_run.sh does)"


def test_the_browser_language_decides_and_lang_overrides(fresh_app_url):
    """The first visitor of this module's fresh server, with a busy core (so it reads the sidebar while a slow first
    visit could still flash Streamlit's legacy page list)."""
    with busy_core(), chromium() as browser:
        tab = open_tab(browser, fresh_app_url, locale="zh-CN", **WITH_SIDEBAR)
        assert "lang=zh-CN" in tab.url
        assert "从这里开始" in tab.locator(NAV).inner_text()
        close_tab(tab)
        tab = open_tab(browser, fresh_app_url, lang="en", locale="zh-CN", **WITH_SIDEBAR)
        assert "Start here" in tab.locator(NAV).inner_text()
        close_tab(tab)
        tab = open_tab(browser, fresh_app_url, locale="en-US", **WITH_SIDEBAR)
        assert "lang=en" in tab.url and "Start here" in tab.inner_text("body")
        # The switch: one click, every label follows, and the URL carries it.
        tab.locator('[data-testid="stSidebar"]').get_by_text("简体中文", exact=True).click()
        tab.wait_for_function("() => document.body.innerText.includes('从这里开始')", timeout=120_000)
        wait_idle(tab)
        assert "lang=zh-CN" in tab.url and "从这里开始" in tab.inner_text("body")
        tab.locator(NAV).get_by_text("显存预算").click()  # a page switch keeps it
        tab.wait_for_url("**/memory_budget**", timeout=120_000)
        wait_idle(tab)
        assert "memory_budget" in tab.url and "lang=zh-CN" in tab.url
        close_tab(tab)


# Sampled from the first load on: the script state Streamlit's client shows, the sidebar's navigation links, the
# main area's text.
FIRST_VISIT_SAMPLE = """() => {
    const app = document.querySelector('[data-testid="stApp"]');
    const main = document.querySelector('[data-testid="stMain"]');
    const side = document.querySelector('[data-testid="stSidebar"]');
    return {
        state: app ? app.getAttribute('data-test-script-state') : null,
        links: side ? [...side.querySelectorAll('a')].map(a => a.innerText.trim()) : [],
        title: main ? [...main.querySelectorAll('h1')].map(h => h.innerText.trim()).join(' ') : '',
        main: main ? main.innerText.trim().length : 0,
    };
}"""
# Streamlit's legacy pages/ list names the files: the router "app" and the helper "internals shared".
LEGACY_NAMES = {"app", "internals shared", "attention ops", "internals layout"}


def first_visit_samples(url: str, locale: str, every_s: float = 0.3, after_s: float = 2.0) -> list[dict]:
    """Open `url` as a fresh server's first visitor and sample the page every `every_s` from the first load until
    the page has drawn its title and the sidebar its links with the run finished, and `after_s` more. (The browser
    draws what the run sent after the run has finished: on a cold browser each kind of element first loads its
    code, so on a busy core the sidebar's links come a second or two after the title.)"""
    samples = []
    with chromium() as browser:
        tab = new_tab(browser, width=WIDTH, height=HEIGHT, timeout_ms=None, locale=locale, fresh=True)  # a cold browser
        tab.goto(url, wait_until="commit")
        start, done_at = time.monotonic(), None
        while time.monotonic() - start < 150 and (done_at is None or time.monotonic() - done_at < after_s):
            try:
                sample = tab.evaluate(FIRST_VISIT_SAMPLE)
            except Exception:  # noqa: BLE001 - the document is still being replaced on the first load
                sample = None
            if sample is not None:
                sample["t"] = round(time.monotonic() - start, 2)
                samples.append(sample)
                if done_at is None and sample["state"] == "notRunning" and sample["title"] and sample["links"]:
                    done_at = time.monotonic()
            tab.wait_for_timeout(int(every_s * 1000))
    return samples


def flashes(samples: list[dict]) -> list[dict]:
    """The samples a class must never see: Streamlit's legacy page list, or a finished run with no page drawn."""
    return [
        s
        for s in samples
        if LEGACY_NAMES & {link.lower() for link in s["links"]} or (s["state"] == "notRunning" and not s["title"])
    ]


@pytest.mark.parametrize("locale", ["en-US", "zh-CN"])
def test_a_fresh_servers_first_visitor_on_a_deep_link_sees_the_page_and_nothing_else(locale):
    """On a fresh server with a busy core, the first visitor of /attention_ops sees neither
    Streamlit's legacy page list nor a finished run with an empty page, in either language."""
    with busy_core(), fresh_server() as url:
        samples = first_visit_samples(f"{url}/attention_ops", locale)
    assert samples and samples[-1]["title"], samples[-3:]
    assert not flashes(samples), flashes(samples)[:3]
    expected = "计算量统计" if locale == "zh-CN" else "Count the work"
    assert any(expected in link for link in samples[-1]["links"]), samples[-1]["links"]


def _sidebar(tab):
    return tab.locator(SIDEBAR)


def _wait_checked_model(tab, expected: str) -> None:
    """The sidebar model radio shows `expected` checked, and only it (Streamlit draws each option as a label
    holding an input); fails with what it shows after a generous wait."""
    try:
        tab.wait_for_function(
            f"() => JSON.stringify(({CHECKED_MODEL})()) === JSON.stringify([{expected!r}])", timeout=30_000
        )
        tab.wait_for_timeout(1500)  # and it stays so after the next run
    except Exception:  # noqa: BLE001 - report what is shown instead of a timeout
        pass
    assert tab.evaluate(CHECKED_MODEL) == [expected]


def _switch_language(tab, name: str) -> None:
    _sidebar(tab).get_by_text(name, exact=True).click()
    tab.wait_for_function(
        "(n) => document.querySelector('[data-testid=\"stSidebar\"]').innerText.includes(n)",
        arg={"English": "Which model", "简体中文": "选择模型"}[name],
        timeout=120_000,
    )
    wait_idle(tab)


def test_the_language_round_trip_keeps_the_page_and_the_model():
    """A fresh server's first visitor, zh-CN browser, on the counting page with the GQA model:
    English, 简体中文, English. Never an error box (a translated picker's label, looked up in the other language,
    raises KeyError), the model radio shows the model in use in each language, and the model stays GQA."""
    with fresh_server() as url, chromium() as browser:
        tab = open_tab(browser, url, "attention_ops", locale="zh-CN", **WITH_SIDEBAR)
        _wait_checked_model(tab, "内置 Tiny-Shakespeare GPT-2（离线）")
        _sidebar(tab).get_by_text("内置 Tiny-Shakespeare Llama，GQA（离线）", exact=True).click()
        tab.wait_for_function("() => location.search.includes('model=bundled-gqa')", timeout=120_000)
        wait_idle(tab)
        _wait_checked_model(tab, "内置 Tiny-Shakespeare Llama，GQA（离线）")
        for name, expected in [
            ("English", "Bundled Tiny-Shakespeare Llama, GQA (offline)"),
            ("简体中文", "内置 Tiny-Shakespeare Llama，GQA（离线）"),
            ("English", "Bundled Tiny-Shakespeare Llama, GQA (offline)"),
        ]:
            _switch_language(tab, name)
            assert_no_errors(tab)
            _wait_checked_model(tab, expected)
            assert "model=bundled-gqa" in tab.url, tab.url
        close_tab(tab)


def test_the_language_switch_is_at_the_top_of_the_sidebar_at_1280x720(app_url, browser):
    """The switch is in view at 720 px, above the page links, in both languages."""
    for locale, first_page in [("en-US", "Lesson"), ("zh-CN", "课程")]:
        tab = open_tab(browser, app_url, "memory_budget", locale=locale, **WITH_SIDEBAR)
        switch = _sidebar(tab).get_by_text("简体中文", exact=True).bounding_box()
        link = _sidebar(tab).get_by_role("link", name=first_page).bounding_box()
        assert switch is not None and link is not None
        assert switch["y"] >= 0 and switch["y"] + switch["height"] <= HEIGHT, switch
        assert switch["y"] < link["y"], (switch, link)
        close_tab(tab)


def _summary_row(tab, step: int) -> list[str]:
    return tab.evaluate(
        """(n) => {
        const row = [...document.querySelectorAll('[data-testid="stMain"] table tbody tr')]
            .find(r => r.cells[0] && r.cells[0].innerText.trim() === String(n));
        return row ? [...row.cells].map(c => c.innerText.trim()) : [];
    }""",
        step,
    )


def test_the_lessons_ending_keeps_what_was_computed_in_the_other_language(app_url, browser):
    """Step 2 asked in English, the ending reached in English, then 简体中文 and back: the ending
    stays the ending and the computed answer stays in its table in each language."""
    tab = open_tab(browser, app_url, "lesson", query={"step": "2"}, locale="en-US", **WITH_SIDEBAR)
    tab.wait_for_selector(
        '[data-testid="stMain"] :is([data-testid="stTextInput"], [data-testid="stNumberInput"], '
        '[data-testid="stRadio"])',
        timeout=120_000,
    )  # step 2's question is up
    wait_idle(tab)
    tab.locator('[data-testid="stMain"] [data-testid="stButtonGroup"]').get_by_text("End", exact=True).click()
    tab.wait_for_selector('[data-testid="stMain"] table', timeout=120_000)
    wait_idle(tab)
    row = _summary_row(tab, 2)
    assert row and row[-1] != "—", row
    for name, heading in [("简体中文", "你学到了什么"), ("English", "What you learned")]:
        _switch_language(tab, name)
        tab.wait_for_function(
            "(h) => document.querySelector('[data-testid=\"stMain\"]').innerText.includes(h)",
            arg=heading,
            timeout=120_000,
        )
        assert_no_errors(tab)
        again = _summary_row(tab, 2)
        assert again and again[-1] == row[-1], (name, again, row)


def test_html_lang_follows_the_pages_language(app_url, browser):
    """WCAG 3.1.1: Streamlit writes <html lang="en"> on every page; a Chinese page says zh, and the
    switch to English says en again."""
    tab = open_tab(browser, app_url, "attention_ops", lang="zh-CN", locale="zh-CN", **WITH_SIDEBAR)
    tab.wait_for_function("() => document.documentElement.lang.startsWith('zh')", timeout=60_000)
    _switch_language(tab, "English")
    tab.wait_for_function("() => document.documentElement.lang === 'en'", timeout=60_000)
    _switch_language(tab, "简体中文")
    tab.wait_for_function("() => document.documentElement.lang === 'zh-CN'", timeout=60_000)
    assert tab.locator(".st-key-kvviz_hidden_document_language").bounding_box() is None  # hidden: takes no room
