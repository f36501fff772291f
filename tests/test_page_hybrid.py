"""Every page with the bundled hybrid chosen (3 linear-attention layers + 1 attention layer): the stage steps it
(the attention layer's K/V grows, each linear layer's state keeps its size, Back works), the attention-patterns page
offers its attention layer and says what the linear layers keep instead; a page that moves, counts or evicts K/V rows
in every layer says so in one sentence and offers the other bundled models. No page shows a stack trace."""

from __future__ import annotations

import pytest

from kvviz.i18n import _
from kvviz.model import loading
from kvviz.ui.links import MODEL_SPEC_KEY
from support.pages import app_test, open_page

HYBRID = {MODEL_SPEC_KEY: loading.BUNDLED_HYBRID}
# The pages that need K/V in every layer (kvviz.ui.sidebar.needs_all_attention ends them with the offer)
ALL_ATTENTION_PAGES = (
    "internals_eviction",
    "internals_layout",
    "internals_paging",
    "internals_prefix",
    "internals_quant",
    "internals_speculative",
    "internals_window",
    "lesson",
)


def _tiles(at) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


@pytest.mark.app
def test_stage_steps_the_hybrid_kv_grows_and_the_state_stays():
    at = open_page("pages/step_through.py", session_state=HYBRID, router=True)
    at.button(key="step_btn_prefill").click().run()
    first = _tiles(at)
    rows = int(first["K/V"].split()[0])
    assert first["State"] == "66 KiB (fixed)", first
    for _step in range(5):
        at.button(key="step_btn_next").click().run()
    assert not at.exception and not at.error and not at.warning, at.exception
    tiles = _tiles(at)
    assert tiles["K/V"] == f"{rows + 5} rows, {rows + 5} KiB (grows)"  # 1 KiB a row: K and V, 4 heads x 32 x 4 B
    assert tiles["State"] == "66 KiB (fixed)"
    captions = " ".join(c.value for c in at.caption)
    assert "Layers 0, 1, 2 keep a fixed state (22 KiB each); only layer 3 keeps K/V rows. Back crops" in captions
    at.button_group(key="step_layer").set_value(0).run()  # a linear layer: its state, per head
    assert not at.exception, at.exception
    assert any("Layer 0 is linear attention (Gated DeltaNet): it keeps no K/V rows" in h.value for h in at.html)
    assert _tiles(at)["State"] == "66 KiB (fixed)"
    at.button(key="step_btn_back").click().run()
    assert not at.exception and not at.warning, at.exception
    assert _tiles(at)["K/V"] == f"{rows + 4} rows, {rows + 4} KiB (grows)"
    at.button_group(key="step_view").set_value("race").run()
    assert not at.exception and not at.error, at.exception
    assert any("attention layers (3)" in m.value for m in at.markdown)


@pytest.mark.app
def test_attention_patterns_offer_the_attention_layer_and_say_what_linear_layers_keep():
    at = open_page("pages/attention_patterns.py", session_state=HYBRID, router=True)
    assert at.selectbox(key="pat_layer").options == ["3"]
    said = " ".join(i.value for i in at.info)
    assert "Layers 0, 1, 2 are linear attention (Gated DeltaNet) and have no attention matrix" in said
    assert "one 32 x 32 state matrix" in said


@pytest.mark.app
@pytest.mark.parametrize("page", ALL_ATTENTION_PAGES)
def test_a_page_that_needs_kv_in_every_layer_says_so_and_offers_the_other_models(page):
    at = open_page(f"pages/{page}.py", session_state=HYBRID, router=True)
    said = " ".join(i.value for i in at.info)
    assert "this page works only on models whose every layer is attention" in said
    assert not at.error
    assert {b.key for b in at.button} >= {"app_switch_bundled", "app_switch_bundled-gqa"}
    assert "app_switch_bundled-hybrid" not in {b.key for b in at.button}


@pytest.mark.app
def test_the_offer_switches_the_model_and_the_page_runs_on_it():
    at = open_page("pages/internals_layout.py", session_state=HYBRID, router=True)  # a page that is quick to run
    at.button(key="app_switch_bundled-gqa").click().run()
    assert not at.exception, at.exception
    assert at.session_state[MODEL_SPEC_KEY] == loading.BUNDLED_GQA
    assert not any("every layer is attention" in i.value for i in at.info)


@pytest.mark.app
def test_count_the_work_on_the_hybrid_shows_one_tokens_cost_per_kind_of_layer():
    at = open_page("pages/attention_ops.py", session_state=HYBRID, router=True)
    assert any(
        "this page counts a whole generation only for models whose every layer is attention" in i.value for i in at.info
    )
    assert not at.error
    said = " ".join(m.value for m in at.markdown)
    # attention: 2 x 4 heads x 32 x (p + 1) = 256 (p + 1); a linear layer: 3 x 4 x 32 x 32 + 384 x 4 = 13,824
    assert "**256 more for every row its cache holds**" in said and "**13,824 ops at any position**" in said
    assert "From position **54** on" in said  # 256 x 55 = 14,080 > 13,824 = 256 x 54
    at.selectbox(key="ops_model").set_value("gpt2").run()  # a preset: the whole-run counts, as for any model
    assert not at.exception and not at.error and at.metric


