"""Figures for the step-through page: cache heatmaps, the all-layers overview, attention and next-token bars.

Plain numpy in, plotly figures out. Rows are cache positions (top = position 0, as a table reads), columns
are the head_dim components of one head's key or value vector.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

NEW_ROW_COLOR = "#ff7f0e"  # the row(s) appended by the latest pass
RECOMPUTED_COLOR = "#d62728"  # rows an uncached pass recomputes
HEATMAP_SCALE = "RdBu_r"
MAX_TICK_LABELS = 40  # beyond this, label every n-th position so the axis stays readable


def visible(token: str) -> str:
    """Token text with its whitespace made visible, as in the token strip: space -> ·, newline -> ↵."""
    return token.replace("\n", "↵").replace(" ", "·") or "∅"


def _position_labels(tokens: Sequence[str]) -> list[str]:
    return [f"{i}: {visible(t)}"[:24] for i, t in enumerate(tokens)]


def cache_heatmap(
    rows: np.ndarray,
    tokens: Sequence[str],
    new_positions: Sequence[int],
    title: str,
    highlight_color: str = NEW_ROW_COLOR,
    height_px: int | None = None,
) -> go.Figure:
    """One head's K (or V) cache: rows (seq_len, head_dim), the rows in new_positions outlined."""
    seq_len, head_dim = rows.shape
    limit = float(np.abs(rows).max()) or 1.0
    labels = _position_labels(tokens)
    fig = go.Figure(
        go.Heatmap(
            z=rows,
            x=list(range(head_dim)),
            y=labels,
            colorscale=HEATMAP_SCALE,
            zmin=-limit,
            zmax=limit,
            colorbar={"thickness": 10},
            hovertemplate="position %{y}<br>dim %{x}<br>value %{z:.3f}<extra></extra>",
        )
    )
    for pos in new_positions:
        fig.add_shape(
            type="rect", x0=-0.5, x1=head_dim - 0.5, y0=pos - 0.5, y1=pos + 0.5,
            line={"color": highlight_color, "width": 3},
        )
    fig.update_yaxes(autorange="reversed", title="cache position (token)", showticklabels=seq_len <= MAX_TICK_LABELS)
    fig.update_xaxes(title="head_dim component")
    fig.update_layout(
        title=title, height=height_px or min(640, 160 + 14 * seq_len), margin={"l": 10, "r": 10, "t": 40, "b": 10}
    )
    return fig


def layers_overview(keys_per_layer: Sequence[np.ndarray], head: int, new_positions: Sequence[int]) -> go.Figure:
    """Small multiples: every layer's K cache for one head, side by side; each grows by a row per step."""
    n_layer = len(keys_per_layer)
    cols = min(n_layer, 6)
    n_rows = -(-n_layer // cols)
    fig = make_subplots(rows=n_rows, cols=cols, subplot_titles=[f"layer {i}" for i in range(n_layer)],
                        horizontal_spacing=0.02, vertical_spacing=0.08)
    for layer, keys in enumerate(keys_per_layer):
        rows = keys[head]  # (seq_len, head_dim)
        r, c = divmod(layer, cols)
        limit = float(np.abs(rows).max()) or 1.0
        fig.add_trace(
            go.Heatmap(z=rows, colorscale=HEATMAP_SCALE, zmin=-limit, zmax=limit, showscale=False,
                       hovertemplate=f"layer {layer}<br>position %{{y}}<br>dim %{{x}}<br>%{{z:.3f}}<extra></extra>"),
            row=r + 1, col=c + 1,
        )
        for pos in new_positions:
            fig.add_shape(type="rect", x0=-0.5, x1=rows.shape[1] - 0.5, y0=pos - 0.5, y1=pos + 0.5,
                          line={"color": NEW_ROW_COLOR, "width": 2}, row=r + 1, col=c + 1)
    fig.update_yaxes(autorange="reversed", showticklabels=False)
    fig.update_xaxes(showticklabels=False)
    seq_len = keys_per_layer[0].shape[1]
    fig.update_layout(height=n_rows * min(420, 120 + 6 * seq_len), margin={"l": 10, "r": 10, "t": 40, "b": 10},
                      title=f"K cache of head {head} in every layer ({seq_len} rows each)")
    return fig


def attention_bars(weights: np.ndarray, tokens: Sequence[str], query_token: str) -> go.Figure:
    """The newest query's softmax weights over every cached position (they sum to 1)."""
    fig = go.Figure(
        go.Bar(
            x=list(range(len(weights))), y=weights, customdata=[visible(t) for t in tokens],
            hovertemplate="position %{x}: %{customdata}<br>weight %{y:.3f}<extra></extra>",
            marker_color="#1f77b4",
        )
    )
    fig.update_layout(
        title=f"Attention of the query for '{visible(query_token)}' over the {len(weights)} cached positions",
        xaxis_title="cache position", yaxis_title="attention weight", yaxis_range=[0, 1],
        height=300, margin={"l": 10, "r": 10, "t": 40, "b": 10},
    )
    if len(tokens) <= MAX_TICK_LABELS:
        fig.update_xaxes(tickmode="array", tickvals=list(range(len(tokens))), ticktext=[visible(t) for t in tokens],
                         tickangle=-60)
    return fig


def next_token_bars(texts: Sequence[str], probs: Sequence[float], chosen: str) -> go.Figure:
    """Top-k next-token probabilities, most likely on top; the chosen token in orange."""
    labels = [f"'{visible(t)}'" for t in texts]
    colors = [NEW_ROW_COLOR if t == chosen else "#7f7f7f" for t in texts]
    fig = go.Figure(go.Bar(x=list(probs)[::-1], y=labels[::-1], orientation="h", marker_color=colors[::-1],
                           hovertemplate="%{y}: %{x:.3f}<extra></extra>"))
    fig.update_layout(title="Next-token probabilities (top candidates)", xaxis_title="probability",
                      xaxis_range=[0, 1], height=300, margin={"l": 10, "r": 10, "t": 40, "b": 10})
    return fig


def growth_chart(steps: Sequence[int], with_cache: Sequence[int], without_cache: Sequence[int], what: str) -> go.Figure:
    """Cumulative work with vs without cache, step by step."""
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=list(steps), y=list(with_cache), mode="lines+markers", name="with KV cache"))
    fig.add_trace(go.Scatter(x=list(steps), y=list(without_cache), mode="lines+markers", name="without cache"))
    fig.update_layout(title=f"Cumulative {what}", xaxis_title="step (0 = prefill)", yaxis_title=what,
                      height=300, margin={"l": 10, "r": 10, "t": 40, "b": 10})
    return fig
