"""The class flow as a substitute teacher and a student on a phone meet it, in a real browser (headless Debian
Chromium): what is typed is checked by one click on Check (and one tap on a phone at 390x844), and the plan's stage
link opens the state its row describes (the cache empty, Prefill on screen) even after the stage was used in the
session. Screenshots go to test-artifacts/class_flow/ to be looked at.
"""

from __future__ import annotations

import pytest

from support.browser import ARTIFACTS as ALL_ARTIFACTS
from support.browser import cache_length, goto_drawn, inside, open_tab, wait_cache_length, wait_settled

pytestmark = pytest.mark.browser
ARTIFACTS = ALL_ARTIFACTS / "class_flow"
PHONE = {"width": 390, "height": 844, "is_mobile": True, "has_touch": True, "device_scale_factor": 2}


def _answer_then_check(tab, touch: bool) -> None:
    """Type 32 (step 1 asks the bundled model's head_dim) and press Check once: a click, or a tap."""
    box = tab.locator(".st-key-lesson_answer_1 input")
    box.click()
    box.fill("32")  # typed, not committed: no Enter, no blur before the press
    check = tab.locator(".st-key-lesson_check_1 button").first
    check.tap() if touch else check.click()
    tab.get_by_text("Right:").first.wait_for(timeout=30_000)


@pytest.mark.parametrize("device", ["desktop", "phone"])
def test_one_click_or_tap_on_check_checks_what_is_typed(app_url, browser, device):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    size = PHONE if device == "phone" else {}
    tab = open_tab(browser, app_url, "lesson", lang="en", query={"step": "1"}, **size)
    tab.get_by_text("Step 1 of").first.wait_for()
    wait_settled(tab, timeout_ms=60_000)
    _answer_then_check(tab, touch=device == "phone")
    tab.screenshot(path=str(ARTIFACTS / f"check_one_{device}.png"))


def test_the_plans_stage_link_opens_empty_and_at_the_top_after_the_stage_was_used(app_url, browser):
    tab = open_tab(browser, app_url, "step_through", lang="en", query={"present": "1"})
    tab.keyboard.press("p")  # Prefill, then three Next tokens: the stage in use
    tab.wait_for_selector('[data-testid="stMetric"]')
    wait_settled(tab, timeout_ms=60_000)
    before = cache_length(tab)
    for _ in range(3):
        tab.keyboard.press("ArrowRight")
        wait_settled(tab, timeout_ms=60_000)
    wait_cache_length(tab, before + 3, timeout_ms=60_000)
    tab.mouse.wheel(0, 2000)  # the teacher scrolled down to the rows
    goto_drawn(
        tab,
        app_url,
        "step_through",
        lang="en",
        query={"present": "1", "fresh": "1"},
        settle=lambda t: wait_settled(t, timeout_ms=60_000),
    )  # the plan's link, in the same session
    prefill = tab.locator(".st-key-step_btn_prefill button").first
    prefill.wait_for()
    assert inside(prefill.bounding_box(), 1280, 720), "Prefill is not on the screen"
    assert tab.locator('[data-testid="stMetric"]', has_text="Cache length").count() == 0  # the cache is empty
    tab.screenshot(path=str(ARTIFACTS / "plan_stage_link_fresh.png"))
    tab.keyboard.press("p")  # once: the flag leaves the URL with Prefill, so a reload keeps what the class does next
    tab.wait_for_selector('[data-testid="stMetric"]')
    wait_settled(tab, timeout_ms=60_000)
    tab.wait_for_function("() => location.search.includes('prompt=') && !location.search.includes('fresh')")
    tab.reload()
    tab.wait_for_selector('[data-testid="stMetric"]')  # the reload replayed the prompt: the cache is not empty
