"""What config.json calls each dimension of a model: the one table the config import (kvviz.memory.config_import),
a model's dimensions (kvviz.model.dims) and the load cost (kvviz.model.load_cost) read config.json with. Plain
Python: reading a name needs no transformers."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# Each dimension's names, in the order a reader tries them (GPT-2's, Llama's, Falcon's, ChatGLM's, T5's ...).
CONFIG_FIELDS: dict[str, tuple[str, ...]] = {
    "n_layer": ("num_hidden_layers", "n_layer", "num_layers", "n_layers"),
    "n_head": ("num_attention_heads", "n_head", "num_heads"),
    "n_kv_heads": ("num_key_value_heads", "num_kv_heads", "n_head_kv", "multi_query_group_num"),
    "head_dim": ("head_dim", "kv_channels", "d_kv"),
    "hidden": ("hidden_size", "n_embd", "d_model", "dim"),
    "max_context": ("max_position_embeddings", "n_positions", "n_ctx", "max_sequence_length", "seq_length"),
    "d_ff": ("intermediate_size", "n_inner", "ffn_dim", "ffn_hidden_size"),
    "vocab_size": ("vocab_size", "padded_vocab_size"),
    "dtype": ("torch_dtype", "dtype"),
}


def config_field(cfg: Mapping[str, Any], dimension: str) -> tuple[str, Any] | None:
    """(the name, the value) of the first of CONFIG_FIELDS[dimension] the config gives a value (null is no value),
    or None when it gives none."""
    return next(((name, cfg[name]) for name in CONFIG_FIELDS[dimension] if cfg.get(name) is not None), None)
