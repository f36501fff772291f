"""What the step-through stage shows, built once per rerun from the StepRecords alone (torch-free, UI-free).

`build_snapshot` turns the records of a session into one frozen StageSnapshot: the token strip, the chosen
head's K and V cache rows, the newest query's attention over those same rows, the next-token candidates and
the work counters. Because the cache after pass k is the concatenation of the rows appended by passes 0..k,
a snapshot of any earlier step (the history slider) is rebuilt from the records without recomputing anything.

Counting conventions come from kvviz.ops: one "attention dot product" is one query-key score q.k of length
head_dim, causal (a query at position p scores keys 0..p), counted over all layers and query heads.
"With cache" a decode step computes scores only for the one new query; "without cache" the model re-runs the
whole sequence, so every query is recomputed. Likewise K/V rows: 1 new row per layer with the cache, every
row of the sequence per layer without it.
"""
from __future__ import annotations

import html
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from kvviz import ops
from kvviz.i18n import N_, _
from kvviz.inputs import query_values
from kvviz.step.pattern_records import INDUCTION_THRESHOLD, induction_targets
from kvviz.inputs.prompt_rules import MAX_TEXT_CHARS
from kvviz.step.records import (DEFAULT_SAMPLING, SEED_MAX, TEMPERATURE_MAX, TEMPERATURE_MIN, TOP_K_MAX, Sampling,
                                StepRecord, TokenProb)

# The "Repeat a pattern" preset: six arbitrary words (no prior knowledge predicts them), then the start of a second
# copy: only copying from the cache continues it. Both bundled models do (greedy; tested). The GPT-2 does not
# continue a counting cycle ("one two three four five one two"): its prior for what follows "two" wins
# (README: "The bundled model").
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


def _pass_counts(record: StepRecord, n_layer: int, n_head: int) -> tuple[int, int, int, int]:
    before = record.fed_positions[0]
    seq_len = before + record.n_fed
    cached = ops.attention_dot_products(n_layer, n_head, before, record.n_fed, cached=True)
    uncached = ops.attention_dot_products(n_layer, n_head, before, record.n_fed, cached=False)
    return cached, uncached, n_layer * record.n_fed, n_layer * seq_len


def counters(records: Sequence[StepRecord], n_layer: int, n_head: int) -> StepCounters:
    """Counters after the last of `records`. The prefill costs the same either way (nothing cached yet)."""
    per_pass = [_pass_counts(r, n_layer, n_head) for r in records]
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


def cumulative_series(records: Sequence[StepRecord], n_layer: int, n_head: int) -> tuple[list[int], list[int], list[int]]:
    """(step indices, cumulative dot products with cache, without cache) for the growth chart."""
    steps, with_cache, without_cache = [], [], []
    total_c = total_u = 0
    for r in records:
        c, u = _pass_counts(r, n_layer, n_head)[:2]
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
    records: Sequence[StepRecord], prompt_len: int, n_layer: int, n_head: int, n_kv_heads: int,
    layer: int, q_head: int, at: int | None = None, max_rows: int = MAX_STAGE_ROWS, all_layers: bool = False,
) -> StageSnapshot:
    """The stage after record `at` (default: the newest), for one layer and one query head."""
    if not records:
        raise ValueError("nothing to show yet: prefill a prompt first")
    latest = len(records) - 1
    at = latest if at is None else max(0, min(int(at), latest))
    shown = records[: at + 1]
    record = shown[-1]
    kv_head = kv_head_of(q_head, n_head, n_kv_heads)
    group_heads = tuple(h for h in range(n_head) if kv_head_of(h, n_head, n_kv_heads) == kv_head)
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
        counters=counters(shown, n_layer, n_head), cache_len=record.cache_len, cache_bytes=record.cache_bytes,
        step_ms=record.step_ms,
        layer_keys=tuple(_rows(shown, "new_keys", i, kv_head, first_row) for i in range(n_layer)) if all_layers else (),
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


