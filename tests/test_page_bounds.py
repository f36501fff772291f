"""Every number box of a page built on kvviz.ui.bounded takes its min, max, step and first value from the one
setting the library checks (kvviz.inputs.prompt_rules.IntSetting / FloatSetting), and a value past them is refused
by name."""

from __future__ import annotations

import pytest

from kvviz import memory, ops
from kvviz.internals import crossattn, eviction, layout, paging, quant, speculative, window
from kvviz.model.loading import bundled_info
from kvviz.speedup import machine, settings
from kvviz.step import records
from support.pages import app_test

_info = bundled_info()  # the model a page opens with
_residual = quant.RESIDUAL_ROWS  # the quant page's top is transformers' residual window - 1 (read by the page)
_layer, _head, _seq, _pos, _dim = layout.index_settings(_info)
# what a box starts at when its page keeps a preset's value (URL-bound boxes) instead of the setting's default
PRESET = object()

SETTINGS = {  # page -> {widget key: the setting it must read}
    "pages/internals_paging.py": {
        "int_paging_block": paging.BLOCK_SIZE,
        "int_paging_na": paging.NEW_TOKENS_A,
        "int_paging_nb": paging.NEW_TOKENS_B,
    },
    "pages/internals_crossattn.py": {"int_cross_src": crossattn.SOURCE_LEN, "int_cross_steps": crossattn.DECODE_STEPS},
    "pages/internals_speculative.py": {
        "int_spec_k": speculative.DRAFT_K,
        "int_spec_n": speculative.NEW_TOKENS,
        "int_spec_t": speculative.DRAFT_TEMPERATURE,
    },
    "pages/internals_eviction.py": {"evict_sinks": eviction.SINK_TOKENS},
    "pages/internals_layout.py": {
        "int_layout_layer": _layer,
        "int_layout_head": _head,
        "int_layout_seq": _seq,
        "int_layout_pos": _pos,
        "int_layout_dim": _dim,
    },
    "pages/internals_window.py": {
        "int_window_w": window.WINDOW.up_to(_info.n_positions),
        "int_window_gemma_ctx": window.GEMMA_CONTEXT,
    },
    "pages/internals_quant.py": {
        "int_quant_group": quant.GROUP_SIZE.up_to(_info.head_dim),
        "int_quant_residual": None,
        "int_quant_n": quant.AGREEMENT_TOKENS,
    },
    "pages/speedup.py": {
        "bench_prompt_len": settings.PROMPT_LEN,
        "bench_new_tokens": settings.NEW_TOKENS,
        "bench_repeats": settings.PAGE_ROUNDS,
        "bench_warmup": settings.PAGE_WARMUP,
        "bench_threads": machine.PAGE_THREADS,
    },  # the batch sweep's boxes: after a first run
    "pages/attention_ops.py": {
        f"ops_{name}": setting for name, setting in ops.INPUTS.items() if name in ("prompt", "new")
    },  # the shape's boxes show for a custom shape only
    "pages/memory_budget.py": {
        "mem_layers": memory.INPUTS["n_layer"],
        "mem_hidden": memory.INPUTS["hidden_size"],
        "mem_heads": memory.INPUTS["n_head"],
        "mem_kv_heads": memory.INPUTS["n_kv_heads"],
        "mem_residual": memory.INPUTS["quant_residual_tokens"],
        "mem_head_dim": memory.INPUTS["head_dim"],
        "mem_mla_rank": memory.INPUTS["mla_latent_rank"],
        "mem_mla_rope": memory.INPUTS["mla_rope_dim"],
        "mem_window": memory.INPUTS["window"],
        "mem_local": memory.INPUTS["local_per_global"],
        "mem_window_from": memory.INPUTS["first_windowed_layer"],
        "mem_params": memory.INPUTS["n_params"],
        "mem_reserve_mib": memory.INPUTS["reserve_mib"],
        "mem_block": memory.INPUTS["block_size"],  # mem_gpu_gib: for a custom GPU only
        "mem_maxlen": memory.INPUTS["max_len"],
        "mem_context": memory.INPUTS["context_len"],
        "mem_batch": memory.INPUTS["batch"],
    },
    "pages/step_through.py": {
        "step_play_n": records.PLAY_STEPS,
        "step_top_k": records.TOP_K,
        "step_seed": records.SEED,
    },
}
# boxes whose first value is not the setting's default: a preset's (URL-bound), or empty (automatic)
FIRST_VALUE = {"bench_threads": None, **{key: PRESET for key in SETTINGS["pages/memory_budget.py"]}}
OPEN = {"pages/step_through.py": {"step_popover_prompt": True}}  # widgets drawn only while a popover is open


