"""Figures for "Measured speed-up": per-token latency, cumulative time, speed-up vs length, the two-roof
roofline with every measured pass, and batched decode.

Readable from the back of a room: at most four legend entries per chart (the caller picks which modes are
drawn, HEADLINE_MODES by default; roofs and ceilings are labelled on the line instead), short legend names,
a log axis only where its title says "log scale", and log axes tick at powers of ten only.

Input: kvviz.speedup.records.BenchResult / kvviz.speedup.roofline.BatchSweep (plain numbers). Output: plotly figures.
No Streamlit, no torch.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from kvviz.figures import (
    BLUE,
    GREEN,
    MAX_LEGEND_ENTRIES,
    ORANGE,
    PURPLE,
    SKY,
    VERMILLION,
    legend_entries,
    log_ticks,
    readable,
    top_legend,
)
from kvviz.i18n import N_, _
from kvviz.speedup import roofline
from kvviz.speedup.records import BenchResult
from kvviz.speedup.tables import pass_points

COLORS = {  # the four headline modes (drawn by default) in Okabe and Ito's colours: apart under colour-vision deficiencies
    "no_cache": VERMILLION,
    "dynamic": BLUE,
    "preallocated": GREEN,
    "int8": ORANGE,
    "static": SKY,
    "static_compiled": PURPLE,
    "generate_cache": "#9467bd",  # the generate() references are dotted (REFERENCE_DASH) as well
    "generate_no_cache": "#8c564b",
}
KIND_COLORS = {"prefill": ORANGE, "uncached": VERMILLION, "cached decode": BLUE, "cached decode, int8 weights": SKY}
KIND_NAMES = {
    "prefill": N_("prefill"),
    "uncached": N_("uncached"),
    "cached decode": N_("cached decode"),
    "cached decode, int8 weights": N_("decode, int8"),
}  # legend names that fit half a chart
# Legend names: short enough that four fit a half-width chart at 14 px (the table keeps the long labels).
SHORT_LABELS = {
    "no_cache": N_("no cache"),
    "dynamic": "DynamicCache",
    "static": "StaticCache",
    "static_compiled": "StaticCache + compile",
    "preallocated": N_("flat cache (fp32)"),
    "int8": N_("flat cache, int8 weights"),
    "generate_cache": "generate(cache)",
    "generate_no_cache": N_("generate(no cache)"),
}  # N_: shown through short_label() in the session's language
# What students just learned first (no cache vs transformers' DynamicCache), then kvviz's flat engine and int8.
HEADLINE_MODES: tuple[str, ...] = ("no_cache", "dynamic", "preallocated", "int8")
REFERENCE_DASH = "dot"  # the model.generate references are drawn dotted
ROOF_COLOR = "#7f7f7f"
COMPUTE_COLOR = "#e377c2"  # readable on light and dark themes


def short_label(mode: str, fallback: str | None = None) -> str:
    """A mode's legend name in the current language (its long label, or the mode, when it has none)."""
    return _(SHORT_LABELS.get(mode, fallback or mode))


def _all(fig: go.Figure, axis: str) -> list[float]:
    return [float(v) for t in fig.data if getattr(t, axis) is not None for v in getattr(t, axis)]


def _layout(fig: go.Figure, title: str, x_title: str, y_title: str, log_y: bool = False) -> go.Figure:
    legend, top = top_legend(legend_entries(fig))
    fig.update_layout(
        title=dict(text=title, y=0.99, yanchor="top"),
        xaxis_title=x_title,
        yaxis_title=_("{title} (log scale)").format(title=y_title) if log_y else y_title,
        yaxis_type="log" if log_y else "linear",
        legend=legend,
        margin=dict(t=top, b=10),
        height=380 + top,
    )
    if log_y:
        fig.update_yaxes(**log_ticks(_all(fig, "y")))  # 1, 2, 5, 10 ...: never stacked minor digits
    return readable(fig)


def _line(mode: str, is_reference: bool) -> dict:
    return dict(color=COLORS.get(mode, "#333333"), dash=REFERENCE_DASH if is_reference else "solid", width=3)


def chosen_modes(result: BenchResult, modes: Sequence[str] | None = None, limit: int = MAX_LEGEND_ENTRIES) -> list[str]:
    """The modes a chart draws: those asked for (HEADLINE_MODES by default) that the run has, at most `limit`."""
    wanted = HEADLINE_MODES if modes is None else modes
    return [m for m in wanted if result.has(m)][:limit]


def latency_figure(result: BenchResult, log_y: bool = True, modes: Sequence[str] | None = None) -> go.Figure:
    """Median latency of the pass that picked each generated token: the cached lines stay flat, the uncached
    ones climb, because pass k re-processes all P + k - 1 tokens. Token 1 is the prefill of the prompt."""
    fig = go.Figure()
    for name in chosen_modes(result, modes):
        mode = result.mode(name)
        token_ms = mode.median_token_ms
        fig.add_scatter(
            x=np.arange(1, len(token_ms) + 1),
            y=token_ms,
            name=short_label(name, mode.label),
            mode="lines",
            line=_line(mode.mode, mode.is_reference),
        )
    return _layout(
        fig,
        _("Latency per token (median of rounds)"),
        _("generated token (1 = prefill pass)"),
        _("milliseconds"),
        log_y,
    )


