"""Figures for the step-through stage: one head's K and V cache with the newest query's attention beside the
same rows, the with/without-cache race over every layer, next-token bars and the cumulative-work chart.

Plain numpy / StageSnapshot in, plotly figures out (no Streamlit, no torch). Rows are cache positions, top =
the oldest drawn row, as a table reads; the stage draws at most the newest MAX_STAGE_ROWS rows so the newest
row stays on screen. Text is at least 14 px for a projector; colours read on light and dark backgrounds.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from kvviz.figures import SpecFigure
from kvviz.i18n import _, list_sep, ngettext
from kvviz.measure.timing import median, quartiles
from kvviz.memory.units import short_bytes
from kvviz.step.records import ContextRace, LinearState, RaceTiming
from kvviz.step.view import StageSnapshot, visible

NEW_ROW_COLOR = "#e8590c"  # the row(s) appended by the latest pass
RECOMPUTED_COLOR = "#d62728"  # rows an uncached pass recomputes
ATTENTION_COLOR = "#1c7ed6"
HEATMAP_SCALE = "RdBu_r"
MAX_TICK_LABELS = 20  # at most this many row labels, so 14 px text never overlaps
PANEL_GAP = 0.03  # between the stage's panels (their colour scales sit under them, not between)
STAGE_WIDTHS = (0.35, 0.35, 0.30)  # K : V : attention; the attention panel wide enough for its word and 3 ticks
MODEBAR_PX = 28  # plotly's mode bar (camera button) sits in the top 28 px: titles go below it


def _margins(font_px: int) -> dict:
    return {"l": 10, "r": 10, "t": MODEBAR_PX + font_px + 8, "b": 10}


def stage_config(filename: str = "kv_cache_stage") -> dict:
    """plotly config for the stage's charts: the mode bar holds only the camera (a 2x PNG for slides), so it
    is small, and the margins above keep every title clear of it."""
    return {
        "displaylogo": False,
        "modeBarButtons": [["toImage"]],
        "toImageButtonOptions": {"format": "png", "scale": 2, "filename": filename},
    }


def _fonts(fig: go.Figure, font_px: int) -> go.Figure:
    """Every text at font_px, set on each axis: Streamlit's plotly theme would otherwise draw ticks at ~12 px."""
    fig.update_xaxes(tickfont_size=font_px, title_font_size=font_px)
    fig.update_yaxes(tickfont_size=font_px, title_font_size=font_px)
    fig.update_annotations(font_size=font_px)
    fig.update_layout(font={"size": font_px}, hoverlabel={"font_size": font_px}, title_font_size=font_px + 2)
    return fig


# The per-click figures (the stage, the next-token bars, the GQA and race views) are built as plain dicts:
# plotly's make_subplots and update_* calls validate every change against the template-laden layout, which cost
# ~35 ms of server CPU per click on one core, most of a click's cost. The layout geometry still comes
# from make_subplots (axis domains, anchors, title positions), computed once per shape. Validating the finished
# dict (go.Figure(spec)) would be 80% of what is left (stage 8.4 -> 1.9 ms without it), so the spec goes out as
# it is (kvviz.figures.SpecFigure); tests/test_stage_figures_fast.py validates every one of these specs instead, and
# checks they serialise exactly as plotly's own subplot API builds them.
@functools.lru_cache(maxsize=32)
def _grid_json(cols: int, widths: tuple[float, ...] | None, spacing: float) -> str:
    fig = make_subplots(
        rows=1,
        cols=cols,
        shared_yaxes=True,
        column_widths=list(widths) if widths else None,
        horizontal_spacing=spacing,
        subplot_titles=["·"] * cols,
    )
    layout = fig.to_dict()["layout"]
    layout.pop("template", None)
    return json.dumps(layout)


def _panels(titles: Sequence[str], widths: tuple[float, ...] | None, spacing: float) -> dict:
    """A fresh layout dict: one row of len(titles) panels sharing the row axis, as make_subplots lays it out."""
    layout = json.loads(_grid_json(len(titles), widths, spacing))
    for note, title in zip(layout["annotations"], titles, strict=True):
        note["text"] = title
    return layout


@functools.cache
def _colorscale(name: str) -> tuple[tuple[float, str], ...]:
    """A named colour scale as plotly's validator spells it out. The browser's plotly.js knows no "_r" (reversed)
    names: an unvalidated spec must carry the stops themselves."""
    return go.Heatmap(colorscale=name).colorscale


def _axis(letter: str, col: int) -> str:
    """A trace's or shape's axis reference for panel `col` (1-based): x, x2, x3..."""
    return letter if col == 1 else f"{letter}{col}"


