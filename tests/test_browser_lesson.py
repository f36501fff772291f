"""The lesson in a real browser (headless Debian Chromium) at 1280x720, light and dark: every step shows a figure
(after "Show me" for the figures that would give the answer away), nothing is cut off horizontally (no page-wide
scroll, every chart and button inside the 1280 px width), class mode's one-click reveal, and the handout downloads
and renders (one section per step, its figures drawn by plotly.js). Screenshots of every step are saved under
test-artifacts/lesson/ (or $KVVIZ_ARTIFACTS) to be looked at.
"""

from __future__ import annotations

import re

import pytest

from kvviz.teaching import lesson
from support.browser import ARTIFACTS as ALL_ARTIFACTS
from support.browser import (
    assert_no_errors,
    choose_option,
    choose_tab,
    new_tab,
    open_tab,
    page_url,
    wait_idle,
    wait_settled,
)

pytestmark = pytest.mark.browser
ARTIFACTS = ALL_ARTIFACTS / "lesson"
N = len(lesson.STEPS)

# Elements wider than the viewport, or whose right edge lies past it (a chart, a button, a table, a text block).
CUT_JS = """(w) => {
  const out = [];
  if (document.documentElement.scrollWidth > w + 1) out.push('page scrolls sideways: ' + document.documentElement.scrollWidth);
  const shown = '.js-plotly-plot, [data-testid="stButton"], [data-testid="stMarkdownContainer"], '
    + '[data-testid="stDataFrame"], [data-testid="stPageLink"], .kvviz-token-grid';
  for (const e of document.querySelectorAll(shown)) {
    const r = e.getBoundingClientRect();
    if (r.width > 0 && r.right > w + 1) out.push(e.className || e.dataset.testid);
  }
  return out;
}"""


def _settled(tab) -> None:
    """The rerun finished and no element is left over from the previous step (Streamlit marks those stale)."""
    wait_settled(tab, timeout_ms=60_000)


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_every_step_has_a_figure_and_nothing_is_cut_at_1280x720(app_url, scheme, browser):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    tab = open_tab(browser, app_url, "lesson", query={"step": "1"}, color_scheme=scheme)
    for number in range(1, N + 1):
        tab.get_by_text(f"Step {number} of {N}").first.wait_for()
        _settled(tab)
        tab.screenshot(path=str(ARTIFACTS / f"step{number:02d}_{scheme}_asked.png"))
        tab.get_by_role("button", name="Show me").click()
        tab.get_by_text("The computed answer is").first.wait_for()
        _settled(tab)
        # every step has a figure once its answer is shown: a chart, or the tokens as chips that wrap (step 2)
        charts = tab.locator('[data-testid="stPlotlyChart"], .kvviz-token-grid')
        charts.first.wait_for(timeout=60_000)
        charts.last.scroll_into_view_if_needed()
        if tab.locator('[data-testid="stPlotlyChart"]').count():
            tab.wait_for_selector(".js-plotly-plot .main-svg", timeout=30_000)  # drawn by plotly.js
        tab.wait_for_timeout(300)
        assert_no_errors(tab)
        assert tab.evaluate(CUT_JS, 1280) == [], f"step {number}: cut at 1280 px"
        tab.screenshot(path=str(ARTIFACTS / f"step{number:02d}_{scheme}_figure.png"))  # as the room sees it
        tab.locator('[data-testid="stMainBlockContainer"]').screenshot(
            path=str(ARTIFACTS / f"step{number:02d}_{scheme}_whole.png")
        )
        tab.get_by_role("button", name="Next").click()
    tab.get_by_text("What you learned").wait_for()
    wait_idle(tab)
    assert tab.evaluate(CUT_JS, 1280) == []
    tab.locator('[data-testid="stMainBlockContainer"]').screenshot(path=str(ARTIFACTS / f"end_{scheme}.png"))


