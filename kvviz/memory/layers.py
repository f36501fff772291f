"""The cache as a list of layers, each counted as transformers builds it (UI-free; torch only inside `from_transformers`).

transformers 5.x builds a model's cache from its config's layer types (`DynamicCache(config=...)`, through
`cache_utils.get_layer_types_and_kwargs` and `DYNAMIC_LAYER_TYPE_MAPPING`): one cache layer per decoder layer. kvviz's
memory model is the same list. Each layer has a kind, and each kind holds some tensors ("parts"), each part either
growing one row per token or fixed in size:

    kind      transformers' layer class            what it holds, per sequence
    full      DynamicLayer                          keys [Hkv, S, Dk] + values [Hkv, S, Dv]: grows with every token
    sliding   DynamicSlidingWindowLayer             the same, at most `sliding_window - 1` rows (Mistral, Gemma 3)
    chunked   DynamicSlidingWindowLayer             the same, at most `attention_chunk_size - 1` rows (Llama 4)
    mla       DynamicLayer                          one latent c_KV [1, S, kv_lora_rank] as keys + one shared RoPE
                                                    key k_R [1, S, qk_rope_head_dim] as values (DeepSeek V2/V3)
    indexed   DynamicIndexedLayer                   MLA + the indexer's keys [S, index_head_dim] (DeepSeek V3.2)
    state     LinearAttentionLayer                  a conv state [C, K] and/or a recurrent state (e.g. [H, Dk, Dv]):
                                                    fixed size, the same after 1 token or 1 million (Gated DeltaNet,
                                                    Mamba-1/2, short conv, lightning attention, KDA, RG-LRU)
    hybrid    LinearAttentionAndFullAttentionLayer  attention K/V that grows + a fixed state, in one layer
                                                    (Falcon-H1; Zamba2's shared-attention layers)
    none      DummyLayer                            nothing: an MLP/MoE block (Nemotron-H) or a layer that reuses an
                                                    earlier layer's K/V (Gemma 3n, Gemma 4: kv sharing)

Two figures per windowed layer, one convention: `bytes_at` is what the cache stores between steps (transformers
keeps `window - 1` rows: the token being added is attended to from its fresh K/V, then stored); `peak_bytes_at`
adds that one row, as it exists during a step (min(tokens, window) rows: kvviz.memory.kv_bytes's figure).

Number formats: K/V parts take the cache dtype (quantized ones with their per-group overhead, as
kvviz.memory.KVConfig counts them); state parts keep the dtype transformers stores them in, which is not always the
model's: the Gated DeltaNet and KDA recurrent states are float32 in a bf16 model (their reference kernels run the
recurrence in float32 and hand back that tensor). Every formula below is checked against transformers' real caches
by tests/test_layer_oracle.py (a tiny instance of each architecture, every tensor summed).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from kvviz.i18n import N_, _
from kvviz.memory import LIMITS, KVConfig, MemoryInputError, check_int, resolve_dtype
from kvviz.memory.dtypes import DEFAULT_QUANT_GROUP, DTYPES, FP8_SCALE_BYTES_PER_LAYER, QUANT_OVERHEAD_BYTES_PER_GROUP

# The kinds, in the order a legend lists them, with the words a page draws (translated when drawn).
KINDS: dict[str, str] = {
    "full": N_("full attention (grows)"),
    "sliding": N_("sliding window (grows to its window)"),
    "chunked": N_("chunked attention (grows to its chunk)"),
    "mla": N_("MLA latent (grows)"),
    "indexed": N_("MLA + indexer keys (grows)"),
    "state": N_("fixed state (linear attention / SSM)"),
    "hybrid": N_("attention + fixed state in one layer"),
    "none": N_("no cache (MLP/MoE block or shared K/V)"),
}
# The same kinds in a word or two, for a chart's legend on a phone (KINDS explains them in the table beside it)
KIND_NAMES: dict[str, str] = {
    "full": N_("full attention"),
    "sliding": N_("sliding window"),
    "chunked": N_("chunked attention"),
    "mla": N_("MLA latent"),
    "indexed": N_("MLA + indexer"),
    "state": N_("fixed state"),
    "hybrid": N_("attention + state"),
    "none": N_("nothing cached"),
}
GROWING_KINDS = ("full", "sliding", "chunked", "mla", "indexed", "hybrid")
WINDOWED_KINDS = ("sliding", "chunked")
# transformers' layer type -> kvviz kind (before MLA and indexers are told apart, which the config decides)
_KIND_OF_CACHE_TYPE = {
    "full_attention": "full",
    "sliding_attention": "sliding",
    "chunked_attention": "chunked",
    "indexed_attention": "indexed",
    "linear_attention": "state",
    "conv": "state",
    "hybrid": "hybrid",
    "hybrid_sliding": "hybrid",
    "dummy": "none",
}
# A growing axis: the part gains one row per token (S in transformers' docstrings).
S = "S"
# DynamicSlidingWindowLayer keeps its window as a tensor too (`_sliding_window_tensor`, one int64 made in __init__):
# 8 bytes per windowed layer, whatever the batch or the length.
WINDOW_TENSOR_BYTES = 8


@dataclass(frozen=True)
class CachePart:
    """One tensor a cache layer keeps for one sequence: its name as transformers calls it, its shape without the batch
    axis (S for the axis that grows one row per token), and the number format it is stored in."""

    name: str  # "keys", "values", "indexer_keys", "conv_state", "recurrent_state"
    shape: tuple[int | str, ...]
    dtype: str  # a kvviz.memory.dtypes name
    quantizable: bool = False  # K/V rows: the cache dtype's packing and per-group overhead apply

    @property
    def grows(self) -> bool:
        return S in self.shape

    @property
    def numbers(self) -> int:
        """Numbers per row (a growing part) or in all (a fixed part)."""
        return math.prod(d for d in self.shape if d != S)

    def bytes_per_row(self, quant_group_size: int) -> int:
        dt = DTYPES[self.dtype]
        length = self.shape[-1] if isinstance(self.shape[-1], int) else 1
        vectors = self.numbers // length
        per_vector = -(-length * dt.bits // 8)  # packed, rounded up to whole bytes per vector
        if dt.quantized:
            per_vector += -(-length // quant_group_size) * QUANT_OVERHEAD_BYTES_PER_GROUP
        return vectors * per_vector


@dataclass(frozen=True)
class CacheLayer:
    """One decoder layer's cache: its kind, what it computes, and the parts it holds (per sequence)."""

    index: int
    kind: str  # a key of KINDS
    layer_type: str  # the config's own word for it: full_attention, linear_attention, mamba, moe ...
    mixer: str  # what the layer computes, a name (not translated): "attention", "Gated DeltaNet", "Mamba-2" ...
    parts: tuple[CachePart, ...]
    window: int | None = None  # sliding window / attention chunk in tokens (windowed kinds)
    quant_group_size: int = DEFAULT_QUANT_GROUP
    quant_residual_tokens: int = 0  # quantized K/V: newest rows held at 16 bits (QuantizedCache residual_length)

    @property
    def max_rows(self) -> int | None:
        """Rows the layer stores at most between steps: window - 1 (transformers), None = every token."""
        return None if self.window is None else self.window - 1

    def rows_held(self, tokens: int) -> int:
        return tokens if self.max_rows is None else min(tokens, self.max_rows)

    @property
    def bytes_per_token(self) -> int:
        """Bytes one more token adds to this layer (inside its window), one sequence."""
        return sum(p.bytes_per_row(self.quant_group_size) for p in self.parts if p.grows)

    @property
    def fixed_bytes(self) -> int:
        """Bytes this layer holds whatever the length (its state), one sequence."""
        return sum(p.bytes_per_row(self.quant_group_size) for p in self.parts if not p.grows)

    def _rows_bytes(self, rows: int) -> int:
        full = self.bytes_per_token
        residual = 0
        if rows and self.quant_residual_tokens and any(DTYPES[p.dtype].quantized for p in self.parts if p.grows):
            residual = min(rows, self.quant_residual_tokens - 1)
            at_16_bits = sum(2 * p.numbers for p in self.parts if p.grows)
            return (rows - residual) * full + residual * at_16_bits
        return rows * full

    def per_layer_bytes(self, tokens: int) -> int:
        """Bytes the layer holds once for the whole batch: fp8 K/V's two float32 scales (keys, values) once it has
        rows, and a windowed layer's window tensor always."""
        fp8 = any(p.dtype == "fp8" and p.quantizable for p in self.parts)
        return (FP8_SCALE_BYTES_PER_LAYER if fp8 and tokens else 0) + (
            WINDOW_TENSOR_BYTES if self.window is not None else 0
        )

    def bytes_at(self, tokens: int, batch: int = 1) -> int:
        """What this layer stores after `tokens` tokens of `batch` sequences (transformers' figure)."""
        held = self.fixed_bytes if tokens else 0  # a state exists once the first token went through
        return batch * (self._rows_bytes(self.rows_held(tokens)) + held) + self.per_layer_bytes(tokens)

    def peak_bytes_at(self, tokens: int, batch: int = 1) -> int:
        """During a step: a windowed layer also holds the newest token's row (min(tokens, window) rows)."""
        if self.window is None:
            return self.bytes_at(tokens, batch)
        held = self.fixed_bytes if tokens else 0
        return batch * (self._rows_bytes(min(tokens, self.window)) + held) + self.per_layer_bytes(tokens)


