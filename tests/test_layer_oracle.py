"""Every layer counted as transformers builds it: kvviz.memory.layers against the real caches of 23 architectures.

For each architecture (tests/support/arch_oracle.py: a tiny instance from transformers' own config class, keeping
its layer mix), the config is imported as the memory page imports a pasted config.json (`parse_hf_config`), and
the model runs one forward of TOKENS tokens and one more token. Every tensor the returned cache holds (K/V rows,
indexer keys, conv and recurrent states, a sliding layer's window tensor; RecurrentGemma's states on its modules) is
summed per layer: kvviz's per-layer bytes and its total must equal them exactly, in float32 and in bfloat16.

docs/measurements.md carries the table this module computes (`oracle_table`); the last test checks it is the one in
the docs, so the published table reproduces from

    .venv/bin/python -m pytest tests/test_layer_oracle.py -m model
"""

from __future__ import annotations

import functools

import pytest

from support import arch_oracle
from support.repo import REPO

TOKENS = 40  # the prefill; then one more token
ARCHITECTURES = [
    "llama",
    "qwen2",
    "gemma3_text",
    "gpt_oss",
    "gemma3n_text",
    "deepseek_v3",
    "deepseek_v32",
    "qwen3_next",
    "qwen3_5_text",
    "olmo_hybrid",
    "jamba",
    "falcon_h1",
    "zamba2",
    "nemotron_h",
    "lfm2",
    "minimax",
    "granitemoehybrid",
    "bamba",
    "kimi_linear",
    "gemma4_text",
    "llama4_text",
    "mamba2",
    "recurrent_gemma",
    "gemma4_text+kv_shared",
    "mamba",
    "falcon_mamba",
]
DTYPES = {"float32": "fp32", "bfloat16": "bf16"}
DOCS = REPO / "docs" / "measurements.md"
TABLE_START, TABLE_END = "<!-- layer-oracle-table: start -->", "<!-- layer-oracle-table: end -->"


def config_json(name: str, dtype: str) -> dict:
    """The tiny instance's config as a config.json would carry it (model_type, its fields, torch_dtype)."""
    model_type, kwargs = arch_oracle._resolve(name)
    return {"model_type": model_type, **kwargs, "torch_dtype": dtype}


@functools.cache
def measured(name: str, dtype: str) -> tuple[tuple[int, ...], object]:
    """(transformers' bytes per layer after TOKENS + 1 tokens, kvviz's import of the same config)."""
    from kvviz.memory import config_import

    real = arch_oracle.real_cache_bytes(name, TOKENS, dtype, 1)
    return tuple(layer["bytes"] for layer in real), config_import.parse_hf_config(config_json(name, dtype))


@pytest.mark.model
@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("name", ARCHITECTURES)
def test_every_layer_equals_the_real_cache(name, dtype):
    real, imported = measured(name, dtype)
    stack = imported.layers
    assert stack is not None and stack.n_layer == len(real)
    assert stack.layer_bytes(TOKENS + 1) == real, [(x.index, x.kind, x.mixer) for x in stack.layers]
    assert stack.bytes_at(TOKENS + 1) == sum(real)
    # K/V grows by bytes_per_token per token inside every window; a state never grows
    unwindowed = all(x.window is None or x.window - 1 > TOKENS + 1 for x in stack.layers)
    if unwindowed:
        assert stack.bytes_at(TOKENS + 1) - stack.bytes_at(TOKENS) == stack.bytes_per_token
    assert stack.dtype == DTYPES[dtype]


