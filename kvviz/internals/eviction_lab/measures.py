"""The texts an eviction sweep runs on, and its two measures of what a pruned cache still knows.

Quality: the copy test (held-out spans: prefill the span, prune, feed the span again, top-1 next-token accuracy on
the repeat, the targets kvviz.training.copying.copying_accuracy scores) and the next-token loss of a continuation
after a pruned context. The quantized formats of kvviz.internals.quant are measured the same way at their bytes.

SweepTexts holds the two prefills every point of a sweep starts from (sweep_texts: shared by every policy's line
of one model and text); policy_points measures one policy at every budget.
"""

from __future__ import annotations

import copy
import threading
from collections import OrderedDict

import torch
import torch.nn.functional as F
from transformers import DynamicCache

from kvviz.i18n import _, ngettext
from kvviz.internals.eviction import (
    EVICT_KEEP_PERCENTS,
    EVICT_RAGGED,
    EvictionError,
    EvictSettings,
    check_keep_percent,
    held_out_text,
    rows_for_budget,
)
from kvviz.internals.eviction_lab.cache import cache_nbytes, continue_from, prune
from kvviz.internals.eviction_lab.policies import evict
from kvviz.internals.eviction_lab.scoring import keep_order, keep_rows, prefill
from kvviz.internals.records import EvictionPoint
from kvviz.model.loading import LoadedModel

__all__ = [
    "SweepTexts",
    "sweep_texts",
    "copy_correct",
    "copy_hits",
    "copy_sequences",
    "evenly_spaced_starts",
    "loss_passages",
    "policy_points",
    "text_ids",
    "token_losses",
]


def text_ids(loaded: LoadedModel, text: str | None) -> torch.Tensor:
    text = held_out_text() if text is None else text
    if not isinstance(text, str) or not text.strip():
        raise EvictionError(_("The text is empty: paste a few paragraphs (the default is held-out Shakespeare)."))
    return torch.tensor(loaded.tokenizer(text).input_ids, dtype=torch.long)


def _need(ids: torch.Tensor, tokens: int, what: str) -> None:
    if len(ids) < tokens:
        # The measures' lengths are fixed (the page offers no setting for them): only the text can change.
        raise EvictionError(
            ngettext(
                "The text has {n} token; {what} needs at least {need}: paste a longer text.",
                "The text has {n} tokens; {what} needs at least {need}: paste a longer text.",
                len(ids),
            ).format(n=len(ids), what=what, need=tokens)
        )


def evenly_spaced_starts(n_tokens: int, length: int, n: int) -> list[int]:
    """n start offsets of `length`-token windows, evenly spaced over n_tokens (first at 0, last at the end)."""
    last = n_tokens - length
    return [round(i * last / max(1, n - 1)) for i in range(n)]


def copy_sequences(ids: torch.Tensor, settings: EvictSettings) -> torch.Tensor:
    """(n_spans, 2L): held-out spans at evenly spaced offsets, each followed by itself: the rows
    kvviz.training.copying.held_out_repeats cuts for copying_accuracy (tests/test_eviction.py checks they are
    equal; not imported from there, because kvviz.training sits above the CLI and kvviz.cli imports this module)."""
    _need(ids, settings.half_tokens, _("the copy test"))
    half = settings.half_tokens
    spans = torch.stack([ids[s : s + half] for s in evenly_spaced_starts(len(ids), half, settings.n_spans)])
    return torch.cat([spans, spans], dim=1)


def loss_passages(ids: torch.Tensor, settings: EvictSettings) -> torch.Tensor:
    """(n_passages, context + continuation) at evenly spaced offsets of the text."""
    length = settings.context_tokens + settings.continuation_tokens
    _need(ids, length, _("the loss measure"))
    return torch.stack([ids[s : s + length] for s in evenly_spaced_starts(len(ids), length, settings.n_passages)])


def copy_hits(loaded: LoadedModel, cache: DynamicCache, sequences: torch.Tensor) -> torch.Tensor:
    """[n_spans, L - 1] bool: the top-1 hits on targets L+1..2L-1 when the span is fed again after the (pruned)
    cache of its first copy."""
    half = sequences.shape[1] // 2
    logits = continue_from(loaded, cache, sequences[:, half:], half)  # [batch_size, q_len = half, vocab_size]
    return logits[:, :-1].argmax(-1) == sequences[:, half + 1 :]  # logits[:, t] guesses token half + t + 1


def copy_correct(loaded: LoadedModel, cache: DynamicCache, sequences: torch.Tensor) -> tuple[int, int]:
    """Feed the span again after the (pruned) cache of its first copy; count top-1 hits on targets L+1..2L-1."""
    right = copy_hits(loaded, cache, sequences)
    return int(right.sum()), right.numel()


def token_losses(loaded: LoadedModel, cache: DynamicCache, passages: torch.Tensor, context: int) -> torch.Tensor:
    """[n_passages x (continuation - 1)] float64: the next-token loss (nats) of every prediction of the
    continuation after the (pruned) cache of the context (the continuation's first token is fed, not predicted)."""
    logits = continue_from(loaded, cache, passages[:, context:], context)  # [batch_size, q_len, vocab_size]
    targets = passages[:, context + 1 :]
    return F.cross_entropy(
        logits[:, :-1].reshape(-1, logits.shape[-1]).float(), targets.reshape(-1), reduction="none"
    ).double()