@dataclass(frozen=True)
class CacheLayers:
    """A model's whole cache, layer by layer: what `DynamicCache(config=...)` builds for it."""

    name: str
    layers: tuple[CacheLayer, ...]
    dtype: str  # the K/V number format
    model_type: str | None = None
    notes: tuple[str, ...] = field(default=())

    @property
    def n_layer(self) -> int:
        return len(self.layers)

    def count(self, kind: str) -> int:
        return sum(layer.kind == kind for layer in self.layers)

    @property
    def kinds(self) -> tuple[str, ...]:
        """The kinds present, in KINDS order."""
        present = {layer.kind for layer in self.layers}
        return tuple(k for k in KINDS if k in present)

    @property
    def uniform(self) -> bool:
        """Every layer of one kind and one shape (the form's layouts): no strip needed to tell them apart."""
        return len({(layer.kind, layer.parts, layer.window) for layer in self.layers}) == 1

    @property
    def bytes_per_token(self) -> int:
        """Bytes one token costs across all layers while it is inside every window (one sequence)."""
        return sum(layer.bytes_per_token for layer in self.layers)

    @property
    def fixed_bytes(self) -> int:
        """The states' bytes, one sequence: the same at any length."""
        return sum(layer.fixed_bytes for layer in self.layers)

    def layer_bytes(self, tokens: int, batch: int = 1) -> tuple[int, ...]:
        tokens, batch = _tokens_batch(tokens, batch)
        return tuple(layer.bytes_at(tokens, batch) for layer in self.layers)

    def bytes_at(self, tokens: int, batch: int = 1) -> int:
        """Every byte the cache stores after `tokens` tokens of `batch` sequences."""
        return sum(self.layer_bytes(tokens, batch))

    def peak_bytes_at(self, tokens: int, batch: int = 1) -> int:
        tokens, batch = _tokens_batch(tokens, batch)
        return sum(layer.peak_bytes_at(tokens, batch) for layer in self.layers)

    def growing_bytes_at(self, tokens: int, batch: int = 1) -> int:
        """The part that grows with the context (K/V rows, indexer keys), fp8 scales included."""
        return self.bytes_at(tokens, batch) - (batch * self.fixed_bytes if tokens else 0)

    def state_dominates_until(self) -> int | None:
        """The first context (tokens) at which the growing K/V reaches the fixed state, or None when it never does
        (no state, no growing layer, or windows that stop the growth below it). One sequence; exact."""
        if not self.fixed_bytes or not self.bytes_per_token:
            return None
        hi = LIMITS["context_len"]
        if self.growing_bytes_at(hi) < self.fixed_bytes:
            return None
        lo = 1  # growing_bytes_at is non-decreasing in tokens: bisect for the first token count that reaches it
        while lo < hi:
            mid = (lo + hi) // 2
            if self.growing_bytes_at(mid) >= self.fixed_bytes:
                hi = mid
            else:
                lo = mid + 1
        return lo

    def attention_layers(self) -> tuple[CacheLayer, ...]:
        return tuple(layer for layer in self.layers if layer.kind in GROWING_KINDS)

    def as_all_attention(self) -> CacheLayers | None:
        """The same model counted as if every layer were a full-attention layer of its attention layers' shape (the
        first one's: what a same-shape all-attention model would keep); None when it has no attention layer."""
        attention = self.attention_layers()
        if not attention:
            return None
        first = attention[0]
        kv = tuple(p for p in first.parts if p.grows)
        kind = "mla" if first.kind in ("mla", "indexed") else "full"
        layers = tuple(
            replace(first, index=i, kind=kind, layer_type="full_attention", mixer="attention", parts=kv, window=None)
            for i in range(self.n_layer)
        )
        return replace(
            self, name=_("{name}, every layer full attention").format(name=self.name), layers=layers, notes=()
        )

    def kind_summary(self) -> tuple[tuple[str, int, int, int], ...]:
        """(kind, layers, bytes per token, fixed bytes) per kind present, one sequence."""
        return tuple(
            (
                k,
                self.count(k),
                sum(x.bytes_per_token for x in self.layers if x.kind == k),
                sum(x.fixed_bytes for x in self.layers if x.kind == k),
            )
            for k in self.kinds
        )

    def as_dict(self, tokens: int, batch: int = 1) -> dict[str, Any]:
        """Plain JSON: every layer's kind, parts, bytes per token and fixed bytes; totals at `tokens` x `batch`."""
        per_layer = self.layer_bytes(tokens, batch)
        return {
            "name": self.name,
            "model_type": self.model_type,
            "dtype": self.dtype,
            "context": tokens,
            "batch": batch,
            "layers": [
                {
                    "layer": x.index,
                    "kind": x.kind,
                    "layer_type": x.layer_type,
                    "mixer": x.mixer,
                    "window": x.window,
                    "rows_held": x.rows_held(tokens) if x.kind in GROWING_KINDS else 0,
                    "bytes_per_token": x.bytes_per_token,
                    "fixed_bytes": x.fixed_bytes,
                    "bytes": held,
                    "parts": [{"name": p.name, "shape": [d for d in p.shape], "dtype": p.dtype} for p in x.parts],
                }
                for x, held in zip(self.layers, per_layer, strict=True)
            ],
            "kinds": {
                k: {"layers": n, "bytes_per_token": per_token, "fixed_bytes": fixed}
                for k, n, per_token, fixed in self.kind_summary()
            },
            "bytes_per_token": self.bytes_per_token,
            "fixed_bytes": self.fixed_bytes,
            "kv_bytes": self.growing_bytes_at(tokens, batch),
            "state_bytes": batch * self.fixed_bytes if tokens else 0,
            "total_bytes": sum(per_layer),
            "peak_bytes": self.peak_bytes_at(tokens, batch),
            "state_dominates_until_tokens": self.state_dominates_until(),
            "notes": list(self.notes),
        }


