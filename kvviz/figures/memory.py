"""Figures for "Memory budget": cache size vs context, per-layer bytes, paged vs flat allocation.

Input: kvviz.memory configs and records. Output: plotly figures. No Streamlit.
"""

from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go

from kvviz.figures import BLUE, GREEN, MARKER_COLOR, ORANGE, PURPLE, VERMILLION, readable, top_legend
from kvviz.i18n import _, join_sentences, ngettext, numbers
from kvviz.memory import KVBudget, KVConfig, capacity, kv_bytes
from kvviz.memory.capacity import PagedView
from kvviz.memory.units import binary_unit, format_bytes, short_bytes

LINE_COLORS = (BLUE, VERMILLION, GREEN, PURPLE)  # never the marker's orange
TOOLBAR_PX = 32  # the band at a chart's top where its toolbar (Streamlit's and plotly's mode bar) shows on hover


def bytes_axis(unit: str, size: int) -> str:
    """A byte axis' title: "GiB (1,073,741,824 bytes)", or "bytes" below 1 KiB."""
    return _("{unit} ({size:,} bytes)").format(unit=unit, size=size) if size > 1 else _("bytes")


def context_grid(max_context: int, points: int = 120) -> list[int]:
    """Evenly spread context lengths 0..max_context (always including both ends)."""
    points = max(2, min(points, max_context + 1))
    return sorted({max_context * i // (points - 1) for i in range(points)})


def _context_lines(
    configs: Sequence[KVConfig], max_context: int, batch: int, max_contexts: Sequence[int | None] | None
) -> tuple[list, list[list[int]], list[list[int]]]:
    """(each config's own maximum context or None, each line's context lengths, each line's exact bytes there):
    what size_vs_context_figure draws and size_vs_context_figure_text says."""
    limits = list(max_contexts) if max_contexts is not None else [None] * len(configs)
    if len(limits) != len(configs):
        raise ValueError("one maximum context per config")
    xs = context_grid(max_context)
    ends = [max_context if limit is None else min(limit, max_context) for limit in limits]
    grids = [[x for x in xs if x < end] + [end] for end in ends]  # every line ends exactly at its limit
    lines = [[kv_bytes(cfg, x, batch) for x in grid] for cfg, grid in zip(configs, grids, strict=True)]
    return limits, grids, lines


def size_vs_context_figure(
    configs: Sequence[KVConfig],
    max_context: int,
    batch: int = 1,
    mark_context: int | None = None,
    budget_bytes: int | None = None,
    max_contexts: Sequence[int | None] | None = None,
) -> go.Figure:
    """One line per config: cache size against context length (windows show up as plateaus).

    max_contexts: each config's own maximum context (None: unknown); its line stops there, marked with a dot,
    because a model never holds more tokens than it was built for. The x axis runs to max_context.
    """
    limits, grids, lines = _context_lines(configs, max_context, batch, max_contexts)
    unit, size = binary_unit(max(max(line) for line in lines))  # GiB for Llama at 8k, KiB for a toy model
    fig = go.Figure()
    for i, (cfg, grid, line, limit) in enumerate(zip(configs, grids, lines, limits, strict=True)):
        name = (
            _("{name} ({kind}, max {limit:,})").format(name=cfg.name, kind=cfg.attention_kind, limit=limit)
            if limit is not None
            else f"{cfg.name} ({cfg.attention_kind})"
        )
        color = LINE_COLORS[i % len(LINE_COLORS)]
        fig.add_scatter(
            x=grid,
            y=[b / size for b in line],
            name=name,
            customdata=line,
            mode="lines",
            line=dict(width=3, color=color),
            legendgroup=f"{i}",
            hovertemplate=_("%{x:,} tokens: %{customdata:,} B<extra></extra>"),
        )
        if limit is not None and limit <= max_context:  # the end of the model's context: a dot, same colour
            fig.add_scatter(
                x=[grid[-1]],
                y=[line[-1] / size],
                mode="markers",
                showlegend=False,
                hoverinfo="skip",
                marker=dict(size=11, color=color),
                legendgroup=f"{i}",
            )
    # Plain thousands ("20,000"): never "0.2x10^5" on a token axis; past ten million tokens (a what-if, no model
    # has that context) powers of ten, never plotly's default "600B" (billion? bytes?).
    fig.update_xaxes(
        exponentformat="none" if max_context < 10**7 else "power",
        separatethousands=True,
        rangemode="tozero",
        range=[0, max_context * 1.02],
    )
    fig.update_yaxes(exponentformat="none", separatethousands=True, rangemode="tozero")
    # labels on the inner side of their lines: a label right of a line at the axis' end is cut at the chart's edge
    if mark_context is not None:
        fig.add_vline(
            x=mark_context,
            line_dash="dot",
            line_color=MARKER_COLOR,
            line_width=2,
            annotation_text=_("{n:,} tokens").format(n=mark_context),
            annotation_font_color=MARKER_COLOR,
            annotation_position="top left" if mark_context > max_context / 2 else "top right",
        )
    if budget_bytes is not None and budget_bytes > 0:
        fig.add_hline(
            y=budget_bytes / size,
            line_dash="dash",
            line_color="gray",
            annotation_text=_("memory left for the cache"),
            annotation_position="top left",
        )
    # the title in two short lines (one ran off a 1024-px projector's chart and a phone's), below the band at the
    # top where the chart's toolbar appears on hover; from the chart's left edge, not the plot's (a phone's chart
    # has room for the Chinese title only there)
    legend, top = top_legend(len(configs), title_px=50 + TOOLBAR_PX + 18)
    fig.update_layout(
        title=dict(
            text=_("KV cache size vs context (batch {batch})").format(batch=batch),
            subtitle={"text": _("Each line stops at its model's maximum context.")},
            x=0,
            xref="container",
            xanchor="left",
            y=1,
            yref="container",
            yanchor="top",
            pad={"t": TOOLBAR_PX, "l": 8},
        ),
        xaxis_title=_("context length (tokens)"),
        yaxis_title=bytes_axis(unit, size),
        legend=legend,
        margin=dict(t=top, b=10),
        height=400 + top,
    )
    return readable(fig)


def size_vs_context_figure_text(
    configs: Sequence[KVConfig],
    max_context: int,
    batch: int = 1,
    mark_context: int | None = None,
    budget_bytes: int | None = None,
    max_contexts: Sequence[int | None] | None = None,
) -> str:
    """size_vs_context_figure's data as sentences, for a reader who cannot see the chart: each line's
    exact bytes at both ends of its context range, at the marked context, and where it crosses the dashed line of
    the memory left for the cache when the chart draws one (the first context whose cache is larger:
    kvviz.memory.capacity.max_context, plus one). The same lines as the chart's (_context_lines)."""
    limits, grids, lines = _context_lines(configs, max_context, batch, max_contexts)
    budget = budget_bytes if budget_bytes is not None and budget_bytes > 0 else None
    parts = [
        _("Chart: KV cache size against context length, batch {batch}, from 0 to {n:,} tokens.").format(
            batch=batch, n=max_context
        )
    ]
    if mark_context is not None:
        parts.append(_("A dotted line marks {n:,} tokens.").format(n=mark_context))
    if budget is not None:
        parts.append(
            _("A dashed line marks the memory left for the cache: {bytes_}.").format(bytes_=format_bytes(budget))
        )
    for cfg, grid, line, limit in zip(configs, grids, lines, limits, strict=True):
        end = grid[-1]
        said = (
            _("{name} ({kind}): {start} at {first:,} tokens, {end} at {last:,} tokens, its model's maximum context.")
            if limit is not None and limit <= max_context
            else _("{name} ({kind}): {start} at {first:,} tokens, {end} at {last:,} tokens.")
        ).format(
            name=cfg.name,
            kind=cfg.attention_kind,
            start=format_bytes(line[0]),
            first=grid[0],
            end=format_bytes(line[-1]),
            last=end,
        )
        if mark_context is not None and grid[0] < mark_context < end:  # the ends are said already
            said = join_sentences(
                (
                    said,
                    _("At the marked {n:,} tokens: {bytes_}.").format(
                        n=mark_context, bytes_=format_bytes(kv_bytes(cfg, mark_context, batch))
                    ),
                )
            )
        if budget is not None:
            fits_under = capacity.max_context(cfg, batch, budget, cap=end)
            said = join_sentences(
                (
                    said,
                    _("It stays under the dashed line.")
                    if fits_under >= end
                    else _("It crosses the dashed line at {n:,} tokens.").format(n=fits_under + 1),
                )
            )
        parts.append(said)
    return join_sentences(parts)


def per_layer_figure(budget: KVBudget) -> go.Figure:
    """Bytes each layer holds: equal bars for plain attention, short and tall bars for local/global hybrids."""
    layers = list(range(len(budget.layer_bytes)))
    colors = [BLUE if budget.config.layer_window(i) is None else ORANGE for i in layers]
    unit, size = binary_unit(max(budget.layer_bytes))
    fig = go.Figure(
        go.Bar(
            x=layers,
            y=[b / size for b in budget.layer_bytes],
            marker_color=colors,
            customdata=list(zip(budget.layer_tokens, budget.layer_bytes, strict=True)),
            hovertemplate=_("layer %{x}: %{customdata[1]:,} B, %{customdata[0]:,} tokens<extra></extra>"),
        )
    )
    fig.update_layout(
        title=_("Per layer (blue: global, orange: sliding window)"),
        xaxis_title=_("layer"),
        yaxis_title=bytes_axis(unit, size),
        margin=dict(t=50, b=10),
        height=320,
    )
    return readable(fig)


def layer_runs(layers: Sequence[int]) -> str:
    """Layer numbers as runs: "0–4, 6–10, 12" (ascending input)."""
    runs: list[list[int]] = []
    for layer in layers:
        if runs and layer == runs[-1][-1] + 1:
            runs[-1].append(layer)
        else:
            runs.append([layer])
    return _(", ").join(numbers.span(r[0], r[-1]) if len(r) > 1 else f"{r[0]}" for r in runs)


def per_layer_figure_text(budget: KVBudget) -> str:
    """per_layer_figure's data as sentences, for a reader who cannot see the chart: the layers grouped
    by what each bar shows (global or sliding window, tokens held, exact bytes), in the order they first appear."""
    groups: dict[tuple[bool, int, int], list[int]] = {}
    for layer, (tokens, n_bytes) in enumerate(zip(budget.layer_tokens, budget.layer_bytes, strict=True)):
        groups.setdefault((budget.config.layer_window(layer) is None, tokens, n_bytes), []).append(layer)
    parts = [
        _("Chart: the bytes each of the {n} layers holds, {context:,} tokens at batch {batch}.").format(
            n=len(budget.layer_bytes), context=budget.context_len, batch=budget.batch
        )
    ]
    for (is_global, tokens, n_bytes), layers in groups.items():
        parts.append(
            (
                ngettext(
                    "Global layer {layers}: {tokens:,} tokens, {bytes_} each.",
                    "Global layers {layers}: {tokens:,} tokens, {bytes_} each.",
                    len(layers),
                )
                if is_global
                else ngettext(
                    "Sliding-window layer {layers}: {tokens:,} tokens, {bytes_} each.",
                    "Sliding-window layers {layers}: {tokens:,} tokens, {bytes_} each.",
                    len(layers),
                )
            ).format(layers=layer_runs(layers), tokens=tokens, bytes_=format_bytes(n_bytes))
        )
    parts.append(_("All layers together: {bytes_}.").format(bytes_=format_bytes(sum(budget.layer_bytes))))
    return join_sentences(parts)


def paged_figure(view: PagedView) -> go.Figure:
    """Used bytes, paged allocation (rounded up to blocks) and flat pre-allocation of the maximum length."""
    labels = [
        _("tokens actually held"),
        _("paged: blocks of {n}").format(n=view.block_tokens),
        _("flat: pre-allocated max length"),
    ]
    values = [view.used_bytes, view.paged_bytes, view.flat_bytes]
    unit, size = binary_unit(max(values))
    fig = go.Figure(
        go.Bar(
            x=labels,
            y=[v / size for v in values],
            marker_color=[GREEN, BLUE, VERMILLION],
            text=[short_bytes(v) for v in values],
            textposition="outside",
            cliponaxis=False,
        )
    )
    fig.update_layout(
        title=_("Paged blocks vs a flat buffer"),
        yaxis_title=bytes_axis(unit, size),
        margin=dict(t=50, b=10),
        height=340,
    )
    return readable(fig)


def paged_figure_text(view: PagedView) -> str:
    """paged_figure's data as sentences, for a reader who cannot see the chart: the three bars' exact
    bytes (the whole batch), and what the paged and the flat buffers hold beyond the tokens actually held."""
    return _(
        "Chart: the cache's bytes three ways, for the whole batch. Tokens actually held: {used}. Paged, in "
        "blocks of {block:,} tokens: {paged}, {blocks:,} blocks per sequence, the last one with {waste:,} "
        "unused token slots; {paged_waste} more than held. Flat, pre-allocated to the maximum length: {flat}; "
        "{flat_waste} more than held."
    ).format(
        used=format_bytes(view.used_bytes),
        block=view.block_tokens,
        paged=format_bytes(view.paged_bytes),
        blocks=view.blocks_per_sequence,
        waste=view.waste_tokens_last_block,
        paged_waste=format_bytes(view.paged_bytes - view.used_bytes),
        flat=format_bytes(view.flat_bytes),
        flat_waste=format_bytes(view.flat_bytes - view.used_bytes),
    )