def test_class_mode_reveals_with_one_click_and_the_handout_downloads_and_renders(app_url, tmp_path, browser):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    tab = open_tab(browser, app_url, "lesson", query={"step": "7", "lesson_class": "true"}, accept_downloads=True)
    assert tab.locator('[data-testid="stNumberInput"]').count() == 0  # nothing to type
    tab.screenshot(path=str(ARTIFACTS / "class_step07_asked.png"))
    tab.get_by_role("button", name="Reveal the answer").click()
    tab.get_by_text("Answer:").first.wait_for()
    wait_idle(tab)
    assert tab.evaluate(CUT_JS, 1280) == []
    tab.locator('[data-testid="stMainBlockContainer"]').screenshot(path=str(ARTIFACTS / "class_step07_revealed.png"))

    tab.get_by_role("button", name="Handout").click()
    with tab.expect_download(timeout=300_000) as info:
        tab.get_by_role("button", name="Download the handout (HTML)").click()
    saved = tmp_path / "handout.html"
    info.value.save_as(saved)
    doc = new_tab(browser, timeout_ms=None)
    doc.goto(saved.as_uri())
    doc.wait_for_selector(".js-plotly-plot")
    doc.wait_for_timeout(1000)
    assert doc.locator("section.step").count() == N
    assert doc.locator("section.step .js-plotly-plot").count() >= N  # every step's figure drawn
    assert doc.locator(".answer").count() == N
    doc.screenshot(path=str(ARTIFACTS / "handout_top.png"))
    pdf = doc.pdf()  # Chromium's own print rendering (Letter): one page per step, nothing spills over
    (ARTIFACTS / "handout.pdf").write_bytes(pdf)
    assert len(re.findall(rb"/Type\s*/Page[^s]", pdf)) == N


# ----- the lesson and the plans in a teacher's hands (Chromium, 1280x720) ---------------------------------------
def _step_shown(tab) -> str:
    return tab.locator('[data-testid="stProgress"]').first.inner_text()


def _in_view(tab, selector: str) -> bool:
    box = tab.locator(selector).first.bounding_box()
    return box is not None and box["y"] >= 0 and box["y"] + box["height"] <= 720


def _class_step(tab, number: int, room_right: bool) -> None:
    """One class-mode step as a teacher runs it: V reveals, Y or N marks the room; question and answer in view."""
    tab.get_by_text(f"Step {number} of {N}").first.wait_for()
    _settled(tab)
    assert _in_view(tab, f".st-key-lesson_reveal_btn_{number}"), f"step {number}: the question's buttons below 720"
    tab.keyboard.press("v")
    tab.locator(f".st-key-lesson_room_right_{number}").wait_for()
    _settled(tab)
    assert _in_view(tab, '[data-testid="stAlertContentSuccess"]') and _in_view(tab, f".st-key-lesson_mark_{number}")
    tab.keyboard.press("y" if room_right else "n")
    tab.get_by_text("Marked for the room").first.wait_for()
    _settled(tab)


