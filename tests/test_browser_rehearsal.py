"""A scripted rehearsal of both teaching plans in Chromium at 1280x720. From the For teachers page, every
block's link is clicked (one session per plan, as a teacher's browser keeps one), the state its row describes is
checked, and each action the row names is done: class mode's reveal (V) and the room's mark (Y/N) with Right to go
on, Prefill (P) then Next token (Right) on the step page, the attention patterns' head, the memory page's answer,
the summary's room score. Back to the For teachers page through the browser's history (same session). Screenshots
under test-artifacts/rehearsal/.
"""

from __future__ import annotations

import contextlib
import re

import pytest

from kvviz import memory
from kvviz.memory.presets import get_preset
from kvviz.teaching import guide, lesson
from support.browser import ARTIFACTS as ALL_ARTIFACTS
from support.browser import (
    assert_no_errors,
    cache_length,
    choose_tab,
    close_tab,
    new_tab,
    page_url,
    wait_cache_length,
    wait_settled,
)

pytestmark = pytest.mark.browser
ARTIFACTS = ALL_ARTIFACTS / "rehearsal"
N = len(lesson.STEPS)
MISSED = {2}  # the room misses step 2 (the plan's pitfall: counting positions from 1)


def _settled(tab) -> None:
    wait_settled(tab, timeout_ms=120_000)


def _lesson_block(tab, first: int, last: int) -> None:
    """Class mode from `first` to `last`: V reveals, Y/N marks the room, Right goes on."""
    for number in range(first, last + 1):
        tab.get_by_text(f"Step {number} of {N}").first.wait_for()
        _settled(tab)
        assert tab.locator(".st-key-lesson_class input").is_checked()  # class mode
        assert tab.locator('[data-testid="stNumberInput"]').count() == 0  # nothing to type
        tab.keyboard.press("v")
        tab.locator(f".st-key-lesson_mark_{number}").wait_for()
        tab.keyboard.press("n" if number in MISSED else "y")
        tab.get_by_text("Marked for the room").first.wait_for()
        _settled(tab)
        assert_no_errors(tab)
        if number < last:
            tab.keyboard.press("ArrowRight")


def _check_block(tab, block: guide.Block, plan: str, index: int, done: set[int]) -> None:
    """The state the row describes, and the actions it names."""
    shot = str(ARTIFACTS / f"{plan}_{index}_{block.page.file.split('/')[-1][:-3]}.png")
    if block.page.file == "pages/home.py":
        tab.wait_for_selector("h1")
        _settled(tab)
    elif block.page.file == "pages/lesson.py" and "step=End" in block.link:
        tab.get_by_text("What you learned").wait_for()
        _settled(tab)
        right = len(done - MISSED)
        assert f"{right} of {N}" in tab.locator('[data-testid="stMetric"]').first.inner_text()  # the room's score
        table = tab.locator('[data-testid="stTable"]').inner_text()
        assert table.count("not answered") == N - len(done)
    elif block.page.file == "pages/lesson.py":
        first = int(re.search(r"step=(\d+)", block.link).group(1))
        last = {1: 6, 7: 9 if plan == "30" else 12}[first]
        tab.get_by_text(f"Step {first} of {N}").first.wait_for()
        assert not tab.locator('[data-testid="stSidebar"]').is_visible()  # class mode hides the sidebar
        _lesson_block(tab, first, last)
        done.update(range(first, last + 1))
    elif block.page.file == "pages/step_through.py":
        tab.locator(".st-key-step_btn_prefill").wait_for()
        _settled(tab)
        assert tab.locator(".st-key-step_present input").is_checked()  # presenter mode
        assert not tab.locator('[data-testid="stSidebar"]').is_visible()
        assert tab.locator('[data-testid="stMetric"]', has_text="Cache length").count() == 0  # empty: P shows it all
        tab.keyboard.press("p")
        tab.locator('[data-testid="stMetric"]', has_text="Cache length").wait_for()
        _settled(tab)
        start = cache_length(tab)
        assert start >= 2
        for k in (1, 2):
            tab.keyboard.press("ArrowRight")
            wait_cache_length(tab, start + k)
        _settled(tab)
    elif block.page.file == "pages/attention_patterns.py":
        tab.get_by_text("Named patterns in this layer").wait_for()
        _settled(tab)
        shown = _pickers_shown(tab, ("pat_source", "pat_layer", "pat_head"), "Repeat a pattern")
        assert "Repeat a pattern" in shown["pat_source"], shown
        assert re.search(r"\b3$", shown["pat_layer"]) and re.search(r"\b1$", shown["pat_head"]), shown
        rows = tab.locator('[data-testid="stTable"] tbody tr')
        assert "copies most here" in rows.nth(1).inner_text()  # head 1: the lesson's copying head
        assert "None" not in tab.locator('[data-testid="stTable"]').inner_text()
        tab.get_by_text("Head 1, large").wait_for()
    elif block.page.file == "pages/memory_budget.py":
        tab.get_by_text("The cache outweighs the weights from").wait_for()
        _settled(tab)
        llama = get_preset("llama-3-8b")
        crossing = llama.n_params * 2 // memory.kv_bytes(llama.kv, 1) + 1
        assert f"{crossing:,} tokens" in tab.get_by_text("The cache outweighs the weights from").inner_text()
        _answer_in_view(tab)
        assert tab.locator('[data-testid="stMetric"]', has_text="Total: 8,192 tokens").count() == 1
        assert tab.get_by_role("tab", name="What fits").get_attribute("aria-selected") == "true"
    else:
        raise AssertionError(block.page.name)
    assert_no_errors(tab)
    tab.screenshot(path=shot)


