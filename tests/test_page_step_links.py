"""The stage keeps a class's work: links restore the whole view and survive the reader's clicks,
switching the model keeps one generation per model, a model dropped from the shared cache stays with the session
using it, and the race view times the step as a fair statistic. AppTest on the real bundled models; the link
parsing is checked on its own (a typed, pasted or truncated link never crashes the page)."""

from __future__ import annotations

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from kvviz.model import loading
from kvviz.step import link as stage_link
from kvviz.step import view
from kvviz.step.records import DEFAULT_SAMPLING
from support.pages import open_page


def _page(**query: str) -> AppTest:
    """The stage opened with a link's `query`."""
    return open_page("pages/step_through.py", query=query)


def _cache_len(at: AppTest) -> int:
    return int(next(m.value for m in at.metric if m.label == "Cache length").split()[0])


@pytest.mark.parametrize(
    "text, expected",
    [
        ("12", 12),
        ("-3", 0),
        ("1.5", 5),
        ("nan", 5),
        ("9" * 40, 100),
        ("", 5),
        (None, 5),
        (" 7 ", 7),
        ("0007", 7),
        ("1e3", 5),
        ("x", 5),
    ],
)
def test_link_integers_are_read_defensively(text, expected):
    assert stage_link.url_int(text, 5, 0, 100) == expected


def test_a_link_round_trips_through_its_own_query():
    link = stage_link.StageLink(
        prompt="First Citizen:\nBefore we proceed",
        steps=4,
        greedy=False,
        temperature=0.65,
        top_k=12,
        seed=31,
        view="race",
        present=True,
        layer=2,
        head=3,
    )
    query = link.query()
    assert query["step_layer"] == "L2" and query["step_head"] == "H3"  # the pickers' own URL keys and labels
    assert stage_link.parse_link(query, 256) == link
    hostile = {
        "prompt": "ROMEO:",
        "steps": "9" * 60,
        "temperature": "nan",
        "top_k": "-4",
        "seed": "1.5",
        "view": "<script>",
        "step_layer": "L-1",
    }
    parsed = stage_link.parse_link(hostile, 256)
    assert (parsed.steps, parsed.temperature, parsed.top_k, parsed.seed, parsed.view) == (256, 0.8, 0, 0, "one")


@pytest.mark.app
def test_the_sampling_limits_live_in_one_place_the_widget_the_link_and_the_record():
    """One home per rule: the link clamps to the limits the record accepts, and the Prompt popover's widgets offer
    exactly that range (not a record taking 0.05-5.0 and any top-k beside a page offering 0.1-2.0 and 200)."""
    from kvviz.step.records import SEED_MAX, TEMPERATURE_MAX, TEMPERATURE_MIN, TOP_K_MAX, Sampling

    high = stage_link.parse_link({"prompt": "x", "temperature": "9", "top_k": "99999", "seed": "9" * 9}, 256)
    low = stage_link.parse_link({"prompt": "x", "temperature": "0.001"}, 256)
    assert (high.temperature, high.top_k, high.seed, low.temperature) == (
        TEMPERATURE_MAX,
        TOP_K_MAX,
        SEED_MAX,
        TEMPERATURE_MIN,
    )
    for link in (high, low):  # whatever a link says, the record takes it
        Sampling(greedy=False, temperature=link.temperature, top_k=link.top_k, seed=link.seed)
    for wrong in (
        {"temperature": TEMPERATURE_MAX + 0.01},
        {"temperature": TEMPERATURE_MIN / 2},
        {"top_k": TOP_K_MAX + 1},
        {"seed": SEED_MAX + 1},
    ):
        with pytest.raises(ValueError):
            Sampling(greedy=False, **wrong)
    at = _page()
    at.session_state["step_popover_prompt"] = True  # its widgets are drawn only while it is open
    at.run()
    slider = at.slider(key="step_temperature")
    assert (slider.min, slider.max) == (TEMPERATURE_MIN, TEMPERATURE_MAX)
    assert at.number_input(key="step_top_k").max == TOP_K_MAX and at.number_input(key="step_seed").max == SEED_MAX


