"""Figures for the cache-internals page: memory maps, block tables, window masks, quantization error, rollback.

Plain records from `kvviz.internals` in, plotly figures out. No Streamlit, no torch.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from kvviz.figures import BLUE, GREEN, ORANGE, PURPLE, SKY, VERMILLION, bytes_axis, log_ticks, readable
from kvviz.i18n import N_, _
from kvviz.internals.layout import LayoutBench
from kvviz.internals.records import (
    CrossAttnRun,
    PagingPlan,
    PrefixReuse,
    PresetLayers,
    QuantReport,
    SchemeAgreement,
    SpecRun,
    WindowRun,
)
from kvviz.memory.units import binary_unit

REUSED_COLOR = GREEN  # rows taken from a cache / shared / accepted
COMPUTED_COLOR = ORANGE  # rows computed now
WASTE_COLOR = "#c7c7c7"  # allocated, unused
REJECTED_COLOR = VERMILLION  # computed, then thrown away
GLOBAL_COLOR = BLUE
LOCAL_COLOR = PURPLE
SCHEME_COLORS = {"fp16": BLUE, "bf16": SKY, "int8": ORANGE, "int4": VERMILLION}
LAYER_KINDS = {"local": N_("local"), "global": N_("global")}  # a layer's kind (records keep the English key)


def kind_label(kind: str) -> str:
    """A layer kind ("local" / "global") in the current language."""
    return _(LAYER_KINDS[kind]) if kind in LAYER_KINDS else kind


def _layout(fig: go.Figure, title: str, height_px: int = 320) -> go.Figure:
    # Legend in the top margin, under the title: below the plot it would cover the x-axis title.
    fig.update_layout(
        title=dict(text=title, y=0.98, yanchor="top"),
        height=height_px,
        margin=dict(l=10, r=10, t=80, b=10),
        legend=dict(orientation="h", x=0, xanchor="left", y=1.02, yanchor="bottom"),
    )
    return readable(fig)


def layout_read_map(
    mask: np.ndarray,
    row_elems: int,
    elem_bytes: int,
    title: str,
    mark_offset_bytes: int | None = None,
    max_cells: int = 40_000,
) -> go.Figure:
    """The layer buffer as a grid of `row_elems` elements per row; cells one head reads are dark.

    mark_offset_bytes: an element to point at (the address calculator's answer), drawn as a red cross.
    Big buffers (GPT-2 124M: 786,432 numbers per layer) are binned: each cell then covers `bin` consecutive
    elements and its shade is the share of them the head reads, so the pattern stays visible.
    """
    bin_elems = 1
    while -(-mask.size // bin_elems) > max_cells:
        bin_elems *= 2
    if row_elems % bin_elems:  # a row must hold whole bins; fall back to rows of 64 bins
        row_elems = 64 * bin_elems
    cells_per_row = row_elems // bin_elems
    n_cells = -(-mask.size // row_elems) * cells_per_row  # whole rows, the tail padded with "not read"
    padded = np.zeros(n_cells * bin_elems, dtype=float)
    padded[: mask.size] = mask
    rows = padded.reshape(-1, bin_elems).mean(axis=1).reshape(-1, cells_per_row)  # share of each bin read
    offsets = np.arange(rows.size).reshape(rows.shape) * bin_elems * elem_bytes
    fig = go.Figure(
        go.Heatmap(
            z=rows,
            zmin=0,
            zmax=1,
            colorscale=[[0, "#f2f2f2"], [1, "#08306b"]],
            showscale=False,
            hovertemplate=_("byte offset %{customdata:,}<extra></extra>"),
            customdata=offsets,
        )
    )
    if mark_offset_bytes is not None:
        cell = mark_offset_bytes // elem_bytes // bin_elems
        fig.add_scatter(
            x=[cell % cells_per_row],
            y=[cell // cells_per_row],
            mode="markers",
            name=_("the element"),
            marker=dict(symbol="x", size=12, color=REJECTED_COLOR),
            showlegend=False,
            hovertemplate=_("the element: byte offset {offset:,}<extra></extra>").format(offset=mark_offset_bytes),
        )
    fig.update_yaxes(autorange="reversed", title=_("row ({n:,} bytes each)").format(n=row_elems * elem_bytes))
    fig.update_xaxes(
        title=_("element within the row") if bin_elems == 1 else _("groups of {n} elements").format(n=bin_elems)
    )
    return _layout(fig, title, 300)


def append_copy_figure(
    seq_lens: Sequence[int], copied_bytes: dict[str, Sequence[int]], row_bytes: int, title: str
) -> go.Figure:
    """Bytes moved to append one token, per layout, against the cache length before the append.

    copied_bytes: layout label -> past-row bytes copied at each seq_len (0 for pre-allocated buffers).
    """
    fig = go.Figure()
    palette = [GLOBAL_COLOR, REUSED_COLOR, COMPUTED_COLOR, REJECTED_COLOR]
    for i, (label, copied) in enumerate(copied_bytes.items()):
        fig.add_scatter(
            x=list(seq_lens),
            y=[c + row_bytes for c in copied],
            mode="lines",
            name=label,
            line=dict(color=palette[i % len(palette)], dash="dot" if i % 2 else "solid", width=3 - i % 2),
        )
    fig.update_xaxes(title=_("tokens already cached (n)"))
    fig.update_yaxes(title=_("bytes per appended token"), rangemode="tozero")
    bytes_axis(fig)  # KiB / MiB in every language: bytes never take 万
    _layout(fig, title, 340)
    fig.update_layout(
        legend=dict(orientation="v", x=0.01, y=0.98, xanchor="left", yanchor="top", bgcolor="rgba(128,128,128,0.12)")
    )
    return fig


def layout_bench_figure(bench: LayoutBench) -> go.Figure:
    """Median µs of each read, with a whisker over the middle half of its repeats (25th-75th percentile): the
    range the noise rule compares (kvviz.measure.timing), so overlapping whiskers are "inside the noise". The
    fastest and slowest repeat are in the hover (one preempted run would otherwise dwarf the bars). The title
    names a faster side only when the repeats do."""
    labels = [_("contiguous (head-major)"), _("strided (position-major)")]
    timings = [bench.contiguous, bench.strided]
    medians = [t.median_ms * 1000 for t in timings]
    quartiles = [(q1 * 1000, q3 * 1000) for q1, q3 in (t.quartiles_ms for t in timings)]
    fig = go.Figure(
        go.Bar(
            x=labels,
            y=medians,
            marker_color=[REUSED_COLOR, COMPUTED_COLOR],
            error_y=dict(
                type="data",
                symmetric=False,
                array=[q3 - m for (_, q3), m in zip(quartiles, medians, strict=True)],
                arrayminus=[m - q1 for (q1, _), m in zip(quartiles, medians, strict=True)],
                thickness=2,
                width=14,
                color="#7f7f7f",
            ),
            text=[_("{us:,.1f} µs").format(us=m) for m in medians],
            textposition="inside",
            insidetextanchor="start",
            customdata=[
                [t.repeats, q1, q3, t.min_ms * 1000, t.max_ms * 1000]
                for t, (q1, q3) in zip(timings, quartiles, strict=True)
            ],
            hovertemplate=_(
                "%{x}: median %{y:,.1f} µs of %{customdata[0]} repeats; middle half %{customdata[1]:,.1f}-"
                "%{customdata[2]:,.1f} µs; fastest-slowest %{customdata[3]:,.1f}-%{customdata[4]:,.1f} µs"
                "<extra></extra>"
            ),
        )
    )
    fig.update_yaxes(
        title=_("µs, median of {n} (whisker: middle half)").format(n=bench.repeats),
        rangemode="tozero",
        separatethousands=True,
        exponentformat="none",
    )
    mib = bench.bytes_read / 2**20
    title = (
        _("Reading {mib:.2f} MiB of one head's keys here: inside the noise").format(mib=mib)
        if bench.inside_noise
        else _("Reading {mib:.2f} MiB of one head's keys here: strided {ratio:.2f}x the contiguous time").format(
            mib=mib, ratio=bench.slowdown
        )
    )
    return _layout(fig, title, 320)


def prefix_figure(result: PrefixReuse) -> go.Figure:
    """Tokens computed by a fresh prefill of B vs by reuse of A's cropped cache."""
    n_b = len(result.tokens_b)
    fig = go.Figure()
    bars = [_("fresh prefill of B"), _("reuse A's prefix")]
    fig.add_bar(
        y=bars,
        x=[0, result.reused_len],
        orientation="h",
        name=_("rows reused from A's cache"),
        marker_color=REUSED_COLOR,
    )
    fig.add_bar(
        y=bars,
        x=[n_b, result.new_tokens_computed],
        orientation="h",
        name=_("rows computed now"),
        marker_color=COMPUTED_COLOR,
    )
    fig.update_layout(barmode="stack")
    fig.update_xaxes(title=_("tokens of prompt B"))
    return _layout(fig, _("{saved} of {n} tokens served from the cache").format(saved=result.tokens_saved, n=n_b), 240)


def token_strip_figure(tokens: Sequence[str], n_reused: int, title: str, per_row: int = 12) -> go.Figure:
    """Prompt B token by token: the first n_reused come from A's cache (green), the rest are computed (orange)."""
    xs = [i % per_row for i in range(len(tokens))]
    ys = [i // per_row for i in range(len(tokens))]
    colors = [REUSED_COLOR if i < n_reused else COMPUTED_COLOR for i in range(len(tokens))]
    fig = go.Figure(
        go.Scatter(
            x=xs,
            y=ys,
            mode="markers+text",
            text=[repr(t)[1:-1][:8] for t in tokens],
            textposition="middle center",
            marker=dict(symbol="square", size=44, color=colors, opacity=0.35),
            textfont=dict(size=14),
            hovertext=[
                (_("position {i}: {token} (reused)") if i < n_reused else _("position {i}: {token} (computed)")).format(
                    i=i, token=repr(t)
                )
                for i, t in enumerate(tokens)
            ],
            hoverinfo="text",
        )
    )
    fig.update_xaxes(visible=False, range=[-0.6, per_row - 0.4])
    fig.update_yaxes(visible=False, autorange="reversed")
    return _layout(fig, title, 90 + 55 * (1 + (len(tokens) - 1) // per_row))


def cross_attention_figure(run: CrossAttnRun) -> go.Figure:
    steps = [s.step for s in run.steps]
    fig = go.Figure()
    fig.add_scatter(
        x=steps,
        y=[s.self_bytes for s in run.steps],
        mode="lines+markers",
        name=_("self-attention cache"),
        line_color=COMPUTED_COLOR,
    )
    fig.add_scatter(
        x=steps,
        y=[s.cross_bytes for s in run.steps],
        mode="lines+markers",
        name=_("cross-attention cache"),
        line_color=GLOBAL_COLOR,
    )
    fig.update_xaxes(title=_("decoder step"), dtick=1)
    fig.update_yaxes(title=_("bytes (all decoder layers, K+V)"), rangemode="tozero")
    return _layout(fig, _("Self-attention grows each step; cross-attention is computed once"), 320)


def window_mask_figure(visible: np.ndarray, tokens: Sequence[str], title: str) -> go.Figure:
    """[seq_len, seq_len] visibility: row = query position, column = key position."""
    labels = [f"{i}: {t!r}"[:18] for i, t in enumerate(tokens)]
    fig = go.Figure(
        go.Heatmap(
            z=visible.astype(np.int8),
            x=labels,
            y=labels,
            showscale=False,
            colorscale=[[0, "#f2f2f2"], [1, GLOBAL_COLOR]],
            hovertemplate=_("query %{y}<br>key %{x}<extra></extra>"),
        )
    )
    fig.update_yaxes(autorange="reversed", title=_("query (the token attending)"), showticklabels=len(tokens) <= 40)
    fig.update_xaxes(title=_("key (a cached row)"), showticklabels=len(tokens) <= 40)
    return _layout(fig, title, 420)


def window_layers_figure(run: WindowRun) -> go.Figure:
    names = [_("layer {layer} ({kind})").format(layer=la.layer, kind=kind_label(la.kind)) for la in run.layers]
    fig = go.Figure()
    fig.add_bar(
        x=names,
        y=[la.bytes_kept for la in run.layers],
        name=_("kept (window / global)"),
        marker_color=[LOCAL_COLOR if la.kind == "local" else GLOBAL_COLOR for la in run.layers],
    )
    fig.add_bar(
        x=names, y=[la.bytes_full - la.bytes_kept for la in run.layers], name=_("evicted"), marker_color=WASTE_COLOR
    )
    fig.update_layout(barmode="stack")
    fig.update_yaxes(title=_("bytes (K+V) of the real cache"))
    bytes_axis(fig)  # KiB / MiB in every language: bytes never take 万
    return _layout(fig, _("Per-layer cache: what each layer keeps"), 320)


def preset_layers_figure(preset: PresetLayers) -> go.Figure:
    fig = go.Figure(
        go.Bar(
            x=list(range(len(preset.layer_bytes))),
            y=[b / 2**20 for b in preset.layer_bytes],
            marker_color=[LOCAL_COLOR if k == "local" else GLOBAL_COLOR for k in preset.layer_kinds],
            hovertext=[kind_label(k) for k in preset.layer_kinds],
        )
    )
    fig.update_xaxes(title=_("layer (purple = local window, blue = global)"))
    fig.update_yaxes(title=_("MiB per sequence"))
    return _layout(
        fig,
        _("{name} at {n:,} tokens, per layer (memory calculator)").format(name=preset.name, n=preset.context_len),
        300,
    )


def paging_blocks_figure(plan: PagingPlan) -> go.Figure:
    """Each sequence's logical blocks left to right, labelled with their physical block id and refcount."""
    fig = go.Figure()
    names = [_("sequence A"), _("sequence B")]
    unused = _("allocated, unused")
    shown: set[str] = set()
    for _seq, (name, table, length) in enumerate(zip(names, plan.tables, plan.seq_lens, strict=True)):
        for logical, phys in enumerate(table):
            used = min(plan.block_size, length - logical * plan.block_size)
            shared = plan.refcounts[phys] > 1
            label = _("shared block (ref 2)") if shared else _("own block (ref 1)")
            for part, width, color in (
                (label, used, REUSED_COLOR if shared else COMPUTED_COLOR),
                (unused, plan.block_size - used, WASTE_COLOR),
            ):
                if width <= 0:
                    continue
                fig.add_bar(
                    y=[name],
                    x=[width],
                    orientation="h",
                    marker_color=color,
                    name=part,
                    marker_line=dict(color="white", width=1),
                    showlegend=part not in shown,
                    text=[f"#{phys}" if part != unused else ""],
                    textposition="inside",
                    hovertemplate=_(
                        "{sequence} logical block {logical} -> physical #{phys}, refcount "
                        "{refcount}<extra>{part}</extra>"
                    ).format(sequence=name, logical=logical, phys=phys, refcount=plan.refcounts[phys], part=part),
                )
                shown.add(part)
    fig.update_layout(barmode="stack")
    fig.update_xaxes(title=_("token slots (blocks of {n})").format(n=plan.block_size))
    fig.update_yaxes(autorange="reversed")
    return _layout(fig, _("Block tables: logical blocks -> physical blocks (#id)"), 260)


def paging_bytes_figure(plan: PagingPlan) -> go.Figure:
    labels = [_("pre-allocate max length"), _("paged, no sharing"), _("paged + shared prefix"), _("rows holding data")]
    values = [plan.preallocated_bytes, plan.unshared_paged_bytes, plan.paged_bytes, plan.used_bytes]
    fig = go.Figure(
        go.Bar(
            x=labels,
            y=[v / 2**10 for v in values],
            text=[f"{v / 2**10:,.0f} KiB" for v in values],
            textposition="auto",
            marker_color=[WASTE_COLOR, COMPUTED_COLOR, REUSED_COLOR, GLOBAL_COLOR],
        )
    )
    fig.update_yaxes(title=_("KiB for both sequences"))
    return _layout(fig, _("Memory for the two sequences"), 300)


def quant_error_figure(reports: Sequence[QuantReport]) -> go.Figure:
    fig = go.Figure()
    for r in reports:
        x, y = [], []
        for la in r.layers:
            x += [f"L{la.layer} K", f"L{la.layer} V"]
            y += [la.key_rel_rms, la.value_rel_rms]
        fig.add_bar(x=x, y=y, name=r.scheme, marker_color=SCHEME_COLORS.get(r.scheme))
    fig.update_layout(barmode="group")
    fig.update_yaxes(
        title=_("relative RMS error (log scale)"),
        **log_ticks(v for r in reports for la in r.layers for v in (la.key_rel_rms, la.value_rel_rms)),
    )
    return _layout(fig, _("Reconstruction error ||x - x̂|| / ||x|| per layer"), 340)


def quant_bytes_figure(reports: Sequence[QuantReport]) -> go.Figure:
    """Stored bytes per format, in one binary unit picked for the largest bar (KiB for the bundled model), with
    thousands separators, never plotly's SI "120k"; the hover gives the exact bytes."""
    fp32 = reports[0].fp32_bytes if reports else 0
    names = ["fp32"] + [r.scheme for r in reports]
    values = [fp32] + [r.stored_bytes - r.overhead_bytes for r in reports]
    overhead = [0] + [r.overhead_bytes for r in reports]
    unit, size = binary_unit(max([fp32] + [r.stored_bytes for r in reports] + [1]))
    fig = go.Figure()
    for part, part_bytes, color in (
        (_("values"), values, GLOBAL_COLOR),
        (_("scales + zero points"), overhead, COMPUTED_COLOR),
    ):
        fig.add_bar(
            x=names,
            y=[b / size for b in part_bytes],
            name=part,
            marker_color=color,
            customdata=part_bytes,
            meta=part,
            hovertemplate="%{x} %{meta}: %{customdata:,} B<extra></extra>",
        )
    fig.update_layout(barmode="stack", legend_traceorder="normal")  # "values" first, as the bars stack
    fig.update_yaxes(
        title=_("{unit} of this prompt's cache (1 {unit} = {size:,} B)").format(unit=unit, size=size)
        if size > 1
        else _("bytes of this prompt's cache"),
        exponentformat="none",
        separatethousands=True,
        rangemode="tozero",
    )
    return _layout(fig, _("Bytes stored per format (fp32 = as computed)"), 340)


def quant_agreement_figure(results: Sequence[SchemeAgreement]) -> go.Figure:
    fig = go.Figure(
        go.Bar(
            x=[r.scheme for r in results],
            y=[100 * r.agreement for r in results],
            marker_color=[SCHEME_COLORS.get(r.scheme) for r in results],
            text=[f"{r.same_token_steps}/{r.steps}" for r in results],
            textposition="auto",
        )
    )
    fig.update_yaxes(title=_("% of steps with the same greedy token"), range=[0, 105])
    return _layout(fig, _("Greedy agreement with the full-precision cache (measured)"), 300)


def speculative_figure(run: SpecRun) -> go.Figure:
    idx = [r.index for r in run.rounds]
    fig = go.Figure()
    fig.add_bar(x=idx, y=[r.accepted for r in run.rounds], name=_("draft tokens accepted"), marker_color=REUSED_COLOR)
    fig.add_bar(
        x=idx, y=[r.rejected for r in run.rounds], name=_("rejected: rows cropped"), marker_color=REJECTED_COLOR
    )
    fig.add_scatter(
        x=idx,
        y=[r.cache_len_verified for r in run.rounds],
        name=_("cache rows after verify"),
        yaxis="y2",
        mode="lines+markers",
        line_color=WASTE_COLOR,
    )
    fig.add_scatter(
        x=idx,
        y=[r.cache_len_after_crop for r in run.rounds],
        name=_("cache rows after crop"),
        yaxis="y2",
        mode="lines+markers",
        line_color=GLOBAL_COLOR,
    )
    fig.update_layout(
        barmode="stack",
        yaxis2=dict(overlaying="y", side="right", title=_("cache rows"), rangemode="tozero", tickformat="d"),
    )
    fig.update_xaxes(title=_("round"), dtick=1)
    fig.update_layout(yaxis=dict(title=_("draft tokens"), tickformat="d"))  # update_yaxes would also hit yaxis2
    return _layout(
        fig, _("Speculative rounds: k = {k}, acceptance {rate:.0%}").format(k=run.k, rate=run.acceptance_rate), 340
    )
