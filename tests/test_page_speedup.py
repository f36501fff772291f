"""AppTest of the "Measured speed-up" page: a tiny benchmark end to end on the bundled model, its charts,
table and download; one estimator for the headline and the explanation; past-cap inputs refused with a
message that keeps the earlier results; the batched-decode sweep; results kept per session."""

from __future__ import annotations

import sys

import pytest
from streamlit.testing.v1 import AppTest

from kvviz.speedup.records import ESTIMATOR, BenchResult, format_name
from support.pages import APP_TIMEOUT_S, PAGES_DIR, REPO, app_test

PAGE = str(PAGES_DIR / "speedup.py")
RESULT_KEY = "bench_result"


@pytest.fixture(scope="module")
def app():
    import streamlit as st

    st.cache_resource.clear()
    at = app_test(PAGE).run()
    yield at
    st.cache_resource.clear()


def _set_tiny(at: AppTest, prompt_len: int = 4, new_tokens: int = 5) -> None:
    at.number_input(key="bench_prompt_len").set_value(prompt_len)
    at.number_input(key="bench_new_tokens").set_value(new_tokens)
    at.number_input(key="bench_repeats").set_value(1)
    at.number_input(key="bench_warmup").set_value(0)
    at.number_input(key="bench_threads").set_value(1)


@pytest.mark.app
def test_page_renders_before_any_run(app):
    assert not app.exception
    assert app.title[0].value == "Measured speed-up"
    assert app.expander[0].label == "What you are seeing"
    assert app.selectbox(key="bench_model").value == "bundled"
    assert app.number_input(key="bench_threads").value is None  # auto: from the free cores
    assert not app.get("plotly_chart")
    assert "Run benchmark" in app.info[0].value


@pytest.mark.app
def test_tiny_benchmark_end_to_end_shows_charts(app):
    _set_tiny(app)
    app.button(key="bench_run").click().run()
    assert not app.exception and not app.error
    result = app.session_state[RESULT_KEY]
    assert isinstance(result, BenchResult)
    assert result.settings.new_tokens == 5 and result.machine.threads == 1 and result.all_tokens_match
    assert result.machine.thread_reason == "set by you"
    assert len(app.get("plotly_chart")) == 4
    metrics = {m.label: m.value for m in app.metric}
    assert metrics["Flat cache vs no cache"] == f"{result.speedup('preallocated'):.2f}x"
    # a human name, short enough for a quarter of the page; the setting's value is in the tile's help
    assert metrics["Weight format (measured)"] == format_name(result.weight_choice.chosen, with_code=False)
    assert "(" not in metrics["Weight format (measured)"]
    (tile,) = [m for m in app.metric if m.label == "Weight format (measured)"]
    assert result.weight_choice.chosen in tile.help
    roof = metrics["Flat cache, share of read roofline"]
    assert roof == "disturbed" or roof.endswith("%")
    table = app.dataframe[0].value
    assert list(table["mode"]) == [m.label for m in result.modes]
    assert app.get("download_button")
    why = next(m.value for m in app.markdown if "far below the op-count ratio" in m.value)
    # one estimator: the paragraph's figure is the headline's, and it names the estimator
    assert f"({result.speedup('preallocated'):.1f}x)" in why and ESTIMATOR in why
    assert any("the weight kernel decides" in m.value for m in app.markdown)


@pytest.mark.app
@pytest.mark.parametrize(
    "key, value, message",
    [
        # past the box's bounds: Streamlit resets the value; the setting's rule names it (kvviz.ui.bounded)
        (
            "bench_repeats",
            11,
            "Rounds must be a whole number from 1 to 10: the box was empty, or the browser sent a "
            "value outside that range. Using 3 until it is changed.",
        ),
        (
            "bench_warmup",
            6,
            "Warm-up runs must be a whole number from 0 to 5: the box was empty, or the browser "
            "sent a value outside that range. Using 1 until it is changed.",
        ),
        ("bench_threads", 9, "Torch threads must be between 1 and 8 (got 9). Using auto ("),
        ("bench_prompt_len", 300, "Prompt length must be between 1 and 256 (got 300)"),
    ],
)
def test_past_cap_inputs_give_a_message_and_keep_results(app, key, value, message):
    before = app.session_state[RESULT_KEY]
    _set_tiny(app)
    app.number_input(key=key).set_value(value)
    app.button(key="bench_run").click().run()
    assert not app.exception
    assert app.error[0].value.startswith(message)
    assert app.session_state[RESULT_KEY] is before
    assert len(app.get("plotly_chart")) == 4  # the earlier results are still on screen


@pytest.mark.app
def test_lengths_past_the_models_positions(app):
    _set_tiny(app, prompt_len=200, new_tokens=100)  # 300 > the bundled model's 256 positions
    app.button(key="bench_run").click().run()
    assert not app.exception and "only 256 positions" in app.error[0].value


@pytest.mark.app
def test_batched_decode_sweep(app):
    _set_tiny(app)
    app.slider(key="bench_batch_max").set_value(4)
    app.number_input(key="bench_batch_ctx").set_value(300)  # past the bundled model's 255
    app.button(key="bench_batch_run").click().run()
    assert not app.exception and "Context length must be between 1 and 255" in app.error[0].value
    app.number_input(key="bench_batch_ctx").set_value(16)
    app.button(key="bench_batch_run").click().run()
    assert not app.exception and not app.error
    sweep = app.session_state["bench_batch_result"]
    assert [p.step.batch for p in sweep.points] == [1, 2, 4]
    assert len(app.get("plotly_chart")) == 5
    assert any(f"from batch {sweep.kv_overtakes_at_batch} on" in m.value for m in app.markdown)


@pytest.mark.app
def test_results_are_per_session():
    """A second session (a fresh AppTest) sees no timings: nothing is shared through st.cache_data."""
    other = app_test(PAGE).run()
    assert RESULT_KEY not in other.session_state and not other.get("plotly_chart")


@pytest.mark.app
def test_model_that_cannot_be_loaded_gives_a_warning(app):
    from huggingface_hub import try_to_load_from_cache

    if isinstance(try_to_load_from_cache("gpt2", "config.json"), str):
        pytest.skip("pretrained gpt2 is in the local Hugging Face cache here, so it loads")
    before = app.session_state[RESULT_KEY]
    _set_tiny(app)
    app.selectbox(key="bench_model").set_value("gpt2")
    app.button(key="bench_run").click().run()
    assert not app.exception
    assert "earlier results are kept" in app.warning[0].value
    assert app.session_state[RESULT_KEY] is before


@pytest.mark.slow
def test_page_renders_without_importing_torch():
    """The first render (form, explanation) needs no torch: the harness is imported only when a run starts."""
    import subprocess

    code = (
        "import sys; from streamlit.testing.v1 import AppTest; "
        f"at = AppTest.from_file({PAGE!r}, default_timeout=60).run(); "
        "assert not at.exception, at.exception; "
        "assert 'torch' not in sys.modules and 'transformers' not in sys.modules, 'torch imported'"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=APP_TIMEOUT_S)
    assert done.returncode == 0, done.stderr[-2000:]
