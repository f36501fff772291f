"""Figures of the eviction lab: quality vs the fraction of KV bytes kept (a line per policy, a point per quantized
format), the token grid (kept / evicted / sink per layer and KV head), and the bytes and rows per layer.

Plain records from `kvviz.internals.records` in, plotly figures out. No Streamlit, no torch. A legend holds at
most MAX_LEGEND_ENTRIES lines: the caller picks which policies to draw; the full cache and the quantized formats are
labelled on the chart instead.
"""

from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go

from kvviz.figures import BLUE, MARKER_COLOR, MAX_LEGEND_ENTRIES, MIN_TICK_FONT_PX, ORANGE, readable
from kvviz.i18n import _
from kvviz.internals.eviction import policy_label, policy_short, rows_for_budget
from kvviz.internals.records import EvictionGrid, EvictionPoint, EvictionSweep
from kvviz.memory.units import binary_unit
from kvviz.step.view import visible

POLICY_COLORS = {
    "random": "#7f7f7f",
    "recent": "#9467bd",
    "streaming": "#1f77b4",
    "h2o": "#d62728",
    "h2o_heavy": "#ff9896",
    "tova": "#8c564b",
    "snapkv": "#2ca02c",
    "key_norm": "#e377c2",
    "keydiff": "#bcbd22",
    "duoattention": "#17becf",
    "duo_probe": "#9edae5",
    "kvzip": "#393b79",
    "kvzip_head": "#6b6ecf",
}
QUANT_COLOR = ORANGE
KEPT_COLOR, EVICTED_COLOR, SINK_COLOR = BLUE, "#e8e8e8", ORANGE
METRICS = ("copy", "loss")
LABEL_GAP_PCT = 9.0  # two formats' labels nearer than this (x: % kept) go to different heights
LABEL_STEP_PX = 22  # one label level, at the projector's font size
SUBTITLE_PX = 24  # one line of subtitle under a chart's title
GRID_BOTTOM_PX = 30  # room under the grid's axis title
GRID_MAX_LABELS = 32  # the grid's token axis labels every position up to this many, else a stated stride


def _layout(
    fig: go.Figure, title: str, height_px: int, right_px: int = 10, top_px: int = 90, bottom_px: int = 10
) -> go.Figure:
    fig.update_layout(
        title=dict(text=title, y=0.98, yanchor="top"),
        height=height_px,
        margin=dict(l=10, r=right_px, t=top_px, b=bottom_px),
        legend=dict(orientation="h", x=0, xanchor="left", y=1.02, yanchor="bottom"),
    )
    return readable(fig)


def _value(p: EvictionPoint, metric: str) -> float:
    return 100 * p.copy_accuracy if metric == "copy" else p.loss_change_nats


def _half_width(p: EvictionPoint, metric: str) -> float:
    """The 95% interval's half-width, in the chart's unit (copy: over the spans; loss: over the passages)."""
    half = 100 * p.copy_half_width if metric == "copy" else p.loss_change_half_width
    return half if half == half else 0.0  # one unit: no interval to draw


def measured_fraction(p: EvictionPoint, metric: str, sweep: EvictionSweep) -> float:
    """Where the point was measured, in % of the full cache: the copy test's bytes kept (its span's pruned
    tensors), or for the loss the share of the context's rows kept (rows_for_budget of the context: 56 of 160 rows
    at 35%, where the span keeps 22 of 64; DuoAttention's context keeps whole heads, so its recorded share of the
    bytes, below the budget's). The quantized formats keep every row: their share of the bytes."""
    if metric == "loss" and p.kind == "eviction" and p.loss_bytes_fraction == p.loss_bytes_fraction:  # not NaN
        return 100 * p.loss_bytes_fraction
    if metric == "loss" and p.kind == "eviction":
        context = sweep.settings.context_tokens
        return 100 * rows_for_budget(p.keep_percent, context) / context
    return 100 * p.bytes_fraction


