"""kvviz.memory and kvviz.memory.presets: golden values, exact scaling, config import, what-fits, and the real cache."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvviz import memory
from kvviz.claims import PUBLISHED_FIGURES, check_figure
from kvviz.memory import KVConfig, MemoryInputError, capacity, config_import, dtypes, units
from kvviz.memory.presets import GPUS, PRESETS, get_preset
from kvviz.memory.units import GIB


# ----- golden values you can check by hand -------------------------------------------------------------------
def test_golden_bytes_per_token():
    assert get_preset("gpt2").kv.bytes_per_token == 73_728 == 72 * 1024  # 2 x 12 x 12 x 64 x 4 B
    assert get_preset("llama-3-8b").kv.bytes_per_token == 131_072 == 128 * 1024  # 2 x 32 x 8 x 128 x 2 B
    assert get_preset("llama-2-7b").kv.bytes_per_token == 2 * 32 * 32 * 128 * 2
    assert get_preset("falcon-7b").kv.bytes_per_token == 2 * 32 * 1 * 64 * 2  # MQA: one K/V head
    assert get_preset("deepseek-v3").kv.bytes_per_token == 61 * (512 + 64) * 2  # MLA latent + RoPE key
    assert memory.kv_bytes(get_preset("llama-3-8b").kv, 4096) == 512 * 2**20  # 0.5 GiB


def test_sliding_window_and_hybrid_layers():
    mistral = get_preset("mistral-7b").kv  # every layer keeps the last 4096 tokens
    assert memory.kv_bytes(mistral, 32768) == memory.kv_bytes(mistral, 4096) == 32 * 4096 * 4096
    gemma = get_preset("gemma-3-4b").kv  # 34 layers, every 6th global
    assert gemma.n_global_layers == 5
    assert [gemma.layer_window(i) for i in range(6)] == [1024] * 5 + [None]
    b = memory.budget(gemma, 10_000)
    per_layer = 2 * 4 * 256 * 2
    assert b.total_bytes == per_layer * (5 * 10_000 + 29 * 1024)
    assert b.layer_bytes[5] == per_layer * 10_000 and b.layer_bytes[0] == per_layer * 1024
    assert memory.budget(gemma, 512).warnings  # window >= context: it saves nothing, say so


def test_quantized_dtypes_count_their_overhead():
    base = KVConfig(1, 1, 1, 128)
    assert replace(base, dtype="fp32").bytes_per_token == 2 * 128 * 4
    assert replace(base, dtype="fp8").bytes_per_token == 2 * 128
    # int8: 128 bytes + 2 groups of 64 x (fp16 scale + fp16 zero point) per vector, K and V
    assert replace(base, dtype="int8").bytes_per_token == 2 * (128 + 2 * 4)
    assert replace(base, dtype="int4").bytes_per_token == 2 * (64 + 2 * 4)
    assert replace(base, dtype="int4", quant_group_size=32).bytes_per_token == 2 * (64 + 4 * 4)
    odd = KVConfig(1, 1, 1, 3, dtype="int4")  # 3 nibbles round up to 2 bytes; one group
    assert odd.bytes_per_token == 2 * (2 + 4)


# ----- properties: exact scaling ------------------------------------------------------------------------------
configs = st.builds(
    KVConfig,
    n_layer=st.integers(1, 200),
    n_head=st.just(64),
    n_kv_heads=st.sampled_from([1, 2, 8, 64]),
    head_dim=st.integers(1, 512),
    dtype=st.sampled_from([d for d in dtypes.DTYPES if d != "fp8"]),  # fp8 adds 8 B/layer once per batch:
    window=st.one_of(st.none(), st.integers(1, 10_000)),  # tests/test_config_import.py pins it
)


@settings(max_examples=80, deadline=None)
@given(cfg=configs, ctx=st.integers(0, 10**6), extra=st.integers(0, 10**6), batch=st.integers(1, 1000))
def test_monotone_in_context_and_linear_in_batch(cfg, ctx, extra, batch):
    assert memory.kv_bytes(cfg, ctx + extra, batch) >= memory.kv_bytes(cfg, ctx, batch)
    assert memory.kv_bytes(cfg, ctx, batch) == batch * memory.kv_bytes(cfg, ctx, 1)


@settings(max_examples=60, deadline=None)
@given(cfg=configs, pattern=st.one_of(st.none(), st.integers(0, 7)), ctx=st.integers(0, 10**5), batch=st.integers(1, 9))
def test_closed_form_equals_the_layer_by_layer_sum(cfg, pattern, ctx, batch):
    if cfg.window is not None:
        cfg = replace(cfg, local_per_global=pattern)
    layer_by_layer = batch * cfg.bytes_per_token_per_layer * sum(cfg.tokens_held(i, ctx) for i in range(cfg.n_layer))
    assert memory.kv_bytes(cfg, ctx, batch) == layer_by_layer == memory.budget(cfg, ctx, batch).total_bytes


@settings(max_examples=80, deadline=None)
@given(cfg=configs, ctx=st.integers(0, 10**6), k=st.integers(1, 50))
def test_exact_scaling_in_layers_and_context_without_window(cfg, ctx, k):
    full = replace(cfg, window=None)
    assert memory.kv_bytes(replace(full, n_layer=full.n_layer * k), ctx) == k * memory.kv_bytes(full, ctx)
    assert memory.kv_bytes(full, k * ctx) == k * memory.kv_bytes(full, ctx)
    assert memory.kv_bytes(full, ctx) == ctx * full.bytes_per_token


def test_exact_beyond_two_to_the_53():
    huge = KVConfig(10_000, 100_000, 100_000, 100_000, dtype="fp32")
    total = memory.kv_bytes(huge, 2**40, 2**24)
    assert total > 2**53 and total == 2 * 10_000 * 100_000 * 100_000 * 4 * 2**40 * 2**24  # a Python int, exact


# ----- bad input -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(n_layer=0), "n_layer"),
        (dict(n_layer=-3), "n_layer"),
        (dict(n_layer=float("nan")), "whole number"),
        (dict(head_dim=2.5), "whole number"),
        (dict(n_layer=10**9), "between"),
        (dict(n_kv_heads=3), "divide"),
        (dict(n_kv_heads=16), "divide"),
        (dict(dtype="fp13"), "unknown cache dtype"),
        (dict(local_per_global=5), "sliding window"),
        (dict(mla_rope_dim=64), "latent rank"),
    ],
)
def test_bad_configs_are_refused_with_a_message(kwargs, message):
    with pytest.raises(MemoryInputError, match=message):
        KVConfig(**{**dict(n_layer=2, n_head=8, n_kv_heads=2, head_dim=16), **kwargs})


def test_head_dim_inconsistent_with_hidden():
    assert memory.head_dim_from_hidden(4096, 32) == 128
    with pytest.raises(MemoryInputError, match="not a multiple"):
        memory.head_dim_from_hidden(4100, 32)


@pytest.mark.parametrize("bad", [-1, 2**41, 1.5, "many"])
def test_bad_context(bad):
    with pytest.raises(MemoryInputError):
        memory.kv_bytes(get_preset("gpt2").kv, bad)


# ----- config.json import -----------------------------------------------------------------------------------
@pytest.mark.model
def test_import_llama_style_config():
    cfg = {
        "model_type": "llama",
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "hidden_size": 4096,
        "torch_dtype": "bfloat16",
        "max_position_embeddings": 8192,
        "intermediate_size": 14336,
        "vocab_size": 128256,
    }
    imported = config_import.parse_hf_config(json.dumps(cfg))
    assert imported.config.bytes_per_token == 131_072
    assert imported.used["num_key_value_heads"] == 8 and imported.max_context == 8192
    assert any("head_dim" in m.english for m in imported.missing)  # derived from hidden_size, and said so


@pytest.mark.model
def test_import_gpt2_mqa_gemma3_deepseek_qwen():
    gpt2 = config_import.parse_hf_config({"n_layer": 12, "n_head": 12, "n_embd": 768, "n_positions": 1024})
    assert gpt2.config.n_kv_heads == 12 and any("num_key_value_heads" in m.english for m in gpt2.missing)
    falcon = config_import.parse_hf_config(
        {"num_hidden_layers": 32, "num_attention_heads": 71, "hidden_size": 4544, "multi_query": True, "head_dim": 64}
    )
    assert falcon.config.n_kv_heads == 1
    gemma = config_import.parse_hf_config(
        {
            "model_type": "gemma3",
            "torch_dtype": "bfloat16",
            "text_config": {
                "num_hidden_layers": 34,
                "num_attention_heads": 8,
                "num_key_value_heads": 4,
                "head_dim": 256,
                "sliding_window": 1024,
                "sliding_window_pattern": 6,
            },
        }
    )
    assert gemma.config == replace(get_preset("gemma-3-4b").kv, name=gemma.config.name)
    types = ["sliding_attention"] * 5 + ["full_attention"]
    gemma_lt = config_import.parse_hf_config(
        {
            "num_hidden_layers": 12,
            "num_attention_heads": 8,
            "head_dim": 256,
            "sliding_window": 512,
            "layer_types": types * 2,
        }
    )
    assert gemma_lt.config.local_per_global == 5 and gemma_lt.config.n_global_layers == 2
    ds = config_import.parse_hf_config(
        {
            "num_hidden_layers": 61,
            "num_attention_heads": 128,
            "num_key_value_heads": 128,
            "torch_dtype": "bfloat16",
            "hidden_size": 7168,
            "kv_lora_rank": 512,
            "qk_rope_head_dim": 64,
        }
    )
    assert ds.config.is_mla and ds.config.bytes_per_token == get_preset("deepseek-v3").kv.bytes_per_token
    qwen = config_import.parse_hf_config(
        {
            "num_hidden_layers": 28,
            "num_attention_heads": 28,
            "num_key_value_heads": 4,
            "hidden_size": 3584,
            "sliding_window": 131072,
            "use_sliding_window": False,
        }
    )
    assert qwen.config.window is None


@pytest.mark.parametrize(
    "text, message",
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "JSON object"),
        ('{"name": "my recipe", "eggs": 3}', "does not look like a transformer"),
        ('{"num_hidden_layers": 2, "num_attention_heads": 3}', "head_dim nor hidden_size"),
        ('{"num_hidden_layers": 2, "num_attention_heads": 3, "hidden_size": 100}', "not a multiple"),
        ('{"num_hidden_layers": "two", "num_attention_heads": 3, "head_dim": 4}', "whole number"),
    ],
)
def test_bad_config_json(text, message):
    with pytest.raises(MemoryInputError, match=message):
        config_import.parse_hf_config(text)


# ----- what fits, paging ---------------------------------------------------------------------------------------
def test_what_fits_is_the_exact_boundary():
    cfg = get_preset("llama-3-8b").kv
    gpu = GPUS["NVIDIA A100 80GB"].memory_bytes
    weights = get_preset("llama-3-8b").n_params * 2
    fit = capacity.what_fits(cfg, gpu, weights, 2 * GIB, batch=4, context_len=8192)
    assert memory.kv_bytes(cfg, fit.max_context, 4) <= fit.free_bytes < memory.kv_bytes(cfg, fit.max_context + 1, 4)
    assert memory.kv_bytes(cfg, 8192, fit.max_batch) <= fit.free_bytes < memory.kv_bytes(cfg, 8192, fit.max_batch + 1)
    nothing = capacity.what_fits(cfg, 8 * GIB, weights, 0, batch=1, context_len=8192)
    assert nothing.free_bytes < 0 and nothing.max_context == 0 and nothing.max_batch == 0
    windowed = capacity.what_fits(get_preset("mistral-7b").kv, gpu, weights, 0, batch=1, context_len=4096)
    assert windowed.context_capped  # a rolling buffer never grows past the window


def test_the_fit_report_says_what_fits_and_where_the_cache_outweighs_the_weights():
    llama = get_preset("llama-3-8b")
    gpu = GPUS["NVIDIA A100 80GB"].memory_bytes
    weights = capacity.weight_bytes(llama.n_params, "bf16")
    assert weights == llama.n_params * 2 and capacity.weight_bytes(3, "int4") == 2  # rounded up to a whole byte
    report = capacity.fit_report(llama.kv, gpu, llama.n_params, "bf16", 2048, 4, 8192, "llama-3-8b", llama.max_context)
    assert report.fit == capacity.what_fits(llama.kv, gpu, weights, 2048 * units.MIB, 4, 8192)
    assert report.free_line.endswith(f"= **{units.format_bytes(report.fit.free_bytes)}** for the cache.")
    assert (
        report.longest_value == f"{report.fit.max_context:,} tokens"
        and report.batch_value == f"{report.fit.max_batch:,}"
    )
    assert report.over == "" and report.no_room == "" and report.past_window.startswith("Memory allows more than")
    at = capacity.max_context(llama.kv, 4, weights) + 1  # the first context whose cache outweighs the weights
    assert memory.kv_bytes(llama.kv, at - 1, 4) <= weights < memory.kv_bytes(llama.kv, at, 4)
    assert report.crossover.startswith(f"**The cache outweighs the weights from {at:,} tokens** at batch 4")
    too_big = capacity.fit_report(llama.kv, gpu, llama.n_params, "bf16", 2048, 10**6, 8192)
    assert too_big.over.startswith("**Does not fit:** batch 1000000 at 8,192 tokens")
    none_left = capacity.fit_report(llama.kv, 8 * GIB, llama.n_params, "bf16", 0, 1, 8192)
    assert none_left.no_room.endswith("needs at least 2 such GPUs, or fewer bits per weight.")
    assert capacity.crossover_text(llama.kv, 1, 0, "bf16", 0) == ""  # no weights: nothing to cross


def test_paged_view():
    cfg = get_preset("gpt2").kv
    view = capacity.paged_view(cfg, context_len=1000, batch=2, block_tokens=16, max_len=1024)
    assert view.blocks_per_sequence == 63 and view.waste_tokens_last_block == 8
    assert view.paged_bytes == 2 * 1008 * 73_728 and view.flat_bytes == 2 * 1024 * 73_728
    assert view.used_bytes == 2 * 1000 * 73_728
    with pytest.raises(MemoryInputError, match="shorter"):
        capacity.paged_view(cfg, 1000, 1, 16, max_len=999)


# ----- presets and published figures ---------------------------------------------------------------------------
def test_every_preset_cites_its_source():
    for p in PRESETS.values():
        assert p.source.startswith("https://huggingface.co/") and p.source.endswith("config.json")
        assert p.paper and p.n_params > 0 and p.max_context > 0


def test_published_figures_are_checked_with_arithmetic():
    checks = {(f.model, f.context_len): check_figure(f, get_preset(f.model).kv) for f in PUBLISHED_FIGURES}
    assert checks[("llama-3-8b", 4096)].verdict.startswith("correct")  # 0.5 GiB
    assert checks[("llama-3-70b", 4096)].verdict == "wrong"  # printed 5 GB, actual 1.25 GiB
    assert "4x" in checks[("llama-3-70b", 4096)].explanation
    assert checks[("llama-3.1-70b", 131072)].verdict == "correct"  # 42.95 GB, decimal, exact
    assert checks[("llama-3.1-405b", 1)].verdict == "correct if KB means binary units"  # 504 KiB


def test_format_bytes_is_unambiguous():
    assert units.format_bytes(536_870_912) == "536,870,912 B = 512 MiB = 0.5369 GB"
    assert units.format_bytes(73_728) == "73,728 B = 72 KiB = 73.73 KB"  # never "7.373e-05 GB"


# ----- the calculator == the real cache tensors -----------------------------------------------------------------
@pytest.mark.model
def test_predicted_bytes_equal_the_real_dynamic_cache(bundled):
    import torch

    from kvviz.step.engine import StepEngine

    engine = StepEngine(bundled)
    engine.prefill("ROMEO: What light")
    for _ in range(3):
        engine.step()
        cache = engine.cache
        real = sum(
            layer.keys.numel() * layer.keys.element_size() + layer.values.numel() * layer.values.element_size()
            for layer in cache.layers
        )
        assert real == engine.cache_bytes == memory.predicted_cache_bytes(bundled.info, engine.cache_len)
    assert cache.layers[0].keys.dtype == torch.float32 and bundled.info.kv_config().dtype == "fp32"


def test_format_bytes_never_uses_scientific_notation():
    for n in (1, 999, 1024, 73_728, 10**6, 5 * 10**6, 10**7, 536_870_912, 2**40, 2**60, 2**62):
        text = units.format_bytes(n)
        assert "e-" not in text and "e+" not in text, text
    assert units.format_bytes(2**62).endswith("= 4 EiB = 4,612 PB")


@pytest.mark.model
def test_residual_window_default_is_read_from_transformers():
    import inspect

    from transformers.cache_utils import QuantizedLayer

    real = {
        k: p.default
        for k, p in inspect.signature(QuantizedLayer.__init__).parameters.items()
        if p.default is not inspect.Parameter.empty
    }
    assert dtypes.transformers_quantized_defaults() == real
    assert real["residual_length"] > 1


def test_quantized_residual_window_bytes():
    base = KVConfig(2, 4, 2, 64, "int4")  # 4 vectors of 64 numbers: 32 B packed + 1 group x 4 B = 36 B each
    with_residual = KVConfig(2, 4, 2, 64, "int4", quant_residual_tokens=128)
    assert base.bytes_per_token_per_layer == 4 * 36
    fp16_row = 4 * 64 * 2
    # at peak the newest R - 1 = 127 tokens are 16-bit, the rest int4; fewer tokens than that: all 16-bit
    assert memory.kv_bytes(with_residual, 1000) == 2 * (873 * 4 * 36 + 127 * fp16_row)
    assert memory.kv_bytes(with_residual, 50) == 2 * 50 * fp16_row
    assert memory.kv_bytes(KVConfig(2, 4, 2, 64, "fp16", quant_residual_tokens=128), 1000) == 2 * 1000 * fp16_row
    b = memory.budget(with_residual, 1000)
    assert b.total_bytes == memory.kv_bytes(with_residual, 1000) == sum(b.layer_bytes)


def test_gpu_presets_say_marketed_or_usable():
    h100 = GPUS["NVIDIA H100 80GB"]
    assert h100.driver_reported and h100.memory_bytes == 81_559 * 2**20
    assert "79.65 GiB usable" in h100.capacity_note and "marketed 80 GB" in h100.capacity_note
    a100 = GPUS["NVIDIA A100 80GB"]
    assert not a100.driver_reported and "taken here as 80 GiB" in a100.capacity_note


def test_figures_pick_readable_units():
    from kvviz.figures import memory as figs

    toy = KVConfig(4, 4, 4, 32, "fp32")  # the bundled model: 4 KiB per token
    small = figs.size_vs_context_figure([toy], 12)
    assert small.layout.yaxis.title.text.startswith("KiB") and max(small.data[0].y) == 48  # 12 x 4 KiB
    huge = figs.size_vs_context_figure([get_preset("llama-3-8b").kv], 600 * 10**9)
    assert huge.layout.xaxis.exponentformat == "power"  # plotly's default would print "600B" tokens
    assert small.layout.xaxis.exponentformat == "none"  # a real context reads "20,000", never "0.2x10^5"
    assert huge.data[0].customdata[-1] == memory.kv_bytes(get_preset("llama-3-8b").kv, 600 * 10**9)


def test_paged_view_of_a_qwen2_style_window_counts_every_layer_global():
    """Paged blocks assume every layer global: a Qwen2 config (global below max_window_layers, windowed above) is
    drawn without its window, never refused (the memory page runs all its tabs on it)."""
    from kvviz.memory import KVConfig, capacity, kv_bytes

    qwen2 = KVConfig(
        n_layer=28, n_head=28, n_kv_heads=4, head_dim=128, dtype="bf16", window=4096, first_windowed_layer=21
    )
    view = capacity.paged_view(qwen2, 8192, 1, 16, 8192)
    assert qwen2.all_global() == KVConfig(n_layer=28, n_head=28, n_kv_heads=4, head_dim=128, dtype="bf16")
    assert view.used_bytes == kv_bytes(qwen2.all_global(), 8192) == 28 * 2 * 4 * 128 * 2 * 8192


def test_the_same_cache_with_mha_and_the_cross_attention_layout():
    """One home each: the step page and the memory page's 'forgetting GQA', and the cross-attention cache the memory
    page, the CLI and the config import all size."""
    llama = get_preset("llama-3-8b").kv
    assert llama.with_mha().n_kv_heads == llama.n_head == 32
    assert memory.kv_bytes(llama.with_mha(), 4096) == 4 * memory.kv_bytes(llama, 4096)
    assert memory.mha_cost(llama, 4096) == (4 * memory.kv_bytes(llama, 4096), 4.0)  # the stage's and the page's rule
    windowed = memory.KVConfig(4, 8, 2, 16, "int8", window=64, local_per_global=3, name="m", quant_residual_tokens=8)
    cross = windowed.cross_attention_layout()
    assert cross == replace(windowed.all_global(), name="m cross-attention")
    assert (cross.dtype, cross.n_kv_heads, cross.quant_residual_tokens, cross.window) == ("int8", 2, 8, None)


def test_one_table_of_byte_units_reads_kb_either_way():
    """The formatter writes KB (the units rule's spelling); a printed kB (SI's) is the same 10^3."""
    assert units.UNIT_BYTES["kB"] == units.UNIT_BYTES["KB"] == 1000 and units.UNIT_BYTES["KiB"] == 1024
    assert units.binary_and_decimal("GB") == (2**30, 10**9) and units.binary_and_decimal("MiB") == (2**20, 2**20)
    assert units.binary_and_decimal("KB") == units.binary_and_decimal("kB") == (1024, 1000)
