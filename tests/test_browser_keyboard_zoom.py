"""Keyboard and zoom, in a real browser.

Keyboard only: a student answers a lesson step with Tab, typing and Enter (no mouse), each control they reach shows
a visible focus ring, and the stage is prefilled and stepped with Tab and Enter alone. Zoom: at 200% browser zoom of
a 1280x720 screen (a 640x360 CSS viewport, WCAG 1.4.10), the lesson's question, answer box and Check button and the
stage's Prefill and Next buttons are on the page without horizontal scrolling.
"""

from __future__ import annotations

import pytest

from support.browser import cache_length, open_tab, wait_idle

pytestmark = pytest.mark.browser

# The focused element and whether the browser draws a ring for it: an outline, Streamlit's box-shadow ring, or for a
# text box the coloured border Streamlit gives its frame (grey when not focused).
FOCUS = r"""() => { const e = document.activeElement; if (!e || e === document.body) return null;
  const s = getComputedStyle(e);
  const box = e.closest('[data-testid="stNumberInputContainer"], [data-baseweb="input"], [data-baseweb="textarea"]');
  const rgb = box ? getComputedStyle(box).borderTopColor.match(/[\d.]+/g).map(Number) : null;
  const ring = (s.outlineStyle !== 'none' && parseFloat(s.outlineWidth) > 0) || (s.boxShadow && s.boxShadow !== 'none')
    || (!!rgb && Math.max(...rgb.slice(0, 3)) - Math.min(...rgb.slice(0, 3)) > 60);
  return {tag: e.tagName, role: e.getAttribute('role') || '',
          text: (e.innerText || e.getAttribute('aria-label') || '').trim().slice(0, 40),
          testid: (e.closest('[data-testid]') || {}).dataset?.testid || '', ring: ring}; }"""
CONTROLS = {"A", "BUTTON", "INPUT", "SELECT", "TEXTAREA"}  # and any element with a widget's role
ROLES = {"button", "link", "tab", "radio", "checkbox", "switch", "slider", "combobox", "option", "menuitem"}
NO_SIDEWAYS_SCROLL = "() => document.documentElement.scrollWidth <= window.innerWidth + 1"


def _tab_to(tab, wanted, limit: int = 80) -> dict:
    """Press Tab until the focused element satisfies `wanted`; every control on the way must show a focus ring."""
    for _press in range(limit):
        tab.keyboard.press("Tab")
        focus = tab.evaluate(FOCUS)
        if focus is None:
            continue
        if not focus["ring"]:  # Streamlit fades a text box's border in (a CSS transition): look again once it ends
            tab.wait_for_timeout(400)
            focus = tab.evaluate(FOCUS)
        if focus["tag"] in CONTROLS or focus["role"] in ROLES:  # a control (a scroll container may take focus too)
            assert focus["ring"], f"no visible focus ring on {focus}"
        if wanted(focus):
            return focus
    raise AssertionError(f"Tab never reached the control (last: {focus})")


def test_a_lesson_step_is_answered_with_the_keyboard_alone(app_url, browser):
    tab = open_tab(browser, app_url, "lesson", query={"step": "1"}, state="attached")
    tab.get_by_text("Step 1 of").first.wait_for()
    wait_idle(tab)
    _tab_to(tab, lambda f: f["testid"] == "stNumberInputField")
    tab.keyboard.type("32")
    tab.keyboard.press("Enter")  # the number is taken
    wait_idle(tab)
    _tab_to(tab, lambda f: f["tag"] == "BUTTON" and f["text"] == "Check")
    tab.keyboard.press("Enter")
    tab.get_by_text("Right:").first.wait_for()  # step 1 asks for the bundled model's head_dim: 32


def test_the_stage_is_prefilled_with_tab_and_enter_and_stepped_with_its_announced_key(app_url, browser):
    """Tab to Prefill, Enter; then Next token by its shortcut, which the button announces (a <kbd> hint with
    aria-label "Shortcut ..."): after a button's run the stage's fragment is redrawn and the focus goes back to the
    page's start (noted in docs/teaching.md), so Tab is not the way to press Next token again and again."""
    tab = open_tab(browser, app_url, "step_through", state="attached")  # the stage hides its title on a short screen
    _tab_to(tab, lambda f: f["tag"] == "BUTTON" and f["text"].startswith("Prefill"))
    tab.keyboard.press("Enter")
    tab.wait_for_selector('[data-testid="stMetric"]')
    wait_idle(tab)
    before = cache_length(tab)
    hint = tab.locator(".st-key-step_btn_next kbd").first
    assert hint.get_attribute("aria-label").startswith("Shortcut")
    tab.keyboard.press("ArrowRight")
    tab.wait_for_function(f"() => document.body.innerText.includes('{before + 1} tokens')")
    assert cache_length(tab) == before + 1


@pytest.mark.parametrize(
    "path, query, controls",
    [
        ("lesson", {"step": "3"}, [("text", "Question."), ("text", "Your answer"), ("button", "Check")]),
        ("step_through", None, [("button", "Prefill"), ("button", "Next token")]),
    ],
    ids=["lesson?step=3", "step_through"],
)
def test_at_200_percent_zoom_the_controls_are_on_the_page_without_sideways_scrolling(
    app_url, browser, path, query, controls
):
    tab = open_tab(browser, app_url, path, query=query, width=640, height=360, state="attached")
    found = [
        (tab.get_by_role("button", name=name) if kind == "button" else tab.get_by_text(name)).filter(visible=True).first
        for kind, name in controls
    ]
    found[0].wait_for()
    wait_idle(tab)
    assert tab.evaluate(NO_SIDEWAYS_SCROLL), "the page scrolls sideways at 200%"
    for (_kind, name), control in zip(controls, found, strict=True):
        box = control.bounding_box()
        assert box and box["x"] >= 0 and box["x"] + box["width"] <= 640 + 1, (name, box)
