"""The stage in a teacher's hands, in a real browser (headless Debian Chromium at 1280x720; the stage's
part):

- after Prefill the Prompt popover shows the state in force (not an empty prompt, Play 1, temperature 0.10);
- arrow keys on the focused history slider scrub it and never crop the cache; the tiles say they show history;
- on a busy core every fast key press is taken (none merged or dropped), the keys act after a sidebar click,
  and Esc stops Play at the frame on screen; Play clicked while Esc still stops plays from that frame;
- a reload mid-class replays the stage to the same step, layer included (the address bar keeps the link);
- the stage (controls, figure with the newest row, history slider) fits 1280x720 on both bundled models, with
  the sidebar and in presenter mode, light and dark; at 150% zoom (853x480) the stage figure starts on screen,
  and presenting, its newest row is in view.
Screenshots go to test-artifacts/ (or $KVVIZ_ARTIFACTS).
"""

from __future__ import annotations

import urllib.parse

import pytest

from support.browser import ARTIFACTS, cache_length, close_tab, inside, open_tab, wait_cache_length

pytestmark = pytest.mark.browser
TIMEOUT_MS = 150_000  # a shared 2-core machine with a core kept busy


# The cache length on screen when Esc is pressed, read by a listener installed before the page's own.
SHOWN_AT_ESC = """window.addEventListener('keydown', (e) => {
    if (e.key !== 'Escape') return;
    const pos = [...document.querySelectorAll('.kvviz-strip span[data-pos]')].map(s => s.dataset.pos)
        .filter(p => p !== 'next').map(Number);
    window.__shownAtEsc = Math.max(...pos) + 1;
}, true);"""


def _prefilled_watching_esc(browser, app_url: str):
    """The stage, prefilled, with SHOWN_AT_ESC installed before the page's own listener: (tab, cache length)."""
    tab = open_tab(browser, app_url, "step_through", fresh=True, **STAGE)  # a script of its own: a context of its own
    tab.context.add_init_script(SHOWN_AT_ESC)
    tab.reload()
    tab.wait_for_selector("h1", state="attached")
    _idle(tab)
    return tab, _prefill(tab)


def _idle(tab) -> None:
    """The script has finished and the stage's key queue is empty."""
    tab.wait_for_timeout(400)
    tab.wait_for_selector('[data-testid="stStatusWidget"]', state="detached", timeout=TIMEOUT_MS)
    tab.wait_for_function(
        "() => !document.getElementById('kvviz-stage-busy') && !(window.__kvvizStage || {}).busy", timeout=TIMEOUT_MS
    )
    tab.wait_for_selector('[data-testid="stStatusWidget"]', state="detached", timeout=TIMEOUT_MS)


# The stage opened as a teacher's browser opens it (open_tab's arguments): 1280x720 unless told, its waits at
# TIMEOUT_MS, drawn once its title is in the page (the stage hides it on a short screen) and _idle.
STAGE = {"timeout_ms": TIMEOUT_MS, "state": "attached", "settle": _idle}


# What the stage's key queue and its hidden state say, for a failure's message: the queued presses (a correction
# with the records it aims at), the state elements (acted/records/playing), the last Stop's readings.
STAGE_STATE = """() => { const S = window.__kvvizStage || {};
    return {queue: (S.queue || []).map(i => i.key + (i.records === undefined ? '' : '->' + i.records)), busy: S.busy,
            state: [...document.querySelectorAll('.kvviz-stage-state')].map(e =>
                e.dataset.acted + '/' + e.dataset.records + '/' + e.dataset.playing),
            lastStop: S.lastStop, shownAtEsc: window.__shownAtEsc}; }"""


def _wait_cache_len(tab, n: int) -> None:
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        wait_cache_length(tab, n, timeout_ms=TIMEOUT_MS)
    except PlaywrightTimeout:
        raise AssertionError(f"cache length {cache_length(tab)}, not {n}: {tab.evaluate(STAGE_STATE)}") from None


def _wait_playing_past(tab, n: int) -> None:
    """Play has reached at least `n` cache positions (a busy browser may draw two frames as one: a wait for one exact
    length could miss it)."""
    tab.wait_for_function(
        """(n) => [...document.querySelectorAll('[data-testid="stMetricValue"]')]
                    .some(e => /^\\d+ tokens/.test(e.innerText) && parseInt(e.innerText) >= n)""",
        arg=n,
        timeout=TIMEOUT_MS,
    )


def _prefill(tab) -> int:
    tab.locator(".st-key-step_btn_prefill button").wait_for()
    _idle(tab)
    tab.keyboard.press("p")
    tab.wait_for_selector(".kvviz-strip")
    _idle(tab)
    return cache_length(tab)


def _steps(tab, start: int, n: int) -> None:
    for k in range(1, n + 1):
        tab.keyboard.press("ArrowRight")
        _wait_cache_len(tab, start + k)
    _idle(tab)


