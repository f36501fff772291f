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

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from kvviz import i18n, memory, ops
from kvviz.i18n import _, ngettext
from kvviz.measure.load import load_label
from kvviz.memory import units
from kvviz.model.dims import GPT2_FAMILY, ModelDims
from kvviz.step.pattern_records import INDUCTION_THRESHOLD, induction_targets
from kvviz.step.records import (
    RACE_BUDGET_S,
    ContextRace,
    Equivalence,
    LinearState,
    RaceTiming,
    StepRecord,
    TokenProb,
)

if TYPE_CHECKING:  # the loaded model's record (its dimensions, dtype and label); the engine hands it over
    from kvviz.model.loading import ModelInfo

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
    # A hybrid: the layers whose K rows layer_keys holds (its attention layers), and the chosen layer's fixed state
    # when it is a linear-attention layer (then keys, values and attention have no rows: it keeps none)
    kv_layers: tuple[int, ...] = ()
    state: LinearState | None = field(default=None, repr=False)
    states: tuple[LinearState, ...] = field(default=(), repr=False)  # every linear layer's, after this step
    state_bytes: int = 0  # bytes of every linear layer's state, from the real tensors (the same at every step)


def visible(token: str) -> str:
    """Token text with its whitespace made visible: space -> ·, newline -> ↵, tab -> ⇥."""
    return token.replace("\n", "↵").replace(" ", "·").replace("\t", "⇥")


def kv_head_of(q_head: int, n_head: int, n_kv_heads: int) -> int:
    """The K/V head a query head reads under grouped-query attention (as in Akunu: q_head // group, with
    group = n_head // n_kv_heads query heads per K/V head); MHA is group 1, MQA one group of all heads."""
    return q_head // (n_head // n_kv_heads)


def _pass_counts(record: StepRecord, dims: ModelDims) -> tuple[int, int, int, int]:
    """Counted over the layers that attend (a hybrid's linear layers score no query against cached keys)."""
    before = record.fed_positions[0]
    seq_len = before + record.n_fed
    layers = len(dims.attention_layers)
    cached = ops.attention_dot_products(layers, dims.n_head, before, record.n_fed, cached=True)
    uncached = ops.attention_dot_products(layers, dims.n_head, before, record.n_fed, cached=False)
    return cached, uncached, layers * record.n_fed, layers * seq_len


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
        for pos, text in zip(r.fed_positions, r.fed_token_texts, strict=True):
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
    records: Sequence[StepRecord],
    prompt_len: int,
    dims: ModelDims,
    layer: int,
    q_head: int,
    at: int | None = None,
    max_rows: int = MAX_STAGE_ROWS,
    all_layers: bool = False,
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
    kv_layers = dims.attention_layers  # the records' layer axis holds these layers only (every layer but a hybrid's)
    state = next((x for x in record.states if x.layer == layer), None)
    slot = kv_layers.index(layer) if state is None else 0
    weights = record.attention[slot, q_head]
    keys, values = (_rows(shown, name, slot, kv_head, first_row) for name in ("new_keys", "new_values"))
    attention, group_attention = weights[first_row:], record.attention[slot, list(group_heads), first_row:]
    if state is not None:  # a linear-attention layer keeps no rows: nothing of the attention layer is drawn for it
        keys, values = keys[:0], values[:0]
        attention, group_attention = attention[:0], group_attention[:, :0]
    return StageSnapshot(
        at=at,
        latest=latest,
        kind=record.kind,
        strip=strip,
        layer=layer,
        q_head=q_head,
        kv_head=kv_head,
        first_row=first_row,
        row_labels=labels if state is None else (),
        keys=keys,
        values=values,
        attention=attention,
        attention_above=float(weights[:first_row].sum()) if state is None else 0.0,
        new_rows=record.fed_positions if record.kind == "decode" else (),
        query_text=record.fed_token_texts[-1],
        top_k=record.top_k,
        next_token_text=record.next_token_text,
        counters=counters(shown, dims),
        cache_len=record.cache_len,
        cache_bytes=record.cache_bytes,
        step_ms=record.step_ms,
        layer_keys=tuple(_rows(shown, "new_keys", i, kv_head, first_row) for i in range(len(kv_layers)))
        if all_layers
        else (),
        group_heads=group_heads,
        group_attention=group_attention,
        copy=copy_lookup(records, layer, q_head, at, kv_layers) if state is None else None,
        kv_layers=kv_layers,
        state=state,
        states=record.states,
        state_bytes=record.state_bytes,
    )


