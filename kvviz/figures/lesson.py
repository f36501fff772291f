"""Figures for the guided lesson: one per step, drawn from plain numbers (measured on the live model or computed by
kvviz's arithmetic: kvviz.teaching.lesson's Picture carries them as a kind and a dict). No Streamlit, no torch.
A figure takes those plain arguments, never the lesson's record: figures never import teaching, and the lesson's
content needs no plotly (tests/test_layering.py checks both).

`lesson_figure(kind, data, font_px)`: font_px 16 for a laptop, 22 for presenter-style large type; every text on the
figure (ticks, labels, annotations) is drawn at that size, and each figure fits a 1280x720 screen's column.
Colours read on light and dark backgrounds (and on paper: the handout draws them on white). Every text is drawn in
the current language (kvviz.i18n); numbers keep the same format in both.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from kvviz.i18n import _, ngettext
from kvviz.measure.timing import median
from kvviz.step.view import visible

ORANGE, BLUE, GREY, GREEN = "#e8590c", "#1c7ed6", "#868e96", "#2b8a3e"
HEATMAP_SCALE = "RdBu_r"
GQA_COLORS = ["#1c7ed6", "#e8590c", "#2b8a3e", "#ae3ec9", "#f59f00", "#0c8599", "#c92a2a", "#5c7cfa"]


def token_label(text: str) -> str:
    """A token as students read it on the strip (kvviz.step.view.visible: a space as ·, a newline as ↵), ∅ when empty."""
    return visible(text) or "∅"


def _layout(fig: go.Figure, font_px: int, height_px: int) -> go.Figure:
    fig.update_xaxes(tickfont_size=font_px, title_font_size=font_px, automargin=True)
    fig.update_yaxes(tickfont_size=font_px, title_font_size=font_px, automargin=True)
    fig.update_annotations(font_size=font_px)
    fig.update_layout(
        font={"size": font_px},
        hoverlabel={"font_size": font_px},
        height=height_px,
        margin={"l": 10, "r": 10, "t": font_px + 16, "b": 10},
        showlegend=False,
    )
    return fig


def _kv_rows(d: dict[str, Any], font_px: int) -> go.Figure:
    fig = make_subplots(
        1, 2, subplot_titles=(_("K rows (keys)"), _("V rows (values)")), horizontal_spacing=0.04, shared_yaxes=True
    )
    for col, name in ((1, "keys"), (2, "values")):
        z = np.array(d[name])
        fig.add_trace(
            go.Heatmap(
                z=z,
                colorscale=HEATMAP_SCALE,
                zmid=0,
                showscale=False,
                hovertemplate=_("row %{y}, number %{x}: %{z:.3f}<extra></extra>"),
            ),
            1,
            col,
        )
        fig.update_xaxes(title_text=_("position in the row"), row=1, col=col, showticklabels=False)
    rows = d["rows"]
    fig.update_yaxes(
        tickmode="array",
        tickvals=list(range(len(rows))),
        ticktext=[f"{i} {token_label(t)}" for i, t in enumerate(rows)],
        autorange="reversed",
        row=1,
        col=1,
    )
    return _layout(fig, font_px, 120 + 48 * len(rows))


def _tokens(d: dict[str, Any], font_px: int) -> go.Figure:
    texts, newest = d["texts"], d.get("newest")
    per_row = 9 if len(texts) <= 18 else 11  # two rows for the lesson's prompts
    n_rows = -(-len(texts) // per_row)
    fig = go.Figure()
    shapes, notes = [], []
    for i, text in enumerate(texts):
        x, y = i % per_row, -(i // per_row)
        is_new = i == newest
        shapes.append(
            {
                "type": "rect",
                "x0": x - 0.46,
                "x1": x + 0.46,
                "y0": y - 0.3,
                "y1": y + 0.22,
                "line": {"color": ORANGE if is_new else BLUE, "width": 4 if is_new else 2},
                "fillcolor": "rgba(232,89,12,0.18)" if is_new else "rgba(28,126,214,0.12)",
            }
        )
        notes.append(
            {
                "x": x,
                "y": y - 0.04,
                "text": token_label(text),
                "showarrow": False,
                "font": {"size": font_px + 2, **({"color": ORANGE} if is_new else {})},
            }
        )
        notes.append(
            {"x": x, "y": y + 0.36, "text": f"<b>{i}</b>", "showarrow": False, "font": {"size": font_px, "color": GREY}}
        )
    fig.update_layout(shapes=shapes, annotations=notes)
    fig.update_xaxes(visible=False, range=[-0.55, per_row - 0.45])
    fig.update_yaxes(visible=False, range=[-(n_rows - 1) - 0.45, 0.6])
    return _layout(fig, font_px, 40 + (2 * font_px + 44) * n_rows)


# The chips' colours are explicit (dark text on light fills) so they read in light and dark themes alike.
_CHIP = "background:#e7f1fb;border:2px solid #1c7ed6;color:#0b1f33"
_NEWEST_CHIP = "background:#ffe8d6;border:4px solid #e8590c;color:#6b2600;font-weight:bold"


def tokens_html(d: Mapping[str, Any], font_px: int = 16) -> str:
    """The "tokens" picture as HTML chips that wrap to the screen's width: each token in its box, its position
    above it, the newest outlined in orange. The page draws this one as HTML (a plotly figure lays out a fixed
    number of boxes per row, and on a phone its 9 boxes ran into each other); the handout, printed on a page of
    known width, keeps the figure. Each chip carries data-pos, its position, and is an item of the list (a screen
    reader counts them); the position is in the page's own text colour (a fixed grey read at 3.3:1 on white)."""
    texts, newest = d["texts"], d.get("newest")
    chips = []
    for i, text in enumerate(texts):
        style = _NEWEST_CHIP if i == newest else _CHIP
        chips.append(
            f'<span role="listitem" data-pos="{i}" style="display:inline-flex;flex-direction:column;'
            f'align-items:center;margin:0 6px 8px 0">'
            f'<b style="font-size:{font_px}px;color:inherit;font-weight:normal;line-height:1.3">{i}</b>'
            f'<span style="{style};border-radius:6px;padding:2px 8px;font-size:{font_px + 2}px;'
            f'font-family:monospace;white-space:pre;line-height:1.4">{html.escape(token_label(text))}</span></span>'
        )
    label = html.escape(
        ngettext("The token by position, {n} in all", "The tokens by position, {n} in all", len(texts)).format(
            n=len(texts)
        )
    )
    return (
        f'<div class="kvviz-token-grid" role="list" aria-label="{label}" '
        f'style="display:flex;flex-wrap:wrap;align-items:flex-end">{"".join(chips)}</div>'
    )


