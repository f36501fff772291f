"""What a page and the CLI ask the eviction lab for: the whole sweep (every policy x every budget x both measures,
then the quantized formats), one policy's line and the quantized points (a page caches and shows progress per line),
the sweep record of those lines, and the token grid of what one policy keeps at one budget.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from kvviz.internals.eviction import (
    EVICT_KEEP_PERCENTS,
    EVICT_POLICIES,
    EVICT_QUANT_SCHEMES,
    EVICT_RAGGED,
    EvictSettings,
    check_keep_percent,
    check_policy,
    rows_for_budget,
)
from kvviz.internals.eviction_lab.cache import prune
from kvviz.internals.eviction_lab.measures import copy_sequences, policy_points, sweep_texts, text_ids
from kvviz.internals.eviction_lab.policies import evict, head_ranking
from kvviz.internals.eviction_lab.quantized import quant_points
from kvviz.internals.eviction_lab.scoring import keep_order, kept_rows, prefill
from kvviz.internals.records import EvictionGrid, EvictionPoint, EvictionSweep, HeadRanking, LayerKept
from kvviz.model.loading import LoadedModel
from kvviz.model.tokens import token_text

__all__ = ["DEFAULT_SETTINGS", "Progress", "eviction_grid", "measure_policy", "measure_quantized", "sweep", "sweep_of"]

DEFAULT_SETTINGS = EvictSettings()  # frozen: the one default every call shares
Progress = Callable[[float, str], None]  # progress(fraction done, what is measured next)


def sweep(
    loaded: LoadedModel,
    text: str | None = None,
    settings: EvictSettings = DEFAULT_SETTINGS,
    policies: tuple[str, ...] = EVICT_POLICIES,
    keep_percents: tuple[int, ...] = EVICT_KEEP_PERCENTS,
    schemes: tuple[str, ...] = EVICT_QUANT_SCHEMES,
    progress: Progress | None = None,
) -> EvictionSweep:
    """Every policy x every budget x both measures, then the quantized formats. `progress(fraction, what)` is
    called before each policy (a page's progress bar; a Streamlit rerun stops the run there)."""
    for policy in policies:
        check_policy(policy)
    texts = sweep_texts(loaded, text, settings)
    points: list[EvictionPoint] = []
    steps = len(policies) + (1 if schemes else 0)
    for n, policy in enumerate(policies):
        if progress:
            progress(n / steps, policy)
        points += policy_points(loaded, texts, policy, keep_percents)
    if schemes:
        if progress:
            progress(len(policies) / steps, ", ".join(schemes))
        points += quant_points(loaded, texts, schemes)
    if progress:
        progress(1.0, "")
    return EvictionSweep(
        loaded.info.label,
        texts.settings,
        tuple(points),
        loaded.info.head_dim,
        texts.n_tokens,
        _ranking_of(loaded, points, texts.settings),
    )


def _ranking_of(loaded: LoadedModel, points, settings: EvictSettings) -> HeadRanking | None:
    """The head ranking DuoAttention's points used (cached per model and S), or None when none was measured."""
    if not any(p.policy == "duoattention" for p in points):
        return None
    return head_ranking(loaded, settings.sink_tokens)


def measure_policy(
    loaded: LoadedModel,
    policy: str,
    text: str | None = None,
    settings: EvictSettings = DEFAULT_SETTINGS,
    keep_percents: tuple[int, ...] = EVICT_KEEP_PERCENTS,
) -> tuple[EvictionPoint, ...]:
    """One policy's line of the sweep (a page caches and shows progress per line)."""
    check_policy(policy)
    return tuple(policy_points(loaded, sweep_texts(loaded, text, settings), policy, keep_percents))


def measure_quantized(
    loaded: LoadedModel, text: str | None = None, settings: EvictSettings = DEFAULT_SETTINGS
) -> tuple[EvictionPoint, ...]:
    """The quantized formats' points of the sweep."""
    return tuple(quant_points(loaded, sweep_texts(loaded, text, settings)))


def sweep_of(
    loaded: LoadedModel,
    points: tuple[EvictionPoint, ...],
    text: str | None = None,
    settings: EvictSettings = DEFAULT_SETTINGS,
) -> EvictionSweep:
    """The sweep record of points measured line by line (measure_policy, measure_quantized)."""
    settings = settings.checked(loaded.info.n_positions)
    return EvictionSweep(
        loaded.info.label,
        settings,
        tuple(points),
        loaded.info.head_dim,
        len(text_ids(loaded, text)),
        _ranking_of(loaded, points, settings),
    )


def eviction_grid(
    loaded: LoadedModel,
    policy: str,
    keep_percent: int,
    text: str | None = None,
    settings: EvictSettings = DEFAULT_SETTINGS,
) -> EvictionGrid:
    """Which rows `policy` keeps at `keep_percent`, per layer and KV head, on the first copy-test span."""
    check_policy(policy)
    keep = 100 if policy == "full" else check_keep_percent(keep_percent)
    settings = settings.checked(loaded.info.n_positions)
    ids = text_ids(loaded, text)
    span = copy_sequences(ids, settings)[:1, : settings.half_tokens]  # (1, L)
    pre = prefill(loaded, span)
    rows = rows_for_budget(keep, pre.seq_len)
    if policy in EVICT_RAGGED:
        cache = evict(policy, pre, settings, rows)
        kept = cache.kept  # [layer][kv head] positions
        layer_bytes = cache.layer_nbytes()  # its own tensors
    else:
        order = kept_rows(policy, keep_order(policy, pre, settings), rows)
        kept = [list(idx[0]) for idx in order]
        layer_bytes = [layer.keys.nbytes + layer.values.nbytes for layer in prune(pre, order).layers]
    layers = []
    for i, (full, per_head, kept_bytes) in enumerate(zip(pre.cache.layers, kept, layer_bytes, strict=True)):
        mask = torch.zeros(full.keys.shape[1], pre.seq_len, dtype=torch.bool)
        for h, idx in enumerate(per_head):
            mask[h, idx] = True
        layers.append(
            LayerKept(
                i,
                tuple(tuple(bool(x) for x in row) for row in mask.tolist()),
                int(mask.sum()) // mask.shape[0],
                kept_bytes,
                full.keys.nbytes + full.values.nbytes,
            )
        )
    return EvictionGrid(
        policy, keep, tuple(token_text(loaded.tokenizer, int(t)) for t in span[0]), settings.sink_tokens, tuple(layers)
    )