class SweepTexts:
    """The two prefills every point of a sweep starts from (computed once per model, text and settings)."""

    def __init__(self, loaded: LoadedModel, text: str | None, settings: EvictSettings):
        self.settings = settings = settings.checked(loaded.info.n_positions)
        ids = text_ids(loaded, text)
        self.n_tokens = len(ids)
        self.sequences = copy_sequences(ids, settings)
        self.passages = loss_passages(ids, settings)
        half = settings.half_tokens
        self.copy = prefill(loaded, self.sequences[:, :half])
        self.context = prefill(loaded, self.passages[:, : settings.context_tokens])
        self.full_bytes = cache_nbytes(self.copy.cache) // settings.n_spans  # one sequence
        # The full cache's measures: every policy's at 100% too, where it keeps every row (bit for bit the full
        # cache's logits: tests/test_eviction.py checks each policy), so they are measured once, not per policy.
        self.hits_full = copy_hits(
            loaded, prune(self.copy, keep_rows(keep_order("full", self.copy, settings), half)), self.sequences
        )
        self.token_losses_full = token_losses(
            loaded,
            prune(self.context, keep_rows(keep_order("full", self.context, settings), settings.context_tokens)),
            self.passages,
            settings.context_tokens,
        )
        self.loss_full = float(self.token_losses_full.mean())

    def point(
        self,
        policy: str,
        kind: str,
        keep: int,
        rows: int,
        kept_bytes: int,
        hits: torch.Tensor,
        token_losses: torch.Tensor,
        loss_bytes_fraction: float = float("nan"),
    ) -> EvictionPoint:
        """The record of one measured point: counts and means, and the units they come from (each span's hits,
        each passage's loss change against the full cache's)."""
        n = self.passages.shape[0]
        change = (token_losses.reshape(n, -1) - self.token_losses_full.reshape(n, -1)).mean(dim=1)  # [n_passages]
        return EvictionPoint(
            policy,
            kind,
            keep,
            rows,
            self.copy.seq_len,
            kept_bytes,
            self.full_bytes,
            int(hits.sum()),
            hits.numel(),
            float(token_losses.mean()),
            self.loss_full,
            tuple(int(x) for x in hits.reshape(self.sequences.shape[0], -1).sum(dim=1)),
            tuple(float(x) for x in change),
            loss_bytes_fraction,
        )


# The prefills of the last few (model, text, text-shaping settings), by the model object itself (its id could be
# reused by another model once this one is gone): a page measures a sweep one policy's line at a time.
_SHARED_TEXTS: OrderedDict[tuple, SweepTexts] = OrderedDict()
_SHARED_TEXTS_LOCK = threading.Lock()
SHARED_TEXTS_KEPT = 2  # a model's sweep and the other bundled model's


def sweep_texts(loaded: LoadedModel, text: str | None, settings: EvictSettings) -> SweepTexts:
    """The SweepTexts of `settings`. Its prefills and the full cache's losses read the text and the fields that
    shape it (spans, passages, their lengths), never a policy's own (S, SnapKV's window, the seed): they are made
    once per model, text and those fields and shared by every policy's line (measured on this machine, a sweep of
    the bundled model measured line by line took 14.9 s of CPU with a SweepTexts per line, 3.3 s of it the 15
    SweepTexts). A shared Prefill is read-only: every policy prunes a copy."""
    settings = settings.checked(loaded.info.n_positions)
    shaping = settings.for_policy("full")
    key = (loaded.model, text, shaping)
    with _SHARED_TEXTS_LOCK:
        shared = _SHARED_TEXTS.get(key)
        if shared is not None:
            _SHARED_TEXTS.move_to_end(key)
    if shared is None:
        shared = SweepTexts(loaded, text, shaping)  # outside the lock: the model's own lock orders the passes
        with _SHARED_TEXTS_LOCK:
            _SHARED_TEXTS[key] = shared
            while len(_SHARED_TEXTS) > SHARED_TEXTS_KEPT:
                _SHARED_TEXTS.popitem(last=False)
    texts = copy.copy(shared)  # the same prefills, with this line's settings
    texts.settings = settings
    return texts


def policy_points(
    loaded: LoadedModel, texts: SweepTexts, policy: str, keep_percents: tuple[int, ...] = EVICT_KEEP_PERCENTS
) -> list[EvictionPoint]:
    """One policy at every budget (the full cache: once, at 100%)."""
    settings = texts.settings
    ragged = policy in EVICT_RAGGED  # no order: its heads keep different rows (duo_kept, kvzip_kept)
    copy_order = None if ragged else keep_order(policy, texts.copy, settings)
    context_order = None if ragged else keep_order(policy, texts.context, settings)
    points = []
    for keep in (100,) if policy == "full" else tuple(check_keep_percent(k) for k in keep_percents):
        rows = rows_for_budget(keep, texts.copy.seq_len)
        cache = evict(policy, texts.copy, settings, rows, copy_order)
        kept_bytes = cache_nbytes(cache) // settings.n_spans  # counted before the repeat appends its rows
        if ragged:  # the rows per KV head on average, which is what the bytes hold
            rows = cache.rows_per_head()
        context_rows = rows_for_budget(keep, settings.context_tokens)
        context_cache = evict(policy, texts.context, settings, context_rows, context_order)
        loss_share = cache_nbytes(context_cache) / cache_nbytes(texts.context.cache)
        if keep == 100:  # every row kept: the full cache, whose measures texts holds
            hits, losses = texts.hits_full, texts.token_losses_full
        else:
            hits = copy_hits(loaded, cache, texts.sequences)
            losses = token_losses(loaded, context_cache, texts.passages, settings.context_tokens)
        points.append(texts.point(policy, "eviction", keep, rows, kept_bytes, hits, losses, loss_share))
    return points
