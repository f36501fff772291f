"""Figures for a model whose layers differ (Memory budget): the layer strip, and the cache in two parts against context.

Input: a kvviz.memory.layers.CacheLayers. Output: plotly figures, and each figure's data as sentences for a reader
who cannot see it. No Streamlit, no torch.
"""

from __future__ import annotations

import plotly.graph_objects as go

from kvviz.figures import BLUE, GREEN, ORANGE, PURPLE, VERMILLION, readable, top_legend
from kvviz.figures.memory import TOOLBAR_PX, bytes_axis, context_grid, layer_runs
from kvviz.i18n import _, join_sentences, ngettext
from kvviz.memory.layers import KIND_NAMES, KINDS, CacheLayers
from kvviz.memory.units import binary_unit, format_bytes

GREY = "#999999"
# One colour per kind (the figures' colour-blind-safe palette): growing kinds blue/orange/purple, states green,
# both in one layer vermillion, nothing grey.
KIND_COLORS = {
    "full": BLUE,
    "sliding": ORANGE,
    "chunked": ORANGE,
    "mla": PURPLE,
    "indexed": PURPLE,
    "state": GREEN,
    "hybrid": VERMILLION,
    "none": GREY,
}
KIND_PATTERNS = {"chunked": "/", "indexed": "/"}  # told apart from their neighbours' colour by a hatch


def layer_strip_figure(stack: CacheLayers, tokens: int, batch: int = 1) -> go.Figure:
    """One cell per layer, coloured by kind: which layers grow with the context, which hold a fixed state, which
    hold nothing. Hover: the layer's type, what it computes, bytes per token, fixed bytes, bytes at `tokens`."""
    held = stack.layer_bytes(tokens, batch)
    fig = go.Figure()
    for kind in stack.kinds:
        idx = [x.index for x in stack.layers if x.kind == kind]
        fig.add_trace(
            go.Bar(
                x=idx,
                y=[1] * len(idx),
                name=_(KIND_NAMES[kind]),
                width=0.92,
                marker=dict(color=KIND_COLORS[kind], pattern_shape=KIND_PATTERNS.get(kind, "")),
                customdata=[
                    (
                        stack.layers[i].layer_type,
                        stack.layers[i].mixer,
                        stack.layers[i].bytes_per_token,
                        stack.layers[i].fixed_bytes,
                        held[i],
                    )
                    for i in idx
                ],
                hovertemplate=_(
                    "layer %{x}: %{customdata[0]} (%{customdata[1]})<br>%{customdata[2]:,} B per token, "
                    "%{customdata[3]:,} B fixed<br>%{customdata[4]:,} B now<extra></extra>"
                ),
            )
        )
    return _titled(
        fig,
        _("The {n} layers of {name}").format(n=stack.n_layer, name=stack.name),
        len(stack.kinds),
        plot_px=110,
        barmode="overlay",
        xaxis=dict(title=_("layer"), range=[-0.5, stack.n_layer - 0.5]),
        yaxis=dict(visible=False, range=[0, 1]),
        bargap=0,
    )


def _titled(fig: go.Figure, title: str, legend_entries: int, plot_px: int, **layout) -> go.Figure:
    """The title below the toolbar's band (it shows on hover), the legend's rows between the title and the plot."""
    legend, top = top_legend(legend_entries, title_px=TOOLBAR_PX + 30)
    height = plot_px + top + 60
    fig.update_layout(
        title=dict(text=title, x=0, xanchor="left", y=1 - TOOLBAR_PX / height, yanchor="top"),
        legend=legend,
        margin=dict(t=top, b=60),
        height=height,
        **layout,
    )
    return readable(fig)


