"""AppTest of the router (app.py) and the step-through page, on the real bundled model."""

from __future__ import annotations

import dataclasses
import re

import pytest
from streamlit.testing.v1 import AppTest

from kvviz.memory import units
from kvviz.step.records import DEFAULT_SAMPLING
from support.pages import app_test, open_page

pytestmark = pytest.mark.app  # every test runs the router or the step page in AppTest


def _metric(at: AppTest, label: str) -> str:
    return next(m.value for m in at.metric if m.label == label or m.label.startswith(label + " at step"))


def _cache_len(at: AppTest) -> int:
    return int(_metric(at, "Cache length").split()[0])


def _total_dot_products(at: AppTest) -> int:
    """Cumulative dot products with the cache, from the stage's caption (computed by kvviz.step.view)."""
    text = " ".join(c.value for c in at.caption)
    return int(
        re.search(r"All passes so far, the prefill included: ([\d,]+) dot products with the cache", text)
        .group(1)
        .replace(",", "")
    )


@pytest.fixture
def step_page(fresh_streamlit_caches) -> AppTest:
    return open_page("pages/step_through.py")


def test_app_router_renders_home_with_the_model_loaded(fresh_streamlit_caches, bundled):
    at = app_test("app.py")
    at.run()
    assert not at.exception
    assert at.title[0].value.startswith("kvviz")
    assert any("Bundled Tiny-Shakespeare GPT-2" in c.value for c in at.sidebar.caption)
    # The per-token figure on the home page is computed from the loaded model's shape (K and V, fp32).
    info = bundled.info
    per_token = 2 * info.n_layer * info.n_kv_heads * info.head_dim * 4
    assert any(f"**{per_token:,} bytes**" in i.value for i in at.info)


def test_next_token_grows_cache_and_counters_and_back_shrinks_them(step_page):
    at = step_page
    assert "Prefill" in at.info[0].value  # nothing cached yet: the page says what to do
    at.button(key="step_btn_prefill").click().run()
    assert not at.exception
    prompt_len = _cache_len(at)
    work = [_total_dot_products(at)]
    for k in range(1, 4):
        at.button(key="step_btn_next").click().run()
        assert not at.exception
        assert _cache_len(at) == prompt_len + k
        work.append(_total_dot_products(at))
    assert work == sorted(set(work))  # strictly growing cumulative work
    assert len(at.get("plotly_chart")) == 2  # the stage (K | V | attention in one figure) and next-token bars
    at.button(key="step_btn_back").click().run()
    assert _cache_len(at) == prompt_len + 2
    assert _total_dot_products(at) == work[2]
    at.button(key="step_btn_reset").click().run()
    assert not at.metric and "Prefill" in at.info[0].value


def test_cache_size_metric_matches_the_shape_arithmetic(step_page, bundled):
    at = step_page
    at.button(key="step_btn_prefill").click().run()
    at.button(key="step_btn_play").click().run()
    at.run()
    info = bundled.info
    expected = 2 * info.n_layer * info.n_kv_heads * _cache_len(at) * info.head_dim * 4
    size = next(m for m in at.metric if m.label == "Cache size")
    assert size.value == units.short_bytes(expected)
    assert f"{expected:,} B" in size.help


def test_play_adds_history_and_scrubbing_back_changes_nothing(step_page):
    at = step_page
    at.button(key="step_btn_prefill").click().run()
    at.button(key="step_btn_next").click().run()
    positions_before = at.slider(key="step_history").max - at.slider(key="step_history").min + 1
    at.button(key="step_btn_play").click().run()  # Play 8 (the default N): arms the animation, takes step 1
    for _ in range(7):  # each further run is one animation frame (the browser's run_every tick)
        assert at.session_state["step_play_left"] > 0
        at.run()
    assert not at.exception
    assert at.session_state["step_play_left"] == 0
    history = at.slider(key="step_history")
    assert history.max - history.min + 1 == positions_before + 8
    engine = at.session_state["step_engine"]
    cache_len, token_ids = engine.cache_len, list(engine.token_ids)
    keys = engine.layer_keys(0).copy()
    history.set_value(1).run()  # scrub back to the first decode step
    assert not at.exception
    assert _cache_len(at) == engine.prompt_len + 1  # the stage shows step 1 ...
    assert engine.cache_len == cache_len and engine.token_ids == token_ids  # ... the cache is untouched
    assert (engine.layer_keys(0) == keys).all()
    at.button(key="step_btn_next").click().run()  # an action returns the stage to the newest step
    assert _cache_len(at) == cache_len + 1