def _fonts_dict(layout: dict, font_px: int) -> dict:
    """_fonts on a layout dict: every axis, annotation, the hover label and the title at font_px."""
    for key, axis in layout.items():
        if key.startswith(("xaxis", "yaxis")):
            axis.setdefault("tickfont", {})["size"] = font_px
            axis.setdefault("title", {}).setdefault("font", {})["size"] = font_px
    for note in layout.get("annotations", []):
        note.setdefault("font", {})["size"] = font_px
    layout.setdefault("font", {})["size"] = font_px
    layout.setdefault("hoverlabel", {}).setdefault("font", {})["size"] = font_px
    layout.setdefault("title", {}).setdefault("font", {})["size"] = font_px + 2
    return layout


def _outline_shapes(positions: Sequence[int], width: int, col: int, color: str) -> list[dict]:
    return [
        {
            "type": "rect",
            "x0": -0.5,
            "x1": width - 0.5,
            "y0": pos - 0.5,
            "y1": pos + 0.5,
            "line": {"color": color, "width": 3},
            "xref": _axis("x", col),
            "yref": _axis("y", col),
        }
        for pos in positions
    ]


def _row_ticks(first_row: int, labels: Sequence[str], must: Sequence[int] = ()) -> dict:
    """Row labels: every stride-th row counted from the newest (always labelled), plus the rows in `must`
    (cache positions a sentence names, e.g. the copying head's row); a regular label too close to one of
    those gives way, so 14 px labels never overlap."""
    stride = max(1, -(-len(labels) // MAX_TICK_LABELS))
    named = {p - first_row for p in must if 0 <= p - first_row < len(labels)}
    keep = {i for i in range(len(labels)) if (len(labels) - 1 - i) % stride == 0}
    keep = {i for i in keep if i == len(labels) - 1 or all(abs(i - m) >= stride for m in named)} | named
    keep = sorted(keep)
    return {"tickmode": "array", "tickvals": [first_row + i for i in keep], "ticktext": [labels[i] for i in keep]}


def _colorbar(x: float, font_px: int) -> dict:
    """A thin vertical colour scale just right of a heatmap panel (x = the panel's right edge, paper coordinates)."""
    return {
        "x": x,
        "xanchor": "left",
        "xpad": 2,
        "y": 0.5,
        "len": 0.6,
        "thickness": 8,
        "outlinewidth": 0,
        "tickfont": {"size": font_px},
        "nticks": 4,
        "ticklen": 3,
    }


def _colorbar_under(domain: Sequence[float], font_px: int) -> dict:
    """A thin horizontal colour scale under a heatmap panel (`domain`: the panel's x range, paper coordinates), at
    the figure's bottom edge: its ticks never reach a neighbouring panel, however narrow the screen (a phone)."""
    return {
        "orientation": "h",
        "x": (domain[0] + domain[1]) / 2,
        "xanchor": "center",
        "len": domain[1] - domain[0],
        "y": 0,
        "yref": "container",
        "yanchor": "bottom",
        "ypad": 4,
        "thickness": 8,
        "outlinewidth": 0,
        "tickfont": {"size": font_px},
        "nticks": 3,
        "ticklen": 3,
    }


def _stage_margins(font_px: int) -> dict:
    """Room above for the title (left, on the mode bar's band) and the panel titles; below for "head_dim" and the
    colour scales' bar and ticks."""
    return {**_margins(font_px), "b": 2 * font_px + 34}


def stage_figure(snap: StageSnapshot, font_px: int = 14, height_px: int = 420) -> go.Figure:
    """K | V | attention, sharing one row axis: the new query reads every cached row, in one picture. Which layer
    and heads are shown is the figure's title, so each panel's own title is one word (it fits a phone's third)."""
    rows, head_dim = snap.keys.shape
    y = list(range(snap.first_row, snap.first_row + rows))
    layout = _panels(("K", "V", _("attention")), STAGE_WIDTHS, PANEL_GAP)
    layout["title"] = {
        "text": _("layer {layer} · kv head {kv_head} · q head {head}").format(
            layer=snap.layer, kv_head=snap.kv_head, head=snap.q_head
        ),
        "x": 0,
        "xref": "paper",
        "xanchor": "left",
        "y": 1,
        "yref": "container",
        "yanchor": "top",
        "pad": {"t": 6},
    }
    data, shapes = [], []
    for col, (name, values) in enumerate((("K", snap.keys), ("V", snap.values)), start=1):
        limit = float(np.abs(values).max()) or 1.0
        domain = layout[_axis("xaxis", col)]["domain"]
        data.append(
            {
                "type": "heatmap",
                "z": values.astype(np.float32),
                "x": list(range(head_dim)),
                "y": y,
                "colorscale": _colorscale(HEATMAP_SCALE),
                "zmin": -limit,
                "zmax": limit,
                "showscale": True,
                "colorbar": _colorbar_under(domain, font_px),
                "name": name,
                "hovertemplate": _("{name}[position %{{y}}, dim %{{x}}] = %{{z:.3f}}<extra></extra>").format(name=name),
                "xaxis": _axis("x", col),
                "yaxis": _axis("y", col),
            }
        )
        shapes += _outline_shapes(snap.new_rows, head_dim, col, NEW_ROW_COLOR)
    colors = [NEW_ROW_COLOR if p in snap.new_rows else ATTENTION_COLOR for p in y]
    data.append(
        {
            "type": "bar",
            "x": np.round(snap.attention, 4),
            "y": y,
            "orientation": "h",
            "marker": {"color": colors},
            "hovertemplate": _("position %{y}: weight %{x:.3f}<extra></extra>"),
            "name": _("attention"),
            "xaxis": "x3",
            "yaxis": "y3",
        }
    )
    top = float(snap.attention.max()) if rows else 1.0
    layout["xaxis3"].update(range=[0, max(top * 1.1, 0.05)], nticks=3)
    for key in ("xaxis", "xaxis2"):
        layout[key].update(title={"text": "head_dim", "standoff": 2}, showticklabels=False)
    named = (snap.copy.target_pos,) if snap.copy is not None else ()  # the row the readout names
    layout["yaxis"].update(autorange="reversed", **_row_ticks(snap.first_row, snap.row_labels, named))
    layout.update(height=height_px, margin=_stage_margins(font_px), showlegend=False, bargap=0.1, shapes=shapes)
    return SpecFigure({"data": data, "layout": _fonts_dict(layout, font_px)})


def stage_figure_text(snap: StageSnapshot) -> str:
    """stage_figure's data as a sentence, for a reader who cannot see the chart (a screen reader reads it):
    which K/V rows are drawn and their size, the newest row, and where this head's query puts most of its weight."""
    rows, head_dim = snap.keys.shape
    last = snap.first_row + rows - 1
    peak = snap.first_row + int(np.argmax(snap.attention))
    tokens = {t.position: t.text for t in snap.strip if t.position is not None}

    def row(position: int) -> str:
        token = tokens.get(position, "")
        return _("position {position} (“{token}”)").format(position=position, token=token.strip() or visible(token))

    text = _(
        "Chart: layer {layer}, K/V head {kv_head}, read by query head {q_head}. K and V each hold {rows} rows "
        "of {head_dim} numbers, positions {first} to {last}; the newest row is {newest}. The query of the "
        "newest token puts its largest attention weight, {weight:.2f}, on {peak}."
    ).format(
        layer=snap.layer,
        kv_head=snap.kv_head,
        q_head=snap.q_head,
        rows=rows,
        head_dim=head_dim,
        first=snap.first_row,
        last=last,
        newest=row(last),
        weight=float(snap.attention[peak - snap.first_row]),
        peak=row(peak),
    )
    if snap.first_row:
        text += " " + _("{n} older rows are not drawn; they got {share:.0%} of the attention.").format(
            n=snap.first_row, share=snap.attention_above
        )
    return text


def head_conv(state: LinearState, head: int) -> np.ndarray:
    """One head's columns of a linear layer's conv state, [conv_kernel, 3 x d]: its q, k and v channels (the conv
    runs over q, k and v of every head side by side: all heads' q, then all k, then all v), oldest input first."""
    heads, d_k, d_v = state.recurrent.shape
    q = state.conv[head * d_k : (head + 1) * d_k]
    k = state.conv[heads * d_k + head * d_k : heads * d_k + (head + 1) * d_k]
    v = state.conv[2 * heads * d_k + head * d_v : 2 * heads * d_k + (head + 1) * d_v]
    return np.concatenate([q, k, v]).T


def state_figure(snap: StageSnapshot, font_px: int = 14, height_px: int = 370) -> go.Figure:
    """A linear-attention layer's whole cache, per head: the d_k x d_v recurrent state (top row) and the head's
    columns of the conv state (bottom row: the last conv_kernel inputs of its q, k, v). Fixed shapes: the same
    picture size at every step, only the colours change."""
    state = snap.state
    heads, d_k, d_v = state.recurrent.shape
    kernel = state.conv.shape[1]
    per_head_recurrent = state.recurrent_bytes // heads
    # short panel titles (a phone's panel is ~70 px wide): the head; each row's shape and bytes on its left axis
    titles = [f"H{h}" for h in range(heads)] + [""] * heads
    fig = make_subplots(
        rows=2,
        cols=heads,
        row_heights=[0.72, 0.28],
        vertical_spacing=0.08,
        horizontal_spacing=0.02,
        subplot_titles=titles,
    )
    limit = float(np.abs(state.recurrent).max()) or 1.0
    conv_limit = float(np.abs(state.conv).max()) or 1.0
    for h in range(heads):
        fig.add_trace(
            go.Heatmap(
                z=state.recurrent[h].astype(np.float32),
                colorscale=HEATMAP_SCALE,
                zmin=-limit,
                zmax=limit,
                showscale=h == heads - 1,
                colorbar={"thickness": 8, "len": 0.6, "y": 0.65},
                hovertemplate=_("head {head}: S[k %{{y}}, v %{{x}}] = %{{z:.3f}}<extra></extra>").format(head=h),
            ),
            row=1,
            col=h + 1,
        )
        fig.add_trace(
            go.Heatmap(
                z=head_conv(state, h).astype(np.float32),
                colorscale=HEATMAP_SCALE,
                zmin=-conv_limit,
                zmax=conv_limit,
                showscale=False,
                hovertemplate=_("head {head}: conv input %{{y}}, channel %{{x}} = %{{z:.3f}}<extra></extra>").format(
                    head=h
                ),
            ),
            row=2,
            col=h + 1,
        )
    fig.update_xaxes(showticklabels=False)
    fig.update_yaxes(showticklabels=False, autorange="reversed")
    fig.update_yaxes(
        title={
            "text": _("state {d_k}x{d_v} · {size}").format(d_k=d_k, d_v=d_v, size=short_bytes(per_head_recurrent)),
            "standoff": 2,
        },
        row=1,
        col=1,
    )
    fig.update_yaxes(
        title={"text": _("conv {kernel}x{channels}").format(kernel=kernel, channels=2 * d_k + d_v), "standoff": 2},
        row=2,
        col=1,
    )
    fig.update_layout(
        height=height_px,
        margin={**_margins(font_px), "l": 2 * font_px + 10},
        showlegend=False,
        title={
            "text": _("layer {layer} · linear attention state (fixed size)").format(layer=state.layer),
            "x": 0,
            "xanchor": "left",
            "y": 1,
            "yref": "container",
            "yanchor": "top",
            "pad": {"t": 6},
        },
    )
    return _fonts(fig, font_px)


def state_figure_text(snap: StageSnapshot) -> str:
    """state_figure's data as a sentence, for a reader who cannot see the chart."""
    state = snap.state
    heads, d_k, d_v = state.recurrent.shape
    return _(
        "Chart: layer {layer}'s linear-attention state, per head: {heads} state matrices of {d_k} x {d_v} numbers "
        "({recurrent}) and each head's last {kernel} convolution inputs ({conv}); {total} in all, the same "
        "size at every step."
    ).format(
        layer=state.layer,
        heads=heads,
        d_k=d_k,
        d_v=d_v,
        recurrent=short_bytes(state.recurrent_bytes),
        kernel=state.conv.shape[1],
        conv=short_bytes(state.conv_bytes),
        total=short_bytes(state.total_bytes),
    )


def group_figure(snap: StageSnapshot, font_px: int = 14, height_px: int = 360) -> go.Figure:
    """Grouped-query attention: one K/V head's cached rows, and beside them the attention of every query head
    that reads them (same row axis): several queries, one cache."""
    rows, head_dim = snap.keys.shape
    y = list(range(snap.first_row, snap.first_row + rows))
    n = len(snap.group_heads)
    layout = _panels(
        [_("K · kv head {kv_head}").format(kv_head=snap.kv_head)] + [f"q{h}" for h in snap.group_heads],
        (0.34, *[0.66 / n] * n),
        0.02,
    )
    limit = float(np.abs(snap.keys).max()) or 1.0
    data = [
        {
            "type": "heatmap",
            "z": snap.keys.astype(np.float32),
            "y": y,
            "colorscale": _colorscale(HEATMAP_SCALE),
            "zmin": -limit,
            "zmax": limit,
            "showscale": True,
            "colorbar": {**_colorbar(1.0, font_px), "title": {"text": "K", "side": "top"}},
            "hovertemplate": _("{name}[position %{{y}}, dim %{{x}}] = %{{z:.3f}}<extra></extra>").format(name="K"),
            "xaxis": "x",
            "yaxis": "y",
        }
    ]
    for i, head in enumerate(snap.group_heads):
        weights = snap.group_attention[i]
        data.append(
            {
                "type": "bar",
                "x": np.round(weights, 4),
                "y": y,
                "orientation": "h",
                "marker": {"color": ATTENTION_COLOR},
                "hovertemplate": _("q head {head}, position %{{y}}: %{{x:.3f}}<extra></extra>").format(head=head),
                "xaxis": _axis("x", 2 + i),
                "yaxis": _axis("y", 2 + i),
            }
        )
        layout[f"xaxis{2 + i}"].update(range=[0, max(float(weights.max()) * 1.1, 0.05)], showticklabels=False)
    layout["xaxis"].update(showticklabels=False, title={"text": "head_dim"})
    layout["yaxis"].update(autorange="reversed", **_row_ticks(snap.first_row, snap.row_labels))
    layout.update(
        height=height_px,
        margin={**_margins(font_px), "r": 3 * font_px + 10},
        showlegend=False,
        bargap=0.1,
        shapes=_outline_shapes(snap.new_rows, head_dim, 1, NEW_ROW_COLOR),
    )  # r: the colour scale
    return SpecFigure({"data": data, "layout": _fonts_dict(layout, font_px)})


def group_figure_text(snap: StageSnapshot) -> str:
    """group_figure's data as a sentence, for a reader who cannot see the chart: the K/V head's rows
    drawn, and for each query head that reads them, where its largest weight falls."""
    rows, head_dim = snap.keys.shape
    heads = list_sep().join(
        [
            _("query head {head}: {weight:.2f} on position {position}").format(
                head=head, weight=float(weights.max()), position=snap.first_row + int(np.argmax(weights))
            )
            for head, weights in zip(snap.group_heads, snap.group_attention, strict=True)
        ]
    )
    return _(
        "Chart: K/V head {kv_head} of layer {layer}, {rows} rows of {head_dim} numbers, positions {first} to "
        "{last}, read by {n} query heads. Their largest attention weights: {heads}."
    ).format(
        kv_head=snap.kv_head,
        layer=snap.layer,
        rows=rows,
        head_dim=head_dim,
        first=snap.first_row,
        last=snap.first_row + rows - 1,
        n=len(snap.group_heads),
        heads=heads,
    )


def race_figure(snap: StageSnapshot, cached: bool, font_px: int = 14, height_px: int = 300) -> go.Figure:
    """Every layer's K cache of one head. cached=True: one new row per layer is computed (outlined orange);
    cached=False: every row of every layer is recomputed (all outlined red)."""
    n_layer = len(snap.layer_keys)
    names = snap.kv_layers or tuple(range(n_layer))  # a hybrid: its attention layers only
    layout = _panels([_("layer {layer}").format(layer=i) for i in names], None, 0.015)
    data, shapes = [], []
    for col_index, rows in enumerate(snap.layer_keys):
        layer = names[col_index]
        limit = float(np.abs(rows).max()) or 1.0
        y = list(range(snap.first_row, snap.first_row + rows.shape[0]))
        col = col_index + 1
        data.append(
            {
                "type": "heatmap",
                "z": rows.astype(np.float32),
                "y": y,
                "colorscale": _colorscale(HEATMAP_SCALE),
                "zmin": -limit,
                "zmax": limit,
                "showscale": False,
                "hovertemplate": _("layer {layer}, position %{{y}}<extra></extra>").format(layer=layer),
                "xaxis": _axis("x", col),
                "yaxis": _axis("y", col),
            }
        )
        if cached:
            shapes += _outline_shapes(snap.new_rows or y, rows.shape[1], col, NEW_ROW_COLOR)
        else:  # the whole block is recomputed: a red veil over every row
            shapes.append(
                {
                    "type": "rect",
                    "x0": -0.5,
                    "x1": rows.shape[1] - 0.5,
                    "y0": y[0] - 0.5,
                    "y1": y[-1] + 0.5,
                    "line": {"color": RECOMPUTED_COLOR, "width": 4},
                    "fillcolor": RECOMPUTED_COLOR,
                    "opacity": 0.35,
                    "xref": _axis("x", col),
                    "yref": _axis("y", col),
                }
            )
    for key, axis in layout.items():
        if key.startswith("yaxis"):
            axis.update(autorange="reversed", showticklabels=False)
        elif key.startswith("xaxis"):
            axis["showticklabels"] = False
    layout["yaxis"].update(showticklabels=True, title={"text": _("position")})
    layout.update(height=height_px, margin=_margins(font_px), showlegend=False, shapes=shapes)
    return SpecFigure({"data": data, "layout": _fonts_dict(layout, font_px)})


def _positions(positions: Sequence[int]) -> str:
    """Cache positions as a sentence names them: "position 7", "positions 0 to 12" (a contiguous run)."""
    if len(positions) == 1:
        return _("position {position}").format(position=positions[0])
    return _("positions {first} to {last}").format(first=positions[0], last=positions[-1])


def race_figure_text(snap: StageSnapshot, cached: bool) -> str:
    """race_figure's data as a sentence, for a reader who cannot see the chart: the K rows drawn in
    every layer and their width, and which of them this pass computes (outlined) or recomputes (shaded red)."""
    n_layer = len(snap.layer_keys)
    rows, head_dim = snap.layer_keys[0].shape if n_layer else (0, 0)
    drawn = list(range(snap.first_row, snap.first_row + rows))
    text = (
        _(
            "Chart, with the cache: the K rows of K/V head {kv_head} in each of the {layers} layers, {rows} rows of "
            "{head_dim} numbers, {positions}."
        )
        if cached
        else _(
            "Chart, without the cache: the K rows of K/V head {kv_head} in each of the {layers} layers, {rows} rows "
            "of {head_dim} numbers, {positions}."
        )
    ).format(kv_head=snap.kv_head, layers=n_layer, rows=rows, head_dim=head_dim, positions=_positions(drawn))
    if not cached:
        text += " " + _("In every layer this step recomputes all of them (shaded red).")
    elif not snap.new_rows:  # race_figure outlines every drawn row: the prefill, with nothing cached before it
        text += " " + _("In every layer the prefill computes all of them (outlined): nothing was cached before it.")
    else:
        text += " " + ngettext(
            "In every layer this step computes {n} row, {positions} (outlined); the other {rest} are read from the "
            "cache.",
            "In every layer this step computes {n} rows, {positions} (outlined); the other {rest} are read "
            "from the cache.",
            len(snap.new_rows),
        ).format(n=len(snap.new_rows), positions=_positions(snap.new_rows), rest=rows - len(snap.new_rows))
    if snap.first_row:
        text += " " + ngettext("{n} older row is not drawn.", "{n} older rows are not drawn.", snap.first_row).format(
            n=snap.first_row
        )
    return text


def _median_spread(samples: Sequence[float]) -> tuple[float, float, float]:
    """(median, median - 25th percentile, 75th percentile - median): kvviz.measure.timing's statistic, as the
    race's clock draws it (a bar and its whiskers) and race_timing_figure_text says it."""
    (q1, q3), med = quartiles(samples), median(samples)
    return med, med - q1, q3 - med


def race_timing_figure(
    cached_ms: Sequence[float],
    uncached_ms: Sequence[float],
    fixed_ms: Sequence[float],
    font_px: int = 14,
    height_px: int = 120,
) -> go.Figure:
    """The race's clock: each side's median (bar) with its middle half of repeats (whisker: 25th-75th
    percentile), and the 1-token forward, timed between them the same way, as the same statistic: its median a
    dashed line, its middle half a grey band (the floor every forward stands on here). One repeat a side has no
    spread: no whiskers, and the chart says so."""
    names = [_("without the cache"), _("with the cache")]  # top to bottom: the slow side on top reads as a race
    rows = [_median_spread(uncached_ms), _median_spread(cached_ms)]
    single = min(len(cached_ms), len(uncached_ms)) < 2
    fig = go.Figure(
        go.Bar(
            x=[r[0] for r in rows],
            y=names,
            orientation="h",
            marker_color=[RECOMPUTED_COLOR, NEW_ROW_COLOR],
            error_x={
                "type": "data",
                "symmetric": False,
                "array": [r[2] for r in rows],
                "arrayminus": [r[1] for r in rows],
                "thickness": 2,
                "width": 6,
                "visible": not single,
            },
            text=[f"{r[0]:.1f} ms" for r in rows],
            textposition="inside",
            insidetextanchor="start",
            cliponaxis=False,
            hovertemplate=_("%{y}: median %{x:.2f} ms<extra></extra>"),
        )
    )
    fixed, fixed_below, fixed_above = _median_spread(fixed_ms)
    if fixed_below + fixed_above > 0:  # the floor's middle half, as the whiskers show the sides'
        fig.add_vrect(
            x0=fixed - fixed_below,
            x1=fixed + fixed_above,
            fillcolor="#868e96",
            opacity=0.2,
            line_width=0,
            layer="below",
        )
    fig.add_vline(x=fixed, line={"dash": "dash", "color": "#868e96", "width": 2})
    top = max(max(r[0] + r[2] for r in rows), fixed + fixed_above)
    label = _("1-token forward, median: {ms:.1f} ms").format(ms=fixed)
    # beside the dashed line, on the side with room: a floor in the right half of the axis reads its label to the
    # left of the line (to its right it ran past the chart's edge, longest in Chinese)
    right_half = fixed > top * 1.15 / 2
    fig.add_annotation(
        x=fixed,
        y=1.0,
        yref="paper",
        yanchor="bottom",
        showarrow=False,
        xanchor="right" if right_half else "left",
        text=f"{label} ┆" if right_half else f"┆ {label}",
    )
    if single:  # bottom right: beside the short cached bar, clear of the floor's label above the plot
        fig.add_annotation(
            x=1.0,
            xref="paper",
            y=0.0,
            yref="paper",
            yanchor="bottom",
            xanchor="right",
            showarrow=False,
            text=_("one repeat: no spread"),
        )
    fig.update_xaxes(range=[0, top * 1.15], nticks=5, ticksuffix=" ms")
    fig.update_layout(
        height=height_px, margin={"l": 10, "r": 10, "t": font_px + 12, "b": 10}, showlegend=False, bargap=0.3
    )
    fig.update_traces(textfont_size=font_px)
    return _fonts(fig, font_px)


def race_timing_figure_text(timing: RaceTiming) -> str:
    """race_timing_figure's data as sentences, for a reader who cannot see the chart: each side's
    median with its middle half (the whiskers), the 1-token forward's (the dashed line and its grey band), and the
    verdict the race's caption gives, by the same rule (RaceTiming.inside_noise: kvviz.measure.timing's overlap of
    the middle halves; else its paired comparison, RaceTiming.cached_faster)."""
    single = timing.single_repeat

    def said(samples: Sequence[float], drawn: bool = True) -> str:
        med, below, above = _median_spread(samples)
        if not drawn or below + above == 0:  # no whisker (one repeat a side) or no grey band: no spread to say
            return _("median {median:.1f} ms").format(median=med)
        return _("median {median:.1f} ms, middle half {q1:.1f} to {q3:.1f} ms").format(
            median=med, q1=med - below, q3=med + above
        )

    text = _(
        "Clock chart: without the cache, {uncached}; with the cache, {cached}; the dashed line, a 1-token forward "
        "with nothing cached (the fixed cost every forward pays), {fixed}."
    ).format(
        uncached=said(timing.uncached_ms, not single),
        cached=said(timing.cached_ms, not single),
        fixed=said(timing.fixed_ms),
    )
    if single:
        text += " " + _("One repeat a side: no spread.")
    if timing.inside_noise:
        verdict = _("The difference is inside the noise: the middle halves overlap.")
    elif not timing.cached_faster:
        verdict = _("The cached step measured slower this time.")
    else:
        verdict = _("The step with the cache is {x:.1f}x faster.").format(
            x=timing.uncached_median_ms / timing.cached_median_ms
        )
    return f"{text} {verdict}"


def next_token_bars(
    texts: Sequence[str], probs: Sequence[float], chosen: str, font_px: int = 14, height_px: int = 300
) -> go.Figure:
    """Top-k next-token probabilities, most likely on top, the chosen token in orange. The axis scales to the
    largest probability, so a near-uniform random model's tiny bars are still visible (never an empty chart)."""
    labels = [f"'{visible(t)[:14]}'" for t in texts]
    colors = [NEW_ROW_COLOR if t == chosen else "#868e96" for t in texts]
    top = max(probs) if probs else 1.0
    bar = {
        "type": "bar",
        "x": [round(p, 4) for p in probs][::-1],
        "y": labels[::-1],
        "orientation": "h",
        "marker": {"color": colors[::-1]},
        "text": [f"{p:.3f}" for p in probs][::-1],
        "textposition": "outside",
        "cliponaxis": False,  # a 0.9 bar's label may pass x = 1
        "hovertemplate": "%{y}: %{x:.4f}<extra></extra>",
        "textfont": {"size": font_px},
    }
    layout = {
        "yaxis": {"tickmode": "array", "tickvals": labels, "ticktext": labels},  # every label, even at 18 px
        # under the mode bar (its camera reaches 32 px down on hover): in the stage's narrow column the title
        # runs to the camera's edge
        "title": {
            "text": _("Next-token probabilities"),
            "yref": "container",
            "y": 1,
            "yanchor": "top",
            "pad": {"t": MODEBAR_PX + 6},
        },
        "xaxis": {"range": [0, min(1.0, top * 1.35) or 1.0], "title": {"text": _("probability")}},
        "height": height_px,
        "margin": {**_margins(font_px), "t": MODEBAR_PX + font_px + 16, "r": 3 * font_px},
    }  # r: that label
    return SpecFigure({"data": [bar], "layout": _fonts_dict(layout, font_px)})


def next_token_bars_text(texts: Sequence[str], probs: Sequence[float], chosen: str) -> str:
    """next_token_bars' data as a sentence, for a reader who cannot see the chart: the candidates drawn,
    most likely first, with their probabilities as the bars' labels print them, and the token drawn."""
    if not texts:
        return ""
    listed = list_sep().join(
        [_("“{token}” {p:.3f}").format(token=t.strip() or visible(t), p=p) for t, p in zip(texts, probs, strict=True)]
    )
    return _(
        "Next-token chart: the {n} most likely next tokens, most likely first: {listed}. Chosen: “{chosen}”."
    ).format(n=len(texts), listed=listed, chosen=chosen.strip() or visible(chosen))


def growth_chart(
    steps: Sequence[int], with_cache: Sequence[int], without_cache: Sequence[int], what: str, font_px: int = 14
) -> go.Figure:
    """Cumulative work with vs without cache, step by step."""
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=list(steps), y=list(with_cache), mode="lines+markers", name=_("with KV cache")))
    fig.add_trace(go.Scatter(x=list(steps), y=list(without_cache), mode="lines+markers", name=_("without cache")))
    fig.update_layout(
        title=_("Cumulative {what}").format(what=what),
        xaxis_title=_("step (0 = prefill)"),
        yaxis_title=what,
        height=300,
        margin=_margins(font_px),
    )
    return _fonts(fig, font_px)