@pytest.mark.app
def test_a_link_restores_sampling_view_and_presenter_mode_and_replays_the_generation(fresh_streamlit_caches, bundled):
    from kvviz.step.engine import StepEngine

    at = _page(
        prompt="JULIET:",
        steps="4",
        seed="7",
        temperature="0.9",
        top_k="20",
        greedy="0",
        view="race",
        present="1",
        step_layer="L2",
        step_head="H3",
    )
    engine = at.session_state["step_engine"]
    assert engine.prompt_text == "JULIET:" and len(engine.records) == 5
    assert (at.session_state["step_seed"], at.session_state["step_temperature"], at.session_state["step_top_k"]) == (
        7,
        0.9,
        20,
    )
    assert at.session_state["step_view"] == "race" and at.toggle(key="step_present").value is True
    reference = StepEngine(bundled, DEFAULT_SAMPLING.__class__(greedy=False, temperature=0.9, top_k=20, seed=7))
    reference.prefill("JULIET:")
    for _ in range(4):
        reference.step()
    assert engine.token_ids == reference.token_ids  # the same generation the sender saw
    # the Link popover writes what the page reads: the same keys, the same labels
    link = next(c.value for c in at.code if "prompt=JULIET" in c.value)
    for part in ("steps=4", "seed=7", "temperature=0.9", "top_k=20", "view=race", "present=1"):
        assert part in link


@pytest.mark.app
def test_a_links_generation_survives_next_and_layer_clicks(fresh_streamlit_caches):
    at = _page(prompt="ROMEO:", steps="3")
    prompt_len = at.session_state["step_engine"].prompt_len
    for _ in range(4):
        at.button(key="step_btn_next").click().run()
    at.query_params["step_layer"] = "L2"  # what the bound layer picker writes into the URL on a click
    at.segmented_control(key="step_layer").set_value(2).run()
    assert not at.exception
    assert _cache_len(at) == prompt_len + 7
    at.run()  # a full rerun with the link still in the URL replays nothing
    assert _cache_len(at) == prompt_len + 7


@pytest.mark.app
def test_switching_the_model_keeps_one_generation_per_model(fresh_streamlit_caches):
    at = _page()
    at.button(key="step_btn_prefill").click().run()
    for _ in range(3):
        at.button(key="step_btn_next").click().run()
    tokens = list(at.session_state["step_engine"].token_ids)
    at.session_state["model_spec"] = loading.BUNDLED_GQA  # what the sidebar's model radio does
    at.run()
    assert not at.exception
    assert any("is kept" in t.value for t in at.toast)  # said, not silent
    assert not at.session_state["step_engine"].started
    at.button(key="step_btn_prefill").click().run()
    at.button(key="step_btn_next").click().run()
    gqa_tokens = list(at.session_state["step_engine"].token_ids)
    at.session_state["model_spec"] = loading.BUNDLED
    at.run()
    assert any("Restored your generation" in t.value for t in at.toast)
    assert at.session_state["step_engine"].token_ids == tokens and _cache_len(at) == len(tokens)
    at.session_state["model_spec"] = loading.BUNDLED_GQA
    at.run()
    assert at.session_state["step_engine"].token_ids == gqa_tokens


@pytest.mark.app
def test_a_model_dropped_from_the_shared_cache_stays_with_the_session_using_it(fresh_streamlit_caches):
    import streamlit as st

    at = _page()
    at.button(key="step_btn_prefill").click().run()
    for _ in range(2):
        at.button(key="step_btn_next").click().run()
    engine = at.session_state["step_engine"]
    length = engine.cache_len
    st.cache_resource.clear()  # what a fifth student's model does to the least recently used one
    at.run()  # the session's next full rerun
    assert not at.exception
    assert at.session_state["step_engine"] is engine and _cache_len(at) == length
    at.button(key="step_btn_next").click().run()
    assert _cache_len(at) == length + 1


@pytest.mark.model
def test_parked_generation_replays_the_same_cache(bundled):
    from kvviz.step.engine import StepEngine

    engine = StepEngine(bundled, DEFAULT_SAMPLING)
    engine.prefill("ROMEO:")
    for _ in range(5):
        engine.step()
    back = StepEngine(bundled)
    back.restore(engine.parked())
    assert back.token_ids == engine.token_ids and back.pending_token_id == engine.pending_token_id
    assert len(back.records) == len(engine.records)
    np.testing.assert_allclose(back.layer_keys(1), engine.layer_keys(1), atol=1e-5)