def layer_strip_text(stack: CacheLayers, tokens: int, batch: int = 1) -> str:
    """layer_strip_figure's data as sentences: each kind, its layers, and what one of them holds."""
    parts = [
        _("Chart: the {n} layers of {name}, one cell each, coloured by what they keep.").format(
            n=stack.n_layer, name=stack.name
        )
    ]
    for kind in stack.kinds:
        layers = [x for x in stack.layers if x.kind == kind]
        first = layers[0]
        parts.append(
            ngettext(
                "{kind}: layer {layers}, {per_token:,} B per token and {fixed:,} B fixed.",
                "{kind}: layers {layers}, {per_token:,} B per token and {fixed:,} B fixed each.",
                len(layers),
            ).format(
                kind=_(KINDS[kind]),
                layers=layer_runs([x.index for x in layers]),
                per_token=first.bytes_per_token,
                fixed=first.fixed_bytes,
            )
        )
    parts.append(
        _("At {n:,} tokens x batch {batch}: {bytes_} in all.").format(
            n=tokens, batch=batch, bytes_=format_bytes(stack.bytes_at(tokens, batch))
        )
    )
    return join_sentences(parts)


def _parts_at(stack: CacheLayers, grid: list[int], batch: int) -> tuple[list[int], list[int]]:
    states = [batch * stack.fixed_bytes if x else 0 for x in grid]
    kv = [stack.growing_bytes_at(x, batch) for x in grid]
    return states, kv


def two_part_figure(stack: CacheLayers, max_context: int, batch: int = 1, mark_context: int | None = None) -> go.Figure:
    """The cache against context in two parts, stacked: the fixed state (flat) and the K/V that grows; dashed, the same
    model as if every layer were full attention; a dotted line where the K/V reaches the state."""
    grid = context_grid(max_context)
    states, kv = _parts_at(stack, grid, batch)
    every = stack.as_all_attention()
    whole = [every.bytes_at(x, batch) for x in grid] if every is not None and not stack.uniform else []
    unit, size = binary_unit(max([s + k for s, k in zip(states, kv, strict=True)] + whole + [1]))
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=grid,
            y=[s / size for s in states],
            name=_("fixed state"),
            stackgroup="cache",
            line=dict(color=GREEN),
            hovertemplate=_("%{x:,} tokens: state %{y:.4g}<extra></extra>"),
        )
    )
    fig.add_trace(
        go.Scatter(
            x=grid,
            y=[k / size for k in kv],
            name=_("K/V (grows with the context)"),
            stackgroup="cache",
            line=dict(color=BLUE),
            hovertemplate=_("%{x:,} tokens: + K/V %{y:.4g}<extra></extra>"),
        )
    )
    if whole:
        fig.add_trace(
            go.Scatter(
                x=grid,
                y=[w / size for w in whole],
                name=_("every layer full attention"),
                line=dict(color=VERMILLION, dash="dash"),
            )
        )
    until = stack.state_dominates_until()
    if until is not None and until <= max_context:
        fig.add_vline(
            x=until, line=dict(color=GREY, dash="dot"), annotation_text=_("K/V = state"), annotation_position="top left"
        )
    if mark_context is not None and 0 < mark_context <= max_context:
        fig.add_vline(x=mark_context, line=dict(color=PURPLE, width=1))
    return _titled(
        fig,
        _("Cache vs context: the fixed state and the K/V"),
        len(fig.data),
        plot_px=260,
        xaxis_title=_("context (tokens)"),
        yaxis_title=bytes_axis(unit, size),
    )


def two_part_text(stack: CacheLayers, max_context: int, batch: int = 1, mark_context: int | None = None) -> str:
    """two_part_figure's data as sentences: both parts at the marked context and at the end, and the crossover."""
    parts = [
        _("Chart: {name}'s cache from 0 to {n:,} tokens at batch {batch}, in two parts.").format(
            name=stack.name, n=max_context, batch=batch
        )
    ]
    for at in sorted({x for x in (mark_context, max_context) if x}):
        parts.append(
            _("At {n:,} tokens: fixed state {state}, K/V {kv}.").format(
                n=at, state=format_bytes(batch * stack.fixed_bytes), kv=format_bytes(stack.growing_bytes_at(at, batch))
            )
        )
    until = stack.state_dominates_until()
    if until is not None:
        parts.append(_("The K/V reaches the state at {n:,} tokens (dotted line).").format(n=until))
    every = stack.as_all_attention()
    if every is not None and not stack.uniform:
        parts.append(
            _("Dashed: every layer full attention, {bytes_} at {n:,} tokens.").format(
                bytes_=format_bytes(every.bytes_at(max_context, batch)), n=max_context
            )
        )
    return join_sentences(parts)
