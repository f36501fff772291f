"""Figures for "Count the work": cumulative ops with vs without the cache, their ratio, per-component bars.

Input: the plain records of kvviz.ops (PassCounts, curve points). Output: plotly figures. No Streamlit.
"""
from __future__ import annotations

from typing import Sequence

import plotly.graph_objects as go

from kvviz.figures import readable
from kvviz.ops import COMPONENT_LABELS, COMPONENTS, FLOPS_PER_OP, PassCounts

CACHED_COLOR, UNCACHED_COLOR = "#1f77b4", "#d62728"
QUANTITIES = {
    "total": ("All matmul work", lambda c: c.total_ops),
    "attention": ("Attention (QK^T + AV)", lambda c: c.attention_ops),
    "linear": ("Projections + MLP", lambda c: c.linear_ops),
    **{k: (COMPONENT_LABELS[k], (lambda k: lambda c: c.ops(k))(k)) for k in COMPONENTS},
}

Point = tuple[int, PassCounts, PassCounts]  # (passes so far, cached cumulative, uncached cumulative)


def _readable_axes(fig: go.Figure) -> go.Figure:
    """Ticks as 6x10^11, never plotly's default '600B' (billion? bytes?); hover shows the exact integer; every
    text at least the shared minimum size. A log axis draws its powers of ten only (no stacked 2..9 labels)."""
    fig.update_yaxes(exponentformat="power", separatethousands=True)
    if fig.layout.yaxis.type == "log":
        fig.update_yaxes(dtick=1)
    fig.update_traces(hovertemplate="%{x:,}: %{y:,}<extra>%{fullData.name}</extra>")
    return readable(fig)


def _scale_title(unit: str, log_y: bool) -> str:
    """The axis says when it is logarithmic: a 100x saving must never look like 3x unannounced."""
    return f"{unit} (log scale)" if log_y else unit


_LEGEND = dict(orientation="h", x=0, xanchor="left", y=1.0, yanchor="bottom")  # above the plot, under the title


def _unit(flops: bool) -> tuple[int, str]:
    return (FLOPS_PER_OP, "FLOPs") if flops else (1, "ops (multiply-adds)")


def cumulative_figure(points: Sequence[Point], quantity: str = "total", flops: bool = False, log_y: bool = False) -> go.Figure:
    """Running totals as the generation grows: the cached line grows ~linearly, the uncached one faster."""
    label, get = QUANTITIES[quantity]
    scale, unit = _unit(flops)
    ks = [k for k, _, _ in points]
    fig = go.Figure()
    fig.add_scatter(x=ks, y=[scale * get(u) for _, _, u in points], name="without cache (recompute all)",
                    line=dict(color=UNCACHED_COLOR))
    fig.add_scatter(x=ks, y=[scale * get(c) for _, c, _ in points], name="with KV cache",
                    line=dict(color=CACHED_COLOR))
    fig.update_layout(
        title=f"{label}: cumulative {unit}", xaxis_title="forward passes so far (= new tokens generated)",
        yaxis_title=_scale_title(unit, log_y), yaxis_type="log" if log_y else "linear", legend=_LEGEND,
        margin=dict(t=90, b=10), height=400,
    )
    return _readable_axes(fig)


def ratio_figure(points: Sequence[Point]) -> go.Figure:
    """How many times more work without the cache, cumulative, for attention, projections+MLP and the total."""
    ks = [k for k, _, _ in points]
    fig = go.Figure()
    for quantity in ("attention", "linear", "total"):
        label, get = QUANTITIES[quantity]
        fig.add_scatter(x=ks, y=[get(u) / get(c) for _, c, u in points], name=label)
    fig.update_layout(
        title="Without cache / with cache (cumulative)", xaxis_title="forward passes so far",
        yaxis_title="times more work", legend=_LEGEND, margin=dict(t=90, b=10), height=400,
    )
    return readable(fig)


def breakdown_figure(cached: PassCounts, uncached: PassCounts, flops: bool = False, log_y: bool = False) -> go.Figure:
    """Per-component totals, side by side: where does the cache save work, and where does it save nothing?"""
    scale, unit = _unit(flops)
    labels = [COMPONENT_LABELS[c] for c in COMPONENTS]
    fig = go.Figure()
    fig.add_bar(x=labels, y=[scale * uncached.ops(c) for c in COMPONENTS], name="without cache",
                marker_color=UNCACHED_COLOR)
    fig.add_bar(x=labels, y=[scale * cached.ops(c) for c in COMPONENTS], name="with KV cache",
                marker_color=CACHED_COLOR)
    fig.update_layout(
        barmode="group", title=f"Whole generation, per component ({unit})", yaxis_title=_scale_title(unit, log_y),
        yaxis_type="log" if log_y else "linear", legend=_LEGEND, margin=dict(t=90, b=10), height=440,
    )
    return _readable_axes(fig)


def per_step_figure(indices: Sequence[int], cached: Sequence[PassCounts], uncached: Sequence[PassCounts]) -> go.Figure:
    """Ops of each single forward pass (not cumulative): flat with the cache, growing without it."""
    fig = go.Figure()
    fig.add_bar(x=list(indices), y=[u.total_ops for u in uncached], name="without cache", marker_color=UNCACHED_COLOR)
    fig.add_bar(x=list(indices), y=[c.total_ops for c in cached], name="with KV cache", marker_color=CACHED_COLOR)
    fig.update_layout(
        barmode="group", title="Ops per forward pass (1 = the prefill)", xaxis_title="pass",
        yaxis_title="ops (multiply-adds)", legend=_LEGEND, margin=dict(t=90, b=10), height=380,
    )
    return _readable_axes(fig)