def _tokens_batch(tokens: int, batch: int) -> tuple[int, int]:
    return check_int("context_len", tokens, lo=0), check_int("batch", batch)


# ----- a uniform layout (the form, the presets of one shape) ---------------------------------------------------
def from_kv_config(config: KVConfig) -> CacheLayers:
    """The layer list of a kvviz.memory.KVConfig: every layer attention of one shape, windows where its pattern puts
    them. Its peak figure is kvviz.memory.kv_bytes's exactly; its stored figure is transformers' (window - 1)."""
    count, length = config.vectors_per_token_per_layer
    if config.is_mla:
        parts = (
            CachePart("keys", (1, S, config.mla_latent_rank), config.dtype, True),
            CachePart("values", (1, S, config.mla_rope_dim), config.dtype, True),
        )
    else:
        half = count // 2
        parts = (
            CachePart("keys", (half, S, length), config.dtype, True),
            CachePart("values", (half, S, length), config.dtype, True),
        )
    layers = []
    for i in range(config.n_layer):
        window = config.layer_window(i)
        kind = ("mla" if config.is_mla else "full") if window is None else "sliding"
        layers.append(
            CacheLayer(
                i,
                kind,
                "full_attention" if window is None else "sliding_attention",
                "attention",
                _mla_split(parts, config) if config.is_mla else parts,
                window,
                config.quant_group_size,
                config.quant_residual_tokens,
            )
        )
    return CacheLayers(config.name, tuple(layers), config.dtype)