def test_after_prefill_the_prompt_popover_shows_the_state_in_force(app_url, browser):
    tab = open_tab(browser, app_url, "step_through", **STAGE)
    start = _prefill(tab)
    tab.locator('[data-testid="stPopover"]').filter(has_text="Prompt").locator("button").first.click()
    body = tab.locator('[data-testid="stPopoverBody"]')
    body.locator("textarea").wait_for()
    assert body.locator("textarea").input_value() == "ROMEO:"
    body.locator("input[type=number]").nth(2).wait_for()  # drawn just after the text box on a busy machine
    assert [e.input_value() for e in body.locator("input[type=number]").all()] == ["8", "40", "0"]
    assert body.locator('[data-testid="stSliderThumbValue"]').inner_text() == "0.80"
    tab.keyboard.press("Escape")  # closes the popover (its own key)
    body.wait_for(state="detached")
    tab.locator("h1").click()
    _idle(tab)
    assert "Play 8" in tab.locator(".st-key-step_btn_play button").first.inner_text()
    tab.keyboard.press("p")  # Prefill again: the prompt in force, not an empty one
    _idle(tab)
    assert tab.get_by_text("prompt is empty").count() == 0
    assert cache_length(tab) == start
    tab.keyboard.press("ArrowRight")
    _wait_cache_len(tab, start + 1)
    _idle(tab)
    query = urllib.parse.parse_qs(urllib.parse.urlparse(tab.url).query)
    assert query["temperature"] == ["0.8"] and query["top_k"] == ["40"]  # the sampling in force


def test_arrow_keys_on_the_history_slider_scrub_it_and_never_crop_the_cache(app_url, browser):
    tab = open_tab(browser, app_url, "step_through", **STAGE)
    start = _prefill(tab)
    _steps(tab, start, 4)
    thumb = tab.locator('.st-key-step_history [data-testid="stSliderThumbValue"]').locator("xpath=..")
    thumb.click()  # the teacher clicks the slider's handle (at the newest step)
    _idle(tab)
    assert tab.evaluate("document.activeElement.type") == "range"  # the slider has the focus
    for _ in range(2):
        tab.keyboard.press("ArrowLeft")
        tab.wait_for_timeout(300)
    _wait_cache_len(tab, start + 2)  # the tiles show step 2 of the history ...
    _idle(tab)
    label = (
        tab.locator('[data-testid="stMetric"]', has_text="Cache length")
        .locator('[data-testid="stMetricLabel"]')
        .inner_text()
    )
    assert "history" in label and "step 2" in label  # ... and say so
    tab.locator(".st-key-step_btn_next button").click()  # the cache was never cropped: Next makes it 5 steps
    _wait_cache_len(tab, start + 5)
    _idle(tab)
    assert "history" not in tab.locator('[data-testid="stMetric"]', has_text="Cache length").inner_text()


def test_on_a_busy_core_every_press_is_taken_even_after_a_sidebar_click(app_url, busy_core, browser):
    tab = open_tab(browser, app_url, "step_through", **STAGE)
    start = _prefill(tab)
    sidebar = tab.locator('[data-testid="stSidebar"]')
    sidebar.locator("label").filter(has_text="Tiny-Shakespeare GPT-2").first.click()  # focus on the radio
    tab.keyboard.press("ArrowRight")  # at once, no click on the page
    _wait_cache_len(tab, start + 1)
    sidebar.get_by_text("Which model").click()
    tab.keyboard.press("ArrowRight")
    _wait_cache_len(tab, start + 2)
    _idle(tab)
    for _ in range(10):  # 10 presses in about 2 s
        tab.keyboard.press("ArrowRight")
        tab.wait_for_timeout(200)
    for _ in range(20):  # 20 at once
        tab.keyboard.press("ArrowRight")
    _wait_cache_len(tab, start + 32)
    _idle(tab)
    tab.wait_for_timeout(1500)
    assert cache_length(tab) == start + 32  # none dropped, none doubled
    for _ in range(10):
        tab.keyboard.press("ArrowLeft")
    _wait_cache_len(tab, start + 22)
    _idle(tab)
    tab.wait_for_timeout(1500)
    assert cache_length(tab) == start + 22


def test_on_a_busy_core_esc_stops_play_at_the_frame_on_screen(app_url, busy_core, browser):
    tab, start = _prefilled_watching_esc(browser, app_url)
    for attempt in range(2):
        tab.locator(".st-key-step_btn_play button").first.click()  # Play 8
        _wait_playing_past(tab, start + 3)
        tab.keyboard.press("Escape")
        tab.wait_for_function("() => window.__shownAtEsc !== undefined")
        shown = tab.evaluate("window.__shownAtEsc")
        tab.wait_for_timeout(1000)
        _idle(tab)
        tab.wait_for_timeout(1500)
        _idle(tab)
        assert cache_length(tab) == shown, (  # stopped at the frame on screen
            f"Esc {attempt + 1}: {tab.evaluate('window.__kvvizStage.lastStop')}"
        )
        start = shown
        tab.evaluate("delete window.__shownAtEsc")