def group_mapping(n_head: int, n_kv_heads: int) -> list[tuple[int, tuple[int, ...]]]:
    """[(kv_head, the query heads that read it)], by kv_head_of."""
    return [
        (kv, tuple(h for h in range(n_head) if kv_head_of(h, n_head, n_kv_heads) == kv)) for kv in range(n_kv_heads)
    ]


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


def copy_lookup(
    records: Sequence[StepRecord],
    layer: int,
    q_head: int,
    at: int | None = None,
    kv_layers: Sequence[int] | None = None,
) -> CopyLookup | None:
    """The copy candidate for the newest query of record `at` (default the newest), or None when its token has
    not occurred before (or only just before it: then the "token after" is the query itself). The rule is the
    attention-patterns page's induction rule (pattern_records.induction_targets), applied to the newest query.
    kv_layers: the layers the records' attention holds (ModelDims.attention_layers; default every layer)."""
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
    kv_layers = list(range(weights.shape[0])) if kv_layers is None else list(kv_layers)
    best_slot, best_head = (int(i) for i in np.unravel_index(int(np.argmax(weights)), weights.shape))
    return CopyLookup(
        query_pos=query_pos,
        query_text=texts[query_pos],
        prev_pos=prev_pos,
        target_pos=target,
        target_text=texts[target],
        best_layer=kv_layers[best_slot],
        best_head=best_head,
        best_weight=float(weights[best_slot, best_head]),
        chosen_weight=float(weights[kv_layers.index(layer), q_head]) if layer in kv_layers else 0.0,
    )


COPYING_WEIGHT = INDUCTION_THRESHOLD  # this much weight on the copy candidate: the head copies (patterns page's rule)


def copy_sentence(copy: CopyLookup | None, strong: float = COPYING_WEIGHT) -> str:
    """One line for the stage: does a head read the row after the newest token's previous occurrence?"""
    if copy is None:
        return ""
    fields = dict(
        query=repr(visible(copy.query_text)),
        query_row=copy.query_pos,
        prev_row=copy.prev_pos,
        target=repr(visible(copy.target_text)),
        target_row=copy.target_pos,
        weight=copy.best_weight,
    )
    if copy.best_weight >= strong:
        return _(
            "{query} (row {query_row}) occurred before at row {prev_row}; the token after it, {target} (row "
            "{target_row}), gets {weight:.0%} of layer {layer} head {head}'s attention (the head drawn: "
            "{chosen:.0%}): an induction head reads that old row to copy {target}."
        ).format(layer=copy.best_layer, head=copy.best_head, chosen=copy.chosen_weight, **fields)
    return _(
        "{query} (row {query_row}) occurred before at row {prev_row}; the token after it, {target} (row "
        "{target_row}), gets at most {weight:.0%} of any head's attention: no head copies it here."
    ).format(**fields)


# ----- the stage's view: every sentence and number it shows, built from the records above -------------------------
NEXT_TOKEN_BARS = 6  # candidates drawn as bars beside the one-head and GQA views


@dataclass(frozen=True)
class Tile:
    """One metric tile beside the figure."""

    label: str
    value: str
    help: str


@dataclass(frozen=True)
class CopyButton:
    """The "Copying head" button: always drawn (so the row never jumps), enabled when the copying head is another
    layer or head than the one on the stage; target is the (layer, query head) a click shows."""

    label: str
    target: tuple[int, int]
    enabled: bool


