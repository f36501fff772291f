"""The context sweep on a device (kvviz.speedup.accelerator): one cached decode step against one uncached pass
over the same tokens, as the cache grows.

Both axes are log scale (their titles say so): the uncached pass grows with the context (and faster, once its
attention is quadratic), while the cached step stays flat where reading bytes explains little of its time and rises
once reading the cache dominates. The first context whose step is bound by reading the cache across its whole
spread of repeats (SweepPoint.bound) is marked on the chart.

Input: the sweep's points (context, medians, bound), plain numbers. Output: a plotly figure. No Streamlit, no torch.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import plotly.graph_objects as go

from kvviz.figures import BLUE, MARKER_COLOR, VERMILLION, log_ticks, readable, top_legend
from kvviz.i18n import _

CACHED_COLOR = BLUE
UNCACHED_COLOR = VERMILLION


def context_sweep_figure(points: Sequence[Any], device_label: str) -> go.Figure:
    """points: kvviz.speedup.accelerator.SweepPoint (context, cached_ms, uncached_median_ms, bound, ratio)."""
    contexts = [p.context for p in points]
    cached = [p.cached_ms for p in points]
    uncached = [p.uncached_median_ms for p in points]
    ratio = [p.ratio for p in points]
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=contexts,
            y=uncached,
            mode="lines+markers",
            name=_("uncached pass"),
            line={"color": UNCACHED_COLOR},
            customdata=ratio,
            hovertemplate=_(
                "%{x} cached tokens: the uncached pass over them takes %{y:.3f} ms "
                "(%{customdata:.1f}x the cached step)<extra></extra>"
            ),
        )
    )
    fig.add_trace(
        go.Scatter(
            x=contexts,
            y=cached,
            mode="lines+markers",
            name=_("cached step"),
            line={"color": CACHED_COLOR},
            hovertemplate=_("%{x} cached tokens: one cached decode step takes %{y:.3f} ms<extra></extra>"),
        )
    )
    first_bandwidth = next((p for p in points if p.bound == "cache"), None)
    if first_bandwidth is not None:
        fig.add_vline(x=first_bandwidth.context, line={"color": MARKER_COLOR, "dash": "dot", "width": 2})
        fig.add_annotation(
            x=first_bandwidth.context,
            y=1,
            yref="paper",
            xanchor="left",
            yanchor="top",
            showarrow=False,
            font={"color": MARKER_COLOR},
            text=_("reading the cache dominates from here"),
        )
    legend, top = top_legend(2)
    fig.update_layout(
        title={"text": _("The cache grows: one step with it, one pass without ({device})").format(device=device_label)},
        xaxis={
            "title": {"text": _("cached tokens (log scale)")},
            "type": "log",  # ticked at the contexts run
            "tickvals": contexts,
            "ticktext": [f"{c:,}" for c in contexts],
        },
        yaxis={"title": {"text": _("milliseconds (log scale)")}, "type": "log", **log_ticks(cached + uncached)},
        legend=legend,
        margin={"t": top, "l": 70, "r": 20, "b": 60},
        height=420,
    )
    return readable(fig)
