"""Figures for "Measured speed-up": per-token latency, cumulative time, speed-up vs length, roofline.

Input: a kvviz.bench.BenchResult (plain numbers). Output: plotly figures. No Streamlit, no torch.
"""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from kvviz.bench import BenchResult

COLORS = {
    "no_cache": "#d62728",
    "dynamic": "#1f77b4",
    "preallocated": "#2ca02c",
    "generate_cache": "#9467bd",
    "generate_no_cache": "#ff7f0e",
}
REFERENCE_DASH = "dot"  # the model.generate references are drawn dotted
OP_RATIO_COLOR = "#7f7f7f"


def _layout(fig: go.Figure, title: str, x_title: str, y_title: str, log_y: bool = False) -> go.Figure:
    fig.update_layout(
        title=title, xaxis_title=x_title, yaxis_title=y_title, yaxis_type="log" if log_y else "linear",
        legend=dict(orientation="h", y=-0.25), margin=dict(t=50, b=10), height=400,
    )
    return fig


def _line(mode: str, is_reference: bool) -> dict:
    return dict(color=COLORS.get(mode, "#333333"), dash=REFERENCE_DASH if is_reference else "solid")


def latency_figure(result: BenchResult, log_y: bool = True) -> go.Figure:
    """Median latency of the pass that picked each generated token: the cached lines stay flat, the uncached
    ones climb, because pass k re-processes all P + k - 1 tokens. Token 1 is the prefill of the prompt."""
    fig = go.Figure()
    for mode in result.modes:
        token_ms = mode.median_token_ms
        ks = np.arange(1, len(token_ms) + 1)
        fig.add_scatter(x=ks, y=token_ms, name=mode.label, mode="lines", line=_line(mode.mode, mode.is_reference))
    return _layout(fig, "Latency per generated token (median over repeats)",
                   "generated token (1 = prefill pass)", "milliseconds", log_y)


def cumulative_figure(result: BenchResult) -> go.Figure:
    """Time to have generated k tokens: the growing uncached latencies add up to a curve that bends upward."""
    fig = go.Figure()
    for mode in result.modes:
        cumulative_s = np.cumsum(mode.median_token_ms) / 1000.0
        ks = np.arange(1, len(cumulative_s) + 1)
        fig.add_scatter(x=ks, y=cumulative_s, name=mode.label, mode="lines",
                        line=_line(mode.mode, mode.is_reference))
    return _layout(fig, "Cumulative time", "tokens generated", "seconds")


def speedup_figure(result: BenchResult) -> go.Figure:
    """Measured speed-up of each cached mode over no cache after k tokens, against the op-count ratio."""
    fig = go.Figure()
    for name in ("dynamic", "preallocated", "generate_cache"):
        if result.has(name):
            speedup = result.speedup_by_length(name)
            fig.add_scatter(x=np.arange(1, len(speedup) + 1), y=speedup, name=f"measured: {result.mode(name).label}",
                            mode="lines", line=_line(name, result.mode(name).is_reference))
    ks, ratios = zip(*result.op_ratio)
    fig.add_scatter(x=list(ks), y=list(ratios), name="theory: op-count ratio (no cache / cache)", mode="lines",
                    line=dict(color=OP_RATIO_COLOR, dash="dash", width=3))
    return _layout(fig, "Speed-up over no cache vs generated length", "tokens generated",
                   "times faster (log scale)", log_y=True)


def roofline_figure(result: BenchResult) -> go.Figure:
    """Decode tokens/s of each cached mode next to the memory-bandwidth ceiling."""
    roof = result.roofline("preallocated")
    names = [name for name in ("dynamic", "preallocated", "generate_cache") if result.has(name)]
    labels = [result.mode(name).label for name in names] + ["Roofline: bandwidth / bytes per token"]
    values = [result.mode(name).median_decode_tokens_per_s for name in names] + [roof.roofline_tokens_per_s]
    colors = [COLORS[name] for name in names] + [OP_RATIO_COLOR]
    text = [f"{v:.1f} tok/s ({v / roof.roofline_tokens_per_s:.0%})" for v in values]
    fig = go.Figure(go.Bar(x=values, y=labels, orientation="h", marker_color=colors, text=text,
                           textposition="auto"))
    fig.update_layout(
        title=f"Decode speed vs the memory roofline ({roof.bytes_per_token / 1e6:.2f} MB read per token at "
              f"{result.bandwidth.bytes_per_s / 1e9:.1f} GB/s)",
        xaxis_title="decode tokens per second (prefill excluded)", margin=dict(t=50, b=10, l=10), height=300,
        yaxis=dict(autorange="reversed"),
    )
    return fig