@dataclass(frozen=True)
class StageView:
    """Everything the stage shows for one step: the snapshot its figures are drawn from, and every sentence and
    number around them, in the session's language (built per rerun by stage_view)."""

    snapshot: StageSnapshot
    top_tokens: tuple[TokenProb, ...]  # the next-token bars
    copy_button: CopyButton
    readout: str  # copy_sentence; "" when the newest token did not occur before
    readout_hint: str  # said (muted) in the readout's place when there is no readout
    rows_caption: str
    tiles: tuple[Tile, ...]  # cache length, cache size, this step's dot products with and without the cache
    step_line: str
    gqa_text: str  # "" for a model whose every query head has its own K/V head
    race_sides: tuple[str, str]  # the race's work sentence, with the cache and without it
    model_label: str  # the model's label in English (a race's RaceTiming.model_label names its model the same way)
    model_shown: str  # the same in the session's language
    hybrid_text: str = ""  # a hybrid: what its linear layers keep, and what Back does on it ("" for all-attention)


def stage_view(snap: StageSnapshot, model: ModelInfo) -> StageView:
    """The stage's view of `snap`, a snapshot of a generation by `model` (the engine's loaded model)."""
    copy = snap.copy
    found = copy is not None and copy.best_weight >= COPYING_WEIGHT
    button = CopyButton(
        label=_("Copying head L{layer} H{head}").format(layer=copy.best_layer, head=copy.best_head)
        if found
        else _("Copying head"),
        target=(copy.best_layer, copy.best_head) if found else (snap.layer, snap.q_head),
        enabled=found and (copy.best_layer, copy.best_head) != (snap.layer, snap.q_head),
    )
    return StageView(
        snapshot=snap,
        top_tokens=snap.top_k[:NEXT_TOKEN_BARS],
        copy_button=button,
        readout=state_sentence(snap, model) if snap.state is not None else copy_sentence(copy),
        readout_hint=_(
            "When the newest token occurred before, this line names the head that reads the row after that "
            "occurrence (an induction head copying)."
        ),
        rows_caption=_rows_caption(snap),
        tiles=_tiles(snap, model),
        step_line=step_line(snap, model),
        gqa_text=gqa_text(snap, model) if model.n_kv_heads < model.n_head else "",
        race_sides=(_race_side(snap, model, cached=True), _race_side(snap, model, cached=False)),
        model_label=model.label,
        model_shown=model.shown_label(),
        hybrid_text=hybrid_text(snap, model) if snap.states else "",
    )


def _layer_list(layers: Sequence[int]) -> str:
    return i18n.item_sep().join(str(i) for i in layers)


def state_sentence(snap: StageSnapshot, dims: ModelDims) -> str:
    """The readout over a linear-attention layer's state: what it keeps instead of K/V rows, and its bytes."""
    state = snap.state
    heads, d_k, d_v = state.recurrent.shape
    channels, kernel = state.conv.shape
    return _(
        "Layer {layer} is linear attention (Gated DeltaNet): it keeps no K/V rows. Each of its {heads} heads "
        "keeps one {d_k} x {d_v} state matrix that every token rewrites, and the layer keeps the last {kernel} "
        "inputs of its short convolution ({channels} channels): {size} in all, the same at every step."
    ).format(
        layer=state.layer,
        heads=heads,
        d_k=d_k,
        d_v=d_v,
        kernel=kernel,
        channels=channels,
        size=units.short_bytes(state.total_bytes),
    )


def hybrid_text(snap: StageSnapshot, dims: ModelDims) -> str:
    """A hybrid's two facts under the stage: which layers keep what, and what Back does on it, and why."""
    per_layer = snap.states[0].total_bytes
    return _(
        "Layers {linear} keep a fixed state ({size} each); only layer {attention} keeps K/V rows. Back crops "
        "layer {attention}'s K/V by one row and copies each state back from the copy kept after the previous "
        "step: every token is mixed into all of a state's numbers, so no row can be cut out of it."
    ).format(
        linear=_layer_list([s.layer for s in snap.states]),
        size=units.short_bytes(per_layer),
        attention=_layer_list(snap.kv_layers),
    )


def _rows_caption(snap: StageSnapshot) -> str:
    if not snap.first_row:
        return _("Rows = cache positions; the newest row is outlined.")
    return _(
        "Rows = cache positions; the newest row is outlined · {n} older rows above not drawn (they got "
        "{share:.0%} of the attention)."
    ).format(n=snap.first_row, share=snap.attention_above)


