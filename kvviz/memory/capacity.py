"""KV-cache capacity: what fits on a GPU (longest context, largest batch) and paged vs flat allocation.

Built on the exact byte arithmetic of kvviz.memory: `kv_bytes` is non-decreasing in the context length, so the
longest context that fits is found by binary search, exact to the token.
"""
from __future__ import annotations

from dataclasses import dataclass

from kvviz.i18n import _
from kvviz.memory import LIMITS, KVConfig, MemoryInputError, check_int, kv_bytes


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
        raise MemoryInputError(_("the pre-allocated length ({max_len:,}) is shorter than the context ({context:,})").format(
            max_len=max_len, context=context_len))
    blocks = -(-context_len // block_tokens)
    full = config.all_global()
    return PagedView(
        block_tokens=block_tokens,
        blocks_per_sequence=blocks,
        waste_tokens_last_block=blocks * block_tokens - context_len,
        paged_bytes=kv_bytes(full, blocks * block_tokens, batch),
        flat_bytes=kv_bytes(full, max_len, batch),
        used_bytes=kv_bytes(full, context_len, batch),
    )