def _mla_split(parts: tuple[CachePart, ...], config: KVConfig) -> tuple[CachePart, ...]:
    """MLA with a zero RoPE dim caches the latent alone (no empty values tensor is counted)."""
    return parts if config.mla_rope_dim else parts[:1]


# ----- a pattern stated by hand: "3 linear : 1 full" ---------------------------------------------------------------
PATTERN_WORDS = {
    "full": "full_attention",
    "attention": "full_attention",
    "sliding": "sliding_attention",
    "linear": "linear_attention",
    "state": "linear_attention",
    "none": "dummy",
    "mlp": "dummy",
}


def parse_pattern(text: str, n_layer: int) -> tuple[str, ...]:
    """A repeating layer pattern written by hand, e.g. "3 linear : 1 full" or "linear,linear,linear,full", as one
    layer type per layer (repeated to `n_layer`). Refuses, in one sentence, a word it does not know."""
    text = str(text).strip()[:200]
    if not text:
        raise MemoryInputError(_('the layer pattern is empty: write e.g. "3 linear : 1 full"'))
    period: list[str] = []
    for chunk in text.replace(",", ":").split(":"):
        words = chunk.split()
        if not words:
            continue
        count = 1
        if len(words) == 2 and words[0].isdigit():
            count = check_int("layers", int(words[0]), hi=LIMITS["n_layer"])
            words = words[1:]
        if len(words) != 1 or words[0].lower() not in PATTERN_WORDS:
            raise MemoryInputError(
                _("unknown layer kind {word} in the pattern; use {words}").format(
                    word=repr(" ".join(words)[:40]), words=", ".join(PATTERN_WORDS)
                )
            )
        period += [PATTERN_WORDS[words[0].lower()]] * count
    if not period or len(period) > n_layer:
        raise MemoryInputError(
            _("the layer pattern has {n:,} layers in its period, for a model of {layers:,} layers").format(
                n=len(period), layers=n_layer
            )
        )
    return tuple(period[i % len(period)] for i in range(n_layer))


