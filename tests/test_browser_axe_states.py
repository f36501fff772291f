"""Accessibility in the states a class actually sees: axe-core scans (support.axe: the same runner, rules
and failing rule as tests/test_browser_every_page.py, which scans each page as first drawn) of the states a class reaches
after clicks and links:

- the stage after Prefill and 3 tokens (a replayed link), in each of its views (K/V/attention, race, GQA: the GQA
  Llama's), in presenter mode;
- the lesson in class mode after Reveal, and its ending (the room's score);
- the memory page on each of its tabs;
- *What to forget* (internals_eviction) after its sweep;
- the glossary after a search that finds nothing;
- every page at 390x844 on a touch phone, each opened by its own link (and with no error or exception on it).

Each state is scanned as the pairs (English, light theme) and (Chinese, dark theme), which cover both languages and
both themes, except the phone's pages: each page once, the pairs alternating page by page (both languages and both
themes still covered, at half the time). No serious or critical violation, nor heading-order, in any of them.
"""

from __future__ import annotations

import pytest

from support import axe
from support.browser import PAGES, assert_no_errors, goto_drawn, new_tab, wait_cache_length
from support.pages import REPO

pytestmark = pytest.mark.browser
PAIRS = [("en", "light"), ("zh-CN", "dark")]  # both languages, both themes
ALL_PAGES = ["", "step_through", "glossary", "teachers", *PAGES]  # "" is the home page
PROMPT, STEPS = "ROMEO:", 3
GQA_MODEL = "bundled-gqa"  # the GQA view is offered for a GQA model only
SWEEP_TIMEOUT_MS = 150_000


def _prompt_tokens() -> int:
    """The prompt's tokens (both bundled models share one tokenizer), read without torch."""
    from tokenizers import Tokenizer

    return len(Tokenizer.from_file(str(REPO / "kvviz" / "assets" / "bundled" / "tokenizer.json")).encode(PROMPT).ids)


def _assert_clean(failing: dict) -> None:
    assert not failing, "\n".join(f"{state}: {v}" for state, found in failing.items() for v in found)


def _scan(failing: dict, state: str, tab) -> None:
    if bad := axe.failing_now(tab):
        failing[state] = bad


@pytest.mark.parametrize("lang, scheme", PAIRS)
def test_the_stage_after_three_tokens_in_each_view_presenting(app_url, browser, lang, scheme):
    failing: dict = {}
    tab = new_tab(browser, color_scheme=scheme)
    for view in ("one", "race", "gqa"):
        query = {
            "prompt": PROMPT,
            "steps": str(STEPS),
            "view": view,
            "present": "1",
            **({"model": GQA_MODEL} if view == "gqa" else {}),
        }
        goto_drawn(tab, app_url, "step_through", lang=lang, query=query, drawn=(".kvviz-strip",), settle=axe.settle)
        wait_cache_length(tab, _prompt_tokens() + STEPS, lang=lang)
        # the view asked for (the default view, one, is left out of the address bar), presenting
        asked = "view=" not in tab.url if view == "one" else f"view={view}" in tab.url
        assert asked and "present=1" in tab.url, tab.url
        _scan(failing, view, tab)
    _assert_clean(failing)


@pytest.mark.parametrize("lang, scheme", PAIRS)
def test_the_lesson_in_class_mode_after_reveal_and_its_ending(app_url, browser, lang, scheme):
    failing: dict = {}
    tab = new_tab(browser, color_scheme=scheme)
    goto_drawn(
        tab, app_url, "lesson", lang=lang, query={"step": "7", "lesson_class": "true"}, drawn=(), settle=axe.settle
    )
    tab.locator(".st-key-lesson_reveal_btn_7 button").click()
    tab.locator(".st-key-lesson_room_right_7 button").wait_for()
    axe.settle(tab)
    _scan(failing, "step 7 revealed", tab)
    tab.locator(".st-key-lesson_room_right_7 button").click()  # the room got it: the ending has a score to show
    tab.wait_for_function("() => location.search.includes('lesson_score=')")
    score = tab.evaluate("() => new URLSearchParams(location.search).get('lesson_score')")
    goto_drawn(
        tab,
        app_url,
        "lesson",
        lang=lang,
        query={"step": "End", "lesson_class": "true", "lesson_score": score},
        drawn=(".st-key-lesson_restart",),
        settle=axe.settle,
    )
    _scan(failing, "ending", tab)
    _assert_clean(failing)


@pytest.mark.parametrize("lang, scheme", PAIRS)
def test_the_memory_page_on_each_tab(app_url, browser, lang, scheme):
    failing: dict = {}
    tab = new_tab(browser, color_scheme=scheme)
    goto_drawn(tab, app_url, "memory_budget", lang=lang, drawn=(), settle=axe.settle)
    tabs = tab.get_by_role("tab")
    assert tabs.count() == 6
    for n in range(tabs.count()):
        if n:
            tabs.nth(n).click()
            axe.settle(tab)
        assert tabs.nth(n).get_attribute("aria-selected") == "true"
        _scan(failing, f"tab {n + 1}: {tabs.nth(n).inner_text()}", tab)
    _assert_clean(failing)


@pytest.mark.parametrize("lang, scheme", PAIRS)
def test_what_to_forget_after_its_sweep(app_url, browser, lang, scheme):
    tab = new_tab(browser, color_scheme=scheme)
    # the policies picker is drawn once the sweep is over (cached per model and text: the second pair's is quick)
    goto_drawn(
        tab,
        app_url,
        "internals_eviction",
        lang=lang,
        drawn=(".st-key-evict_drawn",),
        drawn_timeout_ms=SWEEP_TIMEOUT_MS,
        settle=axe.settle,
    )
    failing: dict = {}
    _scan(failing, "after the sweep", tab)
    _assert_clean(failing)


@pytest.mark.parametrize("lang, scheme", PAIRS)
def test_the_glossary_after_a_search_that_finds_nothing(app_url, browser, lang, scheme):
    tab = new_tab(browser, color_scheme=scheme)
    goto_drawn(
        tab,
        app_url,
        "glossary",
        lang=lang,
        query={"term": "zzqx"},
        drawn=('[data-testid="stAlert"]',),
        settle=axe.settle,
    )
    assert tab.locator('[data-testid="stMain"] [class*="st-key-term_"]').count() == 0  # no entry shown
    failing: dict = {}
    _scan(failing, "nothing found", tab)
    _assert_clean(failing)


@pytest.mark.parametrize("lang, scheme", PAIRS)
def test_every_page_on_a_touch_phone(app_url, browser, lang, scheme):
    """390x844, touch: each page once, in the pair its place in ALL_PAGES picks (alternating)."""
    failing: dict = {}
    tab = new_tab(browser, width=390, height=844, has_touch=True, is_mobile=True, color_scheme=scheme)
    for path in ALL_PAGES[PAIRS.index((lang, scheme)) :: len(PAIRS)]:
        goto_drawn(tab, app_url, path, lang=lang, drawn=(), settle=axe.settle)
        assert_no_errors(tab)  # each page opened by its own link shows no error or exception
        _scan(failing, path or "home", tab)
    _assert_clean(failing)
