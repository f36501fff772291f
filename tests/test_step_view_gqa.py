"""The stage's snapshot on a grouped-query-attention model (transformers' own LlamaForCausalLM, random weights,
8 query heads sharing 2 K/V heads): the group mapping, the group's attention over the shared rows, and the
cache bytes of the real tensors against the calculator with and without GQA."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from kvviz import memory
from kvviz.figures import step as figs
from kvviz.model.dims import ModelDims
from kvviz.model.loading import LoadedModel, ModelInfo
from kvviz.step import view


@pytest.fixture(scope="module")
def gqa(bundled) -> LoadedModel:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=bundled.info.vocab_size,
        hidden_size=128,
        intermediate_size=256,
        num_hidden_layers=2,
        num_attention_heads=8,
        num_key_value_heads=2,
        max_position_embeddings=64,
        attn_implementation="eager",
    )
    model = LlamaForCausalLM(config).eval()
    dims = ModelDims.from_config(config.to_dict())  # the dimensions as kvviz reads them from any config
    assert (dims.n_layer, dims.n_head, dims.n_kv_heads, dims.head_dim, dims.n_positions) == (2, 8, 2, 16, 64)
    info = ModelInfo(
        **dataclasses.asdict(dims),
        spec="test:llama-gqa",
        kind="random",
        label="random Llama GQA",
        n_params=sum(p.numel() for p in model.parameters()),
        dtype="float32",
        attn_implementation="eager",
        weights_are_random=True,
    )
    return LoadedModel(model, bundled.tokenizer, info)


def test_group_mapping_follows_kv_head_equals_q_head_floor_div_group():
    assert view.group_mapping(8, 2) == [(0, (0, 1, 2, 3)), (1, (4, 5, 6, 7))]
    assert view.group_mapping(4, 4) == [(0, (0,)), (1, (1,)), (2, (2,)), (3, (3,))]  # MHA: groups of one
    assert view.group_mapping(8, 1) == [(0, tuple(range(8)))]  # MQA


@pytest.mark.model
def test_snapshot_of_a_gqa_model_reads_one_kv_head_for_a_group_of_queries(gqa):
    from kvviz.step.engine import StepEngine

    engine = StepEngine(gqa)
    engine.prefill("ROMEO:")
    for _ in range(5):
        engine.step()
    info = gqa.info
    snap = engine.snapshot(layer=1, q_head=6)
    assert snap.kv_head == 1 and snap.group_heads == (4, 5, 6, 7)
    np.testing.assert_array_equal(snap.keys, engine.layer_keys(1)[1])  # the shared K/V head's rows, all of them
    assert snap.group_attention.shape == (4, engine.cache_len)
    np.testing.assert_allclose(snap.group_attention.sum(axis=1), 1.0, atol=1e-5)  # each query: a softmax
    assert not np.allclose(snap.group_attention[0], snap.group_attention[1])  # different queries, same rows
    assert len(figs.group_figure(snap).data) == 1 + 4  # K heatmap + one bar trace per query head
    # bytes: the real tensors == the calculator; full MHA would hold n_head / n_kv_heads = 4x more
    gqa_cfg = info.kv_config()
    assert engine.cache_bytes == memory.kv_bytes(gqa_cfg, engine.cache_len)
    mha = memory.kv_bytes(dataclasses.replace(gqa_cfg, n_kv_heads=info.n_head), engine.cache_len)
    assert mha == 4 * engine.cache_bytes