def from_pattern(
    config: KVConfig, pattern: tuple[str, ...], state: tuple[CachePart, ...], mixer: str = "linear attention"
) -> CacheLayers:
    """A KVConfig's attention layers in the places `pattern` names; its linear layers hold `state` (fixed parts)."""
    if len(pattern) != config.n_layer:
        raise MemoryInputError(
            _("the layer pattern names {n:,} layers; the model has {layers:,}").format(
                n=len(pattern), layers=config.n_layer
            )
        )
    attention = from_kv_config(replace(config, window=None, local_per_global=None, first_windowed_layer=0)).layers[0]
    layers = []
    for i, layer_type in enumerate(pattern):
        if layer_type == "linear_attention":
            layers.append(CacheLayer(i, "state", layer_type, mixer, state))
        elif layer_type == "dummy":
            layers.append(CacheLayer(i, "none", layer_type, "MLP", ()))
        else:
            window = config.window if layer_type == "sliding_attention" else None
            if layer_type == "sliding_attention" and window is None:
                raise MemoryInputError(_("the layer pattern has sliding layers: give the sliding window"))
            layers.append(
                replace(
                    attention,
                    index=i,
                    kind="sliding" if window else attention.kind,
                    layer_type=layer_type,
                    window=window,
                )
            )
    return CacheLayers(config.name, tuple(layers), config.dtype)


# ----- as transformers builds it ---------------------------------------------------------------------------
def _torch_dtype_name(value: Any) -> str | None:
    if value is None:
        return None
    name = str(value).removeprefix("torch.")
    try:
        return resolve_dtype(name).name
    except MemoryInputError:
        return None


def _get(cfg: Any, *names: str, default: Any = None) -> Any:
    for name in names:
        value = getattr(cfg, name, None)
        if value is not None:
            return value
    return default


def _whole(cfg: Any, *names: str) -> int:
    """A shape field the formula needs, as a whole number >= 1; refused in one sentence naming it otherwise."""
    value = _get(cfg, *names)
    if value is None or isinstance(value, bool):
        raise MemoryInputError(
            _("transformers' {cls} has no {field}: kvviz cannot size this layer's state").format(
                cls=type(cfg).__name__, field=names[0]
            )
        )
    return check_int(names[0], int(value) if isinstance(value, float) and value.is_integer() else value, hi=10**7)


# State formulas: (what the layer computes, its fixed parts) from a layer's config, the model dtype and the cache's.
StateFormula = Callable[[Any, str], tuple[str, tuple[CachePart, ...]]]


