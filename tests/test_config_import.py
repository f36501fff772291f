"""kvviz.memory.config_import + kvviz.memory.hf_cache: what is read from a config.json, what comes from transformers' defaults
(and is said to), and the one-line refusals. The byte-level agreement with real caches is in
tests/test_transformers_oracle.py; these are the fast checks of the import itself."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace

import pytest

from kvviz import i18n, memory
from kvviz.memory import KVConfig, MemoryInputError, config_import, hf_cache
from kvviz.memory import layers as layers_lib
from support.library import kvviz_total_bytes
from support.models import GEMMA3_4B

LLAVA_15 = {  # llava-hf/llava-1.5-7b-hf config.json: the Vicuna text model is all Llama defaults
    "model_type": "llava",
    "torch_dtype": "float16",
    "vocab_size": 32064,
    "text_config": {
        "_name_or_path": "lmsys/vicuna-7b-v1.5",
        "model_type": "llama",
        "max_position_embeddings": 4096,
        "rms_norm_eps": 1e-05,
        "torch_dtype": "float16",
        "vocab_size": 32064,
    },
}


@pytest.mark.model
def test_gemma3_multimodal_config_takes_transformers_defaults_and_says_so():
    imported = config_import.parse_hf_config(json.dumps(GEMMA3_4B))
    c = imported.config
    assert (c.n_layer, c.n_head, c.n_kv_heads, c.head_dim, c.dtype) == (34, 8, 4, 256, "bf16")
    assert (c.window, c.local_per_global, c.n_global_layers) == (1024, 5, 5)
    assert {k: i18n.shown(v) for k, v in imported.defaults.items()} == {  # kvviz's words (a Message), in English
        "num_attention_heads": 8,
        "num_key_value_heads": 4,
        "head_dim": 256,
        "layer_types": "29 sliding + 5 full of 34",
    }
    assert imported.transformers_class == "Gemma3TextConfig"
    assert all("Gemma3TextConfig default" in m.english for m in imported.missing)
    # 128k tokens: the real 5:1 pattern vs every layer windowed (the mistake of ignoring layer_types): ~20x
    all_local = KVConfig(34, 8, 4, 256, "bf16", window=1024)
    assert memory.kv_bytes(c, 131072) == (5 * 131072 + 29 * 1024) * 4096 == 2_805_989_376
    assert memory.kv_bytes(c, 131072) // memory.kv_bytes(all_local, 131072) == 19


@pytest.mark.model
def test_llava_15_is_read_from_its_llama_defaults():
    imported = config_import.parse_hf_config(LLAVA_15)
    c = imported.config
    assert (c.n_layer, c.n_head, c.n_kv_heads, c.head_dim, c.dtype) == (32, 32, 32, 128, "fp16")
    assert {"num_hidden_layers", "num_attention_heads", "num_key_value_heads"} <= set(imported.defaults)
    assert imported.max_context == 4096 and imported.extras["vocab_size"] == 32064


@pytest.mark.model
def test_no_torch_dtype_means_float32_like_transformers():
    gpt2 = config_import.parse_hf_config({"model_type": "gpt2", "n_embd": 768, "n_head": 12, "n_layer": 12})
    assert gpt2.config.dtype == "fp32" and any("float32" in m.english for m in gpt2.missing)
    assert memory.kv_bytes(gpt2.config, 1024) == 2 * 12 * 12 * 64 * 4 * 1024  # the gpt2 preset's figure
    plain = config_import.parse_hf_config({"n_layer": 2, "n_head": 2, "n_embd": 8})  # no model_type either
    assert plain.config.dtype == "fp32"


@pytest.mark.model
def test_qwen2_max_window_layers_rule():
    base = {
        "model_type": "qwen2",
        "hidden_size": 3584,
        "num_attention_heads": 28,
        "num_key_value_heads": 4,
        "num_hidden_layers": 28,
        "sliding_window": 4096,
        "torch_dtype": "bfloat16",
    }
    off = config_import.parse_hf_config({**base, "use_sliding_window": False, "max_window_layers": 21})
    assert off.config.window is None
    on = config_import.parse_hf_config({**base, "use_sliding_window": True, "max_window_layers": 21})
    assert [on.config.layer_window(i) for i in (0, 20, 21, 27)] == [None, None, 4096, 4096]
    assert on.config.n_global_layers == 21
    assert on.used["max_window_layers"] == 21 and on.used["layer_types"].english == "7 sliding + 21 full of 28"
    default = config_import.parse_hf_config({**base, "use_sliding_window": True})  # Qwen2Config's default: 28
    assert default.config.window is None and any("none slides" in m.english for m in default.missing)
    assert memory.kv_bytes(on.config, 10_000) == (21 * 10_000 + 7 * 4096) * 2 * 4 * 128 * 2
    as_written = config_import.parse_hf_config(
        {**base, "model_type": None, "use_sliding_window": True, "max_window_layers": 21}
    )  # same rule without transformers
    assert as_written.config == replace(on.config, name=as_written.config.name)


@pytest.mark.model
def test_mla_needs_no_whole_hidden_over_heads():
    cfg = {
        "model_type": "deepseek_v3",
        "hidden_size": 7000,
        "num_attention_heads": 128,
        "num_key_value_heads": 128,
        "num_hidden_layers": 61,
        "kv_lora_rank": 512,
        "qk_rope_head_dim": 64,
        "qk_nope_head_dim": 128,
        "torch_dtype": "bfloat16",
    }  # 7000 / 128 is not whole: irrelevant for MLA
    c = config_import.parse_hf_config(cfg).config
    assert c.is_mla and c.bytes_per_token == 61 * (512 + 64) * 2


@pytest.mark.model
def test_falcon_new_decoder_architecture_note_and_t5_cross_attention():
    falcon = config_import.parse_hf_config(
        {
            "model_type": "falcon",
            "hidden_size": 8192,
            "num_attention_heads": 128,
            "num_kv_heads": 8,
            "num_hidden_layers": 60,
            "new_decoder_architecture": True,
            "torch_dtype": "bfloat16",
        }
    )
    assert falcon.config.n_kv_heads == 8 and falcon.transformers_kv_heads == 128
    assert "serving engines" in falcon.notes[0].english
    bart = config_import.parse_hf_config(
        {"model_type": "bart", "d_model": 1024, "decoder_layers": 12, "decoder_attention_heads": 16}
    )
    assert bart.cross_attention is not None and bart.config.head_dim == 64
    assert kvviz_total_bytes(bart, 100, encoder_len=300) == (100 + 300) * 12 * 2 * 16 * 64 * 4


def test_fp8_counts_two_fp32_scales_per_layer_once_per_batch():
    c = KVConfig(32, 32, 8, 128, "fp8")
    assert memory.kv_bytes(c, 1000, 3) == 3 * 1000 * 32 * 2 * 8 * 128 + 32 * 8
    assert memory.budget(c, 1000, 3).total_bytes == memory.kv_bytes(c, 1000, 3)
    assert memory.kv_bytes(c, 0) == 0


@pytest.mark.model
@pytest.mark.parametrize(
    "text, message",
    [
        ('{"model_type": "gemma3_text", "sliding_window": 512, "sliding_window_pattern": "abc"}', "whole number"),
        ('{"model_type": "gemma3_text", "sliding_window": 512, "sliding_window_pattern": [6]}', "whole number"),
        ('{"model_type": "gemma3_text", "sliding_window": 512, "sliding_window_pattern": 1e400}', "whole number"),
        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
        ('{"model_type": "llama", "num_hidden_layers": 1e9}', "from 1 to 10,000"),
        ('{"model_type": "llama", "layer_types": "full"}', "layer_types"),
        ('{"model_type": "llama", "num_attention_heads": 7, "hidden_size": 4096}', "refuses this config"),
    ],
)
def test_bad_input_is_one_line(text, message):
    with pytest.raises(MemoryInputError, match=message) as info:
        config_import.parse_hf_config(text)
    assert "\n" not in str(info.value)


@pytest.mark.slow
@pytest.mark.parametrize(
    "payload", ['{"model_type": "gemma3_text", "sliding_window_pattern": "abc"}', "[" * 100_000 + "]" * 100_000]
)
def test_cli_exit_2_one_line_no_traceback(tmp_path, payload):
    path = tmp_path / "config.json"
    path.write_text(payload)
    run = subprocess.run(
        [sys.executable, "-m", "kvviz", "memory", "--config", str(path)], capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 2 and "Traceback" not in run.stderr and run.stderr.count("\n") == 1


@pytest.mark.slow
def test_importing_the_module_does_not_import_torch():
    code = "import sys, kvviz.memory.config_import, kvviz.memory.hf_cache; print('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip() == "False"


def test_transformers_figure_for_a_windowed_preset_is_one_token_less_per_sliding_layer():
    from kvviz.memory.presets import get_preset

    mistral = get_preset("mistral-7b").kv  # every layer slides, window 4096
    per_layer_token = 2 * 8 * 128 * 2
    assert memory.kv_bytes(mistral, 10_000) == 32 * 4096 * per_layer_token
    assert hf_cache.transformers_cache_bytes(mistral, 10_000) == 32 * 4095 * per_layer_token
    assert hf_cache.transformers_cache_bytes(mistral, 100) == memory.kv_bytes(mistral, 100)  # inside the window


@pytest.mark.model
def test_random_odd_configs_only_ever_give_one_line():
    """A seeded sample of configs with odd values in the fields the importer reads: every outcome is a config or
    one MemoryInputError line (mamba/vit: no attention cache; text_config: 5; is_encoder_decoder on a llama...)."""
    import random

    rng = random.Random(0)
    types = [
        "llama",
        "gemma3",
        "gemma3_text",
        "qwen2",
        "falcon",
        "t5",
        "bart",
        "deepseek_v3",
        "gpt2",
        "llava",
        "mixtral",
        "gemma2",
        "bert",
        "vit",
        "mamba",
        None,
        "nonexistent",
        5,
    ]
    values = [None, 0, -1, 1, 2, 3.5, 1e400, "abc", [6], {"a": 1}, True, 10**12, 7, 64]
    keys = [
        "num_hidden_layers",
        "num_attention_heads",
        "num_key_value_heads",
        "head_dim",
        "hidden_size",
        "sliding_window",
        "sliding_window_pattern",
        "layer_types",
        "torch_dtype",
        "kv_lora_rank",
        "qk_rope_head_dim",
        "use_sliding_window",
        "max_window_layers",
        "text_config",
        "d_kv",
        "num_layers",
        "decoder_layers",
        "n_head",
        "n_layer",
        "n_embd",
        "new_decoder_architecture",
        "multi_query",
        "num_kv_heads",
        "is_encoder_decoder",
    ]
    outcomes = {"ok": 0, "refused": 0}
    for _ in range(400):
        cfg = {"model_type": rng.choice(types), **{k: rng.choice(values) for k in rng.sample(keys, rng.randint(1, 6))}}
        try:
            config_import.parse_hf_config(json.dumps(cfg))
            outcomes["ok"] += 1
        except MemoryInputError as exc:
            assert "\n" not in str(exc), cfg
            outcomes["refused"] += 1
    assert outcomes["ok"] > 20 and outcomes["refused"] > 20  # both kinds happen: the sample is not degenerate


@pytest.mark.model
def test_cli_encoder_len_counts_the_t5_cross_attention_cache(tmp_path, capsys):
    from kvviz.__main__ import main

    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "t5", "d_model": 1024, "d_kv": 128, "num_heads": 32, "num_layers": 24}))
    assert main(["memory", "--config", str(path), "--context", "512", "--encoder-len", "512", "--batch", "2"]) == 0
    out = capsys.readouterr().out
    assert f"{2 * 512 * 24 * 32 * 128 * 2 * 4:,} B" in out  # cross-attention: fp32, d_kv = 128
    assert main(["memory", "--preset", "gpt2", "--encoder-len", "5"]) == 2
    assert "needs an encoder-decoder" in capsys.readouterr().err


# ----- heterogeneous configs (transformers' per_layer_config: Gemma 4 and its kin) ------------------------------
HETEROGENEOUS_TYPES = [
    "gemma4",
    "gemma4_text",
    "gemma4_unified",
    "gemma4_unified_text",
    "gemma4_unified_assistant",
    "diffusion_gemma",
    "diffusion_gemma_text",
    "dots3_note",
    "dots3_note_text",
    "embedding_gemma2",
    "embedding_gemma2_text",
    "neomme",
]
# Gemma 4's text model at the size of its defaults, with the full-attention layers' head size (global_head_dim,
# 512 by default) set equal to the sliding layers' 256: every layer then caches one shape, which kvviz counts
GEMMA4_UNIFORM = {"model_type": "gemma4_text", "global_head_dim": 256, "torch_dtype": "bfloat16"}
GEMMA4_SMALL = {
    **GEMMA4_UNIFORM,
    "hidden_size": 64,
    "intermediate_size": 32,
    "vocab_size": 64,
    "vocab_size_per_layer_input": 64,
    "hidden_size_per_layer_input": 8,
    "num_hidden_layers": 12,
    "sliding_window": 4,
}
PROMPT, DECODE = 6, 3


@pytest.mark.model
@pytest.mark.parametrize("model_type", HETEROGENEOUS_TYPES)
def test_every_per_layer_config_model_type_is_read_or_refused_in_one_line(model_type):
    """{"model_type": "gemma4"} and the 11 others make transformers raise AmbiguousGlobalPerLayerAttributeError;
    it must not leave kvviz ("This is a kvviz bug" in the CLI, Streamlit's error box on the page). Each is read layer
    by layer; where its layers cache different shapes the one line names the fields and their values."""
    try:
        imported = config_import.parse_hf_config({"model_type": model_type})
    except MemoryInputError as exc:
        message = str(exc)
        assert "\n" not in message and len(message) < 400
        assert "different K/V shapes" in message or "no KV cache of its own" in message, message
        return
    assert memory.kv_bytes(imported.config, 100) > 0


def _cache_bytes(layers) -> int:
    return sum(
        t.numel() * t.element_size()
        for layer in layers
        for t in (layer.keys, layer.values)
        if t is not None and hasattr(t, "numel")
    )


def _run_cache(cfg: dict, device: str, steps: int):
    """transformers' own model for this config (Gemma4ForCausalLM) on `device`: prefill PROMPT tokens, then `steps`
    decode passes; the cache's layers after each pass."""
    torch = pytest.importorskip("torch")
    from transformers import AutoModelForCausalLM
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    config = CONFIG_MAPPING[cfg["model_type"]](**cfg)
    with torch.device(device):
        torch.manual_seed(0)
        model = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16).eval()
    with torch.no_grad():
        cache = model(input_ids=torch.arange(1, PROMPT + 1, device=device)[None], use_cache=True).past_key_values
        yield PROMPT, cache.layers
        for step in range(steps):
            token = torch.full((1, 1), 3 + step, device=device)
            cache = model(input_ids=token, past_key_values=cache, use_cache=True).past_key_values
            yield PROMPT + step + 1, cache.layers


