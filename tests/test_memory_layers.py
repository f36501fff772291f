"""The layer list's arithmetic (kvviz.memory.layers, kvviz.memory.serving), torch-free: a uniform layout's layers
agree with the calculator and with transformers' figure, the crossover is the first token where the K/V reaches the
state, a pattern written by hand is read or refused in one sentence, and vLLM's pages round as its code does.
The real caches are the oracle in tests/test_layer_oracle.py (model tier)."""

from __future__ import annotations

import json

import pytest

from kvviz import memory
from kvviz.memory import hf_cache, layers, serving
from kvviz.memory.layers import CacheLayer, CacheLayers, CachePart, S
from kvviz.memory.presets import LAYERED_PRESETS, PRESETS


@pytest.mark.parametrize("name", list(PRESETS))
@pytest.mark.parametrize("context", [1, 100, 4096, 131072])
def test_a_uniform_layout_as_layers_stores_what_transformers_stores_and_peaks_at_the_calculators_figure(name, context):
    config = PRESETS[name].kv
    stack = layers.from_kv_config(config)
    windowed = sum(x.window is not None for x in stack.layers)
    window_tensors = windowed * layers.WINDOW_TENSOR_BYTES
    assert stack.bytes_at(context) == hf_cache.transformers_cache_bytes(config, context) + window_tensors
    assert stack.peak_bytes_at(context) == memory.kv_bytes(config, context) + window_tensors
    assert stack.bytes_per_token == config.bytes_per_token and stack.fixed_bytes == 0


def toy_hybrid(state_numbers: int = 1000, per_token: int = 64) -> CacheLayers:
    """3 state layers (a conv state of 100 numbers in the model's fp16, a recurrent state in fp32) : 1 full-attention
    layer (fp16 K/V)."""
    state = CacheLayer(
        0,
        "state",
        "linear_attention",
        "Gated DeltaNet",
        (CachePart("conv_state", (100,), "fp16"), CachePart("recurrent_state", (state_numbers,), "fp32")),
    )
    full = CacheLayer(
        3,
        "full",
        "full_attention",
        "attention",
        (
            CachePart("keys", (1, S, per_token // 4), "fp16", True),
            CachePart("values", (1, S, per_token // 4), "fp16", True),
        ),
    )
    return CacheLayers(
        "toy",
        (
            state,
            *(
                CacheLayer(i, **{f: getattr(state, f) for f in ("kind", "layer_type", "mixer", "parts")})
                for i in (1, 2)
            ),
            full,
        ),
        "fp16",
    )


def test_the_crossover_is_the_first_length_where_the_kv_reaches_the_state():
    stack = toy_hybrid()
    assert stack.fixed_bytes == 3 * (200 + 4000) and stack.bytes_per_token == 64
    n = stack.state_dominates_until()
    assert stack.growing_bytes_at(n) >= stack.fixed_bytes > stack.growing_bytes_at(n - 1)
    assert n == 197  # 12,600 / 64 = 196.9
    assert stack.bytes_at(0) == 0 and stack.bytes_at(1) == 64 + 12600
    assert stack.as_all_attention().bytes_per_token == 4 * 64
    assert layers.from_kv_config(PRESETS["llama-3-8b"].kv).state_dominates_until() is None  # no state


def test_a_pattern_by_hand_is_read_or_refused_in_one_sentence():
    assert layers.parse_pattern("3 linear : 1 full", 8) == ("linear_attention",) * 3 + ("full_attention",) + (
        "linear_attention",
    ) * 3 + ("full_attention",)
    assert layers.parse_pattern("linear, full", 3) == ("linear_attention", "full_attention", "linear_attention")
    for bad, said in (("3 retention : 1 full", "retention"), ("", "empty"), ("9 linear", "9")):
        with pytest.raises(memory.MemoryInputError) as info:
            layers.parse_pattern(bad, 8)
        assert said in str(info.value) and "\n" not in str(info.value)
    config = memory.KVConfig(8, 16, 2, 256, "bf16")
    _mixer, state = layers.STATE_FORMULAS["qwen3_next"](
        type(
            "C",
            (),
            dict(
                linear_num_key_heads=16,
                linear_num_value_heads=32,
                linear_key_head_dim=128,
                linear_value_head_dim=128,
                linear_conv_kernel_dim=4,
            ),
        )(),
        "bf16",
    )
    stack = layers.from_pattern(config, layers.parse_pattern("3 linear : 1 full", 8), state)
    assert [x.kind for x in stack.layers] == ["state"] * 3 + ["full"] + ["state"] * 3 + ["full"]
    # Qwen3-Next's linear layer: conv (2*16*128 + 32*128) x 4 in bf16, recurrent 32 x 128 x 128 in fp32
    assert stack.layers[0].fixed_bytes == (2 * 16 * 128 + 32 * 128) * 4 * 2 + 32 * 128 * 128 * 4


def test_vllm_grows_the_attention_block_to_hold_a_state_page_then_pads_the_state():
    stack = toy_hybrid(state_numbers=1000, per_token=64)  # a state page of 2,200 B in fp16 (vLLM: model dtype)
    layout = serving.paged_layout(stack, block_size=16)
    # 16 tokens x 64 B = 1,024 B < 2,200 B: the block grows in steps of 16 tokens until 2,200 B fit (48 tokens)
    assert layout.block_tokens == 48 and layout.attention_page_bytes == 3072
    assert layout.state_page_bytes == 3072 and layout.state_padding_bytes == 872
    assert serving.paged_per_sequence(stack, 49) == 2 * 3072 + 3 * 3072  # two blocks + three state pages
    f = serving.fits(stack, 10**6, 49)
    assert f.transformers_bytes_per_sequence == stack.bytes_at(49)
    assert f.transformers_sequences == 10**6 // stack.bytes_at(49) and f.vllm_sequences == 10**6 // (5 * 3072)
    assert serving.longest_context(stack, 1, stack.bytes_at(500)) == 500
    assert serving.vllm_state_bytes(stack, "fp16") == 3 * 2200


def test_every_layered_preset_is_a_published_config_with_its_source():
    assert len(LAYERED_PRESETS) >= 12
    for preset in LAYERED_PRESETS.values():
        assert preset.source.startswith("https://huggingface.co/") and preset.source.endswith("/config.json")
        assert preset.repo in preset.source and preset.retrieved_from
        assert isinstance(preset.transformers_config().get("model_type"), str)
        json.dumps(preset.config)  # plain JSON, as published