def test_race_view_shows_both_sides_with_their_counters(step_page, bundled):
    at = step_page
    at.button(key="step_btn_prefill").click().run()
    at.button(key="step_btn_next").click().run()
    at.segmented_control(key="step_view").set_value("race").run()
    assert not at.exception
    text = " ".join(m.value for m in at.markdown)
    info, seq = bundled.info, _cache_len(at)
    assert (
        f"**With the cache**, this step: {info.n_layer * info.n_head * seq:,} dot products; K and V of 1 token "
        f"in each of {info.n_layer} layers"
    ) in text
    uncached = info.n_layer * info.n_head * seq * (seq + 1) // 2
    assert (
        f"**Without the cache**, this step: {uncached:,} dot products; K and V of {seq:,} tokens in each of "
        f"{info.n_layer} layers"
    ) in text
    # one meaning per word: a "row" is one head's row at one cache position (the heatmap, the
    # lesson), so the race does not call a token's K/V across all heads of a layer a row; and a total since the
    # prefill is never worded like one pass's count
    assert "K/V rows" not in text
    caption = " ".join(c.value for c in at.caption)
    assert "the prefill included" in caption and "Since the prefill" not in caption
    assert _metric(at, "This step: dots without cache") == f"{uncached:,}"


def test_a_link_replays_the_state_and_presenter_mode_opens_from_the_url(fresh_streamlit_caches):
    at = app_test("pages/step_through.py", query={"prompt": "JULIET:", "steps": "5", "present": "1"})
    at.run()
    assert not at.exception
    engine = at.session_state["step_engine"]
    assert engine.prompt_text == "JULIET:" and len(engine.records) == 6
    assert _cache_len(at) == engine.prompt_len + 5
    assert at.toggle(key="step_present").value is True
    assert not any("What you are seeing" in e.label for e in at.expander)  # presenter mode: only the stage


def _open_prompt_box(at) -> None:
    """The teacher opens the Prompt popover: its widgets are drawn only while it is open (less work per click)."""
    at.session_state["step_popover_prompt"] = True
    at.run()


def test_the_prompt_box_draws_its_widgets_only_while_open(step_page):
    at = step_page
    assert not at.text_area and not at.number_input
    _open_prompt_box(at)
    assert [t.key for t in at.text_area] == ["step_prompt_ROMEO:"]
    at.number_input(key="step_top_k").set_value(7).run()
    at.session_state["step_popover_prompt"] = False
    at.run()  # closed: not drawn, the value kept
    assert not at.number_input and at.session_state["step_top_k"] == 7
    at.button(key="step_btn_prefill").click().run()
    assert at.session_state["step_engine"].sampling.top_k == 7
    _open_prompt_box(at)
    assert at.number_input(key="step_top_k").value == 7


def test_bad_prompts_give_a_message_and_keep_the_page_alive(step_page):
    at = step_page
    _open_prompt_box(at)
    at.text_area(key="step_prompt_ROMEO:").set_value("   ").run()
    at.button(key="step_btn_prefill").click().run()
    assert not at.exception
    assert "empty" in at.warning[0].value
    at.text_area(key="step_prompt_ROMEO:").set_value("Romeo " * 400).run()
    at.button(key="step_btn_prefill").click().run()
    assert "positions" in at.warning[0].value
    at.button(key="step_btn_back").click().run()  # back before any prefill: refused with a message
    assert not at.exception


def test_sampling_controls_pick_the_seeded_tokens(step_page, bundled):
    """Sampling is the default; a seed picks the draw, and the Greedy toggle switches to argmax decoding: the page
    continues exactly as an engine with that Sampling does."""
    from kvviz.step.engine import StepEngine

    at = step_page
    _open_prompt_box(at)
    at.number_input(key="step_seed").set_value(11).run()
    at.button(key="step_btn_prefill").click().run()
    for _ in range(6):
        at.button(key="step_btn_next").click().run()
    assert not at.exception
    page_tokens = at.session_state["step_engine"].token_ids
    engine = StepEngine(bundled, dataclasses.replace(DEFAULT_SAMPLING, seed=11))
    engine.prefill("ROMEO:")
    for _ in range(6):
        engine.step()
    assert page_tokens == engine.token_ids
    at.toggle(key="step_greedy").set_value(True).run()
    at.button(key="step_btn_prefill").click().run()
    for _ in range(6):
        at.button(key="step_btn_next").click().run()
    greedy = StepEngine(bundled)
    greedy.prefill("ROMEO:")
    for _ in range(6):
        greedy.step()
    assert at.session_state["step_engine"].token_ids == greedy.token_ids != page_tokens