@pytest.mark.app
@pytest.mark.parametrize("page", ("home", "memory_budget", "speedup", "claims", "glossary", "teachers"))
def test_the_other_pages_open_on_the_hybrid(page):
    open_page(f"pages/{page}.py", session_state=HYBRID, router=True)


def _sidebar_only() -> None:
    from kvviz.ui import sidebar  # AppTest runs this function's body as a script of its own

    sidebar.sidebar_model_picker()


@pytest.mark.app
def test_the_picker_lists_the_hybrid_with_its_size():
    at = app_test(_sidebar_only).run()
    radio = at.sidebar.radio(key="app_model_kind")
    option = _("{title} (offline)").format(title=loading.BUNDLED_MODELS[loading.BUNDLED_HYBRID].title)
    assert option in radio.options
    n_params = loading.bundled_info(name=loading.BUNDLED_HYBRID).n_params
    assert f"{n_params:,} parameters" in radio.proto.captions[list(radio.options).index(option)]
    radio.set_value(option).run()
    assert not at.exception and at.session_state[MODEL_SPEC_KEY] == loading.BUNDLED_HYBRID
    assert "3 Gated DeltaNet layers with a fixed state + 1 attention layer" in at.sidebar.caption[-1].value


@pytest.mark.app
def test_stage_steps_the_hybrid_in_chinese():
    at = open_page("pages/step_through.py", lang="zh-CN", session_state=HYBRID, router=True)
    at.button(key="step_btn_prefill").click().run()
    rows = int(_tiles(at)["K/V"].split()[0])
    for _step in range(5):
        at.button(key="step_btn_next").click().run()
    assert not at.exception and not at.error, at.exception
    tiles = _tiles(at)
    assert tiles["K/V"] == f"{rows + 5} 行，{rows + 5} KiB（增长）" and tiles["状态"] == "66 KiB（固定）"
    at.button_group(key="step_layer").set_value(1).run()
    assert any("第 1 层是线性注意力层（Gated DeltaNet）" in h.value for h in at.html)
    assert any("只有第 3 层保存 K/V 行" in c.value for c in at.caption)


@pytest.mark.app
def test_the_teachers_hybrid_question_opens_the_stage_at_its_40_tokens_and_answers_from_the_model():
    from kvviz.model import loaders
    from kvviz.teaching import guide

    question = guide.hybrid_question()
    teachers = open_page("pages/teachers.py", router=True)
    said = " ".join(m.value for m in teachers.markdown)
    assert "After 40 tokens, how many rows do the linear-attention layers hold" in said
    assert "(layers 0, 1, 2) hold no rows at all" in said and "holds 40 rows, 40 KiB of K and V" in said
    assert "from 66 tokens on" in said  # 66 KiB of states / 1 KiB a row
    stage = open_page("pages/step_through.py", query=question.link_query, router=True)
    assert stage.session_state[MODEL_SPEC_KEY] == loading.BUNDLED_HYBRID
    assert (
        len(loaders.load_model(loading.BUNDLED_HYBRID).tokenizer(guide.HYBRID_PROMPT).input_ids)
        == guide.HYBRID_PROMPT_TOKENS
    )
    tiles = _tiles(stage)
    assert tiles["K/V"] == f"{question.kv_rows[3]} rows, 40 KiB (grows)" and tiles["State"] == "66 KiB (fixed)"
    assert sum(question.state_bytes) == 66 * 1024


@pytest.mark.app
def test_the_stage_times_the_hybrid_against_all_attention_as_the_context_grows():
    at = open_page("pages/step_through.py", session_state=HYBRID, router=True)
    at.button(key="step_btn_prefill").click().run()
    charts = len(at.get("plotly_chart"))
    at.session_state["step_exp_versus"] = True  # what clicking the expander open does
    at.run()
    at.button(key="step_btn_versus").click().run()
    assert not at.exception and not at.error, at.exception
    assert len(at.get("plotly_chart")) == charts + 1
    said = " ".join(m.value for m in at.markdown)
    assert all(f"{n} tokens: " in said for n in (16, 64, 128, 256)) and "interleaved" in said


@pytest.mark.app
def test_an_all_attention_model_has_no_versus_section():
    at = open_page("pages/step_through.py", session_state={MODEL_SPEC_KEY: loading.BUNDLED_GQA}, router=True)
    at.button(key="step_btn_prefill").click().run()
    assert not at.exception and "step_exp_versus" not in [e.key for e in at.get("expandable") if hasattr(e, "key")]
    assert not any("Against all attention" in getattr(e, "label", "") for e in at.get("expandable"))


@pytest.mark.app
def test_without_the_cache_on_the_hybrid_says_the_states_are_rebuilt():
    at = open_page("pages/step_through.py", session_state=HYBRID, router=True)
    at.button(key="step_btn_prefill").click().run()
    at.session_state["step_exp_uncached"] = True  # what clicking the expander open does
    at.button(key="step_btn_next").click().run()
    assert not at.exception, at.exception
    said = " ".join(m.value for m in at.markdown)
    assert "of the attention layers (3) and rebuilds each linear layer's fixed state (0, 1, 2)" in said
    assert "same next token: **yes**" in said