def cumulative_figure(result: BenchResult, modes: Sequence[str] | None = None) -> go.Figure:
    """Time to have generated k tokens (the estimator's time): uncached latencies add up to a bending curve."""
    fig = go.Figure()
    for name in chosen_modes(result, modes):
        mode = result.mode(name)
        cumulative_s = mode.median_time_to_k_ms() / 1000.0
        fig.add_scatter(
            x=np.arange(1, len(cumulative_s) + 1),
            y=cumulative_s,
            name=short_label(name, mode.label),
            mode="lines",
            line=_line(mode.mode, mode.is_reference),
        )
    return _layout(fig, _("Time to generate k tokens (median)"), _("tokens generated"), _("seconds"))


def speedup_figure(result: BenchResult, modes: Sequence[str] | None = None) -> go.Figure:
    """The estimator after k tokens for each cached mode drawn (at most three), against the op-count ratio."""
    fig = go.Figure()
    cached = [m for m in chosen_modes(result, modes) if m != "no_cache"][: MAX_LEGEND_ENTRIES - 1]
    for name in cached:
        speedup = result.speedup_by_length(name)
        fig.add_scatter(
            x=np.arange(1, len(speedup) + 1),
            y=speedup,
            name=short_label(name),
            mode="lines",
            line=_line(name, result.mode(name).is_reference),
        )
    ks, ratios = zip(*result.op_ratio, strict=True)
    fig.add_scatter(
        x=list(ks),
        y=list(ratios),
        name=_("op-count ratio (theory)"),
        mode="lines",
        line=dict(color=ROOF_COLOR, dash="dash", width=3),
    )
    return _layout(fig, _("Speed-up over no cache"), _("tokens generated"), _("times faster"), log_y=True)


def _roof_traces(fig: go.Figure, roofs: roofline.Roofs, lo: float, hi: float) -> None:
    """The two roofs, labelled where they are drawn (not in the legend, which keeps the measured points)."""
    intensity = np.geomspace(lo, hi, 200)
    memory = roofs.bandwidth_bytes_per_s * intensity
    fig.add_scatter(
        x=intensity,
        y=np.minimum(memory, roofs.peak_flops) / 1e9,
        mode="lines",
        showlegend=False,
        name=_("memory roof"),
        line=dict(color=ROOF_COLOR, width=3),
    )
    ridge = roofs.ridge_flop_per_byte
    fig.add_scatter(
        x=[ridge, hi],
        y=[roofs.peak_flops / 1e9] * 2,
        mode="lines",
        showlegend=False,
        name=_("compute roof"),
        line=dict(color=COMPUTE_COLOR, width=3),
    )
    left = float(np.sqrt(lo * min(ridge, hi)))  # halfway up the slanted roof, on the log axis
    fig.add_annotation(
        x=np.log10(left),
        y=np.log10(roofs.bandwidth_bytes_per_s * left / 1e9),
        xref="x",
        yref="y",
        text=_("memory roof: {gb_s:.1f} GB/s x intensity").format(gb_s=roofs.bandwidth_bytes_per_s / 1e9),
        showarrow=False,
        textangle=-30,
        yshift=18,
        font=dict(color=ROOF_COLOR),
    )
    fig.add_annotation(
        x=np.log10(hi),
        y=np.log10(roofs.peak_flops / 1e9),
        xref="x",
        yref="y",
        xanchor="right",
        yanchor="top",
        showarrow=False,
        font=dict(color=COMPUTE_COLOR),
        text=_("compute roof: {gflop_s:.0f} GFLOP/s").format(gflop_s=roofs.peak_flops / 1e9),
    )


