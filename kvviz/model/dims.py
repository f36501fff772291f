"""A model's dimensions: the one torch-free record of them (ModelDims), their conversions, and the axis legend.

Every number that says how big a model is lives in ModelDims, read once from a transformers config (or a published
preset); every record that needs them is built from it here, never from numbers passed along by hand:

    ModelDims.from_config(config)       a transformers config as a dict (config.json: GPT-2's, Llama's or
                                        OLMo-hybrid's names; a hybrid's layer_types and linear-attention sizes)
    ModelDims.from_preset(preset, ...)  a published model (kvviz.memory.presets, which cites its config.json)
    dims.ops_shape(name)                kvviz.ops.ModelShape: the matmul work of a forward pass
    dims.kv_config(dtype, name, ...)    kvviz.memory.KVConfig: the cache's bytes, for the memory calculator
    dims.kv_bytes_per_position(n)       K and V of one position in every layer, n bytes per number
    dims.gpt2_config()                  transformers.GPT2Config's arguments for a GPT-2 of this shape

kvviz.model.loading.ModelInfo is a ModelDims plus what was loaded (spec, label, dtype, parameters), so a loaded
model converts itself the same way (`info.ops_shape()`, `info.kv_config()` in the dtype it runs in). Records of
another concept keep their own class and are built from a ModelDims: the memory calculator's KVConfig (adds the
dtype, windows, MLA), ops' ModelShape (validates what a student types), kvviz.internals.layout.BufferShape (one
layer's K buffer, `BufferShape.of(dims, max_len)`).

Axis legend. Every tensor shape in kvviz's comments and docstrings names its axes with transformers' words (its
cache_utils.py writes `[batch_size, num_heads, seq_len, head_dim]` throughout), in square brackets:

    batch_size     sequences run side by side (the stage runs one: a shape read at batch 0 drops this axis)
    num_layers     decoder layers, when a record stacks them (ModelDims.n_layer)
    num_heads      query heads (n_head)
    num_kv_heads   key/value heads, the cache's head axis (n_kv_heads: num_heads for MHA, fewer for GQA, 1 for MQA)
    seq_len        positions: the keys a query can see, the rows a cache holds
    q_len          tokens one pass feeds: its queries, and the rows it appends to the cache (1 for a decode step)
    max_cache_len  positions a pre-allocated buffer has room for (StaticCache's name)
    head_dim       numbers in one head's query, key or value vector
    hidden_size    the residual stream's width (n_embd)
    vocab_size     one logit per token the model can emit

An uncached pass has q_len = seq_len, so its attention weights are [batch_size, num_heads, seq_len, seq_len].
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from kvviz.memory import KVConfig
from kvviz.memory import layers as cache_layers
from kvviz.memory.config_fields import config_field
from kvviz.memory.layers import CacheLayers
from kvviz.memory.presets import PRESETS, Preset
from kvviz.ops import ModelShape


@dataclass(frozen=True)
class ModelDims:
    """A decoder-only transformer's dimensions, in the numbers a student can check against its tensors."""

    n_layer: int
    n_head: int  # query heads
    n_kv_heads: int  # K/V heads: = n_head for GPT-2's multi-head attention, fewer for GQA (num_key_value_heads)
    head_dim: int
    n_embd: int  # hidden size: the residual stream's width
    d_ff: int  # MLP inner width (GPT-2: n_inner or 4 x n_embd; Llama: intermediate_size)
    vocab_size: int
    n_positions: int  # the context limit: GPT-2 has learned absolute positions 0..n_positions-1
    mlp_matrices: int = 2  # 2: GPT-2's fc -> GELU -> proj; 3: Llama's SwiGLU (gate, up, down)
    model_type: str = "gpt2"  # config.json's model_type: "gpt2", "llama" or "olmo_hybrid"
    # A hybrid's layers in transformers' words ("full_attention", "linear_attention"); () = every layer attention
    layer_types: tuple[str, ...] = ()
    # Gated DeltaNet linear attention (the hybrid's "linear_attention" layers): heads, each with a d_k x d_v state
    linear_heads: int = 0
    linear_key_dim: int = 0  # d_k: numbers in one head's key (and query)
    linear_value_dim: int = 0  # d_v: numbers in one head's value
    conv_kernel: int = 0  # the short causal convolution over q, k, v: the conv state keeps this many columns

    @property
    def attention_layers(self) -> tuple[int, ...]:
        """The layers that keep a K/V cache (every layer unless layer_types says otherwise)."""
        if not self.layer_types:
            return tuple(range(self.n_layer))
        return tuple(i for i, t in enumerate(self.layer_types) if t == "full_attention")

    @property
    def linear_layers(self) -> tuple[int, ...]:
        """The layers that keep a fixed-size state instead (linear attention)."""
        return tuple(i for i, t in enumerate(self.layer_types) if t == "linear_attention")

    @property
    def all_attention(self) -> bool:
        """Every layer is attention with a K/V cache: what the pages that count, move or evict K/V rows need."""
        return len(self.attention_layers) == self.n_layer

    @property
    def conv_channels(self) -> int:
        """Channels of a linear layer's conv state: q, k and v of every head side by side."""
        return self.linear_heads * (2 * self.linear_key_dim + self.linear_value_dim)

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> ModelDims:
        """From a transformers config as a dict (`config.to_dict()`, or config.json read as JSON), each dimension by
        the names kvviz.memory.config_fields.CONFIG_FIELDS lists (GPT-2's n_layer, n_head, n_embd, n_inner,
        n_positions; Llama's num_hidden_layers, num_attention_heads, num_key_value_heads, hidden_size, head_dim,
        intermediate_size, max_position_embeddings). Llama's MLP is gated (3 matrices)."""

        def value(dimension: str) -> Any:
            found = config_field(config, dimension)
            return None if found is None else found[1]

        n_head, n_embd = value("n_head"), value("hidden")
        model_type = config.get("model_type")
        hybrid = model_type == "olmo_hybrid"
        gated = model_type == "llama" or hybrid
        linear = {}
        if hybrid:  # OLMo-hybrid's Gated DeltaNet layers (transformers' OlmoHybridConfig names)
            linear = dict(
                layer_types=tuple(config["layer_types"]),
                linear_heads=config["linear_num_value_heads"],
                linear_key_dim=config["linear_key_head_dim"],
                linear_value_dim=config["linear_value_head_dim"],
                conv_kernel=config["linear_conv_kernel_dim"],
            )
        return cls(
            n_layer=value("n_layer"),
            n_head=n_head,
            n_kv_heads=value("n_kv_heads") or n_head,
            head_dim=value("head_dim") or n_embd // n_head,
            n_embd=n_embd,
            d_ff=value("d_ff") or 4 * n_embd,
            vocab_size=value("vocab_size"),
            n_positions=value("max_context"),
            mlp_matrices=3 if gated else 2,
            model_type=model_type if model_type in ("llama", "olmo_hybrid") else "gpt2",
            **linear,
        )

    @classmethod
    def from_preset(cls, preset: Preset, model_type: str) -> ModelDims:
        """A published dense model's dimensions (its preset has an op-count shape): the context is its own."""
        if preset.shape is None:
            raise ValueError(f"preset {preset.name!r} has no dense shape (MoE or MLA): its dimensions are not known")
        s = preset.shape
        return cls(
            n_layer=s.n_layer,
            n_head=s.n_head,
            n_kv_heads=s.n_kv_heads,
            head_dim=s.head_dim,
            n_embd=s.n_embd,
            d_ff=s.d_ff,
            vocab_size=s.vocab_size,
            n_positions=preset.max_context,
            mlp_matrices=s.mlp_matrices,
            model_type=model_type,
        )

    def ops_shape(self, name: str = "custom") -> ModelShape:
        """The numbers kvviz.ops counts a forward pass's matmul work with."""
        return ModelShape(
            n_layer=self.n_layer,
            n_head=self.n_head,
            n_kv_heads=self.n_kv_heads,
            head_dim=self.head_dim,
            n_embd=self.n_embd,
            d_ff=self.d_ff,
            vocab_size=self.vocab_size,
            mlp_matrices=self.mlp_matrices,
            name=name,
        )

    def kv_config(self, dtype: str, name: str = "custom", **layout: int | None) -> KVConfig:
        """The cache layout the memory calculator sizes, with the cache's number format and, in `layout`, any of
        KVConfig's other fields (window, local_per_global, quant_group_size, ...). Its layers are the ones that keep
        K/V (a hybrid's attention layers; its linear layers' fixed states: linear_state_bytes)."""
        return KVConfig(
            n_layer=len(self.attention_layers),
            n_head=self.n_head,
            n_kv_heads=self.n_kv_heads,
            head_dim=self.head_dim,
            dtype=dtype,
            name=name,
            **layout,
        )  # KVConfig checks each field

    def kv_bytes_per_position(self, bytes_per_element: int) -> int:
        """K and V of one position in every attention layer: 2 x layers x n_kv_heads x head_dim numbers."""
        return 2 * len(self.attention_layers) * self.n_kv_heads * self.head_dim * bytes_per_element

    def cache_layers(self, dtype: str, name: str = "custom") -> CacheLayers:
        """The cache layer by layer, as transformers builds it (kvviz.memory.layers, the one home of every layer
        kind's bytes): attention layers of kv_config's shape, and a hybrid's linear-attention layers with Gated
        DeltaNet's state (the recurrent state in float32, the conv state in `dtype`, as transformers keeps them)."""
        full = KVConfig(
            n_layer=self.n_layer,
            n_head=self.n_head,
            n_kv_heads=self.n_kv_heads,
            head_dim=self.head_dim,
            dtype=dtype,
            name=name,
        )
        if self.all_attention:
            return cache_layers.from_kv_config(full)
        shape = SimpleNamespace(
            linear_num_key_heads=self.linear_heads,
            linear_num_value_heads=self.linear_heads,
            linear_key_head_dim=self.linear_key_dim,
            linear_value_head_dim=self.linear_value_dim,
            linear_conv_kernel_dim=self.conv_kernel,
        )
        mixer, state = cache_layers.STATE_FORMULAS[self.model_type](shape, full.dtype)
        return cache_layers.from_pattern(full, self.layer_types, state, mixer)

    def linear_state_bytes(self, dtype: str = "fp32") -> tuple[int, int]:
        """(recurrent state, conv state) bytes of ONE linear-attention layer, one sequence, whatever the length
        ([linear_heads, d_k, d_v] and [conv_channels, conv_kernel] numbers), from cache_layers."""
        layer = self.cache_layers(dtype).layers[self.linear_layers[0]]
        parts = {p.name: p.bytes_per_row(layer.quant_group_size) for p in layer.parts}
        return parts["recurrent_state"], parts["conv_state"]

    def gpt2_config(self) -> dict[str, int]:
        """transformers.GPT2Config's arguments for a GPT-2 of these dimensions (and kvviz.model.load_cost's input):
        n_inner only when the MLP is not GPT-2's default 4 x n_embd."""
        config = dict(
            n_layer=self.n_layer,
            n_head=self.n_head,
            n_embd=self.n_embd,
            n_positions=self.n_positions,
            vocab_size=self.vocab_size,
        )
        return config if self.d_ff == 4 * self.n_embd else {**config, "n_inner": self.d_ff}


# The public GPT-2 checkpoints, for random-weight builds of their shapes: from kvviz.memory.presets, the one source of
# their numbers (each cites its config.json on the Hugging Face hub). In the presets' order, smallest first.
GPT2_FAMILY: dict[str, ModelDims] = {
    name: ModelDims.from_preset(preset, "gpt2") for name, preset in PRESETS.items() if "gpt2" in name
}
