"""Figures for "Count the work": cumulative ops with vs without the cache, their ratio, per-component bars.

Input: the plain records of kvviz.ops (PassCounts, curve points). Output: plotly figures. No Streamlit.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence

import plotly.graph_objects as go

from kvviz.figures import BLUE, VERMILLION, counted_axis, legend_entries, log_ticks, readable, top_legend
from kvviz.i18n import N_, _
from kvviz.ops import COMPONENT_LABELS, COMPONENTS, FLOPS_PER_OP, HybridTokenCosts, PassCounts

CACHED_COLOR, UNCACHED_COLOR = BLUE, VERMILLION
QUANTITIES = {  # key -> (English label, marked for the catalog: show it as _(label); the value it draws)
    "total": (N_("All matmul work"), lambda c: c.total_ops),
    "attention": (N_("Attention (QK^T + AV)"), lambda c: c.attention_ops),
    "linear": (N_("Projections + MLP"), lambda c: c.linear_ops),
    **{k: (COMPONENT_LABELS[k], operator.methodcaller("ops", k)) for k in COMPONENTS},
}

Point = tuple[int, PassCounts, PassCounts]  # (passes so far, cached cumulative, uncached cumulative)


def _readable_axes(fig: go.Figure) -> go.Figure:
    """Counts drawn in plain words a room can read: the y values divided by the language's scale named on the
    axis ("ops (multiply-adds), billions"; in Chinese by 万 or 亿: "…，单位：亿"): ticks 2, 4, 6 ... never
    "0.2x10^10" with a tiny superscript, never plotly's '600B' (billion? bytes?). Hover shows the count in the
    axis's words and the exact integer (kvviz.figures.counted_axis).
    A log axis ticks at powers of ten only."""
    counted_axis(fig)
    if fig.layout.yaxis.type == "log":
        fig.update_yaxes(**log_ticks(v for t in fig.data for v in t.y))
    legend, top = top_legend(legend_entries(fig))
    fig.update_layout(legend=legend, margin_t=top, title_y=0.99, title_yanchor="top")
    return readable(fig)


def _scale_title(unit: str, log_y: bool) -> str:
    """The axis says when it is logarithmic: a 100x saving must never look like 3x unannounced."""
    return _("{unit} (log scale)").format(unit=unit) if log_y else unit


def _unit(flops: bool) -> tuple[int, str]:
    return (FLOPS_PER_OP, "FLOPs") if flops else (1, _("ops (multiply-adds)"))


def cumulative_figure(
    points: Sequence[Point], quantity: str = "total", flops: bool = False, log_y: bool = False
) -> go.Figure:
    """Running totals as the generation grows: the cached line grows ~linearly, the uncached one faster."""
    label, get = QUANTITIES[quantity]
    label = _(label)
    scale, unit = _unit(flops)
    ks = [k for k, _c, _u in points]
    fig = go.Figure()
    fig.add_scatter(
        x=ks,
        y=[scale * get(u) for _k, _c, u in points],
        name=_("without cache (recompute all)"),
        line=dict(color=UNCACHED_COLOR),
    )
    fig.add_scatter(
        x=ks, y=[scale * get(c) for _k, c, _u in points], name=_("with KV cache"), line=dict(color=CACHED_COLOR)
    )
    fig.update_layout(
        title=_("{label}: cumulative {unit}").format(label=label, unit=unit),
        xaxis_title=_("forward passes so far (= new tokens generated)"),
        yaxis_title=_scale_title(unit, log_y),
        yaxis_type="log" if log_y else "linear",
        margin=dict(t=90, b=10),
        height=400,
    )
    return _readable_axes(fig)


def ratio_figure(points: Sequence[Point]) -> go.Figure:
    """How many times more work without the cache, cumulative, for attention, projections+MLP and the total."""
    ks = [k for k, _c, _u in points]
    fig = go.Figure()
    for quantity in ("attention", "linear", "total"):
        label, get = QUANTITIES[quantity]
        fig.add_scatter(x=ks, y=[get(u) / get(c) for _k, c, u in points], name=_(label))
    legend, top = top_legend(legend_entries(fig))
    fig.update_layout(
        title=dict(text=_("Without cache / with cache (cumulative)"), y=0.99, yanchor="top"),
        xaxis_title=_("forward passes so far"),
        yaxis_title=_("times more work"),
        legend=legend,
        margin=dict(t=top, b=10),
        height=400,
    )
    return readable(fig)


def breakdown_figure(cached: PassCounts, uncached: PassCounts, flops: bool = False, log_y: bool = False) -> go.Figure:
    """Per-component totals, side by side: where does the cache save work, and where does it save nothing?"""
    scale, unit = _unit(flops)
    labels = [_(COMPONENT_LABELS[c]) for c in COMPONENTS]
    fig = go.Figure()
    fig.add_bar(
        x=labels, y=[scale * uncached.ops(c) for c in COMPONENTS], name=_("without cache"), marker_color=UNCACHED_COLOR
    )
    fig.add_bar(
        x=labels, y=[scale * cached.ops(c) for c in COMPONENTS], name=_("with KV cache"), marker_color=CACHED_COLOR
    )
    fig.update_layout(
        barmode="group",
        title=_("Whole generation, per component ({unit})").format(unit=unit),
        yaxis_title=_scale_title(unit, log_y),
        yaxis_type="log" if log_y else "linear",
        margin=dict(t=90, b=10),
        height=440,
    )
    return _readable_axes(fig)


def per_step_figure(indices: Sequence[int], cached: Sequence[PassCounts], uncached: Sequence[PassCounts]) -> go.Figure:
    """Ops of each single forward pass (not cumulative): flat with the cache, growing without it."""
    fig = go.Figure()
    fig.add_bar(
        x=list(indices), y=[u.total_ops for u in uncached], name=_("without cache"), marker_color=UNCACHED_COLOR
    )
    fig.add_bar(x=list(indices), y=[c.total_ops for c in cached], name=_("with KV cache"), marker_color=CACHED_COLOR)
    fig.update_layout(
        barmode="group",
        title=_("Ops per forward pass (1 = the prefill)"),
        xaxis_title=_("pass"),
        yaxis_title=_("ops (multiply-adds)"),
        margin=dict(t=90, b=10),
        height=380,
    )
    return _readable_axes(fig)


def hybrid_token_figure(costs: HybridTokenCosts) -> go.Figure:
    """One decode token's ops per layer against its position: the attention layer's line climbs one row at a time,
    the linear layer's stays flat; a dotted line where the attention layer's step starts to cost more."""
    x = list(costs.positions)
    fig = go.Figure(
        [
            go.Scatter(
                x=x,
                y=list(costs.attention_ops),
                name=_("attention layer: QK^T + AV (grows)"),
                line={"color": UNCACHED_COLOR, "width": 3},
            ),
            go.Scatter(
                x=x,
                y=[costs.linear_ops] * len(x),
                name=_("linear-attention layer: state + conv (fixed)"),
                line={"color": CACHED_COLOR, "width": 3, "dash": "dash"},
            ),
        ]
    )
    if costs.linear_cheaper_from < len(x):
        fig.add_vline(x=costs.linear_cheaper_from, line={"dash": "dot", "color": "gray"})
    fig.update_layout(
        title=_("One decode token, per layer: mixing in the past"),
        height=360,
        xaxis_title=_("position of the token"),
        yaxis_title=_("ops (multiply-adds)"),
    )
    return _readable_axes(fig)
