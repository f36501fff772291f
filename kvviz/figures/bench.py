"""Figures for "Measured speed-up": per-token latency, cumulative time, speed-up vs length, the two-roof
roofline with every measured pass, and batched decode.

Input: kvviz.bench_records.BenchResult / kvviz.roofline.BatchSweep (plain numbers). Output: plotly figures.
No Streamlit, no torch.
"""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from kvviz import roofline
from kvviz.bench_records import BenchResult
from kvviz.bench_tables import pass_points

COLORS = {
    "no_cache": "#d62728",
    "dynamic": "#1f77b4",
    "static": "#17becf",
    "static_compiled": "#bcbd22",
    "preallocated": "#2ca02c",
    "int8": "#8c564b",
    "generate_cache": "#9467bd",
    "generate_no_cache": "#ff7f0e",
}
KIND_COLORS = {"prefill": "#ff7f0e", "uncached": "#d62728", "cached decode": "#2ca02c",
               "cached decode, int8 weights": "#8c564b"}
REFERENCE_DASH = "dot"  # the model.generate references are drawn dotted
ROOF_COLOR = "#7f7f7f"
COMPUTE_COLOR = "#e377c2"  # readable on light and dark themes


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
        fig.add_scatter(x=np.arange(1, len(token_ms) + 1), y=token_ms, name=mode.label, mode="lines",
                        line=_line(mode.mode, mode.is_reference))
    return _layout(fig, "Latency per generated token (median over rounds)",
                   "generated token (1 = prefill pass)", "milliseconds", log_y)


def cumulative_figure(result: BenchResult) -> go.Figure:
    """Time to have generated k tokens (the estimator's time): uncached latencies add up to a bending curve."""
    fig = go.Figure()
    for mode in result.modes:
        cumulative_s = mode.median_time_to_k_ms() / 1000.0
        fig.add_scatter(x=np.arange(1, len(cumulative_s) + 1), y=cumulative_s, name=mode.label, mode="lines",
                        line=_line(mode.mode, mode.is_reference))
    return _layout(fig, "Time to generate k tokens (median over rounds)", "tokens generated", "seconds")


def speedup_figure(result: BenchResult) -> go.Figure:
    """The estimator after k tokens for each cached mode, against the op-count ratio."""
    fig = go.Figure()
    for name in ("dynamic", "static", "preallocated", "int8", "generate_cache"):
        if result.has(name):
            speedup = result.speedup_by_length(name)
            fig.add_scatter(x=np.arange(1, len(speedup) + 1), y=speedup, name=f"measured: {result.mode(name).label}",
                            mode="lines", line=_line(name, result.mode(name).is_reference))
    ks, ratios = zip(*result.op_ratio)
    fig.add_scatter(x=list(ks), y=list(ratios), name="theory: op-count ratio (no cache / cache)", mode="lines",
                    line=dict(color=ROOF_COLOR, dash="dash", width=3))
    return _layout(fig, "Speed-up over no cache vs generated length", "tokens generated",
                   "times faster (log scale)", log_y=True)


def _roof_traces(fig: go.Figure, roofs: roofline.Roofs, lo: float, hi: float) -> None:
    intensity = np.geomspace(lo, hi, 200)
    memory = roofs.bandwidth_bytes_per_s * intensity
    fig.add_scatter(x=intensity, y=np.minimum(memory, roofs.peak_flops) / 1e9, mode="lines",
                    name=f"memory roof: {roofs.bandwidth_bytes_per_s / 1e9:.1f} GB/s read x intensity",
                    line=dict(color=ROOF_COLOR, width=3))
    ridge = roofs.ridge_flop_per_byte
    fig.add_scatter(x=[ridge, hi], y=[roofs.peak_flops / 1e9] * 2, mode="lines",
                    name=f"compute roof: {roofs.peak_flops / 1e9:.0f} GFLOP/s (large matmul)",
                    line=dict(color=COMPUTE_COLOR, width=3))