def _tiles(snap: StageSnapshot, dims: ModelDims) -> tuple[Tile, ...]:
    c = snap.counters
    scrubbed = snap.at < snap.latest  # the tiles say they show a recorded step, not the cache as it is
    if snap.states:  # a hybrid: the K/V that grows, the state that does not
        return (
            Tile(
                _("K/V at step {at} (history)").format(at=snap.at) if scrubbed else _("K/V"),
                ngettext("{n} row, {size} (grows)", "{n} rows, {size} (grows)", snap.cache_len).format(
                    n=snap.cache_len, size=units.short_bytes(snap.cache_bytes)
                ),
                ngettext(
                    "layer {layers}'s keys and values, summed from the real tensors: {bytes}",
                    "layers {layers}' keys and values, summed from the real tensors: {bytes}",
                    len(snap.kv_layers),
                ).format(layers=_layer_list(snap.kv_layers), bytes=units.format_bytes(snap.cache_bytes)),
            ),
            Tile(
                _("State at step {at} (history)").format(at=snap.at) if scrubbed else _("State"),
                _("{size} (fixed)").format(size=units.short_bytes(snap.state_bytes)),
                _("layers {layers}' recurrent and conv states, summed from the real tensors: {bytes}").format(
                    layers=_layer_list([s.layer for s in snap.states]), bytes=units.format_bytes(snap.state_bytes)
                ),
            ),
            *_tiles(dataclasses.replace(snap, states=()), dims)[2:],
        )
    return (
        Tile(
            _("Cache length at step {at} (history)").format(at=snap.at) if scrubbed else _("Cache length"),
            ngettext("{n} token", "{n} tokens", snap.cache_len).format(n=snap.cache_len),
            _("at most {n} positions").format(n=dims.n_positions),
        ),
        Tile(
            _("Cache size at step {at} (history)").format(at=snap.at) if scrubbed else _("Cache size"),
            units.short_bytes(snap.cache_bytes),
            _("summed from the real K/V tensors: {bytes}").format(bytes=units.format_bytes(snap.cache_bytes)),
        ),
        Tile(
            _("This step: dots with cache"),
            f"{c.this_dot_products_cached:,}",
            _("query-key dot products this step computes with the cache: the newest query only"),
        ),
        Tile(
            _("This step: dots without cache"),
            f"{c.this_dot_products_uncached:,}",
            _("the same step if the whole sequence were recomputed (causal pairs: L(L+1)/2 per head and layer)"),
        ),
    )


def step_line(snap: StageSnapshot, dims: ModelDims) -> str:
    """Which pass is shown, its single measured time, the work since the prefill, and how it is counted."""
    c, seq = snap.counters, snap.cache_len
    if snap.kind == "prefill":
        what = _("Prefill: fed the {n} prompt tokens at once in {ms:.1f} ms (one run).").format(n=seq, ms=snap.step_ms)
    elif snap.at < snap.latest:
        what = _(
            "Decode step {at} of {latest}, the newest is step {latest}: fed 1 token in {ms:.1f} ms (one run)."
        ).format(at=snap.at, latest=snap.latest, ms=snap.step_ms)
    else:
        what = _("Decode step {at} of {latest}: fed 1 token in {ms:.1f} ms (one run).").format(
            at=snap.at, latest=snap.latest, ms=snap.step_ms
        )
    layers = len(dims.attention_layers)
    eager = ops.attention_dot_products_dense(layers, dims.n_head, 0, seq, cached=False)
    return (
        what
        + " "
        + _(
            "All passes so far, the prefill included: {cached:,} dot products with the cache vs {uncached:,} if every "
            "step recomputed the whole sequence. Counted as causal "
            "pairs: a query at position p scores keys 0..p, so L(L+1)/2 per head and layer without the cache; eager "
            "attention scores all L x L ({layers} x {heads} x {seq}² = {eager:,} here) and masks the rest."
        ).format(
            cached=c.total_dot_products_cached,
            uncached=c.total_dot_products_uncached,
            layers=layers,
            heads=dims.n_head,
            seq=seq,
            eager=eager,
        )
    )