def test_the_closed_uncached_section_costs_nothing_and_open_it_draws(fresh_streamlit_caches):
    """The without-cache view is built only when its expander is open."""
    at = app_test("pages/step_through.py")
    at.run()
    at.button(key="step_btn_prefill").click().run()
    closed_charts = len(at.get("plotly_chart"))
    at.session_state["step_exp_uncached"] = True  # what clicking the expander open does
    at.button(key="step_btn_next").click().run()
    assert not at.exception
    assert len(at.get("plotly_chart")) == closed_charts + 1  # the growth chart
    text = " ".join(m.value for m in at.markdown)
    assert "same next token: **yes**" in text


def _sidebar_only() -> None:
    """The sidebar picker alone. (AppTest re-runs app.py through Streamlit's legacy pages/ mode after its
    first run, which skips app.py; a real server never does. So the picker is tested on its own.)"""
    from kvviz.ui import sidebar

    sidebar.sidebar_model_picker()


def test_sidebar_pretrained_lookup_offline_keeps_the_bundled_model_with_a_notice(fresh_streamlit_caches):
    at = app_test(_sidebar_only)
    at.run()
    at.sidebar.radio(key="app_model_kind").set_value("Pretrained GPT-2 (name or local folder)").run()
    at.sidebar.text_input(key="app_model_name").set_value("gpt2-xl").run()
    at.sidebar.button(key="app_model_load").click().run()
    assert not at.exception
    assert any("offline" in w.value and "gpt2-xl" in w.value for w in at.sidebar.warning)
    assert at.session_state["model_spec"] == "bundled"
    assert "Bundled Tiny-Shakespeare GPT-2" in at.sidebar.caption[0].value


def test_the_stage_on_the_bundled_gqa_model_shows_the_group_mapping_and_measured_bytes(fresh_streamlit_caches):
    from kvviz.model import loading

    at = app_test("pages/step_through.py", session_state={"model_spec": loading.BUNDLED_GQA})
    at.run()
    at.button(key="step_btn_prefill").click().run()
    at.button(key="step_btn_next").click().run()
    at.segmented_control(key="step_view").set_value("gqa").run()
    assert not at.exception
    info = at.session_state["step_engine"].loaded.info
    assert (info.n_head, info.n_kv_heads) == (8, 2)
    caption = next(c.value for c in at.caption if c.value.startswith("kv_head = q_head // 4"))
    assert "kv 0 ← q 0, 1, 2, 3; kv 1 ← q 4, 5, 6, 7" in caption
    real = at.session_state["step_engine"].cache_bytes
    assert f"real tensors: {real:,} B (calculator: {real:,} B)" in caption and f"{4 * real:,} B, 4x more" in caption


def test_the_stage_chart_carries_its_data_as_text_for_a_screen_reader(step_page, bundled):
    """The K | V | attention chart's data as a visually hidden sentence beside it, computed from the same
    snapshot: the rows drawn, their width, the newest row, and where the newest query puts most of its weight."""
    from kvviz.figures import step as figs
    from kvviz.step.engine import StepEngine

    at = step_page
    at.button(key="step_btn_prefill").click().run()
    at.button(key="step_btn_next").click().run()
    text = next(h.proto.body for h in at.get("html") if "kvviz-chart-text" in h.proto.body)
    n = _cache_len(at)
    assert f"K and V each hold {n} rows of {bundled.info.head_dim} numbers, positions 0 to {n - 1}" in text
    assert "position:absolute" in text and "clip:rect(0,0,0,0)" in text  # hidden from sight, not from a reader

    engine = StepEngine(bundled)  # the sentence's numbers are the snapshot's own, including past the drawn rows
    engine.prefill("ROMEO: " + "the king is dead and " * 8)
    for _step in range(3):
        engine.step()
    snap = engine.snapshot(1, 2)
    said = figs.stage_figure_text(snap)
    peak = snap.first_row + int(snap.attention.argmax())
    assert snap.first_row > 0 and f"{snap.first_row} older rows are not drawn" in said
    assert f"{snap.attention.max():.2f}, on position {peak} (" in said
    assert f"the newest row is position {engine.cache_len - 1} (" in said
