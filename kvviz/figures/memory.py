"""Figures for "Memory budget": cache size vs context, per-layer bytes, paged vs flat allocation.

Input: kvviz.memory configs and records. Output: plotly figures. No Streamlit.
"""
from __future__ import annotations

from typing import Sequence

import plotly.graph_objects as go

from kvviz.capacity import PagedView
from kvviz.memory import GIB, KVBudget, KVConfig, MIB, kv_bytes


def context_grid(max_context: int, points: int = 120) -> list[int]:
    """Evenly spread context lengths 0..max_context (always including both ends)."""
    points = max(2, min(points, max_context + 1))
    return sorted({max_context * i // (points - 1) for i in range(points)})


def size_vs_context_figure(
    configs: Sequence[KVConfig], max_context: int, batch: int = 1, mark_context: int | None = None,
    budget_bytes: int | None = None,
) -> go.Figure:
    """One line per config: cache GiB against context length (windows show up as plateaus)."""
    xs = context_grid(max_context)
    fig = go.Figure()
    for cfg in configs:
        fig.add_scatter(x=xs, y=[kv_bytes(cfg, x, batch) / GIB for x in xs], name=f"{cfg.name} ({cfg.attention_kind}, {cfg.dtype})")
    if mark_context is not None:
        fig.add_vline(x=mark_context, line_dash="dot", annotation_text=f"{mark_context:,} tokens")
    if budget_bytes is not None and budget_bytes > 0:
        fig.add_hline(y=budget_bytes / GIB, line_dash="dash", line_color="gray", annotation_text="memory left for the cache")
    fig.update_layout(
        title=f"KV cache size vs context (batch {batch})", xaxis_title="context length (tokens)",
        yaxis_title="GiB (2^30 bytes)", legend=dict(orientation="h", y=-0.25), margin=dict(t=50, b=10), height=420,
    )
    return fig


def per_layer_figure(budget: KVBudget) -> go.Figure:
    """Bytes each layer holds: equal bars for plain attention, short and tall bars for local/global hybrids."""
    layers = list(range(len(budget.layer_bytes)))
    colors = ["#1f77b4" if budget.config.layer_window(i) is None else "#ff7f0e" for i in layers]
    fig = go.Figure(go.Bar(
        x=layers, y=[b / MIB for b in budget.layer_bytes], marker_color=colors,
        customdata=budget.layer_tokens, hovertemplate="layer %{x}: %{y:,.3f} MiB, %{customdata:,} tokens<extra></extra>",
    ))
    fig.update_layout(
        title="Per layer (blue: global, orange: sliding window)", xaxis_title="layer", yaxis_title="MiB (2^20 bytes)",
        margin=dict(t=50, b=10), height=320,
    )
    return fig


def paged_figure(view: PagedView) -> go.Figure:
    """Used bytes, paged allocation (rounded up to blocks) and flat pre-allocation of the maximum length."""
    labels = ["tokens actually held", f"paged: blocks of {view.block_tokens}", "flat: pre-allocated max length"]
    values = [view.used_bytes, view.paged_bytes, view.flat_bytes]
    fig = go.Figure(go.Bar(x=labels, y=[v / MIB for v in values], marker_color=["#2ca02c", "#1f77b4", "#d62728"],
                           text=[f"{v / MIB:,.1f} MiB" for v in values], textposition="outside"))
    fig.update_layout(title="Paged blocks vs a flat buffer", yaxis_title="MiB (2^20 bytes)", margin=dict(t=50, b=10), height=340)
    return fig