# ----- the token strip as HTML (explicit dark text on light chips: readable in light AND dark themes) -------
_ROLE_STYLE = {
    "prompt": "background:#cfe2f6;border:1px solid #6fa8dc;color:#0b1f33",
    "generated": "background:#cdeccd;border:1px solid #6bbf6b;color:#0b2a0b",
    "newest": "background:#ffd699;border:2px solid #e8590c;color:#331600;font-weight:bold",
    "pending": "background:#fff4e6;border:2px dashed #e8590c;color:#8a3300;font-weight:bold",
}
_ROLE_TITLE = {  # translated where drawn (the language is per session)
    "prompt": N_("prompt (cached)"),
    "generated": N_("generated (cached)"),
    "newest": N_("just fed: its K/V row was appended"),
    "pending": N_("chosen, NOT cached yet"),
}


_BYTES_TOKEN = re.compile(r"<([0-9A-F]{2}(?: [0-9A-F]{2})*)>")  # engine.token_text's form for a partial character


def byte_characters(texts: Sequence[str]) -> list[str]:
    """For each token text, the character(s) it completes: a byte-level tokenizer splits a character it never
    saw whole (Chinese, emoji) into byte tokens, shown as hex (<E4>, <BD>, <A0>); the token whose byte completes
    a UTF-8 character gets that character ("你"), the others "" (a run of bytes decoded in order)."""
    out, pending = [], b""
    for text in texts:
        match = _BYTES_TOKEN.fullmatch(text)
        if not match:
            out.append("")
            pending = b""
            continue
        pending += bytes.fromhex(match.group(1))
        while pending and (0x80 <= pending[0] <= 0xBF or pending[0] >= 0xF8):  # no character starts with it
            pending = pending[1:]
        done = ""
        for cut in range(len(pending), 0, -1):  # the longest prefix that decodes whole
            try:
                done = pending[:cut].decode("utf-8")
            except UnicodeDecodeError:
                continue
            pending = pending[cut:]
            break
        else:
            if len(pending) >= 4:  # no UTF-8 character is longer: these bytes make none
                pending = b""
        out.append(done)
    return out


def strip_html(strip: Sequence[StripToken], max_tokens: int = 36, font_rem: float = 1.0, legend: bool = True,
               note: str = "") -> str:
    """The token strip as HTML: the last max_tokens tokens as chips (text escaped, whitespace visible).
    `note`: a short remark drawn after the colour key, on its line (only with the legend).

    Each chip carries data-pos (its cache position, or "next" for the pending token) so browser tests and
    the classroom load test can read the strip; the container has the class kvviz-strip.
    """
    hidden = max(0, len(strip) - max_tokens)
    chip = (f"border-radius:4px;padding:1px 4px;margin:1px;display:inline-block;font-family:monospace;"
            f"font-size:{font_rem}rem")
    spans = []
    if hidden:
        earlier = html.escape(_("⋯ {n} earlier").format(n=hidden))
        spans.append(f'<span style="{chip};color:#777;border:1px dotted #999">{earlier}</span>')
    characters = byte_characters([t.text for t in strip])
    for t, character in zip(strip[hidden:], characters[hidden:]):
        shown = html.escape(visible(t.text)) or "&nbsp;"
        where = "next" if t.position is None else str(t.position)
        title = html.escape(_(_ROLE_TITLE[t.role]))
        if _BYTES_TOKEN.fullmatch(t.text):  # part of a character: say so, and name it where it completes
            title += html.escape(" · " + (_("its byte completes the UTF-8 character {char}").format(char=character)
                                          if character else _("part of a UTF-8 character (a byte-level token)")))
            if character:
                shown += f'<b style="font-family:sans-serif">→{html.escape(visible(character))}</b>'
        label = html.escape(_("next")) if t.position is None else where  # data-pos stays "next" (tests read it)
        spans.append(
            f'<span data-pos="{where}" title="{label}: {title}" '
            f'style="{_ROLE_STYLE[t.role]};{chip}">'
            f'<sub style="color:#555;font-size:0.7em">{label}</sub>{shown}</span>'
        )
    key = " ".join(
        f'<span style="{_ROLE_STYLE[r]};border-radius:4px;padding:0 4px;font-size:{0.8 * font_rem}rem">'
        f"{html.escape(_(_ROLE_TITLE[r]))}</span>"
        for r in ("prompt", "generated", "newest", "pending")
    )
    if note:
        key += f' <span style="opacity:0.75;font-size:{0.8 * font_rem}rem">{html.escape(note)}</span>'
    return (f'<div class="kvviz-strip" style="line-height:1.9">{"".join(spans)}</div>'
            + (f'<div style="margin-top:2px">{key}</div>' if legend else ""))


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


