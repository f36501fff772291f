"""kvviz.model.dims: one record of a model's dimensions, read from a config, and every record built from it.

Torch-free: the bundled models are described from their config.json (loading.bundled_info, equal to a real load's
info: tests/test_models.py), the GPT-2 family from kvviz.memory.presets. The numbers each conversion gives are the
ones the records held when every caller passed n_layer, n_head, ... by hand.
"""

from __future__ import annotations

import dataclasses
import json

import pytest

from kvviz import memory, ops
from kvviz.internals import layout
from kvviz.memory.presets import PRESETS
from kvviz.model import load_cost, loading
from kvviz.model.dims import GPT2_FAMILY, ModelDims

INFOS = [loading.bundled_info(name=name) for name in loading.BUNDLED_MODELS]


def test_a_loaded_model_is_its_dimensions_plus_what_was_loaded():
    for info, spec in zip(INFOS, loading.BUNDLED_MODELS.values(), strict=True):
        config = json.loads((spec.folder / "config.json").read_text(encoding="utf-8"))
        dims = ModelDims.from_config(config)
        assert isinstance(info, ModelDims) and dataclasses.asdict(dims).items() <= dataclasses.asdict(info).items()
    gpt2, gqa, hybrid = INFOS
    assert (gpt2.n_layer, gpt2.n_head, gpt2.n_kv_heads, gpt2.head_dim, gpt2.d_ff, gpt2.mlp_matrices) == (
        4,
        4,
        4,
        32,
        4 * gpt2.n_embd,
        2,
    )
    assert (gqa.n_head, gqa.n_kv_heads, gqa.head_dim, gqa.mlp_matrices, gqa.model_type) == (8, 2, 16, 3, "llama")
    assert gpt2.all_attention and gqa.all_attention and gpt2.attention_layers == (0, 1, 2, 3)
    assert (hybrid.model_type, hybrid.mlp_matrices, hybrid.linear_layers, hybrid.attention_layers) == (
        "olmo_hybrid",
        3,
        (0, 1, 2),
        (3,),
    )
    # one linear layer: [4 heads, 32, 32] recurrent + [4 x (32 + 32 + 32) channels, 4] conv, float32
    assert hybrid.linear_state_bytes("fp32") == (4 * 32 * 32 * 4, 384 * 4 * 4)
    assert hybrid.linear_state_bytes("bf16") == (4 * 32 * 32 * 4, 384 * 4 * 2)  # the recurrent state stays float32


def test_from_config_reads_gpt2s_and_llamas_names():
    gpt2 = ModelDims.from_config(
        {
            "model_type": "gpt2",
            "n_layer": 2,
            "n_head": 4,
            "n_embd": 64,
            "n_inner": 100,
            "n_positions": 32,
            "vocab_size": 50,
        }
    )
    assert gpt2 == ModelDims(
        n_layer=2,
        n_head=4,
        n_kv_heads=4,
        head_dim=16,
        n_embd=64,
        d_ff=100,
        vocab_size=50,
        n_positions=32,
        mlp_matrices=2,
        model_type="gpt2",
    )
    assert ModelDims.from_config({**dataclasses.asdict(gpt2), "n_inner": None}).d_ff == 4 * 64  # GPT-2's default
    llama = ModelDims.from_config(
        {
            "model_type": "llama",
            "num_hidden_layers": 3,
            "num_attention_heads": 8,
            "num_key_value_heads": 2,
            "hidden_size": 96,
            "head_dim": 32,
            "intermediate_size": 200,
            "max_position_embeddings": 128,
            "vocab_size": 70,
        }
    )
    assert llama == ModelDims(
        n_layer=3,
        n_head=8,
        n_kv_heads=2,
        head_dim=32,
        n_embd=96,
        d_ff=200,
        vocab_size=70,
        n_positions=128,
        mlp_matrices=3,
        model_type="llama",
    )  # head_dim given, not 96 / 8


@pytest.mark.parametrize("info", INFOS, ids=lambda i: i.spec)
def test_conversions_give_the_records_callers_built_by_hand(info):
    assert info.ops_shape() == ops.ModelShape(
        info.n_layer,
        info.n_head,
        info.n_kv_heads,
        info.head_dim,
        info.n_embd,
        info.d_ff,
        info.vocab_size,
        info.mlp_matrices,
        name=info.label,
    )
    kv_layers = len(info.attention_layers)  # every layer, but a hybrid's attention layers only
    by_hand = memory.KVConfig(kv_layers, info.n_head, info.n_kv_heads, info.head_dim, "fp32", name=info.label)
    assert info.kv_config() == by_hand  # fp32: the dtype it runs in
    windowed = info.kv_config(window=16, local_per_global=1)
    assert windowed == dataclasses.replace(by_hand, window=16, local_per_global=1)
    int4 = info.kv_config(dtype="int4", quant_group_size=32)
    assert (int4.dtype, int4.quant_group_size) == ("int4", 32)
    row = 2 * kv_layers * info.n_kv_heads * info.head_dim * 4  # K and V, every attention layer, float32
    assert info.kv_bytes_per_position(4) == row == by_hand.bytes_per_token
    assert memory.predicted_cache_bytes(info, 10) == 10 * row
    assert layout.BufferShape.of(info) == layout.BufferShape(info.n_kv_heads, info.n_positions, info.head_dim, 4)


def test_the_gpt2_family_has_one_source_the_presets():
    assert list(GPT2_FAMILY) == ["distilgpt2", "gpt2", "gpt2-medium", "gpt2-large", "gpt2-xl"]
    for name, dims in GPT2_FAMILY.items():
        preset = PRESETS[name]
        assert dims.ops_shape(name) == preset.shape and dims.n_positions == preset.max_context == 1024
        assert dims.kv_config(preset.kv.dtype, name) == preset.kv
        # the random-weight build's config gives the model card's parameter count
        assert load_cost.params_from_config(dims.gpt2_config()) == preset.n_params
    assert (GPT2_FAMILY["gpt2"].n_positions, GPT2_FAMILY["gpt2"].vocab_size) == (1024, 50257)
    wide = dataclasses.replace(GPT2_FAMILY["gpt2"], d_ff=1000)
    assert wide.gpt2_config()["n_inner"] == 1000 and "n_inner" not in GPT2_FAMILY["gpt2"].gpt2_config()