@pytest.mark.model
def test_the_race_times_the_shown_step_both_ways_and_changes_nothing(bundled):
    from kvviz.step.engine import StepEngine

    engine = StepEngine(bundled, DEFAULT_SAMPLING)
    engine.prefill("ROMEO:")
    for _ in range(6):
        engine.step()
    keys, length = engine.layer_keys(0).copy(), engine.cache_len
    timing = engine.race(budget_s=0.05)
    assert timing.seq_len == length and timing.repeats >= 1
    assert len(timing.fixed_ms) == len(timing.cached_ms) == len(timing.uncached_ms)
    assert all(x > 0 for x in timing.cached_ms + timing.uncached_ms + timing.fixed_ms)
    assert engine.cache_len == length and (engine.layer_keys(0) == keys).all()  # nobody's cache touched
    earlier = engine.race(at=2, budget_s=0.0)  # no budget: one repeat a side (tests/test_race.py: the bound)
    assert earlier.seq_len == engine.records[2].cache_len and earlier.repeats == 1


@pytest.mark.app
def test_the_race_view_shows_the_clock_and_a_verdict(fresh_streamlit_caches):
    at = _page(prompt="ROMEO:", steps="6", view="race")
    assert len(at.get("plotly_chart")) == 3  # both sides, and the clock
    text = " ".join(m.value for m in at.markdown)
    # how it was measured, either way step_view.race_verdict says it: the medians of the repeats, or one repeat a side
    # when a repeat outlasts the click's budget (a loaded machine: it failed a clean-clone run so)
    measured = ("Medians of" in text and "repeats a side" in text) or "One repeat a side" in text
    assert measured and ("1-min load" in text or "load unknown" in text)
    assert ("faster with the cache" in text) or ("Inside the noise" in text) or ("measured slower" in text)


@pytest.mark.app
def test_stop_lands_on_the_last_frame_drawn(fresh_streamlit_caches):
    """Esc / Stop during Play: a frame drawn whole stays; a step whose frame the click cut short (Streamlit
    interrupts a running frame for the click) is rolled back, so the stage stops where the class saw it."""
    at = _page()
    at.button(key="step_btn_prefill").click().run()
    at.button(key="step_btn_play").click().run()  # arms Play and draws its first frame
    at.run()
    engine = at.session_state["step_engine"]
    drawn = len(engine.records)
    assert at.session_state["step_play_left"] > 0 and at.session_state["step_play_shown"] == drawn
    at.button(key="step_btn_stop").click().run()
    assert len(engine.records) == drawn and at.session_state["step_play_left"] == 0
    at.button(key="step_btn_play").click().run()
    at.run()
    drawn = len(engine.records)
    engine.step()  # a frame's step taken, its drawing cut short by the click
    at.button(key="step_btn_stop").click().run()
    assert not at.exception
    assert len(engine.records) == drawn and _cache_len(at) == engine.cache_len


@pytest.mark.model
def test_the_stage_charts_read_from_the_back_of_the_room(bundled):
    """Every step-page chart: ticks and colour-scale ticks >= 14 px, at most four legend entries; the row the
    copying readout names is labelled even when 21+ rows thin the labels out."""
    from kvviz.figures import step as figs
    from kvviz.step.engine import StepEngine

    engine = StepEngine(bundled)
    engine.prefill(view.REPEAT_PROMPT + " stone red apple blue river green stone")  # 21+ rows, a copy
    snap = engine.snapshot(0, 0, all_layers=True)
    assert snap.copy is not None and snap.cache_len > 20
    timing = engine.race(budget_s=0.0)
    charts = [
        figs.stage_figure(snap),
        figs.group_figure(snap),
        figs.race_figure(snap, True),
        figs.race_timing_figure(timing.cached_ms, timing.uncached_ms, timing.fixed_ms),
        figs.next_token_bars(["a", "b"], [0.6, 0.4], "a"),
        figs.growth_chart([0, 1], [1, 2], [1, 3], "dots"),
    ]
    for fig in charts:
        layout = fig.to_plotly_json()["layout"]
        for name, axis in layout.items():
            if name.startswith(("xaxis", "yaxis")):
                assert axis.get("tickfont", {}).get("size", 0) >= 14, name
        for trace in fig.data:
            bar = getattr(trace, "colorbar", None)
            if getattr(trace, "showscale", False):
                assert bar.tickfont.size >= 14
        assert sum(1 for t in fig.data if t.showlegend is not False and layout.get("showlegend", True)) <= 4
    y = charts[0].layout.yaxis
    assert any(text.startswith(f"{snap.copy.target_pos}: ") for text in y.ticktext)