# ----- a link to the stage: what it carries, read defensively (a link is typed, pasted, truncated) ---------
VIEW_NAMES = ("one", "race", "gqa")  # the stage's views, as a link names them (?view=race)


def url_int(text: str | None, default: int, lo: int, hi: int) -> int:
    """A link's integer, clamped to [lo, hi]: '12' -> 12, '-3' -> lo, a 40-digit string -> hi; anything that is
    not a whole number ('1.5', 'nan', '', 'x') -> default. Never raises."""
    return query_values.clamped_int(text, default, lo, hi)  # the one reader of a whole number (kvviz.inputs)


def url_float(text: str | None, default: float, lo: float, hi: float) -> float:
    """A link's number, clamped to [lo, hi]; not a finite number -> default. Never raises."""
    try:
        value = float((text or "").strip()[:32])
    except ValueError:
        return default
    return max(lo, min(hi, value)) if math.isfinite(value) else default


def url_flag(text: str | None) -> bool:
    return (text or "").strip().lower() in ("1", "true", "yes", "on")


def picker_label(prefix: str, index: int) -> str:
    """How the stage's layer / head pickers show an option, and so how their URL keys carry it (step_layer=L2):
    the pickers are bound to the URL (bind="query-params"), which writes the shown label."""
    return f"{prefix}{index}"


@dataclass(frozen=True)
class StageLink:
    """Everything that defines the stage's view, as a link carries it."""

    prompt: str
    steps: int
    greedy: bool
    temperature: float
    top_k: int
    seed: int
    view: str = "one"
    present: bool = False
    layer: int = 0
    head: int = 0

    def query(self) -> dict[str, str]:
        """The link's query parameters. Layer and head use the pickers' own URL keys and labels."""
        return {"prompt": self.prompt, "steps": str(self.steps), "greedy": "1" if self.greedy else "0",
                "temperature": f"{self.temperature:g}", "top_k": str(self.top_k), "seed": str(self.seed),
                "view": self.view, "present": "1" if self.present else "0",
                "step_layer": picker_label("L", self.layer), "step_head": picker_label("H", self.head)}

    @property
    def replay_key(self) -> tuple:
        """What the replay depends on (not layer, head, view: the reader's own clicks rewrite those in the URL)."""
        return (self.prompt, self.steps, self.greedy, self.temperature, self.top_k, self.seed)


def parse_link(query: Mapping[str, str], n_positions: int, default: Sampling = DEFAULT_SAMPLING) -> StageLink | None:
    """The link in a page's query parameters, or None without ?prompt=. Every value is clamped to the sampling
    limits (kvviz.step.records) or, when it is not a number, taken from `default`."""
    prompt = query.get("prompt")
    if prompt is None:
        return None
    view = query.get("view", "one")

    def picker(key: str, prefix: str) -> int:
        text = query.get(key, "")
        return url_int(text[len(prefix):] if text.startswith(prefix) else text, 0, 0, 10_000)

    return StageLink(
        prompt=prompt[:MAX_TEXT_CHARS], steps=url_int(query.get("steps"), 0, 0, n_positions),
        greedy=url_flag(query.get("greedy")),
        temperature=url_float(query.get("temperature"), default.temperature, TEMPERATURE_MIN, TEMPERATURE_MAX),
        top_k=url_int(query.get("top_k"), default.top_k, 0, TOP_K_MAX),
        seed=url_int(query.get("seed"), default.seed, 0, SEED_MAX),
        view=view if view in VIEW_NAMES else "one", present=url_flag(query.get("present")),
        layer=picker("step_layer", "L"), head=picker("step_head", "H"))
