"""Pure figure builders: plain data in -> plotly go.Figure out. No Streamlit, no torch.

One module per page: step (step-through), ops (count the work), memory (memory budget), bench (speed-up),
internals (cache internals), patterns (attention patterns).

Readable from the back of a room (issue 19): every chart's tick labels are at least MIN_TICK_FONT_PX at
1280x720, a legend holds at most MAX_LEGEND_ENTRIES entries (more lines are labelled where they end), and a log
axis is drawn only where the chart's title or axis title says "log". `readable()` applies the font sizes;
the browser test (tests/test_browser_charts.py) reads the rendered SVG to check them on every page.
"""
from __future__ import annotations

import plotly.graph_objects as go

MIN_TICK_FONT_PX = 14  # shared with the step page's figures and the browser test: never below this
MAX_LEGEND_ENTRIES = 4
MARKER_COLOR = "#ff7f0e"  # a mid-tone orange: a dotted marker line reads on light and dark backgrounds


def readable(fig: go.Figure, font_px: int = MIN_TICK_FONT_PX) -> go.Figure:
    """Every text of the figure at font_px or more, set on each axis (Streamlit's plotly theme would otherwise
    draw ticks at about 12 px): ticks, axis titles, legend, annotations (subplot titles included), colour bars."""
    font_px = max(font_px, MIN_TICK_FONT_PX)
    fig.update_xaxes(tickfont_size=font_px, title_font_size=font_px)
    fig.update_yaxes(tickfont_size=font_px, title_font_size=font_px)
    fig.update_annotations(font_size=font_px)
    fig.update_layout(font={"size": font_px}, hoverlabel={"font_size": font_px}, legend_font_size=font_px,
                      title_font_size=font_px + 2)
    fig.update_coloraxes(colorbar_tickfont_size=font_px)
    for trace in fig.data:  # a trace's own colour bar (heatmaps without a shared colour axis)
        if "colorbar" in trace:
            trace.update(colorbar_tickfont_size=font_px)
    return fig


def legend_entries(fig: go.Figure) -> int:
    """How many entries the figure's legend shows, as plotly draws it: every trace not marked showlegend=False,
    and none at all for a single-trace figure unless the layout asks for a legend."""
    shown = [t for t in fig.data if t.showlegend is not False]
    if fig.layout.showlegend is False or (fig.layout.showlegend is None and len(fig.data) <= 1):
        return 0
    return len(shown)


def export_config(filename: str = "kvviz") -> dict:
    """plotly config for st.plotly_chart(config=...): the mode bar's camera button saves a 2x PNG for slides,
    drawn in the browser (works offline); no plotly logo."""
    return {"displaylogo": False, "toImageButtonOptions": {"format": "png", "scale": 2, "filename": filename}}