def roofline_figure(result: BenchResult) -> go.Figure:
    """Two roofs measured on this machine and every measured pass at its arithmetic intensity (log-log).

    Arithmetic intensity = FLOPs a pass does / bytes it moves from memory: a one-token decode step (a GEMV:
    matrix x one vector) does 2 FLOPs per 4-byte fp32 weight, about 0.5 FLOP/byte; a pass over many tokens
    (a GEMM: matrix x matrix) reuses each weight for every token, so its intensity grows with the tokens."""
    roofs = roofline.Roofs(result.peak_flops, result.median_read_bytes_per_s)
    points = pass_points(result)
    intensities = [p.intensity for p in points] + [roofs.ridge_flop_per_byte]
    fig = go.Figure()
    _roof_traces(fig, roofs, min(intensities) / 3, max(intensities) * 3)
    for kind, color in KIND_COLORS.items():
        chosen = [p for p in points if p.kind == kind]
        if chosen:
            fig.add_scatter(
                x=[p.intensity for p in chosen],
                y=[p.achieved_flops / 1e9 for p in chosen],
                mode="markers",
                name=_(KIND_NAMES.get(kind, kind)),
                text=[p.label for p in chosen],
                marker=dict(color=color, size=12),
                hovertemplate=_("%{text}<br>%{x:.2f} FLOP/byte, %{y:.1f} GFLOP/s<extra></extra>"),
            )
    verdict = result.roofline_verdict("preallocated")
    note = (
        _("run disturbed: a round beat its own probe")
        if verdict.disturbed
        else _("no decode pass")
        if not verdict.fractions
        else _("weights in cache")
        if verdict.fraction is None
        else _("decode {fraction:.0%} of read roof").format(fraction=verdict.fraction)
    )
    above = sum(p.achieved_flops > roofs.attainable_flops(p.intensity) * 1.05 for p in points)
    if above:
        note = _("{note}; {above} pass(es) above a roof").format(note=note, above=above)
    legend, top = top_legend(legend_entries(fig))
    title = _("Roofline (log-log), {threads} thread(s): {note}").format(threads=result.machine.threads, note=note)
    fig.update_layout(
        title=dict(text=title, y=0.99, yanchor="top"),
        xaxis=dict(title=_("arithmetic intensity, FLOP per byte (log scale)"), **log_ticks(_all(fig, "x"))),
        yaxis=dict(title=_("GFLOP/s achieved (log scale)"), **log_ticks(_all(fig, "y"))),
        legend=legend,
        margin=dict(t=top, b=10),
        height=400 + top,
    )
    return readable(fig)


def batch_figure(sweep: roofline.BatchSweep) -> go.Figure:
    """Left: tokens/s vs batch, with the two ceilings. Right: bytes one decode step reads, weights vs K/V."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=(_("decode tokens/s vs batch"), _("bytes read per decode step")))
    memory_name, compute_name = _("memory ceiling"), _("compute ceiling")
    batches = [p.step.batch for p in sweep.points]
    roofs = sweep.roofs
    memory_ceiling = [
        p.step.batch * roofs.bandwidth_bytes_per_s / (p.step.weight_bytes + p.step.kv_bytes) for p in sweep.points
    ]
    compute_ceiling = [p.step.batch * roofs.peak_flops / p.step.flops for p in sweep.points]
    fig.add_scatter(
        x=batches,
        y=[p.tokens_per_s for p in sweep.points],
        mode="lines+markers",
        name=_("measured"),
        line=dict(color=COLORS["preallocated"], width=3),
        row=1,
        col=1,
    )
    fig.add_scatter(
        x=batches,
        y=memory_ceiling,
        mode="lines+text",
        name=memory_name,
        showlegend=False,
        text=[""] * (len(batches) - 1) + [memory_name],
        textposition="top left",
        textfont=dict(color=ROOF_COLOR),
        line=dict(color=ROOF_COLOR, dash="dash"),
        row=1,
        col=1,
    )
    fig.add_scatter(
        x=batches,
        y=compute_ceiling,
        mode="lines+text",
        name=compute_name,
        showlegend=False,
        text=[""] * (len(batches) - 1) + [compute_name],
        textposition="bottom left",
        textfont=dict(color=COMPUTE_COLOR),
        line=dict(color=COMPUTE_COLOR, dash="dash"),
        row=1,
        col=1,
    )
    fig.add_bar(
        x=batches,
        y=[p.step.weight_bytes / 1e6 for p in sweep.points],
        name=_("weights (read once per step)"),
        marker_color=BLUE,
        row=1,
        col=2,
    )
    fig.add_bar(
        x=batches,
        y=[p.step.kv_bytes / 1e6 for p in sweep.points],
        name=_("K/V (every sequence its own)"),
        marker_color=VERMILLION,
        row=1,
        col=2,
    )
    fig.update_layout(
        barmode="stack",
        height=480,
        margin=dict(t=110, b=10),
        legend=dict(orientation="h", x=0, xanchor="left", y=1.12, yanchor="bottom"),
        title=dict(
            text=_("Batched decode at context {context}: K/V reads overtake the weights from batch {batch}").format(
                context=sweep.context, batch=sweep.kv_overtakes_at_batch
            ),
            y=0.98,
            yanchor="top",
        ),
    )
    fig.update_xaxes(type="log", tickvals=batches, title_text=_("batch (log scale)"), row=1, col=1)
    fig.update_yaxes(
        **log_ticks([p.tokens_per_s for p in sweep.points] + memory_ceiling + compute_ceiling),
        title_text=_("tokens/s, all sequences (log scale)"),
        row=1,
        col=1,
    )
    fig.update_xaxes(type="category", title_text=_("batch"), row=1, col=2)
    fig.update_yaxes(title_text=_("MB per step"), row=1, col=2)
    return readable(fig)
