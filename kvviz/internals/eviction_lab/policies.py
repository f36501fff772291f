"""The policies whose KV heads keep different rows, and evict, the cache any policy leaves at a budget.

DuoAttention's split needs its heads ranked: head_ranking measures what each KV head does when it alone streams
(the paper learns a gate per head to the same end), retrieval_order ranks them by kvviz.step's induction probe (the
duo_probe variant). KVzip ranks every row of every layer and KV head at once on its re-reading score (kvzip_kept).
The other policies keep a prefix of their keep order (kvviz.internals.eviction_lab.scoring), pruned rectangular.
"""

from __future__ import annotations

import weakref

import torch
import torch.nn.functional as F
from transformers import DynamicCache

from kvviz.i18n import N_
from kvviz.internals.eviction import EVICT_DUO_DRAWS, EVICT_DUO_RECENT, SINK_TOKENS, EvictSettings, duo_split
from kvviz.internals.eviction_lab.cache import HeadSplitCache, continue_from, prune
from kvviz.internals.eviction_lab.scoring import Prefill, keep_order, kept_rows, prefill, row_scores
from kvviz.internals.records import HeadRanking
from kvviz.model.loading import LoadedModel
from kvviz.step.pattern_records import PROBE_HALF_TOKENS, probe_token_ids
from kvviz.step.patterns import probe_induction_scores

__all__ = ["duo_kept", "evict", "head_ranking", "kvzip_kept", "retrieval_order"]


def retrieval_order(loaded: LoadedModel) -> list[tuple[int, int]]:
    """(layer, KV head), the most retrieving first: each KV head scores the best induction score of its query heads
    on kvviz.step's induction probe (seeded random tokens, then the same again: the copy probe of the attention-
    patterns page), computed once per model; ties by layer and head. DuoAttention learns a gate per head on
    synthetic passkey data instead; on these small models the probe names the heads that read far back."""
    info = loaded.info
    group = info.n_head // info.n_kv_heads
    scores = {
        (layer, h): float(s[h * group : (h + 1) * group].max())
        for layer, s in enumerate(probe_induction_scores(loaded))
        for h in range(info.n_kv_heads)
    }
    return sorted(scores, key=lambda lh: (-scores[lh], lh))


# Per shared model object, weakly (as kvviz.step.patterns keeps its probe's): the ranking goes with the model.
_HEAD_RANKINGS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def head_ranking(
    loaded: LoadedModel, sink_tokens: int = SINK_TOKENS.default, draws: int = EVICT_DUO_DRAWS
) -> HeadRanking:
    """DuoAttention's KV heads ranked by what they do, the closest offline stand-in for the paper's learned gates
    (which are trained to keep the full model's outputs while pushing heads to stream): each KV head in turn
    streams alone (keeps the first S rows + the EVICT_DUO_RECENT newest, every other head keeps every row) and its
    effect is the change in the model's output, the mean KL divergence (nats) of the next-token distributions
    from the full cache's. The calibration is the paper's kind of data, synthetic retrieval: each draw is the
    induction probe's seeded random tokens (seed = the draw) prefilled, then fed again after the pruned cache, as
    the copy test feeds its repeat. Computed once per model and S."""
    key = (sink_tokens, draws)
    known = _HEAD_RANKINGS.setdefault(loaded.model, {})
    if key in known:
        return known[key]
    info = loaded.info
    ids = torch.tensor(
        [probe_token_ids(info.vocab_size, PROBE_HALF_TOKENS, seed) for seed in range(draws)], dtype=torch.long
    )  # [draws, 2 x half]
    half = PROBE_HALF_TOKENS
    pre = prefill(loaded, ids[:, :half])
    n_layers, hkv = len(pre.cache.layers), pre.cache.layers[0].keys.shape[1]
    settings = EvictSettings(sink_tokens=sink_tokens)
    stream = min(sink_tokens + EVICT_DUO_RECENT, half)
    streaming = torch.sort(keep_order("streaming", pre, settings)[0][0, 0, :stream]).values
    everything = torch.arange(half)
    full = F.log_softmax(
        continue_from(loaded, HeadSplitCache(pre, [[everything] * hkv] * n_layers), ids[:, half:], half).double(),
        dim=-1,
    )  # [draws, half, vocab]
    heads = [(layer, h) for layer in range(n_layers) for h in range(hkv)]
    columns = []
    for layer, h in heads:
        kept = [[streaming if (i, j) == (layer, h) else everything for j in range(hkv)] for i in range(n_layers)]
        got = F.log_softmax(continue_from(loaded, HeadSplitCache(pre, kept), ids[:, half:], half).double(), dim=-1)
        kl = (full.exp() * (full - got)).sum(-1).mean(-1)  # [draws]: KL(full || streaming head), mean over tokens
        columns.append(kl.tolist())
    effects = tuple(tuple(float(columns[c][d]) for c in range(len(heads))) for d in range(draws))
    known[key] = ranking = HeadRanking(effects, tuple(heads), N_("the induction probe's random tokens, repeated"))
    return ranking


