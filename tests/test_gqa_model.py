"""The bundled GQA model: transformers' own LlamaForCausalLM, 8 query heads sharing 2 K/V heads, shipped in
kvviz/assets/bundled_gqa. It loads offline from the repo, its cache gives the same greedy tokens as full
recomputation, and its real cache bytes equal the memory calculator. (Its copying: tests/test_copying.py.)"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from kvviz import memory
from kvviz.model import loading
from support.greedy import PROMPTS, generate_greedy, generate_greedy_uncached
from support.pages import app_test, open_page


@pytest.fixture(scope="module")
def gqa() -> loading.LoadedModel:
    from kvviz.model import loaders

    return loaders.load_model(loading.BUNDLED_GQA)


@pytest.mark.model
def test_gqa_model_loads_offline_as_a_llama_with_two_kv_heads(gqa, bundled):
    from transformers import LlamaForCausalLM

    assert isinstance(gqa.model, LlamaForCausalLM)
    info = gqa.info
    assert (info.n_layer, info.n_head, info.n_kv_heads, info.head_dim) == (4, 8, 2, 16)
    assert info.n_kv_heads == gqa.model.config.num_key_value_heads
    assert info.model_type == "llama" and info.mlp_matrices == 3 and info.d_ff == gqa.model.config.intermediate_size
    assert info.n_params == sum(p.numel() for p in gqa.model.parameters())
    assert loading.bundled_info(name=loading.BUNDLED_GQA) == info  # the torch-free description agrees
    assert "2 K/V heads" in info.label
    text = "ROMEO:\nBut soft! 🙂"
    assert gqa.tokenizer(text).input_ids == bundled.tokenizer(text).input_ids  # one tokenizer for both models


def test_both_bundled_models_are_safetensors_and_together_small():
    total = 0
    for spec in loading.BUNDLED_MODELS.values():
        files = {p.name: p.stat().st_size for p in spec.folder.iterdir()}
        assert "model.safetensors" in files and not any(n.endswith((".bin", ".pt", ".pkl")) for n in files)
        total += sum(files.values())
    assert total < 15 * 2**20


@pytest.mark.model
def test_ops_counts_read_the_kv_heads_and_the_swiglu_mlp_from_the_model(gqa):
    shape = gqa.info.ops_shape()
    cfg = gqa.model.config
    q, k, v = (
        m.weight
        for m in (
            gqa.model.model.layers[0].self_attn.q_proj,
            gqa.model.model.layers[0].self_attn.k_proj,
            gqa.model.model.layers[0].self_attn.v_proj,
        )
    )
    assert shape.qkv_ops_per_token == cfg.num_hidden_layers * (q.numel() + k.numel() + v.numel())
    mlp = gqa.model.model.layers[0].mlp
    mlp_weights = sum(m.weight.numel() for m in (mlp.gate_proj, mlp.up_proj, mlp.down_proj))
    assert shape.mlp_ops_per_token == cfg.num_hidden_layers * mlp_weights


@pytest.mark.model
@pytest.mark.parametrize("prompt", PROMPTS[:20])
def test_greedy_with_cache_equals_recomputation_without_cache(gqa, prompt):
    cached_tokens, cached_logits = generate_greedy(gqa, prompt, 12)
    uncached_tokens, uncached_logits = generate_greedy_uncached(gqa, prompt, 12)
    assert cached_tokens == uncached_tokens
    for a, b in zip(cached_logits, uncached_logits, strict=True):
        np.testing.assert_allclose(a, b, atol=1e-4, rtol=1e-4)


@pytest.mark.model
def test_real_cache_bytes_equal_the_calculator_and_a_quarter_of_mha(gqa):
    from kvviz.step.engine import StepEngine

    engine = StepEngine(gqa)
    engine.prefill("KING RICHARD III:\nNow is the winter")
    for _ in range(7):
        engine.step()
    info = gqa.info
    for layer in engine.cache.layers:  # (batch, num_key_value_heads, seq_len, head_dim)
        assert tuple(layer.keys.shape) == (1, 2, engine.cache_len, 16)
    tensor_bytes = sum(
        t.numel() * t.element_size() for layer in engine.cache.layers for t in (layer.keys, layer.values)
    )
    config = info.kv_config()
    assert engine.cache_bytes == tensor_bytes == memory.kv_bytes(config, engine.cache_len)
    assert memory.predicted_cache_bytes(info, engine.cache_len) == tensor_bytes
    mha = memory.kv_bytes(dataclasses.replace(config, n_kv_heads=info.n_head), engine.cache_len)
    assert mha == 4 * tensor_bytes


def _page(name: str, spec: str, query: dict[str, str] | None = None):
    import streamlit as st

    st.cache_data.clear()
    return open_page(f"pages/{name}.py", query=query, session_state={"model_spec": spec}, check=False)


@pytest.mark.app
def test_step_page_on_the_gqa_model_shows_the_group_mapping_and_the_bytes():
    at = _page("step_through", loading.BUNDLED_GQA)
    assert not at.exception
    at.button(key="step_btn_prefill").click().run()
    at.button(key="step_btn_next").click().run()
    assert not at.exception and not at.error, at.exception
    at.button_group(key="step_view").set_value("gqa").run()
    assert not at.exception and not at.error, at.exception
    text = " ".join(c.value for c in at.caption)
    assert "kv_head = q_head // 4: kv 0 ← q 0, 1, 2, 3; kv 1 ← q 4, 5, 6, 7" in text
    assert "4x more" in text


@pytest.mark.app
def test_memory_page_loaded_model_view_reads_two_kv_heads():
    at = _page("memory_budget", loading.BUNDLED_GQA, {"mem_tab": "The loaded model"})
    assert not at.exception and at.success, at.exception
    assert "x 2 heads x 16 x 4 B" in at.success[-1].value  # the K/V head count read from the model


@pytest.mark.app
def test_count_the_work_page_counts_the_gqa_model():
    at = _page("attention_ops", loading.BUNDLED_GQA)
    assert not at.exception and not at.error, at.exception


def _sidebar_only() -> None:
    from kvviz.ui import sidebar

    sidebar.sidebar_model_picker()


@pytest.mark.app
def test_sidebar_offers_the_gqa_model_beside_the_default_gpt2():
    at = app_test(_sidebar_only).run()
    radio = at.sidebar.radio(key="app_model_kind")
    assert radio.value == "Bundled Tiny-Shakespeare GPT-2 (offline)"  # still the default
    radio.set_value("Bundled Tiny-Shakespeare Llama, GQA (offline)").run()
    assert not at.exception and at.session_state["model_spec"] == loading.BUNDLED_GQA
    assert "sharing 2 K/V heads" in at.sidebar.caption[0].value
    at.sidebar.radio(key="app_model_kind").set_value("Bundled Tiny-Shakespeare GPT-2 (offline)").run()
    assert at.session_state["model_spec"] == loading.BUNDLED
