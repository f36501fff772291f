"""KV-cache byte arithmetic: exact integer bytes for any attention layout, config import, what-fits solver.

What one layer stores for one token (elements; bytes = elements x dtype bits / 8, plus quantization overhead):

    MHA / GQA / MQA   K and V, one head_dim vector per K/V head:  2 * n_kv_heads * head_dim
                      (MHA: n_kv_heads = n_head; GQA: fewer; MQA: 1)  -- Ainslie et al. 2023, arXiv:2305.13245
    MLA               one compressed latent + one shared RoPE key:   kv_lora_rank + qk_rope_head_dim
                      (DeepSeek-V2/V3 cache c_KV and k_R, not per-head K/V)    -- arXiv:2405.04434, 2412.19437
    sliding window    a local layer keeps only the last `window` tokens (Mistral 7B's rolling buffer,
                      arXiv:2310.06825); hybrids interleave local and global layers (Gemma 3: 5 local : 1 global)

Total bytes = batch x sum over layers of (tokens that layer holds) x (bytes per token in that layer).
Everything is a Python int, exact at any size; limits below refuse absurd inputs with a clear message.

Quantized caches (int8, int4) store, besides the packed integers, an fp16 scale and an fp16 zero point for
every group of `quant_group_size` consecutive numbers of a vector (4 bytes per group), the scheme of
Hugging Face's QuantizedCache (group size 64 by default). fp8 keeps one scale per tensor: no per-token
overhead. 1 KiB = 1024 bytes, 1 MiB = 2**20, 1 GiB = 2**30; 1 GB = 10**9 bytes.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, replace
from typing import Any

KIB, MIB, GIB, TIB = 2**10, 2**20, 2**30, 2**40
GB = 10**9

# Bounds: generous for any real model, small enough to catch typos (an extra zero is fine, six are not).
LIMITS: dict[str, int] = {
    "n_layer": 10_000,
    "n_head": 100_000,
    "n_kv_heads": 100_000,
    "head_dim": 100_000,
    "mla_latent_rank": 1_000_000,
    "mla_rope_dim": 100_000,
    "window": 2**40,
    "context_len": 2**40,  # ~1.1 trillion tokens
    "batch": 2**24,
    "quant_group_size": 2**20,
}


class MemoryInputError(ValueError):
    """An input the calculator cannot use; the message says what to change."""


@dataclass(frozen=True)
class CacheDType:
    name: str
    bits: int  # bits per stored number
    quantized: bool  # True: + an fp16 scale and fp16 zero point per group
    note: str


DTYPES: dict[str, CacheDType] = {
    "fp32": CacheDType("fp32", 32, False, "32-bit float, 4 bytes (what kvviz's GPT-2 runs in on CPU)"),
    "fp16": CacheDType("fp16", 16, False, "16-bit float, 2 bytes"),
    "bf16": CacheDType("bf16", 16, False, "bfloat16, 2 bytes (what most open models ship in)"),
    "fp8": CacheDType("fp8", 8, False, "8-bit float (E4M3), 1 byte; one scale per tensor, no per-token overhead"),
    "int8": CacheDType("int8", 8, True, "8-bit integers + fp16 scale and zero point per group"),
    "int4": CacheDType("int4", 4, True, "4-bit integers packed 2 per byte + fp16 scale and zero point per group"),
}
QUANT_OVERHEAD_BYTES_PER_GROUP = 4  # fp16 scale (2 bytes) + fp16 zero point (2 bytes)
DEFAULT_QUANT_GROUP = 64
DTYPE_ALIASES = {"float32": "fp32", "float16": "fp16", "half": "fp16", "bfloat16": "bf16", "float8": "fp8",
                 "float8_e4m3fn": "fp8", "fp8_e4m3": "fp8", "fp8_e5m2": "fp8"}


def resolve_dtype(name: str) -> CacheDType:
    key = DTYPE_ALIASES.get(str(name).strip().lower(), str(name).strip().lower())
    if key not in DTYPES:
        raise MemoryInputError(f"unknown cache dtype {name!r}; choose one of {', '.join(DTYPES)}")
    return DTYPES[key]


def check_int(name: str, value: Any, lo: int = 1, hi: int | None = None) -> int:
    """A whole number within [lo, hi]; rejects bools, floats (incl. NaN/inf), strings, with a plain message."""
    hi = LIMITS.get(name, 2**62) if hi is None else hi
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float) and math.isfinite(value) and value.is_integer():
            value = int(value)
        else:
            raise MemoryInputError(f"{name} must be a whole number, got {value!r}")
    if not lo <= value <= hi:
        raise MemoryInputError(f"{name} must be between {lo:,} and {hi:,}, got {value:,}")
    return value


def head_dim_from_hidden(hidden_size: int, n_head: int) -> int:
    """head_dim = hidden_size / n_head, refusing a hidden size the heads do not split evenly."""
    check_int("hidden_size", hidden_size, hi=10**7)
    check_int("n_head", n_head)
    if hidden_size % n_head:
        raise MemoryInputError(
            f"hidden size {hidden_size} is not a multiple of {n_head} heads; give head_dim explicitly "
            "(some models, e.g. Gemma, use a head_dim that is not hidden_size / n_head)"
        )
    return hidden_size // n_head


@dataclass(frozen=True)
class KVConfig:
    """The attention layout that decides the cache size. Validated on construction."""

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

    def __post_init__(self) -> None:
        for f in ("n_layer", "n_head", "n_kv_heads", "head_dim"):
            object.__setattr__(self, f, check_int(f, getattr(self, f)))
        object.__setattr__(self, "dtype", resolve_dtype(self.dtype).name)
        if self.n_kv_heads > self.n_head or self.n_head % self.n_kv_heads:
            raise MemoryInputError(
                f"KV heads ({self.n_kv_heads}) must divide query heads ({self.n_head}): in GQA each K/V head "
                "serves an equal group of query heads (MHA: equal; MQA: 1)"
            )
        check_int("mla_latent_rank", self.mla_latent_rank, lo=0)
        check_int("mla_rope_dim", self.mla_rope_dim, lo=0)
        if self.mla_rope_dim and not self.mla_latent_rank:
            raise MemoryInputError("an MLA RoPE dimension needs a latent rank (kv_lora_rank) > 0")
        if self.window is not None:
            check_int("window", self.window)
        if self.local_per_global is not None:
            check_int("local_per_global", self.local_per_global, lo=0, hi=10_000)
            if self.window is None:
                raise MemoryInputError("a local:global layer pattern needs a sliding window size")
        check_int("quant_group_size", self.quant_group_size)

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
            kind += " + sliding window" if self.local_per_global is None else (
                f" + hybrid {self.local_per_global} local : 1 global"
            )
        return kind

    def layer_window(self, layer: int) -> int | None:
        """Tokens layer `layer` (0-based) keeps at most; None = all of them (a global layer).

        The hybrid pattern follows Gemma 2/3: layer i is global when (i + 1) % (N + 1) == 0.
        """
        if self.window is None:
            return None
        if self.local_per_global is None:
            return self.window
        return None if (layer + 1) % (self.local_per_global + 1) == 0 else self.window

    @property
    def n_global_layers(self) -> int:
        """Layers that keep every token: all without a window, none for pure sliding window, else every (N+1)-th."""
        if self.window is None:
            return self.n_layer
        if self.local_per_global is None:
            return 0
        return self.n_layer // (self.local_per_global + 1)

    @property
    def vectors_per_token_per_layer(self) -> tuple[int, int]:
        """(how many vectors, numbers in each) one layer stores per token: 2 * n_kv_heads of head_dim, or one
        MLA latent of kv_lora_rank + rope numbers."""
        if self.is_mla:
            return 1, self.mla_latent_rank + self.mla_rope_dim
        return 2 * self.n_kv_heads, self.head_dim

    @property
    def elements_per_token_per_layer(self) -> int:
        count, length = self.vectors_per_token_per_layer
        return count * length

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


def kv_bytes(config: KVConfig, context_len: int, batch: int = 1) -> int:
    """Exact bytes of the whole KV cache for `batch` sequences of `context_len` tokens."""
    context_len = check_int("context_len", context_len, lo=0)
    batch = check_int("batch", batch)
    n_global = config.n_global_layers
    local_tokens = 0 if config.window is None else min(context_len, config.window)
    token_rows = n_global * context_len + (config.n_layer - n_global) * local_tokens  # O(1), any depth
    return batch * config.bytes_per_token_per_layer * token_rows


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
        c = self.config
        return {
            "name": c.name,
            "attention": c.attention_kind,
            "n_layer": c.n_layer,
            "n_head": c.n_head,
            "n_kv_heads": c.n_kv_heads,
            "head_dim": c.head_dim,
            "mla_latent_rank": c.mla_latent_rank,
            "mla_rope_dim": c.mla_rope_dim,
            "window": c.window,
            "local_per_global": c.local_per_global,
            "dtype": c.dtype,
            "quant_group_size": c.quant_group_size if DTYPES[c.dtype].quantized else None,
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
            f"The sliding window ({config.window:,} tokens) is not smaller than the context ({context_len:,}): "
            "at this length it saves nothing; every layer holds every token."
        )
    per_layer = config.bytes_per_token_per_layer
    tokens = tuple(config.tokens_held(i, context_len) for i in range(config.n_layer))
    layer_bytes = tuple(batch * t * per_layer for t in tokens)
    return KVBudget(
        config, context_len, batch, config.bytes_per_token, per_layer, tokens, layer_bytes, sum(layer_bytes),
        tuple(warnings),
    )


def kv_config_from_info(info: Any) -> KVConfig:
    """The cache layout of a loaded kvviz model (GPT-2, MHA) in the dtype it runs in (fp32 on CPU)."""
    return KVConfig(
        n_layer=info.n_layer, n_head=info.n_head, n_kv_heads=info.n_kv_heads, head_dim=info.head_dim,
        dtype=resolve_dtype(info.dtype).name, name=getattr(info, "label", "loaded model"),
    )


def predicted_cache_bytes(info: Any, seq_len: int, batch: int = 1) -> int:
    """What the loaded GPT-2's DynamicCache should hold after seq_len tokens: 2 * L * H * D * seq_len * 4 (fp32).

    The stepping engine's `cache_bytes` sums the real tensors; the two must agree exactly.
    """
    return kv_bytes(kv_config_from_info(info), seq_len, batch)


# ----- formatting: exact bytes first, then binary and decimal units -----------------------------------------
def format_bytes(n_bytes: int) -> str:
    """e.g. '536,870,912 B = 512 MiB = 0.537 GB' (binary unit picked by size, GB always shown)."""
    for unit, size in (("TiB", TIB), ("GiB", GIB), ("MiB", MIB), ("KiB", KIB)):
        if n_bytes >= size:
            binary = f"{n_bytes / size:,.4g} {unit}"
            break
    else:
        binary = f"{n_bytes} B"
    return f"{n_bytes:,} B = {binary} = {n_bytes / GB:,.4g} GB"


def short_bytes(n_bytes: int) -> str:
    """Compact binary form for metric tiles: '512 MiB'."""
    for unit, size in (("TiB", TIB), ("GiB", GIB), ("MiB", MIB), ("KiB", KIB)):
        if n_bytes >= size:
            return f"{n_bytes / size:,.4g} {unit}"
    return f"{n_bytes:,} B"


# ----- what fits -----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class FitResult:
    free_bytes: int  # GPU memory - weights - reserve (may be negative: nothing fits)
    max_context: int  # longest context at the given batch (0 if not even one token fits)
    max_batch: int  # most sequences at the given context (0 if not one)
    context_capped: bool  # True when max_context hit the search cap (a window makes the cache bounded)


def free_bytes(gpu_bytes: int, weight_bytes: int, reserve_bytes: int) -> int:
    return gpu_bytes - weight_bytes - reserve_bytes


def max_context(config: KVConfig, batch: int, available_bytes: int, cap: int = LIMITS["context_len"]) -> int:
    """Largest context whose cache fits in available_bytes (binary search; kv_bytes is non-decreasing)."""
    if available_bytes < kv_bytes(config, 1, batch):
        return 0
    if kv_bytes(config, cap, batch) <= available_bytes:
        return cap
    lo, hi = 1, cap  # invariant: fits(lo), not fits(hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if kv_bytes(config, mid, batch) <= available_bytes:
            lo = mid
        else:
            hi = mid
    return lo


def max_batch(config: KVConfig, context_len: int, available_bytes: int) -> int:
    per_sequence = kv_bytes(config, context_len, 1)
    if available_bytes <= 0:
        return 0
    return LIMITS["batch"] if per_sequence == 0 else min(available_bytes // per_sequence, LIMITS["batch"])


def what_fits(
    config: KVConfig, gpu_bytes: int, weight_bytes: int, reserve_bytes: int, batch: int, context_len: int
) -> FitResult:
    for name, v in (("GPU memory", gpu_bytes), ("weight bytes", weight_bytes), ("reserve", reserve_bytes)):
        check_int(name, v, lo=0, hi=2**60)
    available = free_bytes(gpu_bytes, weight_bytes, reserve_bytes)
    ctx = max_context(config, batch, available) if available > 0 else 0
    return FitResult(available, ctx, max_batch(config, context_len, available), ctx == LIMITS["context_len"])


# ----- paged (vLLM-style) vs flat pre-allocation ------------------------------------------------------------
@dataclass(frozen=True)
class PagedView:
    block_tokens: int
    blocks_per_sequence: int
    waste_tokens_last_block: int  # per sequence: slots allocated in the last block but not used
    paged_bytes: int  # whole batch, blocks x block_tokens x bytes/token
    flat_bytes: int  # whole batch, every sequence pre-allocated at max_len
    used_bytes: int  # whole batch, exactly context tokens


def paged_view(config: KVConfig, context_len: int, batch: int, block_tokens: int, max_len: int) -> PagedView:
    """Blocks of block_tokens tokens (PagedAttention, Kwon et al. 2023, arXiv:2309.06180) vs a flat buffer of
    max_len per sequence. Global-attention layout assumed (a window would cap both)."""
    check_int("block_tokens", block_tokens, hi=2**20)
    check_int("context_len", context_len)
    check_int("max_len", max_len, hi=LIMITS["context_len"])
    if max_len < context_len:
        raise MemoryInputError(f"the pre-allocated length ({max_len:,}) is shorter than the context ({context_len:,})")
    blocks = -(-context_len // block_tokens)
    full = replace(config, window=None, local_per_global=None)
    return PagedView(
        block_tokens=block_tokens,
        blocks_per_sequence=blocks,
        waste_tokens_last_block=blocks * block_tokens - context_len,
        paged_bytes=kv_bytes(full, blocks * block_tokens, batch),
        flat_bytes=kv_bytes(full, max_len, batch),
        used_bytes=kv_bytes(full, context_len, batch),
    )


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


# ----- textbook figures, checked ----------------------------------------------------------------------------
@dataclass(frozen=True)
class PublishedFigure:
    """A KV-cache size as printed somewhere, and the config it is about."""

    model: str  # a preset name (kvviz.presets)
    context_len: int
    batch: int
    dtype: str
    claimed: float
    claimed_unit: str  # "GB" | "GiB" | "KB" | "MB" (as printed)
    where: str  # the source, with URL
    quote: str


@dataclass(frozen=True)
class FigureCheck:
    figure: PublishedFigure
    actual_bytes: int
    verdict: str  # "correct" | "correct if GB means GiB" | "wrong"
    explanation: str  # the arithmetic


_UNIT_BYTES = {"KB": (KIB, 10**3), "MB": (MIB, 10**6), "GB": (GIB, GB), "GiB": (GIB, GIB), "KiB": (KIB, KIB)}


def check_figure(fig: PublishedFigure, config: KVConfig, tolerance: float = 0.05) -> FigureCheck:
    """Compare a printed figure with the exact bytes, allowing for rounding and for 'GB' meaning GiB."""
    cfg = replace(config, dtype=fig.dtype)
    actual = kv_bytes(cfg, fig.context_len, fig.batch)
    binary, decimal = _UNIT_BYTES[fig.claimed_unit]
    arithmetic = (
        f"{cfg.n_layer} layers x {cfg.bytes_per_token_per_layer:,} B/token/layer "
        f"({cfg.attention_kind}, {cfg.n_kv_heads} KV heads x head_dim {cfg.head_dim}, {cfg.dtype}) "
        f"x {fig.context_len:,} tokens x batch {fig.batch} = {format_bytes(actual)}"
    )
    decimal_error = abs(fig.claimed * decimal - actual) / actual
    binary_error = abs(fig.claimed * binary - actual) / actual
    if min(decimal_error, binary_error) <= tolerance:
        if decimal_error <= binary_error or decimal == binary:
            return FigureCheck(fig, actual, "correct", arithmetic)
        return FigureCheck(fig, actual, f"correct if {fig.claimed_unit} means binary units", arithmetic)
    factor = fig.claimed * binary / actual
    return FigureCheck(fig, actual, "wrong", f"{arithmetic}; the printed figure is {factor:.3g}x that")
