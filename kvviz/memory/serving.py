"""How a serving engine (vLLM v1) lays out the same layers, and what fits: where its bytes differ from transformers'.

kvviz.memory.layers counts what transformers' DynamicCache holds. vLLM stores the same layers in fixed-size pages,
and differs in three documented ways (its source files named; the numbers below are computed from the layer list):

    state dtype      the linear-attention / SSM states take the model's dtype by default (`--mamba-ssm-cache-dtype
                     auto`; vllm/model_executor/layers/mamba/mamba_utils.py, MambaStateDtypeCalculator), where
                     transformers' reference kernels keep the recurrent state in float32.
    state pages      each state layer gets one page per sequence, and every page of a hybrid model has one size: the
                     attention block grows until its page holds a state, then the state page is padded up to the
                     attention page (vllm/model_executor/models/config.py,
                     HybridAttentionMambaModelConfig.verify_and_update_config).
    whole blocks     attention rows are held in blocks of `block_size` tokens: a sequence of L tokens takes
                     ceil(L / block_size) blocks per attention layer (vllm/v1/core/kv_cache_utils.py,
                     get_max_concurrency_for_kv_cache_config: num_blocks / blocks per request, the number behind
                     its log line "Maximum concurrency for L tokens per request").

`paged_per_sequence` applies the three, layer by layer; `fits` answers "how many sequences of L tokens fit in M
bytes" both ways. Integer-exact, torch-free.
"""

from __future__ import annotations

from dataclasses import dataclass

from kvviz.i18n import N_, Message
from kvviz.memory import LIMITS, check_int
from kvviz.memory.dtypes import DTYPES
from kvviz.memory.layers import GROWING_KINDS, CacheLayers

VLLM_BLOCK_SIZE = 16  # vLLM's default --block-size for attention layers
KERNEL_BLOCK_ALIGNMENT = 16  # the attention block grows in steps of this many tokens to hold a state page