def _gated_deltanet(c: Any, model: str) -> tuple[str, tuple[CachePart, ...]]:
    """Qwen3-Next, Qwen3.5, OLMo-hybrid: a causal conv over q, k and v (key_dim x 2 + value_dim channels, kernel K),
    and the delta rule's state, one Dk x Dv matrix per value head, kept in float32 (the reference kernel's)."""
    heads_k, dk = _whole(c, "linear_num_key_heads"), _whole(c, "linear_key_head_dim")
    heads_v, dv = _whole(c, "linear_num_value_heads"), _whole(c, "linear_value_head_dim")
    conv = 2 * heads_k * dk + heads_v * dv
    return "Gated DeltaNet", (
        CachePart("conv_state", (conv, _whole(c, "linear_conv_kernel_dim")), model),
        CachePart("recurrent_state", (heads_v, dk, dv), "fp32"),
    )


def _kda(c: Any, model: str) -> tuple[str, tuple[CachePart, ...]]:
    """Kimi Linear's KDA: three causal convs (q, k, v of heads x head_dim channels each), and a float32 Dk x Dv
    state per head (a per-channel decay: the delta rule of Gated DeltaNet)."""
    heads, d = _whole(c, "linear_num_heads"), _whole(c, "linear_head_dim")
    return "KDA", (
        CachePart("conv_state", (3 * heads * d, _whole(c, "linear_conv_kernel_dim")), model),
        CachePart("recurrent_state", (heads, d, d), "fp32"),
    )


def _mamba1(c: Any, model: str) -> tuple[str, tuple[CachePart, ...]]:
    """Jamba's Mamba-1 layers: a causal conv over the expanded channels (expand x hidden, kernel d_conv) and a
    d_state-wide selective-scan state per channel, float32 (the reference scan's)."""
    inner = _whole(c, "mamba_expand") * _whole(c, "hidden_size")
    return "Mamba", (
        CachePart("conv_state", (inner, _whole(c, "mamba_d_conv")), model),
        CachePart("recurrent_state", (inner, _whole(c, "mamba_d_state")), "fp32"),
    )


def _mamba1_plain(c: Any, model: str) -> tuple[str, tuple[CachePart, ...]]:
    """Mamba (and Falcon-Mamba): the same layer as Jamba's, its width named intermediate_size (expand x hidden)."""
    inner = _whole(c, "intermediate_size")
    return "Mamba", (
        CachePart("conv_state", (inner, _whole(c, "conv_kernel")), model),
        CachePart("recurrent_state", (inner, _whole(c, "state_size")), "fp32"),
    )


def _mamba2_parts(
    heads: int, head_dim: int, groups: int, state: int, kernel: int, model: str
) -> tuple[str, tuple[CachePart, ...]]:
    """Mamba-2: a causal conv over x, B and C (heads x head_dim + 2 x groups x d_state channels, kernel K) and one
    head_dim x d_state state per head, float32 (the reference scan accumulates in float32 and caches that)."""
    inner = heads * head_dim
    return "Mamba-2", (
        CachePart("conv_state", (inner + 2 * groups * state, kernel), model),
        CachePart("recurrent_state", (heads, head_dim, state), "fp32"),
    )


def _mamba2(c: Any, model: str) -> tuple[str, tuple[CachePart, ...]]:
    return _mamba2_parts(
        _whole(c, "num_heads"),
        _whole(c, "head_dim"),
        _whole(c, "n_groups"),
        _whole(c, "state_size"),
        _whole(c, "conv_kernel"),
        model,
    )


def _mamba2_expanded(c: Any, model: str) -> tuple[str, tuple[CachePart, ...]]:
    """Bamba, Granite-4.0-H, Zamba2: heads = mamba_n_heads (or expand x hidden / mamba_headdim)."""
    head_dim = _whole(c, "mamba_d_head", "mamba_headdim")
    heads = _get(c, "mamba_n_heads") or _whole(c, "mamba_expand") * _whole(c, "hidden_size") // head_dim
    return _mamba2_parts(
        heads,
        head_dim,
        _whole(c, "mamba_n_groups", "mamba_ngroups"),
        _whole(c, "mamba_d_state"),
        _whole(c, "mamba_d_conv"),
        model,
    )


def _mamba2_falcon_h1(c: Any, model: str) -> tuple[str, tuple[CachePart, ...]]:
    """Falcon-H1: its Mamba-2 width is mamba_d_ssm when given (else expand x hidden)."""
    head_dim = _whole(c, "mamba_d_head")
    inner = _get(c, "mamba_d_ssm") or _whole(c, "mamba_expand") * _whole(c, "hidden_size")
    heads = _get(c, "mamba_n_heads") or inner // head_dim
    return _mamba2_parts(
        heads, head_dim, _whole(c, "mamba_n_groups"), _whole(c, "mamba_d_state"), _whole(c, "mamba_d_conv"), model
    )