def _rows_per_layer(d: dict[str, Any], font_px: int) -> go.Figure:
    layers = [_("layer {i}").format(i=i) for i in range(len(d["before"]))]
    fig = go.Figure(
        [
            go.Bar(
                x=layers,
                y=d["before"],
                name=_("after the prefill"),
                marker_color=BLUE,
                text=d["before"],
                textposition="inside",
            ),
            go.Bar(
                x=layers,
                y=d["after"],
                name=_("after {steps} steps").format(steps=d["steps"]),
                marker_color=ORANGE,
                text=d["after"],
                textposition="inside",
            ),
        ]
    )
    fig.update_layout(barmode="group")
    fig.update_yaxes(title_text=_("rows in the K cache"))
    _layout(fig, font_px, 300)
    fig.update_layout(showlegend=True, legend={"orientation": "h", "y": 1.02, "yanchor": "bottom", "x": 0})
    return fig


def _attention_row(d: dict[str, Any], font_px: int) -> go.Figure:
    weights, texts, mark = d["weights"], d["texts"], d.get("highlight")
    colors = [ORANGE if i == mark else (GREEN if i == len(weights) - 1 else BLUE) for i in range(len(weights))]
    labels = [f"{i} {token_label(t)}" for i, t in enumerate(texts)]
    fig = go.Figure(
        go.Bar(
            x=list(range(len(weights))),
            y=weights,
            marker_color=colors,
            hovertemplate=_("row %{x}: %{y:.1%}<extra></extra>"),
        )
    )
    # every bar named up to 40 rows (a skipped label made the tallest bar read as its neighbour's); past that every
    # n-th, and always the tallest bar, the marked one and the new token's own
    stride = max(1, -(-len(labels) // 40))
    tallest = int(np.argmax(weights)) if len(weights) else 0
    keep = [
        i for i in range(len(labels)) if (len(labels) - 1 - i) % stride == 0 or i in (mark, tallest, len(labels) - 1)
    ]
    fig.update_xaxes(
        tickmode="array",
        tickvals=keep,
        ticktext=[labels[i] for i in keep],
        tickangle=-60,
        title_text=_("cached row (position, token); green = the new token's own"),
    )
    fig.update_yaxes(title_text=_("attention weight"), tickformat=".0%", rangemode="tozero")
    return _layout(fig, font_px, 340 + 2 * font_px)


def _differences(d: dict[str, Any], font_px: int) -> go.Figure:
    names = [_("K rows"), _("V rows"), _("logits"), _("top-2 logit gap")]
    values = [max(d[k], 1e-12) for k in ("key", "value", "logit")] + [d["gap"]]
    fig = go.Figure(
        go.Bar(
            y=names,
            x=values,
            orientation="h",
            marker_color=[BLUE, BLUE, BLUE, ORANGE],
            text=[f"{v:.1e}" if v < 0.01 else f"{v:.2f}" for v in values],
            textposition="outside",
            cliponaxis=False,
        )
    )
    fig.update_xaxes(
        type="log",
        title_text=_("largest difference, cached vs recomputed (log scale)"),
        range=[np.log10(min(values)) - 1, np.log10(max(values)) + 1.5],
        exponentformat="power",
    )
    fig.update_yaxes(autorange="reversed")
    return _layout(fig, font_px, 280)


def _triangle(d: dict[str, Any], font_px: int) -> go.Figure:
    seq = d["seq"]
    z = np.full((seq, seq), np.nan)
    for q in range(seq):
        z[q, : q + 1] = 1.0 if q == seq - 1 else 0.35
    z[seq - 1, seq - 1] = 1.3  # the new token's own key
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=list(range(seq)),
            y=list(range(seq)),
            showscale=False,
            xgap=1,
            ygap=1,
            colorscale=[[0, "#a5c8ec"], [0.7, ORANGE], [1, "#8a2e00"]],
            zmin=0.35,
            zmax=1.3,
            hovertemplate=_("query %{y} x key %{x}<extra></extra>"),
        )
    )
    fig.add_shape(type="rect", x0=-0.5, x1=seq - 0.5, y0=seq - 1.5, y1=seq - 0.5, line={"color": ORANGE, "width": 3})
    fig.add_annotation(
        x=seq - 1,
        y=seq - 1.5,
        text=_("its own key"),
        ax=-2 * font_px,
        ay=-6 * font_px,
        showarrow=True,
        arrowcolor=ORANGE,
        arrowwidth=2,
        font={"color": ORANGE},
        yanchor="bottom",
    )
    step = max(1, seq // 8)
    # square cells in any frame (the handout's is wide and short): both axes hold exactly the seq positions and give
    # up domain, never range, so the y axis never runs past the last row
    fig.update_xaxes(title_text=_("key position"), dtick=step, constrain="domain", range=[-0.5, seq - 0.5])
    fig.update_yaxes(
        title_text=_("query position"), dtick=step, range=[seq - 0.5, -0.5], scaleanchor="x", constrain="domain"
    )
    return _layout(fig, font_px, 400)


def _per_step(d: dict[str, Any], font_px: int) -> go.Figure:
    t = np.arange(1, d["t"] + 1)
    fig = go.Figure(
        [
            go.Bar(x=t, y=t * (t + 1) // 2, name=_("without the cache: t(t+1)/2"), marker_color=GREY),
            go.Bar(x=t, y=t, name=_("with the cache: t"), marker_color=ORANGE),
        ]
    )
    fig.update_layout(barmode="overlay")
    fig.update_xaxes(title_text=_("length t of the pass (tokens read)"))
    fig.update_yaxes(title_text=_("dot products per head"))
    _layout(fig, font_px, 320)
    fig.update_layout(showlegend=True, legend={"x": 0.01, "y": 0.98})
    return fig


def _bytes(d: dict[str, Any], font_px: int) -> go.Figure:
    mib = [b / 2**20 for b in d["bytes"]]
    colors = [ORANGE if i == len(mib) - 1 else BLUE for i in range(len(mib))]
    fig = go.Figure(
        go.Bar(
            x=[_("{n:,} tokens").format(n=n) for n in d["tokens"]],
            y=mib,
            marker_color=colors,
            text=[f"{v:.2f} MiB" for v in mib],
            textposition="outside",
            cliponaxis=False,
        )
    )
    fig.update_yaxes(title_text=_("KV cache (MiB, 1 MiB = 2^20 B)"), range=[0, max(mib) * 1.25])
    return _layout(fig, font_px, 320)


def _gqa(d: dict[str, Any], font_px: int) -> go.Figure:
    n_head, n_kv = d["n_head"], d["n_kv_heads"]
    group = n_head // n_kv
    per_row = 16 if n_head > 16 else n_head
    fig = go.Figure()
    shapes, notes = [], []
    for q in range(n_head):
        x, y = q % per_row, -2 * (q // per_row)  # two units per row: the K/V labels sit in between
        color = GQA_COLORS[(q // group) % len(GQA_COLORS)]
        shapes.append(
            {
                "type": "rect",
                "x0": x - 0.42,
                "x1": x + 0.42,
                "y0": y - 0.4,
                "y1": y + 0.4,
                "fillcolor": color,
                "line": {"width": 0},
                "opacity": 0.85,
            }
        )
        notes.append(
            {"x": x, "y": y, "text": f"q{q}", "showarrow": False, "font": {"color": "white", "size": font_px - 2}}
        )
    rows = -(-n_head // per_row)
    for kv in range(n_kv):
        x = (kv * group + (group - 1) / 2) % per_row
        y = -2 * ((kv * group) // per_row) - 0.85
        notes.append(
            {
                "x": x,
                "y": y,
                "text": f"K/V {kv}",
                "showarrow": False,
                "font": {"color": GQA_COLORS[kv % len(GQA_COLORS)]},
            }
        )
    fig.update_layout(shapes=shapes, annotations=notes)
    fig.update_xaxes(visible=False, range=[-0.6, per_row - 0.4])
    fig.update_yaxes(visible=False, range=[-2 * (rows - 1) - 1.2, 0.55])
    return _layout(fig, font_px, 40 + rows * (4 * font_px + 44))


def _timings(d: dict[str, Any], font_px: int) -> go.Figure:
    fig = go.Figure()
    for name, runs, color in ((_("cached step"), d["cached"], ORANGE), (_("uncached pass"), d["uncached"], GREY)):
        middle = median(runs)  # the text's statistic (kvviz.measure.timing: an even count averages the middle two)
        label = _("{name}<br>median {median:.2f} ms").format(name=name, median=middle)
        fig.add_trace(go.Bar(y=[label], x=[middle], orientation="h", marker_color=color, opacity=0.45))
        fig.add_trace(
            go.Scatter(
                y=[label] * len(runs),
                x=runs,
                mode="markers",
                marker={"color": color, "size": 11, "line": {"width": 1, "color": "white"}},
                hovertemplate="%{x:.2f} ms<extra></extra>",
            )
        )
    top = max(d["uncached"] + d["cached"])
    fig.update_xaxes(title_text=_("milliseconds per forward pass (each dot is one run)"), range=[0, top * 1.1])
    return _layout(fig, font_px, 240)


def _blocks(d: dict[str, Any], font_px: int, per_row: int = 16) -> go.Figure:
    blocks, block, tokens = d["blocks"], d["block"], d["tokens"]
    rows = -(-blocks // per_row)
    fig = go.Figure()
    shapes = []
    for b in range(blocks):
        used = min(block, tokens - b * block)
        x, y = b % per_row, -(b // per_row)
        shapes.append(
            {
                "type": "rect",
                "x0": x - 0.45,
                "x1": x + 0.45,
                "y0": y - 0.4,
                "y1": y + 0.4,
                "line": {"color": BLUE, "width": 1},
            }
        )
        shapes.append(
            {
                "type": "rect",
                "x0": x - 0.45,
                "x1": x - 0.45 + 0.9 * used / block,
                "y0": y - 0.4,
                "y1": y + 0.4,
                "fillcolor": ORANGE if used < block else BLUE,
                "line": {"width": 0},
                "opacity": 0.8,
            }
        )
    fig.update_layout(shapes=shapes)
    last = blocks - 1
    note = _("last block: {used} of {block} slots used").format(used=tokens - last * block, block=block)
    fig.add_annotation(
        x=last % per_row,
        y=-(last // per_row) - 0.4,
        text=note,
        showarrow=True,
        ay=2 * font_px,
        ax=-3 * font_px,
        font={"color": ORANGE},
        arrowcolor=ORANGE,
    )
    fig.update_xaxes(visible=False, range=[-0.6, per_row - 0.4])
    fig.update_yaxes(visible=False, range=[-(rows - 1) - 1.6, 0.55])
    return _layout(fig, font_px, 60 + rows * (font_px + 26) + 3 * font_px)


_DRAW: dict[str, Callable[[dict[str, Any], int], go.Figure]] = {
    "kv_rows": _kv_rows,
    "tokens": _tokens,
    "rows_per_layer": _rows_per_layer,
    "attention_row": _attention_row,
    "differences": _differences,
    "triangle": _triangle,
    "per_step": _per_step,
    "bytes": _bytes,
    "gqa": _gqa,
    "timings": _timings,
    "blocks": _blocks,
}


def lesson_figure(kind: str, data: Mapping[str, Any], font_px: int = 16) -> go.Figure:
    """A step's figure of this kind (a Picture's kind: "kv_rows", "tokens", ... "blocks"), drawn from its plain
    numbers at font_px (16 laptop, 22 presenter-style large type)."""
    return _DRAW[kind](data, font_px)