PICKER_TEXT = "e => (e.innerText + ' ' + [...e.querySelectorAll('input')].map(i => i.value).join(' ')).trim()"


def _pickers_shown(tab, keys: tuple[str, ...], first_shows: str) -> dict[str, str]:
    """What each keyed picker shows (its label and value), read once the first shows `first_shows` or after 30 s:
    a finished run's elements are drawn by the browser after the run, and a picker can be read between its
    mounting and its value (an empty first picker beside filled ones)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    with contextlib.suppress(PlaywrightTimeout):  # the caller's assertion says what is shown
        tab.wait_for_function(
            f"""(text) => {{ const e = document.querySelector('.st-key-{keys[0]}');
            return !!e && ({PICKER_TEXT})(e).includes(text); }}""",
            arg=first_shows,
            timeout=30_000,
        )
    return {key: tab.locator(f".st-key-{key}").evaluate(PICKER_TEXT) for key in keys}


def _answer_in_view(tab) -> None:
    """The memory block's answer (where the cache outweighs the weights) on screen at 1280x720."""
    tab.wait_for_function(
        """() => { const e = [...document.querySelectorAll('[data-testid="stMarkdownContainer"]')]
        .find(e => e.innerText.startsWith('The cache outweighs the weights from'));
        const r = e && e.getBoundingClientRect(); return !!r && r.top >= 0 && r.bottom <= innerHeight; }""",
        timeout=30_000,
    )


def test_the_memory_link_opened_in_a_fresh_browser_shows_its_answer(app_url, browser):
    """The plan's memory link, shared and opened in a fresh browser at 1280x720: the model's inputs fill the
    screen, so the What fits tab and the answer were below the fold; the link lands on the tab."""
    link = next(b.link for b in guide.PLAN_45 if b.page.file == "pages/memory_budget.py")
    tab = new_tab(browser)
    tab.goto(f"{app_url}{link}")  # the plan's link as printed: a path and its query
    tab.get_by_text("The cache outweighs the weights from").wait_for(state="attached")
    _answer_in_view(tab)
    tab.screenshot(path=str(ARTIFACTS / "memory_link_fresh_browser.png"))


def _back_to(tab, entry: int) -> None:
    """Back through the entries a block pushed, to history entry `entry` (For teachers), in the same session. A page
    can still be writing its state into the URL when the block is checked: an entry it pushes after the count is gone
    back over too."""
    for _ in range(3):
        back = tab.evaluate("navigation.currentEntry.index") - entry
        if back <= 0:
            return
        tab.evaluate(f"history.go(-{back})")
        tab.wait_for_function("(entry) => navigation.currentEntry.index <= entry", arg=entry, timeout=30_000)
        _settled(tab)
    assert tab.evaluate("navigation.currentEntry.index") == entry


def _rehearse(browser, url: str, plan_name: str, plan: tuple[guide.Block, ...]) -> None:
    tab = new_tab(browser, timeout_ms=180_000, color_scheme="light")
    tab.goto(page_url(url, "teachers"))
    tab.get_by_text("Running it for a class").wait_for()
    done: set[int] = set()
    for index, block in enumerate(plan):
        tab.get_by_text("Running it for a class").wait_for()
        _settled(tab)
        choose_tab(tab, f"{plan_name} minutes")
        at_teachers = tab.evaluate("navigation.currentEntry.index")
        panel = tab.locator('[role="tabpanel"]:visible')
        links = panel.locator('[data-testid="stPageLink"] a')
        assert links.count() == len(plan)
        link = links.nth(index)
        assert (
            link.get_by_test_id("stMarkdownContainer").inner_text().strip() == block.link
        )  # as printed, beside its icon
        link.click()
        _check_block(tab, block, plan_name, index, done)
        _back_to(tab, at_teachers)
    close_tab(tab)


@pytest.mark.parametrize("plan_name", ["30", "45"])
def test_the_teaching_plan_rehearsed_link_by_link(app_url, plan_name, browser):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    plan = guide.PLAN_30 if plan_name == "30" else guide.PLAN_45
    _rehearse(browser, app_url, plan_name, plan)


def _chosen_plan(tab) -> str:
    tab.get_by_text("Running it for a class").wait_for()
    _settled(tab)
    return tab.locator('[role="tab"][aria-selected="true"]').inner_text().strip()


def test_the_chosen_plan_stays_chosen_after_its_page_and_a_link_chooses_it(app_url, browser):
    """A substitute following the 45-minute plan comes back to For teachers from a plan's page and must read the
    45-minute row next, not the 30-minute tab's. Chosen, the plan stays chosen through the sidebar's link back; a
    link (?teach_plan=) chooses it in a fresh browser. The plan's links are drawn as links, not code snippets."""
    tab = new_tab(browser, timeout_ms=180_000)
    tab.goto(page_url(app_url, "teachers"))
    assert _chosen_plan(tab) == "30 minutes"
    choose_tab(tab, "45 minutes")
    link = tab.locator('[role="tabpanel"]:visible [data-testid="stPageLink"] a').nth(3)  # attention patterns
    assert link.locator("code").count() == 0  # a link, not a grey snippet
    link.click()
    tab.get_by_text("Running it for a class").wait_for(state="detached")
    _settled(tab)
    tab.locator('[data-testid="stSidebarNav"] a, .st-key-kvviz_nav a').filter(has_text="For teachers").first.click()
    assert _chosen_plan(tab) == "45 minutes"
    close_tab(tab)

    fresh = new_tab(browser, timeout_ms=180_000)
    fresh.goto(page_url(app_url, "teachers", query={"teach_plan": "45 minutes"}))
    assert _chosen_plan(fresh) == "45 minutes"
    close_tab(fresh)
