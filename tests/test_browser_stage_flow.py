"""The stage keeps the flow in a real browser (headless Debian Chromium at 1280x720):

- the keyboard drives the stage after the sidebar's model radio was clicked (Streamlit's own shortcuts skip a
  focused <input>, radios included), and the model switch keeps the generation it left;
- a Link opened in a fresh browser restores layer, head, view and presenter mode, and its generation survives
  the reader's Next presses and a layer click;
- two sessions with five models in use between them (the shared cache keeps four): neither loses its generation.
"""

from __future__ import annotations

import re

import pytest

from support.browser import assert_no_errors, cache_length, open_tab, wait_cache_length, wait_idle

pytestmark = pytest.mark.browser
TIMEOUT_MS = 90_000


def _press_p(tab) -> int:
    """P (Prefill) once the stage is interactive; returns the cache length after it."""
    tab.get_by_role("button", name=re.compile("^Prefill")).wait_for()
    wait_idle(tab)
    tab.keyboard.press("p")
    tab.wait_for_selector(".kvviz-strip")
    wait_idle(tab)
    return cache_length(tab)


def _sidebar_radio(tab, label: str):
    return tab.locator('[data-testid="stSidebar"] label').filter(has_text=label).first


def test_shortcuts_drive_the_stage_after_a_click_on_the_sidebar_model_picker(app_url, browser):
    tab = open_tab(browser, app_url, "step_through", timeout_ms=TIMEOUT_MS)
    start = _press_p(tab)
    for k in (1, 2):
        tab.keyboard.press("ArrowRight")
        wait_cache_length(tab, start + k, timeout_ms=TIMEOUT_MS)
    _sidebar_radio(tab, "Llama, GQA").click()  # focus is now on the radio <input>
    tab.get_by_text("is kept").wait_for()  # the switch says what happened to the generation
    wait_idle(tab)
    tab.keyboard.press("p")  # acts on the stage, not on the focused radio
    tab.wait_for_selector(".kvviz-strip")
    wait_idle(tab)
    gqa_start = cache_length(tab)
    _sidebar_radio(tab, "Llama, GQA").click()  # focus back on the radio, then the arrow key
    tab.keyboard.press("ArrowRight")
    wait_cache_length(tab, gqa_start + 1, timeout_ms=TIMEOUT_MS)
    wait_idle(tab)
    assert _sidebar_radio(tab, "Llama, GQA").locator("input").is_checked()  # the radio did not move
    _sidebar_radio(tab, "Tiny-Shakespeare GPT-2").click()
    tab.get_by_text("Restored your generation").wait_for()
    wait_cache_length(tab, start + 2, timeout_ms=TIMEOUT_MS)  # the first model's generation, as it was left
    tab.keyboard.press("ArrowRight")
    wait_cache_length(tab, start + 3, timeout_ms=TIMEOUT_MS)
    assert_no_errors(tab)