@pytest.mark.model
@pytest.mark.parametrize(
    "cfg, device",
    [
        (GEMMA4_UNIFORM, "meta"),  # full size: 30 layers, 5 sliding : 1 full, window 512, 4 K/V heads x 256
        (GEMMA4_SMALL, "cpu"),  # window 4 < prompt: the W - 1 convention shows
        ({**GEMMA4_SMALL, "num_kv_shared_layers": 4}, "cpu"),  # the last 4 layers reuse K/V: 8 layers cache
        ({**GEMMA4_SMALL, "attention_k_eq_v": True}, "cpu"),  # V from the K projection, still stored as its own tensor
    ],
    ids=["gemma4-full-size-meta", "gemma4-small-cpu", "gemma4-kv-shared-cpu", "gemma4-k-eq-v-cpu"],
)
def test_gemma4_bytes_equal_transformers_cache(cfg, device):
    """kvviz's figure for a Gemma 4 text config whose layers cache one shape equals the bytes transformers' own
    cache holds after the prefill and each decode step (up to the documented W - 1 of sliding layers)."""
    imported = config_import.parse_hf_config(cfg)
    assert imported.transformers_class == "Gemma4TextConfig" and imported.config.head_dim == 256
    for tokens, layers in _run_cache(cfg, device, steps=1 if device == "meta" else DECODE):
        assert _cache_bytes(layers) == hf_cache.transformers_cache_bytes(imported, tokens), tokens
    if cfg.get("num_kv_shared_layers"):
        assert imported.config.n_layer == 8 and any("num_kv_shared_layers = 4" in m.english for m in imported.missing)
        assert [layer.keys is None for layer in layers] == [False] * 8 + [True] * 4