def _mamba2_nemotron(c: Any, model: str) -> tuple[str, tuple[CachePart, ...]]:
    return _mamba2_parts(
        _whole(c, "mamba_num_heads"),
        _whole(c, "mamba_head_dim"),
        _whole(c, "n_groups"),
        _whole(c, "ssm_state_size"),
        _whole(c, "conv_kernel"),
        model,
    )


def _short_conv(c: Any, model: str) -> tuple[str, tuple[CachePart, ...]]:
    """LFM2: a gated short convolution over the hidden channels, kernel conv_L_cache; no recurrent state."""
    return "short conv", (CachePart("conv_state", (_whole(c, "hidden_size"), _whole(c, "conv_L_cache")), model),)


def _lightning(c: Any, model: str) -> tuple[str, tuple[CachePart, ...]]:
    """MiniMax's lightning attention: one head_dim x head_dim state per head, no conv."""
    heads = _whole(c, "num_attention_heads")
    d = _get(c, "head_dim") or _whole(c, "hidden_size") // heads
    return "lightning attention", (CachePart("recurrent_state", (heads, d, d), model),)


def _rg_lru(c: Any, model: str) -> tuple[str, tuple[CachePart, ...]]:
    """RecurrentGemma's recurrent blocks: a conv over lru_width channels (kernel conv1d_width - 1 kept) and the
    RG-LRU's one number per channel, kept in float32."""
    width = _get(c, "lru_width") or _whole(c, "hidden_size")
    return "RG-LRU", (
        CachePart("conv_state", (width, _whole(c, "conv1d_width") - 1), model),
        CachePart("recurrent_state", (width,), "fp32"),
    )


STATE_FORMULAS: dict[str, StateFormula] = {
    "qwen3_next": _gated_deltanet,
    "qwen3_5_text": _gated_deltanet,
    "qwen3_5_moe_text": _gated_deltanet,
    "olmo_hybrid": _gated_deltanet,
    "kimi_linear": _kda,
    "jamba": _mamba1,
    "mamba": _mamba1_plain,
    "falcon_mamba": _mamba1_plain,
    "mamba2": _mamba2,
    "bamba": _mamba2_expanded,
    "granitemoehybrid": _mamba2_expanded,
    "zamba2": _mamba2_expanded,
    "falcon_h1": _mamba2_falcon_h1,
    "nemotron_h": _mamba2_nemotron,
    "lfm2": _short_conv,
    "lfm2_moe": _short_conv,
    "minimax": _lightning,
    "recurrent_gemma": _rg_lru,
}


def _attention_parts(c: Any, kind: str, kv_dtype: str, model_type: str | None) -> tuple[CachePart, ...]:
    """K/V rows of one attention layer, read from that layer's config (per_layer_config: Gemma 4's full layers have
    their own head_dim and K/V heads)."""
    rank = _get(c, "kv_lora_rank")
    if rank:  # MLA: transformers caches the latent as keys and the shared RoPE key as values, one "head" each
        rope = _get(c, "qk_rope_head_dim") or 0
        parts = [CachePart("keys", (1, S, _whole(c, "kv_lora_rank")), kv_dtype, True)]
        if rope:
            parts.append(CachePart("values", (1, S, _whole(c, "qk_rope_head_dim")), kv_dtype, True))
        if kind == "indexed":
            parts.append(CachePart("indexer_keys", (S, _whole(c, "index_head_dim")), kv_dtype))
        return tuple(parts)
    heads = _whole(c, "num_attention_heads", "n_head", "num_heads")
    if model_type == "falcon" and _get(c, "new_decoder_architecture"):
        kv_heads = heads  # FalconAttention caches K/V already broadcast to every query head (kvviz.memory.hf_cache)
    elif _get(c, "multi_query"):
        kv_heads = 1
    else:
        kv_heads = _get(c, "num_key_value_heads", "num_kv_heads") or heads
    head_dim = _get(c, "head_dim", "attention_head_dim")
    if not head_dim:
        head_dim = _whole(c, "hidden_size") // heads
    return (
        CachePart("keys", (kv_heads, S, head_dim), kv_dtype, True),
        CachePart("values", (kv_heads, S, head_dim), kv_dtype, True),
    )


