"""Figures of the eviction lab: quality vs the fraction of KV bytes kept (a line per policy, a point per quantized
format), the token grid (kept / evicted / sink per layer and KV head), and the bytes and rows per layer.

Plain records from `kvviz.internals.records` in, plotly figures out. No Streamlit, no torch. A legend holds at
most MAX_LEGEND_ENTRIES lines: the caller picks which policies to draw; the full cache and the quantized formats are
labelled on the chart instead.
"""
from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go

from kvviz.figures import BLUE, MARKER_COLOR, MAX_LEGEND_ENTRIES, ORANGE, readable
from kvviz.i18n import _
from kvviz.internals.eviction import policy_label, policy_short
from kvviz.internals.records import INTERVAL_Z, EvictionGrid, EvictionPoint, EvictionSweep
from kvviz.memory.units import binary_unit

POLICY_COLORS = {"random": "#7f7f7f", "recent": "#9467bd", "streaming": "#1f77b4", "h2o": "#d62728", "h2o_heavy": "#ff9896",
                 "tova": "#8c564b", "snapkv": "#2ca02c", "key_norm": "#e377c2"}
QUANT_COLOR = ORANGE
KEPT_COLOR, EVICTED_COLOR, SINK_COLOR = BLUE, "#e8e8e8", ORANGE
METRICS = ("copy", "loss")


def _layout(fig: go.Figure, title: str, height_px: int) -> go.Figure:
    fig.update_layout(title=dict(text=title, y=0.98, yanchor="top"), height=height_px,
                      margin=dict(l=10, r=10, t=90, b=10),
                      legend=dict(orientation="h", x=0, xanchor="left", y=1.02, yanchor="bottom"))
    return readable(fig)


def _value(p: EvictionPoint, metric: str) -> float:
    return 100 * p.copy_accuracy if metric == "copy" else p.loss_change_nats


def _half_width(p: EvictionPoint, metric: str) -> float:
    """The 95% interval's half-width, in the chart's unit."""
    return INTERVAL_Z * (100 * p.copy_se if metric == "copy" else p.loss_change_se)


def quality_figure(sweep: EvictionSweep, policies: Sequence[str], metric: str = "copy") -> go.Figure:
    """metric "copy": copy-test accuracy (%); "loss": change in next-token loss (nats/token) vs the full cache.
    x: % of the full cache's bytes kept, measured from the pruned (or quantized) tensors."""
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {METRICS}")
    fig = go.Figure()
    for policy in list(policies)[:MAX_LEGEND_ENTRIES]:
        curve = sorted(sweep.curve(policy), key=lambda p: p.kv_bytes_kept)
        fig.add_scatter(x=[100 * p.bytes_fraction for p in curve], y=[_value(p, metric) for p in curve],
                        error_y=dict(type="data", array=[_half_width(p, metric) for p in curve], thickness=1.5),
                        mode="lines+markers", name=policy_short(policy),
                        line=dict(color=POLICY_COLORS.get(policy), width=3),
                        customdata=[[p.keep_percent, p.rows_kept, p.kv_bytes_kept] for p in curve],
                        hovertemplate=(policy_short(policy) + ": %{customdata[0]}% · %{customdata[1]} "
                                       + _("rows") + " · %{customdata[2]:,} B · %{y:.3f}<extra></extra>"))
    quantized = sweep.quantized
    fig.add_scatter(x=[100 * q.bytes_fraction for q in quantized], y=[_value(q, metric) for q in quantized],
                    mode="markers+text", text=[q.policy for q in quantized], textposition="top center",
                    marker=dict(symbol="diamond", size=14, color=QUANT_COLOR), showlegend=False,
                    customdata=[q.kv_bytes_kept for q in quantized],
                    hovertemplate="%{text}: %{customdata:,} B · %{y:.3f}<extra></extra>")
    full = sweep.point("full", 100)
    fig.add_hline(y=_value(full, metric), line=dict(color=MARKER_COLOR, dash="dot"),
                  annotation_text=_("full cache"), annotation_position="bottom left")
    fig.update_xaxes(title=_("% of the full cache's KV bytes kept (measured)"), range=[0, 104], ticksuffix="%")
    if metric == "copy":
        fig.update_yaxes(title=_("copy-test accuracy (%)"), range=[0, 112])  # room for the formats' labels
        title = _("Copy test vs bytes kept")
    else:
        fig.update_yaxes(title=_("change in next-token loss (nats/token)"), zeroline=True)
        title = _("Loss change vs bytes kept (ordinary text)")
    return _layout(fig, title, 420)