@pytest.mark.model
def test_gemma4_per_layer_shapes_are_counted_layer_by_layer():
    """Gemma 4's full-attention layers hold 512-number heads, its sliding layers 256: one KVConfig cannot hold both,
    so the config is counted layer by layer (kvviz.memory.layers), each layer's K/V with its own head_dim, and the
    bytes equal what transformers' cache holds after the prefill and each step; never refused."""
    cfg = {**GEMMA4_SMALL, "global_head_dim": 512}
    imported = config_import.parse_hf_config(cfg)
    stack = imported.layers
    assert {p.shape[-1] for x in stack.layers for p in x.parts} == {256, 512}
    assert imported.config is not None and imported.config.head_dim == 256  # the form shows the first layer's shape
    for tokens, layers in _run_cache(cfg, "cpu", steps=DECODE):
        assert {layer.keys.shape[-1] for layer in layers} == {256, 512}
        held = [_cache_bytes([layer]) for layer in layers]
        window_tensors = [layers_lib.WINDOW_TENSOR_BYTES if x.window else 0 for x in stack.layers]
        assert [a + b for a, b in zip(held, window_tensors, strict=True)] == list(stack.layer_bytes(tokens)), tokens


@pytest.mark.model
def test_gemma3n_kv_shared_layers_add_nothing_to_the_cache():
    """Gemma 3n has the same `num_kv_shared_layers` (15 of 35 by default): its last layers reuse K/V and hold no
    cache in transformers. kvviz counts the layers transformers' cache fills, not every layer."""
    cfg = {
        "model_type": "gemma3n_text",
        "hidden_size": 64,
        "intermediate_size": 32,
        "vocab_size": 64,
        "vocab_size_per_layer_input": 64,
        "hidden_size_per_layer_input": 8,
        "num_hidden_layers": 10,
        "sliding_window": 4,
        "num_kv_shared_layers": 4,
        "laurel_rank": 4,
        "torch_dtype": "bfloat16",
    }
    imported = config_import.parse_hf_config(cfg)
    assert imported.config.n_layer == 6 and any("num_kv_shared_layers = 4" in m.english for m in imported.missing)
    for tokens, layers in _run_cache(cfg, "cpu", steps=DECODE):
        assert _cache_bytes(layers) == hf_cache.transformers_cache_bytes(imported, tokens), tokens
    assert [layer.keys is None for layer in layers] == [False] * 6 + [True] * 4
