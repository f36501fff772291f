"""KV-cache byte arithmetic: exact integer bytes for any attention layout, and the one byte formatter.

What fits on a GPU and paged allocation live in kvviz.memory.capacity; config.json import in kvviz.memory.config_import.

What one layer stores for one token (elements; bytes = elements x dtype bits / 8, plus quantization overhead):

    MHA / GQA / MQA   K and V, one head_dim vector per K/V head:  2 * n_kv_heads * head_dim
                      (MHA: n_kv_heads = n_head; GQA: fewer; MQA: 1)  -- Ainslie et al. 2023, arXiv:2305.13245
    MLA               one compressed latent + one shared RoPE key:   kv_lora_rank + qk_rope_head_dim
                      (DeepSeek-V2/V3 cache c_KV and k_R, not per-head K/V)    -- arXiv:2405.04434, 2412.19437
    sliding window    a local layer keeps only the last `window` tokens (Mistral 7B's rolling buffer,
                      arXiv:2310.06825); hybrids interleave local and global layers (Gemma 3: 5 local : 1 global)

Total bytes = batch x sum over layers of (tokens that layer holds) x (bytes per token in that layer).
Everything is a Python int, exact at any size; limits below refuse absurd inputs with a clear message.

Cache number formats (fp32 ... int4, quantization overhead, QuantizedCache's residual window, fp8 scales) are
described in kvviz.memory.dtypes. Byte units and the one formatter (format_bytes, short_bytes) live in kvviz.memory.units.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from kvviz.i18n import N_, _
from kvviz.inputs.prompt_rules import IntSetting
from kvviz.inputs.query_values import WholeNumberRefused, bounded_int
from kvviz.memory.dtypes import (
    DEFAULT_QUANT_GROUP,
    DTYPE_ALIASES,
    DTYPES,
    FP8_SCALE_BYTES_PER_LAYER,
    QUANT_OVERHEAD_BYTES_PER_GROUP,
    CacheDType,
)
from kvviz.memory.units import GB, GIB

# Bounds: generous for any real model, small enough to catch typos (an extra zero is fine, six are not). One home
# for the memory page's boxes, `kvviz memory`'s options and this module's checks: each input's lowest and highest
# value; a default only where the page has one of its own (the layout's numbers start at the chosen preset's).
INPUTS: dict[str, IntSetting] = {
    "n_layer": IntSetting(N_("layers"), 1, 10_000, default=32),
    "hidden_size": IntSetting(N_("hidden size"), 0, 10**7, default=0),  # the page's 0: give the head dim instead
    "n_head": IntSetting(N_("query heads"), 1, 100_000, default=32),
    "n_kv_heads": IntSetting(N_("KV heads"), 1, 100_000, default=8),
    "head_dim": IntSetting(N_("head dim"), 1, 100_000, default=128),
    "mla_latent_rank": IntSetting(N_("MLA latent rank"), 0, 1_000_000, default=0),
    "mla_rope_dim": IntSetting(N_("MLA RoPE key dim"), 0, 100_000, default=0),
    "window": IntSetting(N_("sliding window"), 0, 2**40, default=0),
    "local_per_global": IntSetting(N_("local layers per global"), 0, 10_000, default=0),
    "first_windowed_layer": IntSetting(N_("full layers below the window"), 0, 10_000, default=0),
    "context_len": IntSetting(N_("context length (tokens)"), 1, 2**40, default=4096),  # ~1.1 trillion tokens
    "encoder_len": IntSetting(N_("encoder length (tokens)"), 1, 2**40, default=512),
    "batch": IntSetting(N_("batch (sequences)"), 1, 2**24, default=1),
    "quant_group_size": IntSetting(N_("quantization group size"), 1, 2**20, default=32),
    "quant_residual_tokens": IntSetting(N_("full-precision residual (tokens)"), 0, 2**20, default=0),
    "n_params": IntSetting(N_("model parameters"), 0, 10**14, default=0),
    "reserve_mib": IntSetting(N_("reserve (MiB)"), 0, 10**9, default=2048),
    "gpu_gib": IntSetting(N_("custom memory (GiB)"), 1, 1_000_000, default=80),
    "block_size": IntSetting(N_("block size (tokens)"), 1, 4096, default=16),
    "max_len": IntSetting(N_("flat buffer length (tokens)"), 1, 2**40, default=4096),
}
# The highest value of each library input (check_int's default bound; readers that need only the top)
LIMITS: dict[str, int] = {
    name: INPUTS[name].hi
    for name in (
        "n_layer",
        "n_head",
        "n_kv_heads",
        "head_dim",
        "mla_latent_rank",
        "mla_rope_dim",
        "window",
        "context_len",
        "batch",
        "quant_group_size",
        "quant_residual_tokens",
    )
}


class MemoryInputError(ValueError):
    """An input the calculator cannot use; the message says what to change."""


def short_repr(value: Any, limit: int = 40) -> str:
    """The refused value as a message quotes it: ints with separators, anything else repr'd, never more than
    `limit` characters (a megabyte string or a 5,000-digit number is summarised, not echoed)."""
    if isinstance(value, int) and not isinstance(value, bool):
        if value.bit_length() > 96:  # str() of a >4,300-digit int raises; nobody reads 30 digits anyway
            return _("a number of about {n:,} digits").format(n=int(value.bit_length() * 0.30103) + 1)
        text = f"{value:,}"
    else:
        text = repr(value)
    if len(text) <= limit:
        return text
    suffix = _("… ({n:,} characters)").format(n=len(text))
    return text[: max(limit - len(suffix), 8)] + suffix


def resolve_dtype(name: str) -> CacheDType:
    key = DTYPE_ALIASES.get(str(name).strip().lower()[:40], str(name).strip().lower()[:40])
    if key not in DTYPES:
        raise MemoryInputError(
            _("unknown cache dtype {value}; choose one of {choices}").format(
                value=short_repr(name), choices=", ".join(DTYPES)
            )
        )
    return DTYPES[key]


def check_int(name: str, value: Any, lo: int = 1, hi: int | None = None) -> int:
    """A whole number within [lo, hi]; rejects bools, floats (incl. NaN/inf), strings, with a plain message."""
    hi = LIMITS.get(name, 2**62) if hi is None else hi
    try:
        return bounded_int(value, lo, hi, text=False, whole_floats=True)  # the one reader (kvviz.inputs)
    except WholeNumberRefused as refused:
        if refused.kind != "out_of_range":
            raise MemoryInputError(
                _("{name} must be a whole number, got {value}").format(name=name, value=short_repr(value))
            ) from None
        raise MemoryInputError(
            _("{name} must be between {lo:,} and {hi:,}, got {value}").format(
                name=name, lo=lo, hi=hi, value=short_repr(int(value))
            )
        ) from None


def head_dim_from_hidden(hidden_size: int, n_head: int) -> int:
    """head_dim = hidden_size / n_head, refusing a hidden size the heads do not split evenly."""
    check_int("hidden_size", hidden_size, hi=10**7)
    check_int("n_head", n_head)
    if hidden_size % n_head:
        raise MemoryInputError(
            _(
                "hidden size {hidden} is not a multiple of {heads} heads; give head_dim explicitly "
                "(some models, e.g. Gemma, use a head_dim that is not hidden_size / n_head)"
            ).format(hidden=hidden_size, heads=n_head)
        )
    return hidden_size // n_head


@dataclass(frozen=True)
class KVConfig:
    """The attention layout that decides the cache size. Validated on construction. A loaded model's comes from its
    dimensions: ModelDims.kv_config(dtype) (kvviz.model.dims)."""

    n_layer: int
    n_head: int  # query heads (do not change the cache size; checked against n_kv_heads)
    n_kv_heads: int
    head_dim: int
    dtype: str = "fp16"
    mla_latent_rank: int = 0  # > 0 means MLA: cache kv_lora_rank + rope numbers per token per layer
    mla_rope_dim: int = 0
    window: int | None = None  # sliding window in tokens for local layers; None = every layer global
    local_per_global: int | None = None  # hybrid: N local layers then 1 global, repeating; None = all local
    quant_group_size: int = DEFAULT_QUANT_GROUP
    name: str = "custom"
    quant_residual_tokens: int = 0  # quantized dtypes: transformers' residual_length (0 = no full-precision window)
    first_windowed_layer: int = 0  # Qwen2 `max_window_layers`: layers below this index are global

    def __post_init__(self) -> None:
        for f in ("n_layer", "n_head", "n_kv_heads", "head_dim"):
            object.__setattr__(self, f, check_int(f, getattr(self, f)))
        object.__setattr__(self, "dtype", resolve_dtype(self.dtype).name)
        if self.n_kv_heads > self.n_head or self.n_head % self.n_kv_heads:
            raise MemoryInputError(
                _(
                    "KV heads ({kv}) must divide query heads ({heads}): in GQA each K/V head "
                    "serves an equal group of query heads (MHA: equal; MQA: 1)"
                ).format(kv=self.n_kv_heads, heads=self.n_head)
            )
        check_int("mla_latent_rank", self.mla_latent_rank, lo=0)
        check_int("mla_rope_dim", self.mla_rope_dim, lo=0)
        if self.mla_rope_dim and not self.mla_latent_rank:
            raise MemoryInputError(_("an MLA RoPE dimension needs a latent rank (kv_lora_rank) > 0"))
        if self.window is not None:
            check_int("window", self.window)
        if self.local_per_global is not None:
            check_int("local_per_global", self.local_per_global, lo=0, hi=10_000)
            if self.window is None:
                raise MemoryInputError(_("a local:global layer pattern needs a sliding window size"))
        check_int("first_windowed_layer", self.first_windowed_layer, lo=0, hi=LIMITS["n_layer"])
        if self.first_windowed_layer and (self.window is None or self.local_per_global is not None):
            raise MemoryInputError(_("first_windowed_layer needs a sliding window on every layer from that index on"))
        check_int("quant_group_size", self.quant_group_size)
        check_int("quant_residual_tokens", self.quant_residual_tokens, lo=0)

    @property
    def is_mla(self) -> bool:
        return self.mla_latent_rank > 0

    @property
    def attention_kind(self) -> str:
        if self.is_mla:
            kind = "MLA"
        elif self.n_kv_heads == self.n_head:
            kind = "MHA"
        elif self.n_kv_heads == 1:
            kind = "MQA"
        else:
            kind = "GQA"
        if self.window is not None:
            kind += (
                (
                    _(" + sliding window from layer {layer}").format(layer=self.first_windowed_layer)
                    if self.first_windowed_layer
                    else _(" + sliding window")
                )
                if self.local_per_global is None
                else (_(" + hybrid {n} local : 1 global").format(n=self.local_per_global))
            )
        return kind

    def layer_window(self, layer: int) -> int | None:
        """Tokens layer `layer` (0-based) keeps at most; None = all of them (a global layer).

        The hybrid pattern follows Gemma 2/3: layer i is global when (i + 1) % (N + 1) == 0.
        """
        if self.window is None:
            return None
        if self.local_per_global is None:
            return None if layer < self.first_windowed_layer else self.window
        return None if (layer + 1) % (self.local_per_global + 1) == 0 else self.window

    def all_global(self) -> KVConfig:
        """The same model with every layer global (no sliding window, no local:global pattern, no Qwen2-style
        first windowed layer): what the cache would hold without windows."""
        return replace(self, window=None, local_per_global=None, first_windowed_layer=0)

    def with_mha(self) -> KVConfig:
        """The same cache with MHA: one K/V head per query head (what forgetting GQA or MQA would cost)."""
        return replace(self, n_kv_heads=self.n_head)

    def cross_attention_layout(self) -> KVConfig:
        """An encoder-decoder's cross-attention cache beside this self-attention one: each decoder layer keeps K and
        V of every encoder token, in the same layout and number format, with no window (every encoder token stays)."""
        return replace(self.all_global(), name=f"{self.name} cross-attention")

    @property
    def n_global_layers(self) -> int:
        """Layers that keep every token: all without a window, none for pure sliding window, else every (N+1)-th."""
        if self.window is None:
            return self.n_layer
        if self.local_per_global is None:
            return min(self.first_windowed_layer, self.n_layer)
        return self.n_layer // (self.local_per_global + 1)

    @property
    def vectors_per_token_per_layer(self) -> tuple[int, int]:
        """(how many vectors, numbers in each) one layer stores per token: 2 * n_kv_heads of head_dim, or one
        MLA latent of kv_lora_rank + rope numbers."""
        if self.is_mla:
            return 1, self.mla_latent_rank + self.mla_rope_dim
        return 2 * self.n_kv_heads, self.head_dim

    @property
    def bytes_per_token_per_layer(self) -> int:
        """Exact bytes one layer stores for one token, quantization overhead included."""
        dt = DTYPES[self.dtype]
        count, length = self.vectors_per_token_per_layer
        per_vector = -(-length * dt.bits // 8)  # packed, rounded up to whole bytes per vector
        if dt.quantized:
            per_vector += -(-length // self.quant_group_size) * QUANT_OVERHEAD_BYTES_PER_GROUP
        return count * per_vector

    @property
    def bytes_per_token(self) -> int:
        """Bytes one token costs across all layers while it is inside every window (the headline number)."""
        return self.n_layer * self.bytes_per_token_per_layer

    def tokens_held(self, layer: int, context_len: int) -> int:
        w = self.layer_window(layer)
        return context_len if w is None else min(context_len, w)

    def residual_tokens(self, tokens: int) -> int:
        """Rows a quantized layer holding `tokens` keeps in full precision at peak (0 unless quantized)."""
        if not DTYPES[self.dtype].quantized or self.quant_residual_tokens == 0:
            return 0
        return min(tokens, self.quant_residual_tokens - 1)

    def layer_bytes_for(self, tokens: int) -> int:
        """Exact bytes one layer holds for `tokens` tokens of one sequence (residual window included)."""
        residual = self.residual_tokens(tokens)
        full_precision = self.vectors_per_token_per_layer[0] * self.vectors_per_token_per_layer[1] * 2  # 16-bit
        return (tokens - residual) * self.bytes_per_token_per_layer + residual * full_precision


def kv_bytes(config: KVConfig, context_len: int, batch: int = 1) -> int:
    """Exact bytes of the whole KV cache for `batch` sequences of `context_len` tokens."""
    context_len = check_int("context_len", context_len, lo=0)
    batch = check_int("batch", batch)
    n_global = config.n_global_layers
    local_tokens = 0 if config.window is None else min(context_len, config.window)
    per_sequence = n_global * config.layer_bytes_for(context_len)  # O(1), any depth
    if config.n_layer > n_global:
        per_sequence += (config.n_layer - n_global) * config.layer_bytes_for(local_tokens)
    return batch * per_sequence + fp8_scale_bytes(config, context_len)


def mha_cost(config: KVConfig, context_len: int, batch: int = 1) -> tuple[int, float]:
    """What forgetting GQA or MQA costs: (the bytes the same cache holds with full MHA, one K/V head per query head;
    how many times this cache's own bytes that is). The stage's GQA line and the memory page's textbook note say it."""
    mha = kv_bytes(config.with_mha(), context_len, batch)
    return mha, mha / max(kv_bytes(config, context_len, batch), 1)


def fp8_scale_bytes(config: KVConfig, context_len: int) -> int:
    """fp8: the per-layer float32 scales of keys and values (one pair per layer for the whole batch)."""
    return config.n_layer * FP8_SCALE_BYTES_PER_LAYER if config.dtype == "fp8" and context_len else 0


@dataclass(frozen=True)
class KVBudget:
    """The cache of one config at one length and batch, per layer and in total (bytes, exact)."""

    config: KVConfig
    context_len: int
    batch: int
    bytes_per_token: int  # all layers, a token inside every window
    bytes_per_token_per_layer: int
    layer_tokens: tuple[int, ...]  # tokens each layer holds (per sequence)
    layer_bytes: tuple[int, ...]  # bytes each layer holds, whole batch
    total_bytes: int
    warnings: tuple[str, ...] = field(default=())

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON: the layout, the inputs, exact bytes (and GiB / GB for reading)."""
        c = self.config
        quantized = DTYPES[c.dtype].quantized
        layout = (
            "n_layer",
            "n_head",
            "n_kv_heads",
            "head_dim",
            "mla_latent_rank",
            "mla_rope_dim",
            "window",
            "local_per_global",
            "dtype",
        )
        return {
            "name": c.name,
            "attention": c.attention_kind,
            **{f: getattr(c, f) for f in layout},
            "quant_group_size": c.quant_group_size if quantized else None,
            "quant_residual_tokens": c.quant_residual_tokens if quantized else None,
            "context": self.context_len,
            "batch": self.batch,
            "bytes_per_token": self.bytes_per_token,
            "bytes_per_token_per_layer": self.bytes_per_token_per_layer,
            "layer_bytes": list(self.layer_bytes),
            "total_bytes": self.total_bytes,
            "total_GiB": self.total_bytes / GIB,
            "total_GB": self.total_bytes / GB,
            "warnings": list(self.warnings),
        }


def budget(config: KVConfig, context_len: int, batch: int = 1) -> KVBudget:
    context_len = check_int("context_len", context_len, lo=0)
    batch = check_int("batch", batch)
    warnings = []
    if config.window is not None and config.window >= context_len:
        warnings.append(
            _(
                "The sliding window ({window:,} tokens) is not smaller than the context ({context:,}): "
                "at this length it saves nothing; every layer holds every token."
            ).format(window=config.window, context=context_len)
        )
    per_layer = config.bytes_per_token_per_layer
    tokens = tuple(config.tokens_held(i, context_len) for i in range(config.n_layer))
    scales = FP8_SCALE_BYTES_PER_LAYER if config.dtype == "fp8" and context_len else 0
    layer_bytes = tuple(batch * config.layer_bytes_for(t) + scales for t in tokens)
    return KVBudget(
        config,
        context_len,
        batch,
        config.bytes_per_token,
        per_layer,
        tokens,
        layer_bytes,
        sum(layer_bytes),
        tuple(warnings),
    )


@dataclass(frozen=True)
class EncoderDecoderBudget:
    """An encoder-decoder model's whole cache, as transformers' EncoderDecoderCache holds it (T5, BART):

        self-attention   the decoder's own tokens (context_len per sequence), grows one row per generated token
        cross-attention  K and V of every encoder token in every decoder layer (encoder_len per sequence),
                         computed once from the encoder output and then reused unchanged

    encoder_len None: the encoder length is unknown, so `total_bytes` is the decoder's self-attention only and
    `complete` is False (the result says so itself: `total_covers`)."""

    self_attention: KVBudget
    cross_attention: KVBudget | None  # None when encoder_len is None
    cross_bytes_per_encoder_token: int  # all decoder layers, one sequence
    encoder_len: int | None

    @property
    def complete(self) -> bool:
        return self.cross_attention is not None

    @property
    def cross_bytes(self) -> int | None:
        return None if self.cross_attention is None else self.cross_attention.total_bytes

    @property
    def total_bytes(self) -> int:
        return self.self_attention.total_bytes + (self.cross_bytes or 0)

    @property
    def total_covers(self) -> str:
        if self.complete:
            return _("decoder self-attention + cross-attention (the whole EncoderDecoderCache)")
        return _(
            "decoder self-attention only: the encoder length is not given, so the cross-attention cache is not counted"
        )

    def as_dict(self) -> dict[str, Any]:
        """The self-attention budget's fields, then both parts and their sum (total_bytes = self + cross)."""
        return {
            **self.self_attention.as_dict(),
            "encoder_len": self.encoder_len,
            "self_attention_bytes": self.self_attention.total_bytes,
            "cross_attention_bytes": self.cross_bytes,
            "cross_attention_bytes_per_encoder_token": self.cross_bytes_per_encoder_token,
            "total_bytes": self.total_bytes,
            "total_GiB": self.total_bytes / GIB,
            "total_GB": self.total_bytes / GB,
            "total_covers": self.total_covers,
        }


def encoder_decoder_budget(
    config: KVConfig, cross: KVConfig, context_len: int, batch: int = 1, encoder_len: int | None = None
) -> EncoderDecoderBudget:
    """Self-attention at `context_len` decoder tokens plus cross-attention at `encoder_len` encoder tokens."""
    self_part = budget(config, context_len, batch)
    cross_part = (
        None
        if encoder_len is None
        else budget(cross, check_int("encoder_len", encoder_len, hi=LIMITS["context_len"]), batch)
    )
    return EncoderDecoderBudget(self_part, cross_part, cross.bytes_per_token, encoder_len)


class DescribesItsCache(Protocol):
    """A loaded model's description (kvviz.model.loading.ModelInfo): it converts its own dimensions to the cache
    layout (kvviz.model.dims). Named here because memory never imports model: the calculator takes any config."""

    def kv_config(self) -> KVConfig: ...


def predicted_cache_bytes(info: DescribesItsCache, seq_len: int, batch: int = 1) -> int:
    """What the loaded model's DynamicCache should hold after seq_len tokens: 2 * L * Hkv * D * seq_len * 4 (fp32).

    The stepping engine's `cache_bytes` sums the real tensors; the two must agree exactly.
    """
    return kv_bytes(info.kv_config(), seq_len, batch)
