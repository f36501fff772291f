"""Hugging Face config.json import: read a model's cache layout (layers, heads, head size, MLA, windows, dtype).

`parse_hf_config` returns a kvviz.memory.KVConfig plus the fields it used and the ones it had to assume.
"""
from __future__ import annotations

import json
from typing import Any
from dataclasses import dataclass

from kvviz.memory import KVConfig, MemoryInputError, check_int, head_dim_from_hidden, resolve_dtype


# ----- Hugging Face config.json import ----------------------------------------------------------------------
@dataclass(frozen=True)
class ImportedConfig:
    config: KVConfig
    used: dict[str, Any]  # config.json field -> value, for every field that fed the calculator
    missing: tuple[str, ...]  # what we looked for and did not find, with the default we took
    max_context: int | None
    extras: dict[str, int]  # n_embd, d_ff, vocab_size when present (for op counts)


_FIELDS = {
    "n_layer": ("num_hidden_layers", "n_layer", "num_layers", "n_layers"),
    "n_head": ("num_attention_heads", "n_head", "num_heads"),
    "n_kv_heads": ("num_key_value_heads", "num_kv_heads", "n_head_kv", "multi_query_group_num"),
    "head_dim": ("head_dim", "kv_channels"),
    "hidden": ("hidden_size", "n_embd", "d_model", "dim"),
    "max_context": ("max_position_embeddings", "n_positions", "n_ctx", "max_sequence_length", "seq_length"),
    "d_ff": ("intermediate_size", "n_inner", "ffn_dim", "ffn_hidden_size"),
    "vocab_size": ("vocab_size", "padded_vocab_size"),
}


def _first(cfg: dict[str, Any], names: tuple[str, ...], used: dict[str, Any]) -> Any:
    for n in names:
        if cfg.get(n) is not None:
            used[n] = cfg[n]
            return cfg[n]
    return None


def parse_hf_config(text_or_dict: str | bytes | dict[str, Any], dtype: str | None = None) -> ImportedConfig:
    """Read the cache layout from a Hugging Face config.json (text, bytes or dict).

    Raises MemoryInputError for non-JSON, non-object JSON, or JSON that is not a transformer config.
    Multimodal configs (Gemma 3, LLaVA) are read from their `text_config`.
    """
    if isinstance(text_or_dict, dict):
        raw = text_or_dict
    else:
        try:
            raw = json.loads(text_or_dict)
        except (ValueError, UnicodeDecodeError) as exc:
            raise MemoryInputError(f"this is not valid JSON ({exc}); paste the model's config.json") from None
    if not isinstance(raw, dict):
        raise MemoryInputError("config.json must be a JSON object ({...}), not a list or a single value")
    cfg = dict(raw)
    used: dict[str, Any] = {}
    missing: list[str] = []
    if isinstance(cfg.get("text_config"), dict):
        used["text_config"] = "(read the language model's fields from here)"
        cfg = {**cfg, **cfg["text_config"]}
    n_layer = _first(cfg, _FIELDS["n_layer"], used)
    n_head = _first(cfg, _FIELDS["n_head"], used)
    if n_layer is None or n_head is None:
        raise MemoryInputError(
            "this JSON does not look like a transformer config.json: it has no number of layers "
            "(num_hidden_layers / n_layer) or no number of attention heads (num_attention_heads / n_head)"
        )
    n_kv = _first(cfg, _FIELDS["n_kv_heads"], used)
    if n_kv is None and cfg.get("multi_query"):
        used["multi_query"] = True
        n_kv = 1
    if n_kv is None:
        missing.append("num_key_value_heads (took n_head: plain multi-head attention)")
        n_kv = n_head
    head_dim = _first(cfg, _FIELDS["head_dim"], used)
    hidden = _first(cfg, _FIELDS["hidden"], used)
    if head_dim is None:
        if hidden is None:
            raise MemoryInputError("config.json has neither head_dim nor hidden_size, so the head size is unknown")
        missing.append("head_dim (took hidden_size / num_attention_heads)")
        head_dim = head_dim_from_hidden(check_int("hidden_size", hidden, hi=10**7), check_int("n_head", n_head))
    mla_rank = cfg.get("kv_lora_rank") or 0
    mla_rope = cfg.get("qk_rope_head_dim") or 0
    if mla_rank:
        used["kv_lora_rank"] = mla_rank
        used["qk_rope_head_dim"] = mla_rope
    window, pattern = _window_fields(cfg, used, missing, n_layer)
    dt = dtype
    if dt is None:
        found = _first(cfg, ("torch_dtype", "dtype"), used)
        if found is None:
            missing.append("torch_dtype (took bf16)")
        dt = found or "bf16"
        try:
            resolve_dtype(dt)
        except MemoryInputError:
            missing.append(f"dtype {dt!r} is not a cache dtype kvviz knows (took bf16)")
            dt = "bf16"
    max_ctx = _first(cfg, _FIELDS["max_context"], used)
    if max_ctx is None:
        missing.append("max_position_embeddings (context limit unknown)")
    extras = {}
    for key in ("d_ff", "vocab_size"):
        value = _first(cfg, _FIELDS[key], used)
        if value is not None:
            extras[key] = value
    if hidden is not None:
        extras["n_embd"] = hidden
    name = cfg.get("_name_or_path") or cfg.get("model_type") or "imported config"
    config = KVConfig(
        n_layer=n_layer, n_head=n_head, n_kv_heads=n_kv, head_dim=head_dim, dtype=dt,
        mla_latent_rank=mla_rank, mla_rope_dim=mla_rope, window=window, local_per_global=pattern, name=str(name),
    )
    return ImportedConfig(config, used, tuple(missing), max_ctx if isinstance(max_ctx, int) else None, extras)


def _window_fields(
    cfg: dict[str, Any], used: dict[str, Any], missing: list[str], n_layer: Any
) -> tuple[int | None, int | None]:
    """(window, local_per_global) from sliding_window + use_sliding_window / sliding_window_pattern / layer_types."""
    window = cfg.get("sliding_window")
    if window is None or cfg.get("use_sliding_window") is False:
        if window is not None:
            used["use_sliding_window"] = False  # Qwen2 configs carry a window they do not use
        return None, None
    used["sliding_window"] = window
    if isinstance(cfg.get("layer_types"), list):
        types = cfg["layer_types"]
        used["layer_types"] = f"list of {len(types)}"
        if all(t == "sliding_attention" for t in types):
            return window, None
        if "sliding_attention" not in types:
            return None, None
        first_global = types.index("full_attention") if "full_attention" in types else len(types)
        probe = KVConfig(1, 1, 1, 1, window=window, local_per_global=first_global)
        expected = ["full_attention" if probe.layer_window(i) is None else "sliding_attention" for i in range(len(types))]
        if types == expected:
            return window, first_global
        missing.append("layer_types is not a regular N local : 1 global pattern (took its first period)")
        return window, first_global
    if cfg.get("sliding_window_pattern"):
        used["sliding_window_pattern"] = cfg["sliding_window_pattern"]
        return window, int(cfg["sliding_window_pattern"]) - 1
    if cfg.get("model_type") == "gemma2":
        used["model_type"] = "gemma2 (alternates local and global layers)"
        return window, 1
    return window, None