def outlier_fence(values: Sequence[float]) -> float | None:
    """The value above which a point is drawn as an outlier (Tukey's far-out fence: the upper quartile + 3 x the
    interquartile range), or None with too few points or none beyond it. The 4.7-nat loss of a window that lost
    the whole context would otherwise flatten every other line."""
    ordered = sorted(values)
    if len(ordered) < 8:
        return None
    q1, q3 = ordered[len(ordered) // 4], ordered[(3 * len(ordered)) // 4]
    fence = q3 + 3 * max(q3 - q1, 1e-9)
    return fence if ordered[-1] > fence else None


def label_levels(xs: Sequence[float], min_gap: float = LABEL_GAP_PCT) -> list[int]:
    """A level per label (0, 1, 2, ...) so that labels nearer than min_gap (x units) never share a level: the
    caller places each level at its own vertical offset, so no two labels overlap (fp8 and int8 sit near 25%)."""
    levels = [0] * len(xs)
    placed: list[tuple[float, int]] = []
    for i in sorted(range(len(xs)), key=lambda i: xs[i]):
        taken = {level for x, level in placed if abs(x - xs[i]) < min_gap}
        levels[i] = next(level for level in range(len(xs) + 1) if level not in taken)
        placed.append((xs[i], levels[i]))
    return levels


def _level_offset_px(level: int) -> int:
    """Level 0 above the point, 1 below, 2 further above, ...: the label's offset in pixels (plotly's ay)."""
    step = LABEL_STEP_PX * (level // 2 + 1)
    return -step if level % 2 == 0 else step


def quality_figure(sweep: EvictionSweep, policies: Sequence[str], metric: str = "copy") -> go.Figure:
    """metric "copy": copy-test accuracy (%); "loss": change in next-token loss (nats/token) vs the full cache.
    x: where the point was measured (measured_fraction). The quantized formats are labelled beside their points
    at staggered heights, the full cache's line in the right margin (never over a point); on the loss chart,
    points past outlier_fence sit above a clipped axis, each marked with its value."""
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {METRICS}")
    fig = go.Figure()
    drawn = list(policies)[:MAX_LEGEND_ENTRIES]
    quantized = sweep.quantized
    shown = [p for policy in drawn for p in sweep.curve(policy)] + list(quantized)
    fence = outlier_fence([_value(p, metric) for p in shown]) if metric == "loss" else None
    for policy in drawn:
        curve = sorted(sweep.curve(policy), key=lambda p: p.kv_bytes_kept)
        fig.add_scatter(
            x=[measured_fraction(p, metric, sweep) for p in curve],
            y=[_value(p, metric) for p in curve],
            error_y=dict(type="data", array=[_half_width(p, metric) for p in curve], thickness=1.5),
            mode="lines+markers",
            name=policy_short(policy),
            line=dict(color=POLICY_COLORS.get(policy), width=3),
            customdata=[[p.keep_percent, p.rows_kept, p.kv_bytes_kept] for p in curve],
            hovertemplate=_("{policy}: {kept} · {rows} rows · {bytes} B · {value}").format(
                policy=policy_short(policy),
                kept="%{customdata[0]}%",
                rows="%{customdata[1]}",
                bytes="%{customdata[2]:,}",
                value="%{y:.3f}",
            )
            + "<extra></extra>",
        )
    q_x = [measured_fraction(q, metric, sweep) for q in quantized]
    q_y = [_value(q, metric) for q in quantized]
    fig.add_scatter(
        x=q_x,
        y=q_y,
        mode="markers",
        name=_("quantized formats"),
        marker=dict(symbol="diamond", size=14, color=QUANT_COLOR),
        showlegend=False,
        text=[policy_short(q.policy) for q in quantized],  # fp8-hf reads fp8 (transformers), as the text says
        customdata=[q.kv_bytes_kept for q in quantized],
        hovertemplate="%{text}: %{customdata:,} B · %{y:.3f}<extra></extra>",
    )
    for q, x, y, level in zip(quantized, q_x, q_y, label_levels(q_x), strict=True):
        if fence is not None and y > fence:
            continue  # off the axis: _clip_outliers marks it with ▲ and its value
        fig.add_annotation(
            x=x,
            y=y,
            text=policy_short(q.policy),
            showarrow=True,
            arrowhead=0,
            arrowcolor=QUANT_COLOR,
            ax=0,
            ay=_level_offset_px(level),
            bgcolor="rgba(255,255,255,0.85)",
        )
    full = sweep.point("full", 100)
    fig.add_hline(y=_value(full, metric), line=dict(color=MARKER_COLOR, dash="dot"))
    fig.add_annotation(
        x=1,
        xref="paper",
        xanchor="left",
        y=_value(full, metric),
        yanchor="middle",
        text=_("full cache"),
        showarrow=False,
    )  # in the right margin: no point is there
    fig.update_xaxes(title=_("% of the full cache kept where it was measured"), range=[0, 104], ticksuffix="%")
    if metric == "copy":
        fig.update_yaxes(title=_("copy-test accuracy (%)"), range=[0, 112])  # room for the formats' labels
        title = _("Copy test vs bytes kept")
    else:
        fig.update_yaxes(title=_("change in next-token loss (nats/token)"), zeroline=True)
        title = _("Loss change vs rows kept (ordinary text)")
        if fence is not None:
            _clip_outliers(fig, sweep, drawn, fence)
    # a clipped axis says so under the title (SUBTITLE_PX more room above the legend)
    return _layout(fig, title, 420, right_px=110, top_px=90 + (SUBTITLE_PX if fence is not None else 0))


def _clip_outliers(fig: go.Figure, sweep: EvictionSweep, drawn: Sequence[str], fence: float) -> None:
    """The loss axis clipped just above the fence; every point past it, a policy's or a quantized format's,
    marked at the top edge with ▲ and its value (the lines run off the top, as their values do)."""
    shown = [p for policy in drawn for p in sweep.curve(policy)] + list(sweep.quantized)
    inside = [_value(p, "loss") + _half_width(p, "loss") for p in shown if _value(p, "loss") <= fence]
    lows = [_value(p, "loss") - _half_width(p, "loss") for p in shown]
    top = max(inside + [0.0]) * 1.15 + 0.01
    bottom = min(lows + [0.0])
    fig.update_yaxes(range=[bottom - 0.1 * (top - bottom), top])
    out = [p for p in shown if _value(p, "loss") > fence]  # every point past the fence (all above the axis's top)
    xs = [measured_fraction(p, "loss", sweep) for p in out]
    for p, x, level in zip(out, xs, label_levels(xs), strict=True):
        policy = p.policy
        quantized = p.kind == "quantized"
        fig.add_annotation(
            x=x,
            y=top,
            yanchor="top",
            text=f"▲ {policy_short(policy) + ' ' if quantized else ''}{_value(p, 'loss'):+.2f}",
            showarrow=False,
            yshift=-LABEL_STEP_PX * level,
            font=dict(color=QUANT_COLOR if quantized else POLICY_COLORS.get(policy, MARKER_COLOR)),
            bgcolor="rgba(255,255,255,0.85)",
            hovertext=_("{policy} at {keep}%: {value:+.3f} nats, above the axis").format(
                policy=policy_short(policy), keep=p.keep_percent, value=_value(p, "loss")
            ),
        )
    # under the title, not on the plot's top edge: there it sat on the legend's row
    fig.update_layout(
        title_subtitle=dict(
            text=_("▲ above the axis, with its value"), font=dict(size=MIN_TICK_FONT_PX, color=MARKER_COLOR)
        )
    )


def grid_tick_stride(n_tokens: int) -> int:
    """Every position labelled up to GRID_MAX_LABELS columns, else every 2nd, 3rd, ...: a label at the projector's
    font size needs its own column's width."""
    return max(1, -(-n_tokens // GRID_MAX_LABELS))


def grid_figure(grid: EvictionGrid) -> go.Figure:
    """One row per (layer, KV head), one column per position of the span: kept, evicted, or a kept sink row
    (StreamingLLM's first S). The x axis: the position and its token (whitespace made visible: · a space, ↵ a
    newline), every position or every stride-th, said in the axis title; the hover names every one."""
    sinks = grid.sink_tokens if grid.policy == "streaming" else 0
    tokens = [visible(t) for t in grid.tokens]
    z, labels, hover = [], [], []
    for layer in grid.layers:
        for head, kept in enumerate(layer.kept):
            z.append([(2 if pos < sinks else 1) if k else 0 for pos, k in enumerate(kept)])
            labels.append(_("layer {layer} · KV head {head}").format(layer=layer.layer, head=head))
            hover.append(tokens)
    states = [_("evicted"), _("kept"), _("sink (kept)")]
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=list(range(len(tokens))),
            y=labels,
            zmin=0,
            zmax=2,
            showscale=False,
            xgap=1,
            ygap=2,
            colorscale=[
                [0, EVICTED_COLOR],
                [0.33, EVICTED_COLOR],
                [0.34, KEPT_COLOR],
                [0.66, KEPT_COLOR],
                [0.67, SINK_COLOR],
                [1, SINK_COLOR],
            ],
            customdata=[[states[v] for v in row] for row in z],
            text=hover,
            hovertemplate="%{y}, " + _("position") + " %{x} %{text}: %{customdata}<extra></extra>",
        )
    )
    stride = grid_tick_stride(len(tokens))
    ticks = list(range(0, len(tokens), stride))
    fig.update_xaxes(
        tickvals=ticks,
        ticktext=[f"{pos} {tokens[pos]}" for pos in ticks],
        tickangle=-90,
        title=(
            _("position and its token (· a space, ↵ a newline)")
            if stride == 1
            else _("position and its token, one label every {n} positions (· a space, ↵ a newline)").format(n=stride)
        ),
    )
    fig.update_yaxes(autorange="reversed")
    title = _("{policy} at {keep}%: blue kept, grey evicted{sink}").format(
        policy=policy_label(grid.policy), keep=grid.keep_percent, sink=_(", orange the sink rows") if sinks else ""
    )
    # bottom: the axis title under the rotated labels (with 10 px its descenders were cut)
    return _layout(fig, title, 220 + 28 * len(z) + 90, bottom_px=GRID_BOTTOM_PX)


def layer_bytes_figure(grid: EvictionGrid) -> go.Figure:
    """Bytes kept and evicted per layer (one sequence), with the rows each KV head keeps."""
    unit, size = binary_unit(max([la.kv_bytes_full for la in grid.layers] + [1]))
    x = [str(la.layer) for la in grid.layers]
    fig = go.Figure()
    fig.add_bar(
        x=x,
        y=[la.kv_bytes_kept / size for la in grid.layers],
        name=_("kept"),
        marker_color=KEPT_COLOR,
        text=[_("{rows} rows").format(rows=la.rows_kept) for la in grid.layers],
        textposition="inside",
        customdata=[la.kv_bytes_kept for la in grid.layers],
        hovertemplate=_("layer") + " %{x}: %{customdata:,} B<extra></extra>",
    )
    fig.add_bar(
        x=x,
        y=[(la.kv_bytes_full - la.kv_bytes_kept) / size for la in grid.layers],
        name=_("evicted"),
        marker_color=EVICTED_COLOR,
        customdata=[la.kv_bytes_full - la.kv_bytes_kept for la in grid.layers],
        hovertemplate=_("layer") + " %{x}: %{customdata:,} B<extra></extra>",
    )
    fig.update_layout(barmode="stack", legend_traceorder="normal")
    fig.update_xaxes(title=_("layer"), type="category")
    fig.update_yaxes(
        title=_("{unit}, one span (1 {unit} = {size:,} B)").format(unit=unit, size=size)
        if size > 1
        else _("bytes, one span"),
        rangemode="tozero",
    )
    return _layout(fig, _("Bytes and rows per layer"), 340)
