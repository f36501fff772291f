"""Attention patterns as plain records, and the scores that name a head's pattern (numpy only, no torch).

One uncached forward pass over T tokens gives, per layer, every query head's full causal attention matrix
A[h, i, j] (query position i, key position j <= i; each row sums to 1). A cached decode step computes only
the last row of each matrix (the newest query against every cached key); an uncached pass recomputes the
whole triangle. Three patterns are recognised from the numbers alone:

    previous-token score  mean over i >= 1 of A[h, i, i-1]           (the head looks one token back)
    first-token score     mean over i >= 1 of A[h, i, 0]             (the head parks its attention on token 0)
    induction score       mean over positions i whose token occurred before, at j < i - 1 (the latest such
                          j), of A[h, i, j+1]: attention to the token AFTER the previous occurrence, the one
                          to copy next (Olsson et al. 2022). Measured on the sequence shown (NaN when no token
                          repeats) and on a fixed probe: PROBE_HALF_TOKENS seeded random tokens, repeated once.

A head is labelled when its score reaches the threshold below; uniform attention over a 40-token context
would score about 0.03 on each.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kvviz.i18n import N_, _

PREVIOUS_TOKEN_THRESHOLD = 0.5
FIRST_TOKEN_THRESHOLD = 0.5
INDUCTION_THRESHOLD = 0.3
PROBE_HALF_TOKENS = 40  # the induction probe: this many random tokens, then the same tokens again
PROBE_SEED = 0
MAX_PATTERN_TOKENS = 96  # longest sequence drawn: 96 x 96 cells per head still read on a projector


@dataclass(frozen=True)
class LayerPatterns:
    """One layer's attention over one sequence, and the pattern scores of each query head."""

    layer: int
    attention: np.ndarray  # [num_heads, seq_len, seq_len] float32; row i = query i's softmax over keys 0..i (0 above)
    previous_token_score: np.ndarray  # [num_heads]
    first_token_score: np.ndarray  # [num_heads]
    induction_score: np.ndarray  # [num_heads] on this sequence; NaN when no token repeats
    probe_induction_score: np.ndarray  # [num_heads] on the repeated random-token probe

    @property
    def n_head(self) -> int:
        return self.attention.shape[0]


@dataclass(frozen=True)
class PatternRun:
    """Every layer's patterns over one sequence (one uncached forward pass with eager attention)."""

    model_label: str
    token_ids: tuple[int, ...]
    tokens: tuple[str, ...]  # readable text of each token
    n_head: int
    n_kv_heads: int
    layers: tuple[LayerPatterns, ...]

    @property
    def seq_len(self) -> int:
        return len(self.token_ids)


def previous_token_score(attention: np.ndarray) -> np.ndarray:
    """[num_heads, seq_len, seq_len] -> [num_heads]: mean attention on position i-1, over queries i = 1..seq_len-1."""
    if attention.shape[-1] < 2:
        return np.full(attention.shape[0], np.nan)
    return np.diagonal(attention, offset=-1, axis1=1, axis2=2).mean(axis=1)


def first_token_score(attention: np.ndarray) -> np.ndarray:
    """[num_heads, seq_len, seq_len] -> [num_heads]: mean attention on position 0, over queries i = 1..seq_len-1
    (query 0 has no other choice)."""
    if attention.shape[-1] < 2:
        return np.full(attention.shape[0], np.nan)
    return attention[:, 1:, 0].mean(axis=1)


def induction_targets(token_ids: list[int] | tuple[int, ...]) -> list[tuple[int, int]]:
    """(query i, key j+1) for every position i whose token last occurred at some j < i - 1."""
    last_seen: dict[int, int] = {}
    pairs = []
    for i, tok in enumerate(token_ids):
        j = last_seen.get(tok)
        if j is not None and j < i - 1:
            pairs.append((i, j + 1))
        last_seen[tok] = i
    return pairs


def induction_score(attention: np.ndarray, token_ids: list[int] | tuple[int, ...]) -> np.ndarray:
    """[num_heads, seq_len, seq_len] -> [num_heads]: mean attention on the token after the previous occurrence; NaN
    if none."""
    pairs = induction_targets(token_ids)
    if not pairs:
        return np.full(attention.shape[0], np.nan)
    queries, keys = zip(*pairs, strict=True)
    return attention[:, list(queries), list(keys)].mean(axis=1)


def probe_token_ids(vocab_size: int, half_tokens: int = PROBE_HALF_TOKENS, seed: int = PROBE_SEED) -> list[int]:
    """The induction probe: half_tokens distinct seeded random ids (1..vocab_size-1), then the same again."""
    rng = np.random.default_rng(seed)
    half = rng.choice(np.arange(1, vocab_size), size=half_tokens, replace=False).tolist()
    return half + half


def head_labels(layer: LayerPatterns, head: int) -> list[str]:
    """The names of the patterns this head shows (scores at or above their thresholds), in English: stable
    values, translated with `_()` where they are shown."""
    labels = []
    if layer.previous_token_score[head] >= PREVIOUS_TOKEN_THRESHOLD:
        labels.append(N_("previous-token"))
    if layer.first_token_score[head] >= FIRST_TOKEN_THRESHOLD:
        labels.append(N_("first-token"))
    if layer.probe_induction_score[head] >= INDUCTION_THRESHOLD:
        labels.append(N_("induction"))
    return labels


def strongest_induction_head(layer: LayerPatterns) -> int | None:
    """The head that copies most on the sequence shown: among the heads named induction (on the probe), the one with
    the highest induction score on this sequence. None when no head is named induction or no token repeats. On the
    lesson's repeat prompt this is the head the lesson calls the copying head (a layer may hold several induction
    heads: they all copy on the probe, one copies most here)."""
    named = [
        h
        for h in range(layer.n_head)
        if layer.probe_induction_score[h] >= INDUCTION_THRESHOLD and not np.isnan(layer.induction_score[h])
    ]
    return max(named, key=lambda h: float(layer.induction_score[h])) if named else None


def thresholds_text() -> str:
    """The thresholds that name a head, in the current language."""
    return _("previous-token >= {previous}, first-token >= {first}, induction (probe) >= {induction}").format(
        previous=PREVIOUS_TOKEN_THRESHOLD, first=FIRST_TOKEN_THRESHOLD, induction=INDUCTION_THRESHOLD
    )