@pytest.mark.model
def test_the_hybrids_keep_their_layer_mix_and_their_float32_state():
    """What the issue measured by hand: Qwen3-Next keeps K/V in 1 layer of 4 and a fixed state in 3; its recurrent state
    is float32 in a bf16 model, its conv state bf16; Nemotron-H's MLP/MoE blocks hold nothing; Falcon-H1 keeps K/V and
    a state in the same layer; Mamba-2 has no K/V at all."""
    _, qwen = measured("qwen3_next", "bfloat16")
    kinds = [x.kind for x in qwen.layers.layers]
    assert kinds == ["state", "state", "state", "full"]
    state = qwen.layers.layers[0]
    assert {p.name: p.dtype for p in state.parts} == {"conv_state": "bf16", "recurrent_state": "fp32"}
    assert state.bytes_per_token == 0 and state.fixed_bytes > 0
    _, nemotron = measured("nemotron_h", "float32")
    assert {x.kind for x in nemotron.layers.layers if x.layer_type in ("mlp", "moe")} == {"none"}
    assert all(x.bytes_at(TOKENS) == 0 for x in nemotron.layers.layers if x.kind == "none")
    _, falcon = measured("falcon_h1", "float32")
    assert {x.kind for x in falcon.layers.layers} == {"hybrid"}
    _, mamba = measured("mamba2", "float32")
    assert mamba.config is None and mamba.layers.bytes_per_token == 0 and mamba.layers.fixed_bytes > 0


@pytest.mark.model
def test_an_unknown_layer_type_is_refused_naming_it_and_its_layer():
    from kvviz.memory import MemoryInputError, config_import

    cfg = config_json("qwen3_next", "float32")
    cfg["layer_types"] = ["linear_attention", "retention", "linear_attention", "full_attention"]
    with pytest.raises(MemoryInputError) as info:
        config_import.parse_hf_config(cfg)
    message = str(info.value)
    assert "retention" in message and "\n" not in message
    cfg["layer_types"] = ["linear_attention", "full_attention"]
    with pytest.raises(MemoryInputError) as info:
        config_import.parse_hf_config(cfg)
    assert "2" in str(info.value) and "4" in str(info.value)


@pytest.mark.model
def test_a_saved_infinity_is_read_as_transformers_reads_it(tmp_path):
    """save_pretrained writes Mamba-2's time_step_limit (0, inf) as {"__float__": "Infinity"}; kvviz reads what
    AutoConfig.from_pretrained reads."""
    import json

    from transformers import AutoConfig

    from kvviz.memory import config_import

    config = arch_oracle.build_config("mamba2")
    config.save_pretrained(tmp_path)
    text = (tmp_path / "config.json").read_text()
    assert '"__float__": "Infinity"' in text
    imported = config_import.parse_hf_config(text)
    again = AutoConfig.from_pretrained(tmp_path)
    assert again.time_step_limit[1] == float("inf")
    assert imported.layers.fixed_bytes == measured("mamba2", "float32")[1].layers.fixed_bytes
    assert json.loads(text)["model_type"] == "mamba2"


def oracle_table() -> str:
    """The docs' table: per architecture, its layers, and kvviz's and transformers' bytes after TOKENS + 1 tokens."""
    from kvviz.memory.layers import KINDS

    rows = [
        "| architecture | layers (kind x count) | kvviz fp32 (B) | transformers fp32 (B) | kvviz bf16 (B) "
        "| transformers bf16 (B) | as if every layer were full attention, fp32 (B) | equal |",
        "|---|---|---:|---:|---:|---:|---:|---|",
    ]
    for name in ARCHITECTURES:
        real32, imp32 = measured(name, "float32")
        real16, imp16 = measured(name, "bfloat16")
        stack = imp32.layers
        mix = ", ".join(f"{kind} x {stack.count(kind)}" for kind in KINDS if stack.count(kind))
        uniform = stack.as_all_attention()
        ours32, ours16 = stack.bytes_at(TOKENS + 1), imp16.layers.bytes_at(TOKENS + 1)
        equal = ours32 == sum(real32) and ours16 == sum(real16)
        rows.append(
            f"| {name} | {mix} | {ours32:,} | {sum(real32):,} | {ours16:,} | {sum(real16):,} | "
            f"{'–' if uniform is None else f'{uniform.bytes_at(TOKENS + 1):,}'} | {'yes' if equal else 'NO'} |"
        )
    return "\n".join(rows)


@pytest.mark.model
def test_the_docs_table_is_this_run():
    text = DOCS.read_text(encoding="utf-8")
    assert TABLE_START in text and TABLE_END in text, "docs/measurements.md lacks the layer-oracle table markers"
    published = text.split(TABLE_START, 1)[1].split(TABLE_END, 1)[0].strip()
    assert published == oracle_table(), "regenerate the table: print(oracle_table()) from this module"
