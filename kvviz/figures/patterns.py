"""Figures for the attention-patterns page: a gallery of every head's causal attention matrix in one layer,
and one head large with token labels. The last row of each matrix (the one a cached decode step computes:
the newest query against every cached key) is outlined; an uncached pass recomputes the whole triangle.

LayerPatterns in, plotly figures out (no Streamlit, no torch). Rows are query positions (top = position 0),
columns key positions; cells above the diagonal are masked (causal) and drawn empty. One colour scale,
0..1, for every head, so heads compare at a glance. Text at least 14 px for a projector.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from kvviz.figures import MIN_TICK_FONT_PX, readable
from kvviz.figures.step import NEW_ROW_COLOR
from kvviz.i18n import _
from kvviz.step.pattern_records import LayerPatterns, head_labels
from kvviz.step.view import kv_head_of, visible

COLOR_SCALE = "Viridis"  # reads on light and dark backgrounds
GALLERY_COLUMNS = 4
MAX_TICK_LABELS = 32  # token labels on the large view; more would overlap at 14 px


def _margins(font_px: int) -> dict:
    return {"l": 10, "r": 10, "t": 2 * font_px + 12, "b": 10}


def _causal(matrix: np.ndarray) -> np.ndarray:
    """A copy with the masked (future) cells set to NaN, which plotly leaves blank."""
    out = matrix.astype(np.float32, copy=True)
    out[np.triu_indices(out.shape[0], k=1)] = np.nan
    return out


def head_title(layer: LayerPatterns, head: int, n_kv_heads: int) -> str:
    kv = (
        " · " + _("kv {kv}").format(kv=kv_head_of(head, layer.n_head, n_kv_heads)) if n_kv_heads != layer.n_head else ""
    )
    labels = [_(label) for label in head_labels(layer, head)]
    return _("head {head}").format(head=head) + kv + (" · " + _(", ").join(labels) if labels else "")


def _last_row_outline(fig: go.Figure, seq_len: int, row: int | None = None, col: int | None = None) -> None:
    last = seq_len - 1
    fig.add_shape(
        type="rect",
        x0=-0.5,
        x1=seq_len - 0.5,
        y0=last - 0.5,
        y1=last + 0.5,
        line={"color": NEW_ROW_COLOR, "width": 3},
        row=row,
        col=col,
    )


def gallery_figure(
    layer: LayerPatterns, n_kv_heads: int, font_px: int = MIN_TICK_FONT_PX, cell_px: int = 230
) -> go.Figure:
    """Every head of one layer, GALLERY_COLUMNS per row; the cached step's row outlined in each."""
    n_head, seq_len, _keys = layer.attention.shape
    cols = min(GALLERY_COLUMNS, n_head)
    rows = -(-n_head // cols)
    fig = make_subplots(
        rows=rows,
        cols=cols,
        subplot_titles=[head_title(layer, h, n_kv_heads) for h in range(n_head)],
        horizontal_spacing=0.03,
        vertical_spacing=0.3 / rows,
    )
    for h in range(n_head):
        r, c = h // cols + 1, h % cols + 1
        fig.add_trace(
            go.Heatmap(
                z=_causal(layer.attention[h]),
                coloraxis="coloraxis",
                # str.replace, not format: plotly's own %{y} fields share the braces
                hovertemplate=_("head {head}: query %{y} -> key %{x}: %{z:.3f}<extra></extra>").replace(
                    "{head}", str(h)
                ),
            ),
            row=r,
            col=c,
        )
        _last_row_outline(fig, seq_len, r, c)
    fig.update_xaxes(showticklabels=False, constrain="domain")
    fig.update_yaxes(showticklabels=False, autorange="reversed", scaleanchor="x", constrain="domain")
    for h in range(n_head):  # each square panel anchors its own y axis to its own x axis
        suffix = "" if h == 0 else str(h + 1)
        fig.update_layout({f"yaxis{suffix}": {"scaleanchor": f"x{suffix}"}})
    fig.update_layout(
        coloraxis={"colorscale": COLOR_SCALE, "cmin": 0.0, "cmax": 1.0, "colorbar": {"title": {"text": _("weight")}}},
        height=rows * cell_px + 2 * font_px + 20,
        margin=_margins(font_px),
    )
    return readable(fig, font_px)


def _token_ticks(tokens: Sequence[str]) -> dict:
    stride = max(1, -(-len(tokens) // MAX_TICK_LABELS))
    keep = [i for i in range(len(tokens)) if (len(tokens) - 1 - i) % stride == 0]  # always label the newest
    return {"tickmode": "array", "tickvals": keep, "ticktext": [f"{i} {visible(tokens[i])[:10]}" for i in keep]}


def head_figure(
    layer: LayerPatterns,
    head: int,
    tokens: Sequence[str],
    n_kv_heads: int,
    font_px: int = MIN_TICK_FONT_PX,
    height_px: int = 640,
) -> go.Figure:
    """One head large: rows = queries, columns = keys, token text on both axes; the cached step's row outlined."""
    seq_len = layer.attention.shape[1]
    text = [visible(t) for t in tokens]
    fig = go.Figure(
        go.Heatmap(
            z=_causal(layer.attention[head]),
            colorscale=COLOR_SCALE,
            zmin=0.0,
            zmax=1.0,
            customdata=np.array([[f"{text[i]!r} -> {text[j]!r}" for j in range(seq_len)] for i in range(seq_len)]),
            hovertemplate=_("query %{y} -> key %{x} (%{customdata}): %{z:.3f}<extra></extra>"),
            colorbar={"title": {"text": _("weight")}},
        )
    )
    _last_row_outline(fig, seq_len)
    fig.update_xaxes(title_text=_("key position (what is read from the cache)"), tickangle=-60, **_token_ticks(tokens))
    fig.update_yaxes(title_text=_("query position"), autorange="reversed", **_token_ticks(tokens))
    fig.update_layout(
        title_text=_("layer {layer} · {head}").format(layer=layer.layer, head=head_title(layer, head, n_kv_heads)),
        height=height_px,
        margin=_margins(font_px),
    )
    return readable(fig, font_px)