def hybrid_layers_figure(
    layers: Sequence[int],
    kv_rows: Sequence[int],
    kv_bytes: Sequence[int],
    state_bytes: Sequence[int],
    tokens: int,
    font_px: int = 14,
    height_px: int = 300,
) -> go.Figure:
    """A hybrid's cache after `tokens` tokens, one bar per layer: the K/V that grows (its rows written on it) and the
    fixed state, in bytes."""
    names = [_("layer {layer}").format(layer=i) for i in layers]
    kib = [b / 1024 for b in kv_bytes]
    fig = go.Figure(
        [
            go.Bar(
                x=names,
                y=kib,
                name=_("K/V rows (grows)"),
                marker_color=NEW_ROW_COLOR,
                text=[ngettext("{n} row", "{n} rows", r).format(n=r) if r else "" for r in kv_rows],
                textposition="inside",
                hovertemplate=_("%{x}: K/V %{y:.1f} KiB<extra></extra>"),
            ),
            go.Bar(
                x=names,
                y=[b / 1024 for b in state_bytes],
                name=_("state (fixed)"),
                marker_color=ATTENTION_COLOR,
                text=[short_bytes(b) if b else "" for b in state_bytes],
                textposition="inside",
                hovertemplate=_("%{x}: state %{y:.1f} KiB<extra></extra>"),
            ),
        ]
    )
    fig.update_layout(
        barmode="stack",
        height=height_px,
        margin=_margins(font_px),
        title=_("After {tokens} tokens: what each layer keeps").format(tokens=tokens),
        yaxis_title="KiB",
        legend={"orientation": "h", "y": -0.15},
    )
    return _fonts(fig, font_px)