def test_a_link_restores_the_view_in_a_fresh_browser_and_survives_the_readers_clicks(app_url, browser):
    query = {
        "prompt": "ROMEO:",
        "steps": "3",
        "step_layer": "L2",
        "step_head": "H3",
        "view": "race",
        "present": "1",
        "seed": "5",
    }
    tab = open_tab(browser, app_url, "step_through", query=query, timeout_ms=TIMEOUT_MS)
    tab.wait_for_selector(".kvviz-strip")
    wait_idle(tab)
    start = cache_length(tab)
    for label in ("L2", "H3", "Race"):
        option = tab.get_by_role("radio", name=label, exact=True)
        assert option.get_attribute("aria-checked") == "true", f"{label} is not the selected option"
    assert not tab.locator('[data-testid="stSidebar"]').is_visible()  # presenter mode
    assert tab.get_by_text(re.compile(r"^With the cache")).count() == 1  # the race view
    tab.get_by_role("radio", name="K, V, attention", exact=True).click()
    wait_idle(tab)
    tab.wait_for_timeout(800)
    # presenter mode at 1280x720: the readout line and the newest K row are on screen
    newest_row = tab.locator(".js-plotly-plot").first.locator(".shapelayer path").last
    for what, loc in (("readout", tab.locator(".kvviz-readout")), ("newest K row", newest_row)):
        box = loc.bounding_box()
        assert box is not None and box["y"] >= 0 and box["y"] + box["height"] <= 721, f"{what} is off screen"
    for k in range(1, 5):
        tab.keyboard.press("ArrowRight")
        wait_cache_length(tab, start + k, timeout_ms=TIMEOUT_MS)
    tab.get_by_role("radio", name="L1", exact=True).click()
    wait_idle(tab)
    tab.wait_for_timeout(1000)
    assert cache_length(tab) == start + 4  # the link's replay did not run again
    assert "step_layer=L1" in tab.url
    tab.get_by_role("button", name="Link").click()
    link = tab.locator("code").filter(has_text="prompt=ROMEO").inner_text()
    assert "step_layer=L1" in link and "step_head=H3" in link and "steps=7" in link and "seed=5" in link
    assert_no_errors(tab)


def test_two_sessions_with_five_models_in_use_neither_loses_its_generation(app_url, tmp_path, browser):
    """Session A steps the bundled GPT-2; session B then loads four other models (the GQA model and three small
    GPT-2 folders): five in use, one more than the shared cache keeps, so A's model is dropped from it."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel, GPT2TokenizerFast

    from kvviz.model import loading

    folders = []
    for i in range(3):  # three real (tiny, random) GPT-2 folders, saved as a user would have them
        torch.manual_seed(i)
        folder = tmp_path / f"tiny{i}"
        GPT2LMHeadModel(GPT2Config(n_layer=2, n_head=2, n_embd=64, n_positions=128)).save_pretrained(folder)
        GPT2TokenizerFast.from_pretrained(loading.BUNDLED_DIR).save_pretrained(folder)
        folders.append(str(folder))
    a = open_tab(browser, app_url, "step_through", timeout_ms=TIMEOUT_MS)
    a_start = _press_p(a)
    for k in (1, 2, 3):
        a.keyboard.press("ArrowRight")
        wait_cache_length(a, a_start + k, timeout_ms=TIMEOUT_MS)
    b = open_tab(browser, app_url, "step_through", timeout_ms=TIMEOUT_MS)
    _sidebar_radio(b, "Llama, GQA").click()
    wait_idle(b)
    _sidebar_radio(b, "Pretrained GPT-2").click()
    wait_idle(b)
    for folder in folders:
        box = b.locator('[data-testid="stSidebar"] input[type="text"]')
        box.fill(folder)
        box.press("Enter")
        b.locator('[data-testid="stSidebar"]').get_by_role("button", name="Load").click()
        b.get_by_text(folder.rsplit("/", 1)[-1]).first.wait_for()
        wait_idle(b)
    b.get_by_role("button", name=re.compile("^Prefill")).click()
    b.wait_for_selector(".kvviz-strip")
    wait_idle(b)
    b_start = cache_length(b)
    b.keyboard.press("ArrowRight")
    wait_cache_length(b, b_start + 1, timeout_ms=TIMEOUT_MS)
    # A: a full rerun (the presenter toggle is outside the stage's fragment), then on with its generation
    a.get_by_text("Presenter mode").click()
    wait_idle(a)
    wait_cache_length(a, a_start + 3, timeout_ms=TIMEOUT_MS)
    a.keyboard.press("ArrowRight")
    wait_cache_length(a, a_start + 4, timeout_ms=TIMEOUT_MS)
    assert a.get_by_text("Press Prefill").count() == 0
    b.keyboard.press("ArrowRight")
    wait_cache_length(b, b_start + 2, timeout_ms=TIMEOUT_MS)
    for tab in (a, b):
        assert_no_errors(tab)
