"""The Memory budget page's config.json import, end to end (AppTest): the published Gemma-3 multimodal config
fills the form with transformers' defaults and says which ones; a Falcon-40B config gets its caching note;
hostile input is one error line, never an exception."""

from __future__ import annotations

import json

import pytest
from streamlit.testing.v1 import AppTest

from support.markdown_text import shown
from support.models import GEMMA3_4B
from support.pages import PAGES_DIR, app_test

pytestmark = [pytest.mark.usefixtures("fresh_streamlit_caches"), pytest.mark.app]  # every test runs the page
PAGE = PAGES_DIR / "memory_budget.py"


def import_config(at: AppTest, text: str) -> None:
    at.text_area(key="mem_paste").set_value(text).run()
    at.button(key="mem_import").click().run()
    assert not at.exception


def test_gemma3_import_fills_the_form_and_names_the_defaults():
    at = app_test(PAGE)
    at.run()
    import_config(at, json.dumps(GEMMA3_4B))
    report = shown(at.success[0].value)  # the words a reader sees (the file's values are escaped markdown)
    assert "num_key_value_heads = 4 (transformers' Gemma3TextConfig default)" in report
    assert "layer_types = 29 sliding + 5 full of 34" in report and "keep the last 1,023 tokens" in report
    values = {
        k: at.number_input(key=k).value
        for k in ("mem_layers", "mem_heads", "mem_kv_heads", "mem_head_dim", "mem_window", "mem_local")
    }
    assert values == {
        "mem_layers": 34,
        "mem_heads": 8,
        "mem_kv_heads": 4,
        "mem_head_dim": 256,
        "mem_window": 1024,
        "mem_local": 5,
    }


def test_falcon_40b_note_and_hostile_input_on_the_page():
    at = app_test(PAGE)
    at.run()
    import_config(
        at,
        json.dumps(
            {
                "model_type": "falcon",
                "hidden_size": 8192,
                "num_attention_heads": 128,
                "num_kv_heads": 8,
                "num_hidden_layers": 60,
                "new_decoder_architecture": True,
                "torch_dtype": "bfloat16",
            }
        ),
    )
    assert "16x the GQA figure" in shown(at.success[0].value)
    for hostile in ('{"model_type": "gemma3_text", "sliding_window_pattern": "abc"}', "[" * 100_000 + "]" * 100_000):
        import_config(at, hostile)
        assert len(at.error) == 1 and "\n" not in at.error[0].value


def test_windowed_preset_shows_transformers_figure_beside_kvviz():
    from kvviz.memory import hf_cache, units
    from kvviz.memory.presets import get_preset

    at = app_test(PAGE, query={"mem_preset": "mistral-7b", "mem_context": "10000"})
    at.run()
    assert not at.exception
    held = hf_cache.transformers_cache_bytes(get_preset("mistral-7b").kv, 10_000)
    assert held == 32 * 4095 * 2 * 8 * 128 * 2
    assert any(units.format_bytes(held) in c.value and "4,095" in c.value for c in at.caption)


T5_3B = {"model_type": "t5", "d_model": 1024, "d_kv": 128, "num_heads": 32, "num_layers": 24}  # google-t5/t5-3b
QWEN2_WINDOWED = {
    "model_type": "qwen2",
    "hidden_size": 3584,
    "num_attention_heads": 28,
    "num_key_value_heads": 4,
    "num_hidden_layers": 28,
    "sliding_window": 4096,
    "use_sliding_window": True,
    "max_window_layers": 21,
    "torch_dtype": "bfloat16",
}


def markdown_text(at: AppTest) -> str:
    return " ".join(m.value for m in at.markdown)


def test_t5_total_is_self_plus_cross_attention_once_the_encoder_length_is_given():
    """T5-3B: 24 decoder layers x 32 heads x d_kv 128, fp32 (no torch_dtype): 786,432 B per token in each of the
    two caches. Before the encoder length is given the total says it is the self-attention only; after, the
    total is both parts, each shown."""
    from kvviz.memory import units

    at = app_test(PAGE)
    at.run()
    import_config(at, json.dumps(T5_3B))
    per_token = 2 * 24 * 32 * 128 * 4
    self_bytes = per_token * 4096  # the page's default context, batch 1
    labels = [m.label for m in at.metric]
    assert "Total: decoder self-attention only" in labels and "Cross-attention" in labels
    assert "decoder's self-attention only" in markdown_text(
        at
    ) and f"{per_token:,} B per encoder token" in markdown_text(at)
    at.number_input(key="mem_encoder_len").set_value(1000).run()
    at.number_input(key="mem_batch").set_value(2).run()
    assert not at.exception
    labels = [m.label for m in at.metric]
    assert {
        "Total: self + cross-attention",
        "Cross-attention: 1,000 encoder tokens x batch 2",
        "Self-attention: 4,096 decoder tokens x batch 2",
    } <= set(labels)
    text = markdown_text(at)
    total = 2 * self_bytes + 2 * per_token * 1000
    assert f"cross-attention {2 * per_token * 1000:,} B = **total {units.format_bytes(total)}**" in text
    at.selectbox(key="mem_preset").set_value("llama-3-8b").run()  # a preset is decoder-only: no cross part
    assert "Total: self + cross-attention" not in [m.label for m in at.metric]


def test_qwen2_import_windows_only_the_layers_from_max_window_layers():
    """use_sliding_window with max_window_layers 21 of 28: layers 0-20 keep every token, 21-27 slide (what
    transformers' Qwen2Config derives as layer_types); the form carries the boundary, the total follows it."""
    from kvviz import memory
    from kvviz.memory import config_import, units

    at = app_test(PAGE)
    at.run()
    import_config(at, json.dumps(QWEN2_WINDOWED))
    assert at.number_input(key="mem_window_from").value == 21 and at.number_input(key="mem_window").value == 4096
    at.number_input(key="mem_context").set_value(10_000).run()
    expected = memory.kv_bytes(config_import.parse_hf_config(QWEN2_WINDOWED).config, 10_000)
    assert expected == (21 * 10_000 + 7 * 4096) * 2 * 4 * 128 * 2
    assert f"total: {units.format_bytes(expected)}" in markdown_text(at)