def gqa_text(snap: StageSnapshot, model: ModelInfo) -> str:
    """Which query heads read which K/V head, and the bytes measured vs the same model with full MHA."""
    groups = "; ".join(
        f"kv {kv} ← q {', '.join(map(str, qs))}" for kv, qs in group_mapping(model.n_head, model.n_kv_heads)
    )
    gqa = model.kv_config()  # in the dtype the model runs in, as the measured tensors are
    mha_bytes, factor = memory.mha_cost(gqa, snap.cache_len)
    return f"kv_head = q_head // {model.n_head // model.n_kv_heads}: {groups}. " + _(
        "Cache measured from the real tensors: {measured:,} B (calculator: {calculated:,} B); with full MHA "
        "({heads} K/V heads) the same model would hold {mha:,} B, {ratio:.0f}x more."
    ).format(
        measured=snap.cache_bytes,
        calculated=memory.kv_bytes(gqa, snap.cache_len),
        heads=model.n_head,
        mha=mha_bytes,
        ratio=factor,
    )


def _race_side(snap: StageSnapshot, dims: ModelDims, cached: bool) -> str:
    """What one side of the race computes this step: its dot products, and K and V of how many tokens."""
    c = snap.counters
    dots = c.this_dot_products_cached if cached else c.this_dot_products_uncached
    # K/V computed per token and layer, all heads at once: not "rows", which the stage and the lesson keep for one
    # head's row at one cache position
    layers = len(dims.attention_layers)
    tokens = (c.this_kv_rows_cached if cached else c.this_kv_rows_uncached) // layers
    fed = ngettext(
        "K and V of {n:,} token in each of {layers} layers",
        "K and V of {n:,} tokens in each of {layers} layers",
        tokens,
    ).format(n=tokens, layers=layers)
    if snap.states:  # a hybrid: K/V only where it attends; the linear layers' states are updated once per token
        fed = ngettext(
            "K and V of {n:,} token in the attention layers ({layers}); each linear layer ({linear}) "
            "folds it into its fixed state",
            "K and V of {n:,} tokens in the attention layers ({layers}); "
            "each linear layer ({linear}) folds them into its fixed state, one by one",
            tokens,
        ).format(n=tokens, layers=_layer_list(snap.kv_layers), linear=_layer_list([s.layer for s in snap.states]))
    return (
        _("**With the cache**, this step: {dots:,} dot products; {fed}")
        if cached
        else _("**Without the cache**, this step: {dots:,} dot products; {fed}")
    ).format(dots=dots, fed=fed)


@dataclass(frozen=True)
class RaceView:
    """The race view's sentences around its charts; "" where nothing is said."""

    sides: tuple[str, str]  # with the cache, without it
    models_caption: str  # when the clock ran on another model than the one drawn: which is which
    tiles_caption: str  # the same, beside the tiles
    note: str  # in the clock's place when there is no clock (the prefill, or the animation running)
    clock_caption: str  # under the clock, on another model: which model it timed
    verdict: str  # beside the clock: the verdict in a few lines (race_verdict)
    timing: RaceTiming | None  # what the clock draws; None: no clock (see note)


def race_view(view: StageView, timing: RaceTiming | None, big: bool) -> RaceView:
    """The race's sentences for the stage's `view` and the step's `timing` (None: not timed); `big`: the clock ran
    on the GPT-2 124M shape."""
    names = race_models(view, timing)
    models_caption = tiles_caption = clock_caption = ""
    if names is not None:
        models_caption = _(
            "K caches and counts below: {model}, the model generating. The clock under them: {race}, "
            "fed the same {n} tokens."
        ).format(model=names[0], race=names[1], n=timing.seq_len)
        tiles_caption = _("The tiles above count {model}; the clock and the verdict below time {race}.").format(
            model=names[0], race=names[1]
        )
        clock_caption = _("Clock: {race}.").format(race=names[1])
    if view.snapshot.kind == "prefill":
        note = _(
            "The prefill computes every prompt row either way (nothing is cached yet): the race starts with the "
            "first Next token."
        )
    elif timing is None:
        note = _("The clock runs when the animation stops (timing every frame would slow it down).")
    else:
        note = ""
    return RaceView(
        sides=view.race_sides,
        models_caption=models_caption,
        tiles_caption=tiles_caption,
        note=note,
        clock_caption=clock_caption,
        verdict="" if timing is None else race_verdict(timing, big),
        timing=timing,
    )


