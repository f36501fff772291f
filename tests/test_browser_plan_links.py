"""The For teachers plan's links as a teacher opens them (headless Debian Chromium): every link names its page (a
new tab resolves it to that page, "Start here" included), and Ctrl+click or a middle click opens the page in a new
tab while the plan's tab stays where it is, as a browser's own links do.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest

from kvviz.teaching import guide
from support.browser import close_tab, open_tab, wait_settled

pytestmark = pytest.mark.browser
PLAN_LINKS = '[role="tabpanel"]:visible [data-testid="stPageLink"] a'


def _teachers(app_url: str, browser):
    tab = open_tab(browser, app_url, "teachers", lang="en", drawn=(PLAN_LINKS,))
    wait_settled(tab, timeout_ms=60_000)
    return tab


def test_every_plan_link_names_its_page(app_url, browser):
    tab = _teachers(app_url, browser)
    links = tab.locator(PLAN_LINKS)
    assert links.count() == len(guide.PLAN_30)
    for index, block in enumerate(guide.PLAN_30):
        resolved = links.nth(index).evaluate("(a) => a.href")  # as a new tab would open it
        assert urlsplit(resolved).path == urlsplit(block.link).path, (block.link, resolved)
    close_tab(tab)


@pytest.mark.parametrize("how", ["ctrl", "middle"])
def test_a_plan_link_opens_a_new_tab_and_the_plan_stays(app_url, browser, how):
    tab = _teachers(app_url, browser)
    start_here = tab.locator(PLAN_LINKS).first  # row 1: Start here, the app's root
    with tab.context.expect_page() as opened:
        if how == "ctrl":
            start_here.click(modifiers=["Control"])
        else:
            start_here.click(button="middle")
    new = opened.value
    new.wait_for_load_state()
    assert urlsplit(new.url).path == "/", new.url
    new.locator("h1").first.wait_for()
    assert new.locator("h1").first.inner_text().strip() != "For teachers"
    tab.wait_for_timeout(1000)  # a click Streamlit handled would move this tab now
    assert urlsplit(tab.url).path == "/teachers", tab.url
    assert tab.get_by_text("Running it for a class").count() == 1
    close_tab(tab)