def context_race_figure(race: ContextRace, font_px: int = 14, height_px: int = 300) -> go.Figure:
    """One decode step's time against the context, the hybrid beside its all-attention twin: medians, whiskers over
    the middle half of the repeats (the noise rule's range)."""
    fig = go.Figure()
    for name, samples, color in (
        (_("hybrid"), race.hybrid_ms, ATTENTION_COLOR),
        (_("all attention, same shape"), race.twin_ms, RECOMPUTED_COLOR),
    ):
        medians = [median(x) for x in samples]
        low, high = zip(*(quartiles(x) for x in samples), strict=True)
        fig.add_trace(
            go.Scatter(
                x=list(race.contexts),
                y=medians,
                name=name,
                mode="lines+markers",
                line={"color": color, "width": 3},
                error_y={
                    "type": "data",
                    "symmetric": False,
                    "array": [h - m for h, m in zip(high, medians, strict=True)],
                    "arrayminus": [m - lo for m, lo in zip(medians, low, strict=True)],
                },
                hovertemplate=_("%{x} tokens: %{y:.2f} ms<extra></extra>"),
            )
        )
    fig.update_layout(
        height=height_px,
        margin=_margins(font_px),
        title=_("One decode step as the context grows"),
        xaxis_title=_("tokens in the cache"),
        yaxis_title=_("ms per step"),
        yaxis_rangemode="tozero",
        legend={"orientation": "h", "y": -0.25},
    )
    return _fonts(fig, font_px)
