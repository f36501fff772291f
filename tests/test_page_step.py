"""AppTest of the router (app.py) and the step-through page, on the real bundled model."""
from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from conftest import APP_TIMEOUT_S

REPO = Path(__file__).resolve().parents[1]


def _metric(at: AppTest, label: str) -> str:
    return next(m.value for m in at.metric if m.label == label)


def _cache_len(at: AppTest) -> int:
    return int(_metric(at, "Cache length").split()[0])


def _total_dot_products(at: AppTest) -> int:
    return int(_metric(at, "Dot products so far").replace(",", ""))


@pytest.fixture
def step_page(fresh_streamlit_caches) -> AppTest:
    at = AppTest.from_file(str(REPO / "pages" / "step_through.py"), default_timeout=APP_TIMEOUT_S)
    at.run()
    assert not at.exception
    return at


def test_app_router_renders_home_with_the_model_loaded(fresh_streamlit_caches, bundled):
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=APP_TIMEOUT_S)
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
    assert len(at.get("plotly_chart")) >= 4
    at.button(key="step_btn_back").click().run()
    assert _cache_len(at) == prompt_len + 2
    assert _total_dot_products(at) == work[2]
    at.button(key="step_btn_reset").click().run()
    assert not at.metric and "Prefill" in at.info[0].value


def test_cache_bytes_metric_matches_the_shape_arithmetic(step_page, bundled):
    at = step_page
    at.button(key="step_btn_prefill").click().run()
    at.button(key="step_btn_play").click().run()
    info = bundled.info
    expected = 2 * info.n_layer * info.n_kv_heads * _cache_len(at) * info.head_dim * 4
    assert _metric(at, "Cache bytes") == f"{expected:,} B"


def test_bad_prompts_give_a_message_and_keep_the_page_alive(step_page):
    at = step_page
    at.text_area(key="step_prompt_ROMEO:").set_value("   ").run()
    at.button(key="step_btn_prefill").click().run()
    assert not at.exception
    assert "empty" in at.warning[0].value
    at.text_area(key="step_prompt_ROMEO:").set_value("Romeo " * 400).run()
    at.button(key="step_btn_prefill").click().run()
    assert "positions" in at.warning[0].value
    at.button(key="step_btn_back").click().run()  # back before any prefill: refused with a message
    assert not at.exception


def test_sampling_controls_change_the_engine(step_page):
    at = step_page
    at.toggle(key="step_greedy").set_value(False).run()
    at.button(key="step_btn_prefill").click().run()
    at.button(key="step_btn_next").click().run()
    assert not at.exception
    assert at.session_state["step_engine"].sampling.greedy is False


def test_closed_sections_cost_nothing_and_open_ones_draw(fresh_streamlit_caches):
    """The all-layers overview and the without-cache view are built only when their expander is open."""
    at = AppTest.from_file(str(REPO / "pages" / "step_through.py"), default_timeout=APP_TIMEOUT_S)
    at.run()
    at.button(key="step_btn_prefill").click().run()
    closed_charts = len(at.get("plotly_chart"))
    at.session_state["step_exp_uncached"] = True  # what clicking the expander open does
    at.session_state["step_exp_layers"] = True
    at.button(key="step_btn_next").click().run()
    assert not at.exception
    assert len(at.get("plotly_chart")) == closed_charts + 3  # overview, recomputed rows, growth chart
    text = " ".join(m.value for m in at.markdown)
    assert "same next token: **yes**" in text


def _sidebar_only() -> None:
    """The sidebar picker alone. (AppTest re-runs app.py through Streamlit's legacy pages/ mode after its
    first run, which skips app.py; a real server never does. So the picker is tested on its own.)"""
    from kvviz import ui

    ui.sidebar_model_picker()


def test_sidebar_pretrained_lookup_offline_keeps_the_bundled_model_with_a_notice(fresh_streamlit_caches):
    at = AppTest.from_function(_sidebar_only, default_timeout=APP_TIMEOUT_S)
    at.run()
    at.sidebar.radio(key="app_model_kind").set_value("Pretrained GPT-2 (name or local folder)").run()
    at.sidebar.text_input(key="app_model_name").set_value("gpt2-xl").run()
    at.sidebar.button(key="app_model_load").click().run()
    assert not at.exception
    assert any("offline" in w.value and "gpt2-xl" in w.value for w in at.sidebar.warning)
    assert at.session_state["model_spec"] == "bundled"
    assert "Bundled Tiny-Shakespeare GPT-2" in at.sidebar.caption[0].value