def roofline_figure(result: BenchResult) -> go.Figure:
    """Two roofs measured on this machine and every measured pass at its arithmetic intensity (log-log)."""
    roofs = roofline.Roofs(result.peak_flops, result.median_read_bytes_per_s)
    points = pass_points(result)
    intensities = [p.intensity for p in points] + [roofs.ridge_flop_per_byte]
    fig = go.Figure()
    _roof_traces(fig, roofs, min(intensities) / 3, max(intensities) * 3)
    for kind, color in KIND_COLORS.items():
        chosen = [p for p in points if p.kind == kind]
        if chosen:
            fig.add_scatter(x=[p.intensity for p in chosen], y=[p.achieved_flops / 1e9 for p in chosen],
                            mode="markers", name=f"measured: {kind}", text=[p.label for p in chosen],
                            marker=dict(color=color, size=11), hovertemplate="%{text}<br>%{x:.2f} FLOP/byte, "
                            "%{y:.1f} GFLOP/s<extra></extra>")
    verdict = result.roofline_verdict("preallocated")
    note = ("run disturbed: a round beat its own probe" if verdict.disturbed
            else "no decode pass" if not verdict.fractions
            else "weights in cache" if verdict.fraction is None else f"decode {verdict.fraction:.0%} of read roof")
    above = sum(p.achieved_flops > roofs.attainable_flops(p.intensity) * 1.05 for p in points)
    if above:
        note += f"; {above} pass(es) above a roof"
    fig.update_layout(
        title=f"Roofline, {result.machine.threads} thread(s): {note}",
        xaxis=dict(title="arithmetic intensity (FLOP per byte moved from memory)", type="log"),
        yaxis=dict(title="GFLOP/s achieved", type="log"),
        legend=dict(orientation="h", y=-0.3), margin=dict(t=50, b=10), height=430,
    )
    return fig


def batch_figure(sweep: roofline.BatchSweep) -> go.Figure:
    """Left: tokens/s vs batch, with the two ceilings. Right: bytes one decode step reads, weights vs K/V."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=("decode tokens/s vs batch", "bytes read per decode step"))
    batches = [p.step.batch for p in sweep.points]
    roofs = sweep.roofs
    memory_ceiling = [p.step.batch * roofs.bandwidth_bytes_per_s / (p.step.weight_bytes + p.step.kv_bytes)
                      for p in sweep.points]
    compute_ceiling = [p.step.batch * roofs.peak_flops / p.step.flops for p in sweep.points]
    fig.add_scatter(x=batches, y=[p.tokens_per_s for p in sweep.points], mode="lines+markers", name="measured",
                    line=dict(color=COLORS["preallocated"], width=3), row=1, col=1)
    fig.add_scatter(x=batches, y=memory_ceiling, mode="lines", name="memory ceiling (read bandwidth / bytes)",
                    line=dict(color=ROOF_COLOR, dash="dash"), row=1, col=1)
    fig.add_scatter(x=batches, y=compute_ceiling, mode="lines", name="compute ceiling (peak / FLOPs)",
                    line=dict(color=COMPUTE_COLOR, dash="dash"), row=1, col=1)
    fig.add_bar(x=batches, y=[p.step.weight_bytes / 1e6 for p in sweep.points], name="weights (read once per step)",
                marker_color="#1f77b4", row=1, col=2)
    fig.add_bar(x=batches, y=[p.step.kv_bytes / 1e6 for p in sweep.points], name="K/V (every sequence its own)",
                marker_color="#d62728", row=1, col=2)
    fig.update_layout(barmode="stack", height=420, margin=dict(t=60, b=10), legend=dict(orientation="h", y=-0.25),
                      title=f"Batched decode at context {sweep.context}: K/V reads overtake the weights from batch "
                            f"{sweep.kv_overtakes_at_batch}")
    fig.update_xaxes(type="log", tickvals=batches, title_text="batch (sequences decoded together)", row=1, col=1)
    fig.update_yaxes(type="log", title_text="tokens/s (all sequences)", row=1, col=1)
    fig.update_xaxes(type="category", title_text="batch", row=1, col=2)
    fig.update_yaxes(title_text="MB per step", row=1, col=2)
    return fig