def test_play_clicked_while_esc_still_stops_plays_from_the_frame_on_screen(app_url, browser):
    """Play 8 takes exactly 8 steps (its last frame's full rerun, arriving with the address bar a step behind, must
    not replay it and crop one step). Then Esc, and Play at once (the teacher restarts the animation): Esc's Stop
    and its corrections run first, then Play joins the queue behind them and plays its 8 steps from the frame Esc
    kept (queued behind Play, the corrections would stop it)."""
    tab, start = _prefilled_watching_esc(browser, app_url)
    play = tab.locator(".st-key-step_btn_play button").first
    play.click()  # Play 8, to its end
    _wait_cache_len(tab, start + 8)
    tab.wait_for_timeout(1500)
    _idle(tab)
    assert cache_length(tab) == start + 8
    start += 8
    play.click()  # Play 8 again, stopped after 3 or so
    _wait_playing_past(tab, start + 3)
    tab.keyboard.press("Escape")
    play.click()  # at once: the Stop is still in the queue or running
    tab.wait_for_function("() => window.__shownAtEsc !== undefined")
    stopped_at = tab.evaluate("window.__shownAtEsc")
    _wait_cache_len(tab, stopped_at + 8)  # the whole of Play 8, from the frame Esc kept
    tab.wait_for_timeout(1500)
    _idle(tab)
    assert cache_length(tab) == stopped_at + 8, tab.evaluate("window.__kvvizStage.lastStop")
    assert tab.get_by_text("Connection error").count() == 0  # Streamlit's ForwardMsg cache is off (config.toml)


def test_a_reload_mid_class_replays_the_stage_to_the_same_step(app_url, browser):
    tab = open_tab(browser, app_url, "step_through", **STAGE)
    start = _prefill(tab)
    _steps(tab, start, 3)
    tab.locator(".st-key-step_layer button").filter(has_text="L2").click()
    _idle(tab)
    strip = tab.locator(".kvviz-strip").inner_text()
    tab.reload()
    tab.wait_for_selector(".kvviz-strip")
    _idle(tab)
    assert cache_length(tab) == start + 3
    assert tab.locator(".kvviz-strip").inner_text() == strip  # the same tokens: the same sampling replayed
    # plotly draws a chart's text after the run is over: read it once drawn (a clean-clone run read it empty)
    tab.wait_for_function("() => !!document.querySelector('.js-plotly-plot')?.innerText.trim()")
    assert "layer 2" in tab.locator(".js-plotly-plot").first.inner_text()
    tab.keyboard.press("ArrowRight")  # the replay is done once: the reader's own step is kept
    _wait_cache_len(tab, start + 4)
    _idle(tab)
    tab.wait_for_timeout(1000)
    assert cache_length(tab) == start + 4


def test_browser_back_leaves_the_stage_instead_of_replaying_it(app_url, browser):
    """Every step writes the stage into the address bar (a reload needs it), replacing the history entry: were each
    write an entry of its own, Back would replay the stage one step earlier, three Backs for three steps. Back
    leaves the page."""
    tab = open_tab(browser, app_url, "teachers", **STAGE)
    tab.get_by_text("Running it for a class").wait_for()
    _idle(tab)
    tab.locator('[data-testid="stSidebar"] a[href*="step_through"]').first.click()  # as a teacher goes there
    tab.wait_for_selector(".st-key-step_btn_prefill")
    _idle(tab)
    entries = tab.evaluate("history.length")
    start = _prefill(tab)
    _steps(tab, start, 3)
    assert "steps=3" in tab.url  # the address bar keeps the state a reload needs ...
    assert tab.evaluate("history.length") == entries  # ... without a history entry per step
    tab.go_back()
    tab.get_by_text("Running it for a class").wait_for()