def test_class_mode_keys_fit_url_back_and_reload(app_url, browser):
    """A deep link's Left works at once; class mode hides the sidebar and keeps each question and
    its answer above the fold at 1280x720; V/Y/N score the room; browser Back returns to the step before and keeps
    the room's marks (the room holds them, not the URL); a reload keeps the score."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    tab = open_tab(browser, app_url, "lesson", query={"step": "7", "lesson_class": "true"})
    tab.get_by_text(f"Step 7 of {N}").first.wait_for()
    _settled(tab)
    assert tab.locator(".st-key-lesson_back button").is_enabled()  # not greyed on a deep link's first run
    assert not tab.locator('[data-testid="stSidebar"]').is_visible()  # class mode: no sidebar
    tab.keyboard.press("ArrowLeft")  # works before any other move
    tab.get_by_text(f"Step 6 of {N}").first.wait_for()
    tab.goto(page_url(app_url, "lesson", query={"step": "1", "lesson_class": "true"}))
    for number in (1, 2, 5, 7, 8):  # the steps whose question or answer was below the fold
        if number != 1:
            tab.locator(".st-key-step").get_by_text(str(number), exact=True).click()
        _class_step(tab, number, room_right=number != 2)
        tab.screenshot(path=str(ARTIFACTS / f"class_step{number:02d}_marked.png"))
    assert "lesson_score=" in tab.url
    # The browser's Back after a mark goes to the step before (7, as marked), never step 1: a mark rewrites the
    # URL's score in place (Route.in_place), so it is no history entry of its own (Back used to stay on step 8).
    tab.go_back()
    tab.get_by_text(f"Step 7 of {N}").first.wait_for()
    _settled(tab)
    tab.get_by_text("Marked for the room").first.wait_for()
    tab.go_forward()  # and Forward to step 8, its mark kept (the room keeps it, not the URL)
    tab.get_by_text(f"Step 8 of {N}").first.wait_for()
    _settled(tab)
    tab.get_by_text("Marked for the room").first.wait_for()
    tab.go_back()
    tab.get_by_text(f"Step 7 of {N}").first.wait_for()
    tab.reload()
    tab.get_by_text(f"Step 7 of {N}").first.wait_for()
    _settled(tab)
    assert tab.get_by_text("Marked for the room").count() > 0  # the reload kept the room's mark
    tab.locator(".st-key-step").get_by_text("End", exact=True).click()
    tab.get_by_text("What you learned").wait_for()
    _settled(tab)
    assert "4 of 12" in tab.locator('[data-testid="stMetric"]').first.inner_text()  # 1, 5, 7, 8 (2 missed)
    tab.screenshot(path=str(ARTIFACTS / "class_end_after_reload.png"))
    # 150% zoom (a 853x480 CSS viewport): the question itself is still on screen
    zoomed = new_tab(browser, width=853, height=480, device_scale_factor=1.5)
    zoomed.goto(page_url(app_url, "lesson", query={"step": "5", "lesson_class": "true"}))
    zoomed.get_by_text(f"Step 5 of {N}").first.wait_for()
    _settled(zoomed)
    question = zoomed.locator("h2", has_text="copying head").first.bounding_box()
    assert question is not None and question["y"] + question["height"] <= 480
    zoomed.screenshot(path=str(ARTIFACTS / "class_step05_zoom150.png"))


def test_class_mode_keys_pressed_during_reruns_are_all_taken_in_order(app_url, busy_core, browser):
    """On a busy laptop the teacher presses V, Y, Right, V, N, Right without waiting. Streamlit's
    own shortcuts lose a key pressed while a rerun redraws its button; the page's key queue takes every press in
    order: step 3 marked right, step 4 missed, step 5 on screen."""
    tab = open_tab(browser, app_url, "lesson", query={"step": "3", "lesson_class": "true"})
    tab.get_by_text(f"Step 3 of {N}").first.wait_for()
    _settled(tab)
    for key in ("v", "y", "ArrowRight", "v", "n", "ArrowRight"):
        tab.keyboard.press(key)
        tab.wait_for_timeout(60)
    tab.wait_for_function(
        "() => window.__kvvizLesson && window.__kvvizLesson.taken === 6 && "
        "!window.__kvvizLesson.busy && !window.__kvvizLesson.queue.length",
        timeout=180_000,
    )
    tab.get_by_text(f"Step 5 of {N}").first.wait_for()
    _settled(tab)
    assert tab.evaluate("window.__kvvizLesson.dropped") == 0
    tab.locator(".st-key-step").get_by_text("End", exact=True).click()
    tab.get_by_text("What you learned").wait_for()
    _settled(tab)
    assert "1 of 12" in tab.locator('[data-testid="stMetric"]').first.inner_text()  # step 3 right, step 4 missed
    table = tab.locator('[data-testid="stTable"]').inner_text()
    assert table.count("not answered") == N - 2


def test_memory_links_keep_every_tabs_inputs(app_url, browser):
    """An input set in one tab (the GPU, the block size) stays in the URL after its tab is closed, so a copied link
    keeps it."""
    tab = open_tab(browser, app_url, "memory_budget")
    _settled(tab)
    choose_option(tab, "mem_compare", "gpt2", "gpt2", "mem_compare=gpt2")  # typing opens the list, filtered
    choose_tab(tab, "What fits")
    choose_option(tab, "mem_gpu", "H100 80", "NVIDIA H100 80GB", "mem_gpu=")
    choose_tab(tab, "Paged vs flat")
    block = tab.locator(".st-key-mem_block input")
    block.fill("32")
    block.press("Enter")
    tab.wait_for_function("() => location.search.includes('mem_block=32')")
    _settled(tab)
    for name in ("Size vs context", "Textbook figures", "What fits", "Paged vs flat"):
        choose_tab(tab, name)
        for kept in ("mem_compare=gpt2", "mem_gpu=NVIDIA", "mem_block=32"):
            assert kept in tab.url, (name, kept, tab.url)