def duo_kept(
    pre: Prefill, rows: int, settings: EvictSettings, order: list[tuple[int, int]] | None = None
) -> list[list[torch.Tensor]]:
    """[layer][kv head] positions DuoAttention keeps at `rows` per head on average (duo_split): all of them for the
    retrieval heads, StreamingLLM's first S + newest rows for the streaming heads. The same for every sequence of
    the batch (the heads are the model's, the positions are positions). `order`: the heads, most retrieving first
    (default: head_ranking's, by what each head does)."""
    n_layers, hkv = len(pre.cache.layers), pre.cache.layers[0].keys.shape[1]
    retrieval, stream = duo_split(n_layers * hkv, pre.seq_len, rows, settings)
    if order is None:
        order = list(head_ranking(pre.loaded, settings.sink_tokens).order)
    heads = set(order[:retrieval])
    streaming = torch.sort(keep_order("streaming", pre, settings)[0][0, 0, :stream]).values
    everything = torch.arange(pre.seq_len)
    return [[everything if (i, h) in heads else streaming for h in range(hkv)] for i in range(n_layers)]


def kvzip_kept(pre: Prefill, rows: int, settings: EvictSettings) -> list[list[list[torch.Tensor]]]:
    """[sequence][layer][kv head] positions KVzip keeps at the bytes of `rows` rows per layer and KV head, ranked
    as the paper allocates: every row of every layer and KV head competes on its re-reading score, and the best
    rows x layers x KV heads of the sequence's cache stay (ties to the earlier layer, head and position)."""
    scores = torch.stack([row_scores("kvzip", pre, i, settings) for i in range(len(pre.cache.layers))], dim=1)
    b, n_layers, hkv, s = scores.shape  # [batch_size, layers, num_kv_heads, seq_len]
    budget = rows * n_layers * hkv
    order = torch.argsort(scores.reshape(b, -1), dim=-1, descending=True, stable=True)[:, :budget]
    out = []
    for i in range(b):
        mask = torch.zeros(n_layers * hkv * s, dtype=torch.bool)
        mask[order[i]] = True
        mask = mask.reshape(n_layers, hkv, s)
        out.append([[torch.nonzero(mask[layer, h]).flatten() for h in range(hkv)] for layer in range(n_layers)])
    return out


def evict(
    policy: str, pre: Prefill, settings: EvictSettings, rows: int, order: list[torch.Tensor] | None = None
) -> DynamicCache | HeadSplitCache:
    """The cache `policy` leaves at `rows` rows per layer and KV head (DuoAttention: on average), to continue from.
    `order`: the policy's keep_order, when already computed (a sweep computes it once for every budget). A ragged
    policy (EVICT_RAGGED) gives a HeadSplitCache."""
    if policy == "duoattention":
        return HeadSplitCache(pre, duo_kept(pre, rows, settings))
    if policy == "duo_probe":
        return HeadSplitCache(pre, duo_kept(pre, rows, settings, retrieval_order(pre.loaded)))
    if policy == "kvzip":
        return HeadSplitCache(pre, per_sequence=kvzip_kept(pre, rows, settings))
    return prune(pre, kept_rows(policy, keep_order(policy, pre, settings) if order is None else order, rows))