def grid_figure(grid: EvictionGrid) -> go.Figure:
    """One row per (layer, KV head), one column per position of the span: kept, evicted, or a kept sink row
    (StreamingLLM's first S). The x axis shows the span's tokens."""
    sinks = grid.sink_tokens if grid.policy == "streaming" else 0
    z, labels, hover = [], [], []
    for layer in grid.layers:
        for head, kept in enumerate(layer.kept):
            z.append([(2 if pos < sinks else 1) if k else 0 for pos, k in enumerate(kept)])
            labels.append(_("layer {layer} · KV head {head}").format(layer=layer.layer, head=head))
            hover.append([repr(t)[1:-1] for t in grid.tokens])
    states = [_("evicted"), _("kept"), _("sink (kept)")]
    fig = go.Figure(go.Heatmap(
        z=z, x=list(range(len(grid.tokens))), y=labels, zmin=0, zmax=2, showscale=False, xgap=1, ygap=2,
        colorscale=[[0, EVICTED_COLOR], [0.33, EVICTED_COLOR], [0.34, KEPT_COLOR], [0.66, KEPT_COLOR],
                    [0.67, SINK_COLOR], [1, SINK_COLOR]],
        customdata=[[states[v] for v in row] for row in z], text=hover,
        hovertemplate="%{y}, " + _("position") + " %{x} '%{text}': %{customdata}<extra></extra>"))
    fig.update_xaxes(tickvals=list(range(len(grid.tokens))), ticktext=[repr(t)[1:-1] for t in grid.tokens],
                     tickangle=-90, title=_("position in the span (its token below)"))
    fig.update_yaxes(autorange="reversed")
    title = _("{policy} at {keep}%: blue kept, grey evicted{sink}").format(
        policy=policy_label(grid.policy), keep=grid.keep_percent,
        sink=_(", orange the sink rows") if sinks else "")
    return _layout(fig, title, 160 + 28 * len(z) + 90)


def layer_bytes_figure(grid: EvictionGrid) -> go.Figure:
    """Bytes kept and evicted per layer (one sequence), with the rows each KV head keeps."""
    unit, size = binary_unit(max([la.kv_bytes_full for la in grid.layers] + [1]))
    x = [str(la.layer) for la in grid.layers]
    fig = go.Figure()
    fig.add_bar(x=x, y=[la.kv_bytes_kept / size for la in grid.layers], name=_("kept"), marker_color=KEPT_COLOR,
                text=[_("{rows} rows").format(rows=la.rows_kept) for la in grid.layers], textposition="inside",
                customdata=[la.kv_bytes_kept for la in grid.layers],
                hovertemplate=_("layer") + " %{x}: %{customdata:,} B<extra></extra>")
    fig.add_bar(x=x, y=[(la.kv_bytes_full - la.kv_bytes_kept) / size for la in grid.layers], name=_("evicted"),
                marker_color=EVICTED_COLOR, customdata=[la.kv_bytes_full - la.kv_bytes_kept for la in grid.layers],
                hovertemplate=_("layer") + " %{x}: %{customdata:,} B<extra></extra>")
    fig.update_layout(barmode="stack", legend_traceorder="normal")
    fig.update_xaxes(title=_("layer"), type="category")
    fig.update_yaxes(title=_("{unit}, one span (1 {unit} = {size:,} B)").format(unit=unit, size=size)
                     if size > 1 else _("bytes, one span"), rangemode="tozero")
    return _layout(fig, _("Bytes and rows per layer"), 340)
