"""What a teacher points at is on the first screen (headless Debian Chromium, the sidebar open at 1024x768 and
1280x720; a phone at 390x844): the memory page opened by the plan's link, at its top with the preset box and the
What fits answer; the attention patterns' enlarged head opened by the plan's row 4; the lesson's prompt and figure
with a class poll open; the phone stage's K/V chart under its controls.
"""

from __future__ import annotations

import pytest

from kvviz.teaching import guide
from support.browser import close_tab, inside, new_tab, open_tab, wait_settled

pytestmark = pytest.mark.browser
SCREENS = [(1024, 768), (1280, 720)]
SCREEN_IDS = [f"{w}x{h}" for w, h in SCREENS]
SCROLLED = "() => document.querySelector('[data-testid=\"stMain\"]').scrollTop"


def _block(page_file: str) -> guide.Block:
    return next(b for b in guide.PLAN_45 if b.page.file == page_file)


def _box(tab, selector: str) -> dict | None:
    return tab.locator(selector).first.bounding_box()


@pytest.mark.parametrize("width, height", SCREENS, ids=SCREEN_IDS)
def test_the_memory_link_opens_at_the_top_with_the_preset_box_and_the_answer(app_url, browser, width, height):
    """For teachers' memory row names the What fits tab: the page used to scroll down to the tab bar (its answer
    was below the model's inputs), and the preset box the row names went off the top."""
    tab = new_tab(browser, width=width, height=height)
    tab.goto(f"{app_url}{_block('pages/memory_budget.py').link}")
    answer = tab.get_by_text("The cache outweighs the weights from")
    answer.wait_for()
    wait_settled(tab, timeout_ms=120_000)
    tab.wait_for_timeout(1500)  # a script that scrolls would have done so by now
    assert tab.locator('[data-testid="stSidebar"]').is_visible()
    assert tab.evaluate(SCROLLED) == 0
    assert inside(_box(tab, ".st-key-mem_preset"), width, height), _box(tab, ".st-key-mem_preset")
    assert inside(_box(tab, ".st-key-mem_metrics_fit"), width, height), _box(tab, ".st-key-mem_metrics_fit")
    assert inside(answer.bounding_box(), width, height), answer.bounding_box()
    assert tab.get_by_role("tab", name="What fits").get_attribute("aria-selected") == "true"
    close_tab(tab)


PHONE = {"width": 390, "height": 844, "is_mobile": True, "has_touch": True, "device_scale_factor": 2}


@pytest.mark.parametrize("lang", ["en", "zh-CN"])
def test_the_phone_stage_shows_its_kv_chart_under_one_row_of_controls(app_url, browser, lang):
    """Three rows of buttons and three of pickers pushed the K/V chart 705 px down a 844 px phone screen, and "Query
    head" ended the Layer row with its H0-H3 wrapped below. Now one row of controls (it scrolls sideways), L0-L3 and
    H0-H3 in one row, and the chart's rows on the first screen."""
    tab = open_tab(
        browser,
        app_url,
        "step_through",
        lang=lang,
        query={"prompt": "ROMEO:", "steps": "2"},
        drawn=(".kvviz-strip",),
        **PHONE,
    )
    wait_settled(tab, timeout_ms=120_000)
    tab.locator('[data-testid="stPlotlyChart"] .main-svg').first.wait_for()
    top = {
        key: round(_box(tab, f".st-key-{key}")["y"]) for key in ("step_btn_prefill", "step_btn_back", "step_btn_next")
    }
    assert len(set(top.values())) == 1, top  # one row
    assert inside(_box(tab, ".st-key-step_btn_next"), PHONE["width"], PHONE["height"])  # the main button, whole
    layer, head = _box(tab, ".st-key-step_layer"), _box(tab, ".st-key-step_head")
    assert round(layer["y"]) == round(head["y"]), (layer, head)
    chart = _box(tab, '[data-testid="stPlotlyChart"]')  # the first chart: the chosen head's K, V and attention
    assert chart["y"] + 320 <= PHONE["height"], chart  # its title and rows on the first screen
    assert tab.evaluate("() => document.documentElement.scrollWidth") <= PHONE["width"]  # the row scrolls, not the page
    close_tab(tab)


@pytest.mark.parametrize("width, height", SCREENS, ids=SCREEN_IDS)
def test_the_plans_head_link_shows_the_enlarged_head_on_the_first_screen(app_url, browser, width, height):
    """For teachers' row 4 (Repeat a pattern, layer 3, head 1) asks the teacher to point at the enlarged head's
    stripe: below the explanation, the gallery and the table, it started 1,337 px down at 1280x720."""
    tab = new_tab(browser, width=width, height=height)
    tab.goto(f"{app_url}{_block('pages/attention_patterns.py').link}")
    tab.get_by_text("Head 1, large").wait_for()
    tab.locator(".st-key-pat_head_fig .heatmaplayer image, .st-key-pat_head_fig .hm image").first.wait_for()
    wait_settled(tab, timeout_ms=120_000)
    assert tab.locator('[data-testid="stSidebar"]').is_visible()
    assert tab.evaluate(SCROLLED) == 0
    header = tab.get_by_text("Head 1, large").bounding_box()
    cells = _box(tab, ".st-key-pat_head_fig .heatmaplayer image, .st-key-pat_head_fig .hm image")  # every row
    picker = _box(tab, ".st-key-pat_head")
    for shown in (picker, header, cells):
        assert inside(shown, width, height), (shown, header, cells)
    close_tab(tab)


@pytest.mark.parametrize("width, height", SCREENS, ids=SCREEN_IDS)
def test_with_a_class_poll_open_the_prompt_and_then_the_votes_are_on_the_first_screen(poll_url, browser, width, height):
    """Step 2 asks about "the prompt shown here": with a poll open, the panel (its QR code about 250 px) sat between
    the question and the prompt, which started near 1,000 px down a 768 px projector; after Reveal the vote chart
    was below the fold too. The panel sits beside the question now."""
    teacher = open_tab(
        browser,
        poll_url,
        "lesson",
        lang="en",
        query={"step": "2", "lesson_class": "true"},
        width=width,
        height=height,
        drawn=(".st-key-poll_start",),
    )
    wait_settled(teacher, timeout_ms=60_000)
    teacher.locator(".st-key-poll_start button").first.click()
    teacher.locator(".st-key-poll_panel img.kvviz-poll-qr").wait_for()
    wait_settled(teacher, timeout_ms=60_000)
    assert teacher.evaluate(SCROLLED) == 0
    for shown in (
        ".st-key-lesson_question",
        ".st-key-lesson_choices",
        ".kvviz-token-grid",
        ".st-key-lesson_reveal_btn_2",
    ):
        assert inside(_box(teacher, shown), width, height), (shown, _box(teacher, shown))
    assert inside(_box(teacher, ".st-key-poll_panel img.kvviz-poll-qr"), width, height)  # the room can still join
    teacher.keyboard.press("v")
    teacher.locator(".st-key-poll_panel .js-plotly-plot").wait_for()
    wait_settled(teacher, timeout_ms=60_000)
    assert inside(_box(teacher, ".st-key-poll_panel .js-plotly-plot"), width, height), _box(
        teacher, ".st-key-poll_panel .js-plotly-plot"
    )
    assert inside(_box(teacher, ".st-key-lesson_question"), width, height)
    close_tab(teacher)