def race_models(view: StageView, timing: RaceTiming | None) -> tuple[str, str] | None:
    """(the model drawn and counted, the model the clock ran on), in the reader's language, when they differ
    (the GPT-2 124M shape races this model's tokens): each part of the race view then says which it shows."""
    if timing is None or timing.model_label == view.model_label:
        return None
    return view.model_shown, i18n.shown_english(timing.model_label)


def floor_sentence(t: RaceTiming) -> str:
    """What the chart shows about the dashed line, computed from the medians: a side whose median came in under
    the 1-token forward's is never said to stand on it."""
    below = t.below_floor
    if not below:
        return _(
            "Both stand on the dashed line: a 1-token forward with nothing cached, {ms:.1f} ms here whatever "
            "the length (its median, timed between the sides)."
        ).format(ms=t.fixed_median_ms)
    if below == ("cached",):
        return _(
            "The cached step's median ({side:.1f} ms) came in under the dashed line, a 1-token forward with "
            "nothing cached ({ms:.1f} ms): it does that forward's work and more, so the gap is noise; at this "
            "size a cached step costs about a forward's fixed cost."
        ).format(side=t.cached_median_ms, ms=t.fixed_median_ms)
    if below == ("uncached",):
        return _(
            "The uncached step's median ({side:.1f} ms) came in under the dashed line, a 1-token forward with "
            "nothing cached ({ms:.1f} ms): it does that forward's work and more, so the gap is noise."
        ).format(side=t.uncached_median_ms, ms=t.fixed_median_ms)
    return _(
        "Both medians came in under the dashed line, a 1-token forward with nothing cached ({ms:.1f} ms): "
        "each side does that forward's work and more, so the gaps are noise; at this size every forward "
        "costs about its fixed cost."
    ).format(ms=t.fixed_median_ms)


def race_verdict(t: RaceTiming, big: bool) -> str:
    """A few lines beside the clock (which draws the medians, their middle half and the 1-token floor): the
    verdict, or 'inside the noise' when it is, and the machine's load; one repeat a side is said as such. `big`:
    the clock ran on the GPT-2 124M shape (its dot products are said beside a win)."""
    if t.single_repeat:
        how = _(
            "One repeat a side: a repeat costs more than the click's {budget:.2f} s, so the click measures "
            "once and there is no spread to show. {load}."
        ).format(budget=RACE_BUDGET_S, load=load_label(t.load_1min))
    else:
        how = _("Medians of {repeats} repeats a side, interleaved; whiskers: the middle half. {load}.").format(
            repeats=t.repeats, load=load_label(t.load_1min)
        )
    if t.inside_noise:
        noise = _(
            "**Inside the noise**: the middle halves overlap. At this size a forward is mostly its fixed cost "
            "(the dashed line: 1 token, nothing cached), which hides the saving."
        )
        return i18n.join_sentences([noise] + ([] if big else [_("Try the GPT-2 124M shape.")]) + [how])
    if not t.cached_faster:
        return i18n.join_sentences(
            [_("**The cached step measured slower** this time: a burst of load, most likely."), floor_sentence(t), how]
        )
    extra = ""
    if big:
        shape = GPT2_FAMILY["gpt2"]
        with_c = ops.attention_dot_products(shape.n_layer, shape.n_head, t.seq_len - 1, 1, cached=True)
        without = ops.attention_dot_products(shape.n_layer, shape.n_head, t.seq_len - 1, 1, cached=False)
        extra = " " + _("At this shape: {cached:,} dot products vs {uncached:,}.").format(
            cached=with_c, uncached=without
        )
    faster = _("**{x:.1f}x faster with the cache**.").format(x=t.uncached_median_ms / t.cached_median_ms)
    return f"{faster}{extra} {floor_sentence(t)} {how}"


