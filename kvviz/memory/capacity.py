"""KV-cache capacity: what fits on a GPU (longest context, largest batch) and paged vs flat allocation.

Built on the exact byte arithmetic of kvviz.memory: `kv_bytes` is non-decreasing in the context length, so the
longest context that fits is found by binary search, exact to the token.
"""

from __future__ import annotations

from dataclasses import dataclass

from kvviz import i18n
from kvviz.i18n import _, ngettext
from kvviz.memory import LIMITS, KVConfig, MemoryInputError, check_int, kv_bytes, units
from kvviz.memory.dtypes import DTYPES


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


def weight_bytes(n_params: int, dtype: str) -> int:
    """Bytes of n_params weights stored in `dtype` (kvviz.memory.dtypes), rounded up to a whole byte."""
    return -(-n_params * DTYPES[dtype].bits // 8)


def tokens_text(n: int) -> str:
    """ "1 token", "4,096 tokens", in the reader's language."""
    return ngettext("{n:,} token", "{n:,} tokens", n).format(n=n)


@dataclass(frozen=True)
class FitReport:
    """The "What fits" tab, every number and sentence: what_fits for a GPU, the weights and a reserve, said."""

    fit: FitResult
    weight_bytes: int
    no_room: str  # when the weights and the reserve leave nothing for the cache: why, and what would fit ("" else)
    free_line: str  # GPU - weights - reserve = what the cache may use
    longest_label: str
    longest_value: str
    unbounded_note: str  # every layer windowed: the cache stops growing ("" else)
    batch_label: str
    batch_value: str
    over: str  # the batch asked for does not fit at this context: by how much ("" when it fits)
    crossover: str  # the context from which the cache outweighs the weights (crossover_text; "" without weights)
    past_window: str  # memory allows more than the preset's own context window ("" else)


def fit_report(
    config: KVConfig,
    gpu_bytes: int,
    n_params: int,
    weight_dtype: str,
    reserve_mib: int,
    batch: int,
    context_len: int,
    preset: str | None = None,
    preset_max_context: int | None = None,
) -> FitReport:
    """What fits on a GPU of gpu_bytes holding n_params weights in weight_dtype and a reserve, at `batch` sequences of
    context_len tokens; `preset` and its own context window, when the config is a published model's."""
    weights = weight_bytes(n_params, weight_dtype)
    fit = what_fits(config, gpu_bytes, weights, reserve_mib * units.MIB, batch, context_len)
    if fit.free_bytes <= 0:
        gpus = -(-(weights + reserve_mib * units.MIB) // gpu_bytes)
        no_room = _(
            "The weights alone ({weights}) plus the {reserve:,} MiB reserve do not fit in {gpu}: nothing is "
            "left for the cache, so no context and no batch fits. Splitting the weights needs at least "
            "{need:,} such GPUs, or fewer bits per weight."
        ).format(weights=units.format_bytes(weights), reserve=reserve_mib, gpu=units.short_bytes(gpu_bytes), need=gpus)
        return FitReport(fit, weights, no_room, "", "", "", "", "", "", "", "", "")
    need = kv_bytes(config, context_len, batch)
    over = (
        ""
        if need <= fit.free_bytes
        else _(
            "**Does not fit:** batch {batch} at {n:,} tokens needs {need} of cache, {over} more than the {free} left for "
            "it. The largest batch that fits at this context is {max_batch:,}."
        ).format(
            batch=batch,
            n=context_len,
            need=units.format_bytes(need),
            over=units.format_bytes(need - fit.free_bytes),
            free=units.format_bytes(fit.free_bytes),
            max_batch=fit.max_batch,
        )
    )
    past_window = ""
    if preset_max_context is not None and not fit.context_capped and fit.max_context > preset_max_context:
        past_window = _("Memory allows more than {preset}'s context window of {n:,} tokens.").format(
            preset=preset, n=preset_max_context
        )
    return FitReport(
        fit=fit,
        weight_bytes=weights,
        no_room="",
        free_line=_("GPU {gpu} - weights {weights} - reserve {reserve:,} MiB = **{free}** for the cache.").format(
            gpu=units.format_bytes(gpu_bytes),
            weights=units.format_bytes(weights),
            reserve=reserve_mib,
            free=units.format_bytes(fit.free_bytes),
        ),
        longest_label=_("Longest context, batch {batch}").format(batch=batch),
        longest_value=_("unbounded") if fit.context_capped else tokens_text(fit.max_context),
        unbounded_note=_(
            "Unbounded by the cache: every layer is windowed, so only the window is stored and the cache "
            "stops growing; the model's own context limit is what bounds the length."
        )
        if fit.context_capped
        else "",
        batch_label=_("Largest batch at {n:,} tokens").format(n=context_len),
        batch_value=f"{fit.max_batch:,}",
        over=over,
        crossover=crossover_text(config, batch, weights, weight_dtype, n_params, preset, preset_max_context),
        past_window=past_window,
    )


def crossover_text(
    config: KVConfig,
    batch: int,
    weights: int,
    weight_dtype: str,
    n_params: int,
    preset: str | None = None,
    preset_max_context: int | None = None,
) -> str:
    """The context at which the cache outweighs the weights: the first length whose cache at this batch is larger
    than the weights' bytes (integer-exact: max_context's binary search over kv_bytes, plus one); "" without
    weights."""
    if weights <= 0:
        return ""
    fits_under = max_context(config, batch, weights)  # the longest context whose cache <= the weights
    if fits_under >= LIMITS["context_len"]:
        return _(
            "**The cache never outweighs the weights** ({weights}: {params:,} parameters in {dtype}) at batch "
            "{batch} up to {cap:,} tokens."
        ).format(
            weights=units.format_bytes(weights),
            params=n_params,
            dtype=weight_dtype,
            batch=batch,
            cap=LIMITS["context_len"],
        )
    at = fits_under + 1
    text = _(
        "**The cache outweighs the weights from {at:,} tokens** at batch {batch}: there its {cache} pass the "
        "{weights} of {params:,} parameters in {dtype}."
    ).format(
        at=at,
        batch=batch,
        cache=units.format_bytes(kv_bytes(config, at, batch)),
        weights=units.format_bytes(weights),
        params=n_params,
        dtype=weight_dtype,
    )
    if preset_max_context is not None:
        text = i18n.join_sentences(
            [
                text,
                (
                    _(
                        "That is past {preset}'s own context window of {own:,} tokens: at batch {batch} its weights dominate "
                        "every context it can run."
                    )
                    if at > preset_max_context
                    else _("That is within {preset}'s own context window of {own:,} tokens.")
                ).format(preset=preset, own=preset_max_context, batch=batch),
            ]
        )
    return text


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
        raise MemoryInputError(
            _("the pre-allocated length ({max_len:,}) is shorter than the context ({context:,})").format(
                max_len=max_len, context=context_len
            )
        )
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
