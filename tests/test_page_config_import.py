"""The Memory budget page's config.json import, end to end (AppTest): the published Gemma-3 multimodal config
fills the form with transformers' defaults and says which ones; a Falcon-40B config gets its caching note;
hostile input is one error line, never an exception."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from conftest import APP_TIMEOUT_S
from test_config_import import GEMMA3_4B

pytestmark = pytest.mark.usefixtures("fresh_streamlit_caches")
PAGE = Path(__file__).resolve().parents[1] / "pages" / "memory_budget.py"


def import_config(at: AppTest, text: str) -> None:
    at.text_area(key="mem_paste").set_value(text).run()
    at.button(key="mem_import").click().run()
    assert not at.exception


def test_gemma3_import_fills_the_form_and_names_the_defaults():
    at = AppTest.from_file(str(PAGE), default_timeout=APP_TIMEOUT_S)
    at.run()
    import_config(at, json.dumps(GEMMA3_4B))
    report = at.success[0].value
    assert "num_key_value_heads = 4 (transformers' Gemma3TextConfig default)" in report
    assert "layer_types = 29 sliding + 5 full of 34" in report and "keep the last 1,023 tokens" in report
    values = {k: at.number_input(key=k).value for k in ("mem_layers", "mem_heads", "mem_kv_heads", "mem_head_dim",
                                                          "mem_window", "mem_local")}
    assert values == {"mem_layers": 34, "mem_heads": 8, "mem_kv_heads": 4, "mem_head_dim": 256, "mem_window": 1024,
                      "mem_local": 5}


def test_falcon_40b_note_and_hostile_input_on_the_page():
    at = AppTest.from_file(str(PAGE), default_timeout=APP_TIMEOUT_S)
    at.run()
    import_config(at, json.dumps({"model_type": "falcon", "hidden_size": 8192, "num_attention_heads": 128,
                                  "num_kv_heads": 8, "num_hidden_layers": 60, "new_decoder_architecture": True,
                                  "torch_dtype": "bfloat16"}))
    assert "16x the GQA figure" in at.success[0].value
    for hostile in ('{"model_type": "gemma3_text", "sliding_window_pattern": "abc"}', "[" * 100_000 + "]" * 100_000):
        import_config(at, hostile)
        assert len(at.error) == 1 and "\n" not in at.error[0].value


def test_windowed_preset_shows_transformers_figure_beside_kvviz():
    from kvviz import hf_cache, memory
    from kvviz.presets import get_preset

    at = AppTest.from_file(str(PAGE), default_timeout=APP_TIMEOUT_S)
    at.query_params["mem_preset"] = "mistral-7b"
    at.query_params["mem_context"] = "10000"
    at.run()
    assert not at.exception
    held = hf_cache.transformers_cache_bytes(get_preset("mistral-7b").kv, 10_000)
    assert held == 32 * 4095 * 2 * 8 * 128 * 2
    assert any(memory.format_bytes(held) in c.value and "4,095" in c.value for c in at.caption)


def test_t5_import_asks_for_the_encoder_length_and_counts_the_cross_attention_cache():
    """T5-3B: 24 decoder layers x 32 heads x d_kv 128, fp32 (no torch_dtype): the cross-attention cache holds
    2 x 24 x 32 x 128 x 4 B = 786,432 B per encoder token, apart from the self-attention total."""
    at = AppTest.from_file(str(PAGE), default_timeout=APP_TIMEOUT_S)
    at.run()
    import_config(at, json.dumps({"model_type": "t5", "d_model": 1024, "d_kv": 128, "num_heads": 32,
                                  "num_layers": 24}))
    per_encoder_token = 2 * 24 * 32 * 128 * 4
    at.number_input(key="mem_encoder_len").set_value(1000).run()
    text = " ".join(m.value for m in at.markdown)
    assert f"1,000 encoder tokens x batch 1 = {per_encoder_token * 1000:,} B" in text
