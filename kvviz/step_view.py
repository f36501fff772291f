"""Display-ready numbers for the step-through page, derived from an engine's StepRecords (UI-free).

Counting conventions come from kvviz.ops: one "attention dot product" is one query-key score q.k of length
head_dim, causal (a query at position p scores keys 0..p), counted over all layers and heads.
"With cache" a decode step computes scores only for the one new query; "without cache" the model re-runs the
whole sequence, so every query is recomputed. Likewise K/V rows: 1 new row per layer with the cache, every
row of the sequence per layer without it.
"""
from __future__ import annotations

from dataclasses import dataclass

from kvviz import ops
from kvviz.figures.step import visible
from kvviz.stepping import StepEngine, StepRecord, token_text


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


def token_strip(engine: StepEngine) -> list[StripToken]:
    """Prompt tokens, generated tokens (the newest marked), then the pending token."""
    tok = engine.loaded.tokenizer
    newest = set(engine.records[-1].fed_positions) if engine.records and engine.records[-1].kind == "decode" else set()
    strip = []
    for pos, token_id in enumerate(engine.token_ids):
        role = "prompt" if pos < engine.prompt_len else ("newest" if pos in newest else "generated")
        strip.append(StripToken(pos, token_text(tok, token_id), role))
    if engine.pending_token_id is not None:
        strip.append(StripToken(None, token_text(tok, engine.pending_token_id), "pending"))
    return strip


def _pass_counts(record: StepRecord, n_layer: int, n_head: int) -> tuple[int, int, int, int]:
    before = record.fed_positions[0]
    seq_len = before + record.n_fed
    cached = ops.attention_dot_products(n_layer, n_head, before, record.n_fed, cached=True)
    uncached = ops.attention_dot_products(n_layer, n_head, before, record.n_fed, cached=False)
    return cached, uncached, n_layer * record.n_fed, n_layer * seq_len


def counters(records: list[StepRecord], n_layer: int, n_head: int) -> StepCounters:
    """Counters after the latest record. The prefill costs the same either way (nothing cached yet)."""
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


def cumulative_series(records: list[StepRecord], n_layer: int, n_head: int) -> tuple[list[int], list[int], list[int]]:
    """(step indices, cumulative dot products with cache, without cache) for the growth chart."""
    steps, with_cache, without_cache = [], [], []
    total_c = total_u = 0
    for r in records:
        c, u, _, _ = _pass_counts(r, n_layer, n_head)
        total_c, total_u = total_c + c, total_u + u
        steps.append(r.index)
        with_cache.append(total_c)
        without_cache.append(total_u)
    return steps, with_cache, without_cache


def format_bytes(n_bytes: int) -> str:
    """Exact bytes plus KiB/MiB (binary units, 1 KiB = 1024 bytes)."""
    if n_bytes < 1024:
        return f"{n_bytes:,} B"
    if n_bytes < 1024**2:
        return f"{n_bytes:,} B ({n_bytes / 1024:,.1f} KiB)"
    return f"{n_bytes:,} B ({n_bytes / 1024**2:,.2f} MiB)"


_ROLE_STYLE = {
    "prompt": "background:#dbe9f6;border:1px solid #9cc3e6",
    "generated": "background:#d9f2d9;border:1px solid #8fd18f",
    "newest": "background:#ffe0b3;border:2px solid #ff7f0e;font-weight:bold",
    "pending": "background:#fff;border:2px dashed #ff7f0e;color:#b35900;font-weight:bold",
}
_ROLE_TITLE = {
    "prompt": "prompt token (cached)",
    "generated": "generated token (cached)",
    "newest": "fed in the latest step: its K/V row was just appended",
    "pending": "just chosen: NOT in the cache yet; the next step feeds it",
}


def strip_html(strip: list[StripToken]) -> str:
    """The token strip as inline HTML spans (text escaped; whitespace made visible)."""
    import html

    spans = []
    for t in strip:
        shown = html.escape(visible(t.text))
        where = "next" if t.position is None else str(t.position)
        spans.append(
            f'<span title="{where}: {_ROLE_TITLE[t.role]}" style="{_ROLE_STYLE[t.role]};border-radius:4px;'
            f'padding:1px 3px;margin:1px;display:inline-block;font-family:monospace;font-size:0.95rem">'
            f'<sub style="color:#888">{where}</sub>{shown}</span>'
        )
    legend = " ".join(
        f'<span style="{_ROLE_STYLE[r]};border-radius:4px;padding:0 4px;font-size:0.8rem">{_ROLE_TITLE[r]}</span>'
        for r in ("prompt", "generated", "newest", "pending")
    )
    return f'<div style="line-height:2.0">{"".join(spans)}</div><div style="margin-top:4px">{legend}</div>'
