"""AppTest of the eviction page (Cache internals: What to forget) on the real bundled model: it renders in English
and in Chinese with its explanation, grid, curves and computed takeaways; changing the policy, the budget and S
changes what is shown; a value past a cap gets a message, never an exception."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from kvviz import i18n
from kvviz.internals import eviction
from support.i18n_text import english_leftovers, page_texts
from support.pages import app_test

pytestmark = pytest.mark.app  # every test runs the page in AppTest

PAGE = "pages/internals_eviction.py"


@pytest.fixture(autouse=True, scope="module")
def one_sweep_for_the_module():
    """The page caches each measurement on everything it reads (st.cache_data: deterministic, so the page shares it
    between readers). The module starts and ends with empty caches, and between them its tests share what they
    measured, as a class's readers do: the sweep at the default settings is measured once, not once per test (it is
    most of this module's time). (Stop is the reader's: it holds whatever is cached.)"""
    import streamlit as st

    st.cache_data.clear()
    st.cache_resource.clear()
    yield
    st.cache_data.clear()
    st.cache_resource.clear()


def _app(lang: str = i18n.ENGLISH) -> AppTest:
    at = app_test(PAGE, lang=lang)
    with i18n.language(lang):
        return at.run()


def _run(action, lang: str = i18n.ENGLISH) -> AppTest:
    with i18n.language(lang):
        return action()


def _metrics(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def _markdown(at: AppTest) -> str:
    return " ".join(m.value for m in at.markdown)


def test_page_renders_and_policy_budget_and_sinks_change_what_is_shown():
    at = _app()
    assert not at.exception and not at.error, (at.exception, [e.value for e in at.error])
    assert at.title[0].value == "What to forget: eviction and compression"
    assert at.expander[0].label == "What you are seeing"
    assert len(at.get("plotly_chart")) == 4  # grid, bytes per layer, copy curve, loss curve
    text = _markdown(at)
    assert "S = 0" in text and "int8" in text and "2309.17453" in text
    assert "2306.14048" in text and "2401.06104" in text and "2404.14469" in text and "kvpress" in text
    first = _metrics(at)
    assert first["rows kept per layer and KV head"] == "16 / 64"  # StreamingLLM at 25% of a 64-token span
    rule_streaming = _markdown(at)

    at = at.select_slider(key="evict_keep").set_value(50).run()
    assert not at.exception and _metrics(at)["rows kept per layer and KV head"] == "32 / 64"
    # GPT-2 bundled: 2 (K, V) x 4 layers x 4 heads x 32 rows x 32 (head_dim) x 4 bytes: half of 262,144 B
    assert _metrics(at)["KV bytes kept (one span)"] == "131,072 B"

    at = at.selectbox(key="evict_policy").set_value("h2o").run()
    assert not at.exception and _markdown(at) != rule_streaming
    assert at.header[0].value == "What H2O (heavy hitters + recent) keeps at 50%"  # the paper's split

    at = at.selectbox(key="evict_policy").set_value("streaming").run()
    grid_before = at.get("plotly_chart")[0].proto.spec
    at = at.number_input(key="evict_sinks").set_value(0).run()
    assert not at.exception and not at.error
    assert at.get("plotly_chart")[0].proto.spec != grid_before  # the sink rows are gone
    assert "S = 0" in _markdown(at)


def test_the_ragged_policies_and_the_paired_rule_are_on_the_page():
    """KVzip ranked across all heads keeps different rows per head at the budget's bytes; the takeaways say the
    method in one line (intervals over spans and passages, the paired interval's 0) and report DuoAttention's
    ranking over its calibration draws; the variants are offered by their own names."""
    at = _app()
    text = _markdown(at)
    assert "over the 16 spans" in text and "over the 16 passages" in text and "excludes 0" in text
    assert "calibration draws" in text and "1.96" not in text
    at = at.selectbox(key="evict_policy").set_value("kvzip").run()
    assert not at.exception and not at.error
    metrics = _metrics(at)
    assert metrics["rows kept per KV head, on average"] == "16.0 / 64"  # 25%: the budget's rows, spread unevenly
    assert metrics["KV bytes kept (one span)"] == "65,536 B"
    assert "compete across all layers and KV heads" in _markdown(at)
    at = at.selectbox(key="evict_policy").set_value("duo_probe").run()
    assert not at.exception and "induction probe" in _markdown(at)
    assert "KVzip (per head)" in at.selectbox(key="evict_policy").options


def test_page_speaks_chinese():
    at = _app(i18n.CHINESE)
    assert not at.exception and not at.error, (at.exception, [e.value for e in at.error])
    assert at.title[0].value == "该忘掉什么：驱逐与压缩"
    assert at.expander[0].label == "怎么看这张图"
    assert "注意力汇聚" in _markdown(at)
    from kvviz.teaching import glossary

    allowed = ["Shakespeare", *(n for t in glossary.TERMS for n in (t.name, *t.also))]
    assert english_leftovers(page_texts(at), allowed) == []


def test_a_value_past_a_cap_gets_a_message():
    # Past the widget's maximum: only a client speaking the WebSocket itself sends it (AppTest: the session's value
    # before the widget is drawn; once drawn, Streamlit's own bounds turn a value past them into the default).
    at = app_test(PAGE, session_state={"evict_sinks": 10_000}).run()
    assert at.number_input(key="evict_sinks").max == eviction.EVICT_MAX_SINKS  # the widget has the rule's maximum
    assert not at.exception
    assert "sink tokens S" in " ".join(e.value for e in at.error)
    assert len(at.error) == 1 and len(at.get("plotly_chart")) == 4  # one message; the page stays, at the default S
    at = at.text_area(key="evict_text").set_value("ROMEO: hi").run()
    at = at.number_input(key="evict_sinks").set_value(eviction.EvictSettings().sink_tokens).run()
    assert not at.exception and "tokens" in " ".join(e.value for e in at.error)


def test_a_browser_value_below_the_minimum_gets_the_same_one_message():
    at = app_test(PAGE, session_state={"evict_sinks": -1}).run()
    assert not at.exception
    errors = [e.value for e in at.error]
    assert len(errors) == 1 and "sink tokens S" in errors[0] and "-1" in errors[0], errors
    assert at.number_input(key="evict_sinks").value == eviction.EvictSettings().sink_tokens
    assert len(at.get("plotly_chart")) == 4  # the page is whole, at the default S


def test_a_link_opens_the_page_at_its_policy_budget_s_and_drawn_policies():
    from kvviz import routes

    route = routes.INTERNALS_EVICTION
    at = app_test(PAGE, query=route.query(policy="H2O", budget=50, sinks=8))
    at.query_params[route.key("drawn")] = ["random", "TOVA"]
    at.run()
    assert not at.exception and not at.error, (at.exception, [e.value for e in at.error])
    assert at.selectbox(key="evict_policy").value == "h2o" and at.select_slider(key="evict_keep").value == 50
    assert at.number_input(key="evict_sinks").value == 8
    assert at.multiselect(key="evict_drawn").value == ["random", "tova"]
    assert at.header[0].value == "What H2O (heavy hitters + recent) keeps at 50%"
    assert _metrics(at)["rows kept per layer and KV head"] == "32 / 64"
    copy_chart = at.get("plotly_chart")[2].proto.spec
    assert '"name":"TOVA"' in copy_chart and '"name":"StreamingLLM"' not in copy_chart


@pytest.mark.parametrize("value", ["255", "-1", "inf", "four", "1" * 5000])
def test_a_hostile_link_s_gets_one_message_naming_the_setting(value):
    at = app_test(PAGE, query={"evict_sinks": value, "evict_policy": "StreamingLLM"}).run()
    assert not at.exception
    errors = [e.value for e in at.error]
    assert len(errors) == 1 and "sink tokens S" in errors[0], errors
    assert at.number_input(key="evict_sinks").value == eviction.EvictSettings().sink_tokens
    assert len(at.get("plotly_chart")) == 4  # the page stays whole


def test_a_hostile_link_policy_is_named_and_the_page_stays():
    at = app_test(PAGE, query={"evict_policy": "<script>", "evict_keep": "33"}).run()
    assert not at.exception and not at.error
    warnings = " ".join(w.value for w in at.warning)
    assert "evict_policy" in warnings and "evict_keep" in warnings
    assert at.selectbox(key="evict_policy").value == "streaming" and len(at.get("plotly_chart")) == 4


def test_stop_ends_the_sweep_until_the_reader_measures_the_rest():
    at = _app()
    at = at.button(key="evict_stop").click().run()
    assert not at.exception
    assert "Stopped" in " ".join(i.value for i in at.info)
    assert len(at.get("plotly_chart")) == 2  # the grid and the bytes: no sweep ran after Stop
    at = at.button(key="evict_resume").click().run()
    assert not at.exception and len(at.get("plotly_chart")) == 4


def test_page_on_the_gqa_llama_counts_its_two_kv_heads():
    """The sidebar's second bundled model: 4 layers x 2 KV heads x head_dim 16, so 25% of a 64-token span is
    16 rows and 2 x 4 x 2 x 16 x 16 x 4 = 16,384 bytes; the grid draws one row per layer and KV head."""

    from kvviz.ui.links import MODEL_SPEC_KEY

    at = app_test(PAGE, session_state={MODEL_SPEC_KEY: "bundled-gqa"})
    at.run()
    assert not at.exception and not at.error, (at.exception, [e.value for e in at.error])
    assert _metrics(at)["KV bytes kept (one span)"] == "16,384 B"
    grid = at.get("plotly_chart")[0].proto.spec
    assert grid.count("KV head") >= 8 and "KV head 2" not in grid