def _page(page: str):
    """The page's first run. Its st.cache_data entries are kept: each is keyed on everything the computation reads,
    and no bound depends on them (a cleared cache made every eviction page run measure its whole sweep again)."""
    return app_test(page, session_state=OPEN.get(page)).run()


@pytest.mark.app
@pytest.mark.parametrize("page", list(SETTINGS))
def test_each_number_box_reads_its_bounds_from_its_setting(page):
    at = _page(page)
    assert not at.exception, at.exception
    integer_boxes = {box.key for box in at.number_input if float(box.step).is_integer()}
    whole_settings = {key for key, s in SETTINGS[page].items() if s is None or float(s.step).is_integer()}
    assert integer_boxes == whole_settings  # no whole-number box on the page is left out of the table
    for key, setting in SETTINGS[page].items():
        box = at.number_input(key=key)
        if setting is None:  # a top read by the page itself: the setting's bottom and step
            setting = _residual.up_to(box.max)
        first = FIRST_VALUE.get(key, setting.default)
        assert (box.min, box.max, box.step) == (setting.lo, setting.hi, setting.step), key
        assert first is PRESET or box.value == first, key


@pytest.mark.app
def test_a_value_past_the_bounds_is_named_and_the_page_goes_on_at_the_default():
    at = _page("pages/internals_paging.py")
    at = at.number_input(key="int_paging_block").set_value(-1).run()  # what Streamlit hands the page: None
    assert not at.exception
    errors = [e.value for e in at.error]
    assert len(errors) == 1 and "block size" in errors[0] and "16 until it is changed" in errors[0], errors
    assert at.number_input(key="int_paging_block").value == 16 and at.get("plotly_chart")  # the page stays whole


@pytest.mark.app
@pytest.mark.parametrize(
    "page,key,value,name,used",
    [
        ("pages/internals_layout.py", "int_layout_layer", 999, "layer", "Using 0 until"),
        ("pages/internals_window.py", "int_window_gemma_ctx", 10**9, "Gemma 3 4B context", "Using 32,768 until"),
        ("pages/internals_speculative.py", "int_spec_t", 99.0, "draft temperature", "Using 0.7 until"),
        ("pages/attention_ops.py", "ops_new", 10**7, "new tokens N", "Using 200 until"),
        ("pages/memory_budget.py", "mem_batch", 2**30, "batch (sequences)", "Using 1 until"),
        ("pages/step_through.py", "step_top_k", 999, "top-k", "Using 40 until"),
    ],
)
def test_a_value_past_a_converted_box_is_named(page, key, value, name, used):
    at = _page(page)
    if key == "int_spec_t":  # the temperature box is live only for a sampled draft of the model itself
        at = at.selectbox(key="int_spec_draft").set_value("self").run()
    at = at.number_input(key=key).set_value(value).run()
    assert not at.exception, at.exception
    errors = [e.value for e in at.error if name in e.value]
    assert len(errors) == 1 and used in errors[0], [e.value for e in at.error]


@pytest.mark.app
@pytest.mark.parametrize(
    "page,kind,key,value,name,used",
    [
        ("pages/step_through.py", "slider", "step_temperature", 9.0, "temperature", "Using 0.8 until"),
        ("pages/internals_eviction.py", "select_slider", "evict_keep", 33, "budget", "Using 25 until"),
    ],
)
def test_a_slider_value_that_is_no_choice_is_named(page, kind, key, value, name, used):
    """A slider resets such a value to its own first one without a word (Streamlit 1.67); the page says so."""
    at = _page(page)
    getattr(at, kind)(key=key).set_value(value).run()
    assert not at.exception, at.exception
    errors = [e.value for e in at.error if name in e.value]
    assert len(errors) == 1 and used in errors[0], [e.value for e in at.error]