@dataclass(frozen=True)
class WithoutCacheView:
    """The "without the cache" section: the check's sentence and the growth chart's series."""

    text: str
    steps: list[int]
    with_cache: list[int]  # cumulative dot products
    without_cache: list[int]
    axis_title: str


def without_cache_view(check: Equivalence, records: Sequence[StepRecord], dims: ModelDims) -> WithoutCacheView:
    """The newest step recomputed with no cache (`check`, StepEngine.check_without_cache), said for a student, and
    the work with and without the cache over every pass so far."""
    text = _(
        "An uncached step feeds all **{rows}** tokens again and recomputes every K and V row in all "
        "{layers} layers ({ms:.1f} ms here), just to get the last position's logits.\n\n"
        "- max |logit difference| cached vs recomputed: **{logit:.1e}**\n"
        "- max |K difference| {key:.1e}, max |V difference| {value:.1e}\n"
        "- same next token: **{same}**\n\n"
        "The differences are float32 rounding (summation order), not a different result: caching changes "
        "speed, not answers."
    ).format(
        rows=check.recomputed_rows,
        layers=dims.n_layer,
        ms=check.uncached_ms,
        logit=check.max_abs_logit_diff,
        key=check.max_abs_key_diff,
        value=check.max_abs_value_diff,
        same=_("yes") if check.same_next_token else _("no"),
    )
    if not dims.all_attention:  # a hybrid: K/V in its attention layers only; its states rebuilt from the start
        text = _(
            "An uncached step feeds all **{rows}** tokens again: it recomputes every K and V row of the attention "
            "layers ({attention}) and rebuilds each linear layer's fixed state ({linear}) from the first token "
            "({ms:.1f} ms here), just to get the last position's logits.\n\n"
            "- max |logit difference| cached vs recomputed: **{logit:.1e}**\n"
            "- max |K difference| {key:.1e}, max |V difference| {value:.1e}\n"
            "- same next token: **{same}**\n\n"
            "The differences are float32 rounding (summation order), not a different result: caching changes "
            "speed, not answers."
        ).format(
            rows=check.recomputed_rows,
            attention=_layer_list(dims.attention_layers),
            linear=_layer_list(dims.linear_layers),
            ms=check.uncached_ms,
            logit=check.max_abs_logit_diff,
            key=check.max_abs_key_diff,
            value=check.max_abs_value_diff,
            same=_("yes") if check.same_next_token else _("no"),
        )
    steps, with_cache, without_cache = cumulative_series(records, dims)
    return WithoutCacheView(text, steps, with_cache, without_cache, _("query-key dot products"))


# ----- a hybrid against its all-attention twin, as the context grows (StepEngine: kvviz.step.engine.context_race) ----
CONTEXT_RACE_CONTEXTS = (16, 64, 128, 256)  # tokens in the cache after the timed step; 256: every position


def context_race_verdict(race: ContextRace) -> str:
    """What the timing says, context by context, by the one noise rule; and the machine's load."""
    parts = []
    for c, (hybrid, twin), noisy in zip(race.contexts, race.medians(), race.inside_noise(), strict=True):
        if noisy:
            parts.append(
                _("{n} tokens: inside the noise ({hybrid:.1f} vs {twin:.1f} ms).").format(n=c, hybrid=hybrid, twin=twin)
            )
        elif hybrid < twin:
            parts.append(_("{n} tokens: the hybrid is {ms:.1f} ms faster.").format(n=c, ms=twin - hybrid))
        else:
            parts.append(_("{n} tokens: the hybrid is {ms:.1f} ms slower.").format(n=c, ms=hybrid - twin))
    return i18n.join_sentences(
        [
            *parts,
            _("Medians of {repeats} repeats or more a side, interleaved; whiskers: the middle half. {load}.").format(
                repeats=race.repeats, load=load_label(race.load_1min)
            ),
            _(
                "At this size a step is mostly its fixed cost, and transformers' reference kernels run the linear layers' "
                "recurrence as small separate operations: the hybrid's saving here is memory (its states do not grow), "
                "and its time saving needs contexts far longer than 256 tokens, where attention's cost per token keeps "
                "growing and a linear layer's does not (the Count the work page)."
            ),
        ]
    )