def _assert_fits(tab, name: str, width: int = 1280, height: int = 720) -> None:
    tab.wait_for_timeout(800)  # plotly lays out
    figure = tab.locator(".js-plotly-plot").first
    parts = {
        "newest K row": figure.locator(".shapelayer path").last,
        "Next token button": tab.locator(".st-key-step_btn_next button"),
        "history slider": tab.locator('.st-key-step_history [data-testid="stSliderThumbValue"]'),
    }
    tab.screenshot(path=str(ARTIFACTS / f"stage_class_{name}.png"))
    for what, loc in parts.items():
        assert inside(loc.bounding_box(), width, height), f"{what} is not inside {width}x{height} ({name})"
    rows = {round(tab.locator(f".st-key-{key}").bounding_box()["y"]) for key in ("step_btn_prefill", "step_btn_reset")}
    assert len(rows) == 1, f"the controls wrap ({name})"
    pickers = {
        round(
            tab.locator(f".st-key-{key}").bounding_box()["y"]
            + tab.locator(f".st-key-{key}").bounding_box()["height"] / 2
        )
        for key in ("step_layer", "step_view", "step_show_copy")
    }
    assert max(pickers) - min(pickers) < 20, f"the pickers wrap ({name})"
    main = tab.locator('[data-testid="stMain"]')
    assert main.locator('[data-testid="stAlert"]').filter(has_text="is kept").count() == 0  # no banner stays


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_stage_fits_1280x720_on_both_models_with_the_sidebar_and_presenting(app_url, scheme, browser):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    tab = open_tab(browser, app_url, "step_through", color_scheme=scheme, **STAGE)
    start = _prefill(tab)
    _steps(tab, start, 6)
    _assert_fits(tab, f"{scheme}_gpt2_sidebar")
    tab.locator('[data-testid="stSidebar"] label').filter(has_text="Llama, GQA").first.click()
    tab.get_by_text("is kept").first.wait_for()  # said (a toast), then gone
    _idle(tab)
    start = _prefill(tab)
    _steps(tab, start, 6)
    tab.wait_for_function(
        "() => ![...document.querySelectorAll('[data-testid=\"stToast\"]')].length", timeout=TIMEOUT_MS
    )
    _assert_fits(tab, f"{scheme}_gqa_sidebar")
    tab.locator(".st-key-step_present label").click()
    _idle(tab)
    _assert_fits(tab, f"{scheme}_gqa_presenter")
    close_tab(tab)
    tab = open_tab(
        browser,
        app_url,
        "step_through",
        query={"prompt": "ROMEO:", "steps": "6", "present": "1"},
        color_scheme=scheme,
        **STAGE,
    )
    tab.wait_for_selector(".kvviz-strip")
    _idle(tab)
    _assert_fits(tab, f"{scheme}_gpt2_presenter")


def test_at_150_percent_zoom_the_stage_figure_starts_on_screen(app_url, browser):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    for present in ("0", "1"):  # 150% zoom on a 1280x720 screen: 853x480 CSS pixels at 1.5 device pixels each
        tab = open_tab(
            browser,
            app_url,
            "step_through",
            query={"prompt": "ROMEO:", "steps": "6", "present": present},
            width=853,
            height=480,
            device_scale_factor=1.5,
            **STAGE,
        )
        tab.wait_for_selector(".kvviz-strip")
        _idle(tab)
        tab.wait_for_timeout(800)
        tab.screenshot(path=str(ARTIFACTS / f"stage_class_zoom150_present{present}.png"))
        figure = tab.locator(".js-plotly-plot").first
        box = figure.bounding_box()
        assert box is not None and box["y"] + 60 < 480, f"the stage figure is off screen (present={present})"
        if present == "1":  # presenting, the newest row too
            assert inside(figure.locator(".shapelayer path").last.bounding_box(), 853, 480)
        close_tab(tab)


def test_back_and_forward_after_a_plans_link_prefill_and_five_steps(app_url, browser):
    """The plan's stage link (?fresh=1, a fresh stage) pushed a second history entry when the page took the flag
    out on arrival; Back after Prefill and 5 Next went to it and emptied the stage, and Forward did not bring the
    generation back. Now the flag leaves with the first state written (in place): Back returns to the plan, and
    Forward to the stage as it was, 5 steps in."""
    tab = open_tab(browser, app_url, "teachers", **STAGE)
    tab.get_by_text("Running it for a class").wait_for()
    _idle(tab)
    tab.locator('[data-testid="stMain"] a[href*="fresh=1"]').first.click()
    tab.wait_for_selector(".st-key-step_btn_prefill")
    _idle(tab)
    start = _prefill(tab)
    _steps(tab, start, 5)
    assert "steps=5" in tab.url and "fresh" not in tab.url
    tab.go_back()
    tab.get_by_text("Running it for a class").wait_for()
    _idle(tab)
    tab.go_forward()
    _wait_cache_len(tab, start + 5)
    _idle(tab)
    assert cache_length(tab) == start + 5 and "steps=5" in tab.url
    tab.go_back()  # and the plan's link, clicked again in this session, opens the stage fresh again
    tab.get_by_text("Running it for a class").wait_for()
    _idle(tab)
    tab.locator('[data-testid="stMain"] a[href*="fresh=1"]').first.click()
    tab.wait_for_selector(".st-key-step_btn_prefill")
    _idle(tab)
    assert tab.locator('[data-testid="stMetric"]', has_text="Cache length").count() == 0  # the cache is empty