class LayerTypesUnreadable(MemoryInputError):
    """transformers' own cache could not list this config's layers (e.g. an assistant model whose every layer reads
    another model's K/V): the config reader says why in its own words."""


def from_transformers(t: Any, kv_dtype: str, name: str, model_type: str | None = None) -> CacheLayers:
    """The cache transformers builds for config `t` (a decoder's text config), layer by layer: the layer types come
    from `cache_utils.get_layer_types_and_kwargs` (what `DynamicCache(config=t)` reads), each layer's shapes from
    its own config (`t.per_layer_config[i]`). kv_dtype: the K/V number format; states take the model's dtype (the
    config's, float32 when it names none) or the one transformers keeps them in.

    Refuses, in one sentence naming the layer: a layer type transformers' cache does not know, a layer count that
    disagrees with the layer types, and a state kvviz has no formula for (never counted as attention)."""
    from transformers.cache_utils import DYNAMIC_LAYER_TYPE_MAPPING, get_layer_types_and_kwargs  # lazy: torch

    model_type = model_type or getattr(t, "model_type", None)
    n_layer = check_int(
        "num_hidden_layers", _whole(t, "num_hidden_layers", "num_layers", "n_layer"), hi=LIMITS["n_layer"]
    )
    declared = getattr(t, "layer_types", None)
    if isinstance(declared, (list, tuple)) and len(declared) != n_layer:
        raise MemoryInputError(
            _("layer_types has {n:,} entries for {layers:,} layers: give one per layer, or remove it").format(
                n=len(declared), layers=n_layer
            )
        )
    try:
        types, kwargs = get_layer_types_and_kwargs(t)
    except (AttributeError, TypeError, ValueError, IndexError, KeyError) as exc:
        raise LayerTypesUnreadable(
            _("transformers cannot read this config's layer types ({error})").format(error=type(exc).__name__)
        ) from None
    types = list(types)
    if len(types) != n_layer:
        raise MemoryInputError(
            _("transformers reads {n:,} layer types for {layers:,} layers").format(n=len(types), layers=n_layer)
        )
    model_dtype = _torch_dtype_name(getattr(t, "dtype", None)) or "fp32"
    layer_configs = t.per_layer_config
    layers = []
    for i, (cache_type, layer_kwargs) in enumerate(zip(types, kwargs, strict=True)):
        own = declared[i] if isinstance(declared, (list, tuple)) else cache_type
        if cache_type not in DYNAMIC_LAYER_TYPE_MAPPING or cache_type not in _KIND_OF_CACHE_TYPE:
            raise MemoryInputError(
                _(
                    "layer {layer} has the layer type {type}, which transformers' cache does not "
                    "know; kvviz never counts an unknown layer as attention"
                ).format(layer=i, type=repr(str(own)[:40]))
            )
        c = layer_configs[i]
        kind = _KIND_OF_CACHE_TYPE[cache_type]
        if kind == "full" and _get(c, "kv_lora_rank"):
            kind = "mla"
        window = (
            layer_kwargs.get("sliding_window") if kind in WINDOWED_KINDS or cache_type == "hybrid_sliding" else None
        )
        if window is not None:
            window = check_int("sliding_window", window, hi=LIMITS["window"])
        parts: tuple[CachePart, ...] = ()
        mixer = "attention"
        if kind in GROWING_KINDS:
            parts = _attention_parts(c, kind, kv_dtype, model_type)
        if kind in ("state", "hybrid"):
            formula = STATE_FORMULAS.get(str(model_type))
            if formula is None:
                raise MemoryInputError(
                    _(
                        "layer {layer} ({type}) keeps a fixed state whose shape kvviz does not know "
                        "for {model_type}; it is not counted as attention"
                    ).format(layer=i, type=repr(str(own)[:40]), model_type=model_type)
                )
            state_mixer, state = formula(c, model_dtype)
            mixer = state_mixer if kind == "state" else f"attention + {state_mixer}"
            parts = parts + state
        elif kind == "none":
            mixer = "MLP / MoE" if own in ("mlp", "moe") else "shared K/V"
        layers.append(CacheLayer(i, kind, str(own), mixer, parts, window))
    return CacheLayers(name, tuple(layers), kv_dtype, model_type)
