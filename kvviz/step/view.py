"""What the step-through stage shows, built once per rerun from the StepRecords alone (torch-free, UI-free).

`build_snapshot` turns the records of a session into one frozen StageSnapshot: the token strip, the chosen
head's K and V cache rows, the newest query's attention over those same rows, the next-token candidates and
the work counters (the token strip is drawn by kvviz.step.strip, a link to the stage read by kvviz.step.link).
Because the cache after pass k is the concatenation of the rows appended by passes 0..k,
a snapshot of any earlier step (the history slider) is rebuilt from the records without recomputing anything.

Counting conventions come from kvviz.ops: one "attention dot product" is one query-key score q.k of length
head_dim, causal (a query at position p scores keys 0..p), counted over all layers and query heads.
"With cache" a decode step computes scores only for the one new query; "without cache" the model re-runs the
whole sequence, so every query is recomputed. Likewise K/V rows: 1 new row per layer with the cache, every
row of the sequence per layer without it.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from kvviz import ops
from kvviz.i18n import _
from kvviz.model.dims import ModelDims
from kvviz.step.pattern_records import INDUCTION_THRESHOLD, induction_targets
from kvviz.step.records import StepRecord, TokenProb

# The "Repeat a pattern" preset: six arbitrary words (no prior knowledge predicts them), then the start of a second
# copy: only copying from the cache continues it. Both bundled models do (greedy; tested). The GPT-2 does not
# continue a counting cycle ("one two three four five one two"): its prior for what follows "two" wins
# (docs/models.md).
REPEAT_PROMPT = "red apple blue river green stone red apple blue river green"
MAX_STAGE_ROWS = 40  # cache rows drawn on the stage; older rows are summarised as "k rows above"


@dataclass(frozen=True)
class StripToken:
    position: int | None  # None for the pending token (chosen, not yet in the cache)
    text: str
    role: str  # "prompt" | "generated" | "newest" | "pending"


@dataclass(frozen=True)
class StepCounters:
    """Work for one pass (this_*) and summed since the prefill (total_*), with and without the cache."""

    this_dot_products_cached: int
    this_dot_products_uncached: int
    total_dot_products_cached: int
    total_dot_products_uncached: int
    this_kv_rows_cached: int  # K/V rows computed (per K and per V) in this pass, all layers
    this_kv_rows_uncached: int
    total_kv_rows_cached: int
    total_kv_rows_uncached: int


@dataclass(frozen=True)
class StageSnapshot:
    """Everything the stage draws for one step. Rows are cache positions first_row .. cache_len-1."""

    at: int  # index of the record shown (0 = prefill)
    latest: int  # index of the newest record (at < latest while scrubbing the history)
    kind: str  # "prefill" | "decode"
    strip: tuple[StripToken, ...]
    layer: int
    q_head: int  # the query head whose attention is drawn
    kv_head: int  # the K/V head it reads: q_head // (n_head // n_kv_heads)
    first_row: int  # rows 0 .. first_row-1 exist but are not drawn (only the newest MAX_STAGE_ROWS are)
    row_labels: tuple[str, ...]  # "position: token" for each drawn row
    keys: np.ndarray = field(repr=False)  # (drawn rows, head_dim)
    values: np.ndarray = field(repr=False)  # (drawn rows, head_dim)
    attention: np.ndarray = field(repr=False)  # (drawn rows,) the newest query's weights on those rows
    attention_above: float = 0.0  # weight that fell on the rows not drawn
    new_rows: tuple[int, ...] = ()  # positions appended by this pass (outlined)
    query_text: str = ""  # the token whose query attends (the last one fed)
    top_k: tuple[TokenProb, ...] = ()
    next_token_text: str = ""
    counters: StepCounters | None = None
    cache_len: int = 0
    cache_bytes: int = 0
    step_ms: float = 0.0
    layer_keys: tuple[np.ndarray, ...] = field(default=(), repr=False)  # every layer's drawn K rows (race view)
    group_heads: tuple[int, ...] = ()  # the query heads that read kv_head (all of them share its K/V rows)
    group_attention: np.ndarray = field(default=None, repr=False)  # (len(group_heads), drawn rows)
    copy: CopyLookup | None = None  # where an induction head would look for the newest token (copy_lookup)


def visible(token: str) -> str:
    """Token text with its whitespace made visible: space -> ·, newline -> ↵, tab -> ⇥."""
    return token.replace("\n", "↵").replace(" ", "·").replace("\t", "⇥")


def kv_head_of(q_head: int, n_head: int, n_kv_heads: int) -> int:
    """The K/V head a query head reads under grouped-query attention (as in Akunu: q_head // group, with
    group = n_head // n_kv_heads query heads per K/V head); MHA is group 1, MQA one group of all heads."""
    return q_head // (n_head // n_kv_heads)


def _pass_counts(record: StepRecord, dims: ModelDims) -> tuple[int, int, int, int]:
    before = record.fed_positions[0]
    seq_len = before + record.n_fed
    cached = ops.attention_dot_products(dims.n_layer, dims.n_head, before, record.n_fed, cached=True)
    uncached = ops.attention_dot_products(dims.n_layer, dims.n_head, before, record.n_fed, cached=False)
    return cached, uncached, dims.n_layer * record.n_fed, dims.n_layer * seq_len


def counters(records: Sequence[StepRecord], dims: ModelDims) -> StepCounters:
    """Counters after the last of `records`. The prefill costs the same either way (nothing cached yet)."""
    per_pass = [_pass_counts(r, dims) for r in records]
    last = per_pass[-1]
    return StepCounters(
        this_dot_products_cached=last[0],
        this_dot_products_uncached=last[1],
        total_dot_products_cached=sum(p[0] for p in per_pass),
        total_dot_products_uncached=sum(p[1] for p in per_pass),
        this_kv_rows_cached=last[2],
        this_kv_rows_uncached=last[3],
        total_kv_rows_cached=sum(p[2] for p in per_pass),
        total_kv_rows_uncached=sum(p[3] for p in per_pass),
    )


def cumulative_series(records: Sequence[StepRecord], dims: ModelDims) -> tuple[list[int], list[int], list[int]]:
    """(step indices, cumulative dot products with cache, without cache) for the growth chart."""
    steps, with_cache, without_cache = [], [], []
    total_c = total_u = 0
    for r in records:
        c, u = _pass_counts(r, dims)[:2]
        total_c, total_u = total_c + c, total_u + u
        steps.append(r.index)
        with_cache.append(total_c)
        without_cache.append(total_u)
    return steps, with_cache, without_cache


def token_strip(records: Sequence[StepRecord], prompt_len: int) -> tuple[StripToken, ...]:
    """Prompt tokens, generated tokens (the newest marked), then the pending token, after the last record."""
    last = records[-1]
    newest = set(last.fed_positions) if last.kind == "decode" else set()
    strip = []
    for r in records:
        for pos, text in zip(r.fed_positions, r.fed_token_texts):
            role = "prompt" if pos < prompt_len else ("newest" if pos in newest else "generated")
            strip.append(StripToken(pos, text, role))
    strip.append(StripToken(None, last.next_token_text, "pending"))
    return tuple(strip)


def _rows(records: Sequence[StepRecord], attr: str, layer: int, kv_head: int, first_row: int) -> np.ndarray:
    """(rows from first_row on, head_dim): the cache of one layer and head, rebuilt from the appended rows."""
    parts = [getattr(r, attr)[layer, kv_head] for r in records if r.fed_positions[-1] >= first_row]
    rows = np.concatenate(parts, axis=0)  # (positions from the first kept record on, D)
    skip = first_row - next(r.fed_positions[0] for r in records if r.fed_positions[-1] >= first_row)
    return rows[skip:]


def build_snapshot(
    records: Sequence[StepRecord], prompt_len: int, dims: ModelDims, layer: int, q_head: int, at: int | None = None,
    max_rows: int = MAX_STAGE_ROWS, all_layers: bool = False,
) -> StageSnapshot:
    """The stage after record `at` (default: the newest), for one layer and one query head of a model of `dims`."""
    if not records:
        raise ValueError("nothing to show yet: prefill a prompt first")
    latest = len(records) - 1
    at = latest if at is None else max(0, min(int(at), latest))
    shown = records[: at + 1]
    record = shown[-1]
    kv_head = kv_head_of(q_head, dims.n_head, dims.n_kv_heads)
    group_heads = dict(group_mapping(dims.n_head, dims.n_kv_heads))[kv_head]
    first_row = max(0, record.cache_len - max_rows)
    strip = token_strip(shown, prompt_len)
    cached = [t for t in strip if t.position is not None]
    labels = tuple(f"{t.position}: {visible(t.text)}"[:18] for t in cached[first_row:])
    weights = record.attention[layer, q_head]
    return StageSnapshot(
        at=at, latest=latest, kind=record.kind, strip=strip, layer=layer, q_head=q_head, kv_head=kv_head,
        first_row=first_row, row_labels=labels,
        keys=_rows(shown, "new_keys", layer, kv_head, first_row),
        values=_rows(shown, "new_values", layer, kv_head, first_row),
        attention=weights[first_row:], attention_above=float(weights[:first_row].sum()),
        new_rows=record.fed_positions if record.kind == "decode" else (),
        query_text=record.fed_token_texts[-1], top_k=record.top_k, next_token_text=record.next_token_text,
        counters=counters(shown, dims), cache_len=record.cache_len, cache_bytes=record.cache_bytes,
        step_ms=record.step_ms,
        layer_keys=tuple(_rows(shown, "new_keys", i, kv_head, first_row) for i in range(dims.n_layer)) if all_layers else (),
        group_heads=group_heads, group_attention=record.attention[layer, list(group_heads), first_row:],
        copy=copy_lookup(records, layer, q_head, at),
    )


def group_mapping(n_head: int, n_kv_heads: int) -> list[tuple[int, tuple[int, ...]]]:
    """[(kv_head, the query heads that read it)], by kv_head_of."""
    return [(kv, tuple(h for h in range(n_head) if kv_head_of(h, n_head, n_kv_heads) == kv))
            for kv in range(n_kv_heads)]


@dataclass(frozen=True)
class CopyLookup:
    """Where an induction head would look: the newest token occurred before at prev_pos, so the token that
    followed it (target_pos) is the copy candidate. best_* is the head, over every layer, that puts the
    largest weight on target_pos; chosen_weight is the weight of the layer and head on the stage."""

    query_pos: int
    query_text: str
    prev_pos: int
    target_pos: int
    target_text: str
    best_layer: int
    best_head: int
    best_weight: float
    chosen_weight: float


def copy_lookup(records: Sequence[StepRecord], layer: int, q_head: int, at: int | None = None) -> CopyLookup | None:
    """The copy candidate for the newest query of record `at` (default the newest), or None when its token has
    not occurred before (or only just before it: then the "token after" is the query itself). The rule is the
    attention-patterns page's induction rule (pattern_records.induction_targets), applied to the newest query."""
    shown = records[: (len(records) if at is None else at + 1)]
    ids = [t for r in shown for t in r.fed_token_ids]
    texts = [t for r in shown for t in r.fed_token_texts]
    query_pos = len(ids) - 1
    pairs = induction_targets(ids)
    if not pairs or pairs[-1][0] != query_pos:
        return None
    target = pairs[-1][1]
    prev_pos = target - 1
    weights = shown[-1].attention[:, :, target]  # (layers, query heads)
    best_layer, best_head = (int(i) for i in np.unravel_index(int(np.argmax(weights)), weights.shape))
    return CopyLookup(
        query_pos=query_pos, query_text=texts[query_pos], prev_pos=prev_pos, target_pos=target,
        target_text=texts[target], best_layer=best_layer, best_head=best_head,
        best_weight=float(weights[best_layer, best_head]), chosen_weight=float(weights[layer, q_head]),
    )


COPYING_WEIGHT = INDUCTION_THRESHOLD  # this much weight on the copy candidate: the head copies (patterns page's rule)


def copy_sentence(copy: CopyLookup | None, strong: float = COPYING_WEIGHT) -> str:
    """One line for the stage: does a head read the row after the newest token's previous occurrence?"""
    if copy is None:
        return ""
    fields = dict(query=repr(visible(copy.query_text)), query_row=copy.query_pos, prev_row=copy.prev_pos,
                  target=repr(visible(copy.target_text)), target_row=copy.target_pos, weight=copy.best_weight)
    if copy.best_weight >= strong:
        return _("{query} (row {query_row}) occurred before at row {prev_row}; the token after it, {target} (row "
                 "{target_row}), gets {weight:.0%} of layer {layer} head {head}'s attention (the head drawn: "
                 "{chosen:.0%}): an induction head reads that old row to copy {target}.").format(
            layer=copy.best_layer, head=copy.best_head, chosen=copy.chosen_weight, **fields)
    return _("{query} (row {query_row}) occurred before at row {prev_row}; the token after it, {target} (row "
             "{target_row}), gets at most {weight:.0%} of any head's attention: no head copies it here.").format(**fields)
