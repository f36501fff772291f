"""AppTest of the "Measured speed-up" page: a tiny benchmark end to end on the bundled model, its charts,
table and download; bad input gives a message and keeps the earlier results."""
from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from conftest import APP_TIMEOUT_S
from kvviz import bench, ui_bench

PAGE = str(Path(__file__).resolve().parents[1] / "pages" / "speedup.py")


@pytest.fixture(scope="module")
def app():
    import streamlit as st

    st.cache_resource.clear()
    at = AppTest.from_file(PAGE, default_timeout=APP_TIMEOUT_S).run()
    yield at
    st.cache_resource.clear()


def _set_tiny(at: AppTest, prompt_len: int = 4, new_tokens: int = 5) -> None:
    at.number_input(key="bench_prompt_len").set_value(prompt_len)
    at.number_input(key="bench_new_tokens").set_value(new_tokens)
    at.number_input(key="bench_repeats").set_value(1)
    at.number_input(key="bench_warmup").set_value(0)
    at.number_input(key="bench_threads").set_value(1)


def test_page_renders_before_any_run(app):
    assert not app.exception
    assert app.title[0].value == "Measured speed-up"
    assert app.expander[0].label == "What you are seeing"
    assert app.selectbox(key="bench_model").value == "bundled"
    assert not app.get("plotly_chart")
    assert "Run benchmark" in app.info[0].value


def test_tiny_benchmark_end_to_end_shows_charts(app):
    _set_tiny(app)
    app.button(key="bench_run").click().run()
    assert not app.exception and not app.error
    result = app.session_state[ui_bench.RESULT_KEY]
    assert isinstance(result, bench.BenchResult)
    assert result.settings.new_tokens == 5 and result.machine.threads == 1 and result.all_tokens_match
    assert len(app.get("plotly_chart")) == 4
    assert {m.label for m in app.metric} >= {"DynamicCache vs no cache", "Pre-allocated vs no cache",
                                              "Pre-allocated, share of roofline"}
    table = app.dataframe[0].value
    assert list(table["mode"]) == [m.label for m in result.modes]
    assert app.get("download_button")
    assert any("far below the op-count ratio" in m.value for m in app.markdown)


def test_bad_lengths_give_a_message_and_keep_results(app):
    before = app.session_state[ui_bench.RESULT_KEY]
    _set_tiny(app, prompt_len=200, new_tokens=100)  # 300 > the bundled model's 256 positions
    app.button(key="bench_run").click().run()
    assert not app.exception
    assert "only 256 positions" in app.error[0].value
    assert app.session_state[ui_bench.RESULT_KEY] is before
    assert len(app.get("plotly_chart")) == 4  # the earlier results are still on screen


def test_model_that_cannot_be_loaded_gives_a_warning(app):
    from huggingface_hub import try_to_load_from_cache

    if isinstance(try_to_load_from_cache("gpt2", "config.json"), str):
        pytest.skip("pretrained gpt2 is in the local Hugging Face cache here, so it loads")
    before = app.session_state[ui_bench.RESULT_KEY]
    _set_tiny(app)
    app.selectbox(key="bench_model").set_value("gpt2")
    app.button(key="bench_run").click().run()
    assert not app.exception
    assert "earlier results are kept" in app.warning[0].value
    assert app.session_state[ui_bench.RESULT_KEY] is before