def _bytes_per_number(dtype: str) -> int:
    return max(1, DTYPES[dtype].bits // 8)


# Models whose vLLM config hook keeps the SSM state in float32 unless told otherwise (vllm/model_executor/models/
# config.py, NemotronHForCausalLMConfig.DEFAULT_MAMBA_SSM_CACHE_DTYPE = "float32")
VLLM_FP32_SSM_STATE = ("nemotron_h",)


def vllm_state_bytes(stack: CacheLayers, model_dtype: str) -> int:
    """One sequence's states as vLLM stores them by default: conv states in the model's dtype, recurrent states too
    except where vLLM's model hook keeps them in float32."""
    conv = _bytes_per_number(model_dtype)
    ssm = 4 if stack.model_type in VLLM_FP32_SSM_STATE else conv
    return sum(
        p.numbers * (ssm if p.name == "recurrent_state" else conv) for x in stack.layers for p in x.parts if not p.grows
    )


def state_model_dtype(stack: CacheLayers) -> str | None:
    """The model's dtype as its layers show it (the conv state's), or None without a state."""
    for x in stack.layers:
        for p in x.parts:
            if p.name == "conv_state":
                return p.dtype
    for x in stack.layers:
        for p in x.parts:
            if not p.grows:
                return p.dtype
    return None


@dataclass(frozen=True)
class PagedLayout:
    """vLLM's page geometry for one model: the attention block (tokens) and one page's bytes per layer."""

    block_tokens: int
    attention_page_bytes: int  # one attention layer's page (block_tokens rows), 0 without attention
    state_page_bytes: int  # one state layer's page, padded to the attention page; 0 without states
    state_padding_bytes: int  # what the padding adds per state layer


def paged_layout(stack: CacheLayers, block_size: int = VLLM_BLOCK_SIZE) -> PagedLayout:
    """The attention block grows (in steps of KERNEL_BLOCK_ALIGNMENT) until one attention page holds the largest state
    layer's page; then state pages are padded up to the attention page (HybridAttentionMambaModelConfig)."""
    block_size = check_int("block_size", block_size, hi=4096)
    attention = stack.attention_layers()
    per_token = max((x.bytes_per_token for x in attention), default=0)
    model = state_model_dtype(stack)
    size = _bytes_per_number(model) if model else 0
    ssm = 4 if stack.model_type in VLLM_FP32_SSM_STATE else size
    state = max(
        (
            sum(p.numbers * (ssm if p.name == "recurrent_state" else size) for p in x.parts if not p.grows)
            for x in stack.layers
        ),
        default=0,
    )
    block = block_size
    if state and per_token and block * per_token < state:
        step = KERNEL_BLOCK_ALIGNMENT * per_token
        block = KERNEL_BLOCK_ALIGNMENT * -(-state // step)
    attention_page = block * per_token
    state_page = max(state, attention_page) if state else 0
    return PagedLayout(block, attention_page, state_page, state_page - state if state else 0)


def paged_per_sequence(stack: CacheLayers, tokens: int, block_size: int = VLLM_BLOCK_SIZE) -> int:
    """One sequence of `tokens` tokens in vLLM's pages: whole blocks per attention layer (a windowed layer needs only
    its window's blocks, plus one), one padded page per state layer."""
    tokens = check_int("context_len", tokens)
    layout = paged_layout(stack, block_size)
    total = 0
    for x in stack.layers:
        if x.kind in GROWING_KINDS and layout.attention_page_bytes:
            rows = tokens if x.window is None else min(tokens, x.window)
            blocks = -(-rows // layout.block_tokens) + (1 if x.window is not None and tokens > x.window else 0)
            total += blocks * layout.block_tokens * x.bytes_per_token
        if x.fixed_bytes:
            total += layout.state_page_bytes or x.fixed_bytes
    return total


@dataclass(frozen=True)
class Fits:
    """How many sequences of `tokens` tokens fit in `memory_bytes`, as transformers holds them and as vLLM pages them."""

    tokens: int
    memory_bytes: int
    transformers_bytes_per_sequence: int
    transformers_sequences: int
    vllm_bytes_per_sequence: int
    vllm_sequences: int
    block_tokens: int


def fits(stack: CacheLayers, memory_bytes: int, tokens: int, block_size: int = VLLM_BLOCK_SIZE) -> Fits:
    memory_bytes = check_int("memory_bytes", memory_bytes, lo=0, hi=2**62)
    tokens = check_int("context_len", tokens)
    per_sequence = stack.bytes_at(tokens, 1) - sum(x.per_layer_bytes(tokens) for x in stack.layers)
    shared = sum(x.per_layer_bytes(tokens) for x in stack.layers)  # once for the whole batch
    transformers_n = 0 if per_sequence <= 0 else max(0, (memory_bytes - shared) // per_sequence)
    paged = paged_per_sequence(stack, tokens, block_size)
    return Fits(
        tokens,
        memory_bytes,
        per_sequence,
        transformers_n,
        paged,
        memory_bytes // paged if paged else 0,
        paged_layout(stack, block_size).block_tokens,
    )


def vllm_notes(stack: CacheLayers) -> list[Message]:
    """Beside a figure with states: what vLLM stores instead, in bytes, with the file that decides it."""
    model = state_model_dtype(stack)
    if model is None or not stack.fixed_bytes:
        return []
    notes = []
    vllm = vllm_state_bytes(stack, model)
    if vllm != stack.fixed_bytes:
        notes.append(
            Message.lazy(
                N_(
                    "vLLM keeps these states in the model's dtype ({dtype}) by default: {vllm:,} B per sequence "
                    "where transformers holds {held:,} B (transformers keeps the recurrent states in float32; "
                    "vllm/model_executor/layers/mamba/mamba_utils.py)."
                ),
                dtype=model,
                vllm=vllm,
                held=stack.fixed_bytes,
            )
        )
    layout = paged_layout(stack)
    if layout.state_padding_bytes:
        notes.append(
            Message.lazy(
                N_(
                    "vLLM pads each state layer's page to the attention page ({page:,} B, a block of {block:,} "
                    "tokens): {pad:,} B more per state layer per sequence "
                    "(vllm/model_executor/models/config.py)."
                ),
                page=layout.state_page_bytes,
                block=layout.block_tokens,
                pad=layout.state_padding_bytes,
            )
        )
    return notes


def longest_context(stack: CacheLayers, batch: int, free_bytes: int) -> int | None:
    """The most tokens per sequence whose cache fits in `free_bytes` at `batch` sequences (exact); None when any
    length fits (no layer grows past its window) and 0 when not even the states fit."""
    top = LIMITS["context_len"]
    if stack.bytes_at(top, batch) <= free_bytes:
        return None
    lo, hi = 0, top  # bytes_at is non-decreasing in tokens: the last length that fits
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if stack.bytes_at(mid, batch) <= free_bytes:
            lo = mid
        else:
            hi = mid - 1
    return lo


def largest_batch(stack: CacheLayers, tokens: int, free_bytes: int) -> int:
    """The most sequences of `tokens` tokens whose cache fits in `free_bytes` (transformers' bytes)."""
    return fits(stack, max(free_bytes, 0), tokens).transformers_sequences
