"""Pure figure builders: plain data in -> plotly go.Figure out. No Streamlit, no torch.

One module per page: step (step-through), ops (count the work), memory (memory budget), bench (speed-up),
internals (cache internals), patterns (attention patterns).

Readable from the back of a room: every chart's tick labels are at least MIN_TICK_FONT_PX at
1280x720, a legend holds at most MAX_LEGEND_ENTRIES entries (the caller picks which lines; roofs and ceilings
are labelled on the line instead), and a log axis is drawn only where its title or the chart's says "log",
with `log_ticks()` (1, 2, 5 x 10^k in full). `readable()` applies the font sizes; the browser test
(tests/test_browser_every_page.py) reads the rendered SVG to check them on every page.
"""

from __future__ import annotations

import functools
import html
import math
import re
from collections.abc import Iterable

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
from _plotly_utils.utils import is_skipped_key, to_typed_array_spec

from kvviz.i18n import ENGLISH, N_, _, current, join_sentences, list_sep, numbers

MIN_TICK_FONT_PX = 14  # shared with the step page's figures and the browser test: never below this
MAX_LEGEND_ENTRIES = 4
MARKER_COLOR = "#ff7f0e"  # a mid-tone orange: a dotted marker line reads on light and dark backgrounds
# Okabe and Ito's palette (2008), the one home of the categorical colours whose difference carries a meaning (cached
# or not, reused or computed, global or local): they stay apart under protanopia, deuteranopia and tritanopia, as
# tests/test_figures_colour_vision.py simulates (tab10's green and red did not, under deuteranopia: ΔE 7), and read on
# light and dark themes. The names are what captions call them ("green rows reused", "blue = global").
BLUE, VERMILLION, GREEN, ORANGE, SKY, PURPLE = "#0072B2", "#D55E00", "#009E73", "#E69F00", "#56B4E9", "#CC79A7"


class SpecFigure(go.Figure):
    """A figure this package built as a plain spec ({"data": [...], "layout": {...}}: dicts, lists, numpy arrays),
    handed to Streamlit as it is: the stage's per-click charts, where plotly's validation is most of a click's CPU.

    Streamlit draws a plotly figure from its `to_dict()` alone. A go.Figure built around the spec, even unvalidated
    (`_validate=False`), wraps every trace and layout property in plotly's objects, and `to_dict()` deep-copies them
    back out: 4-7 ms of a Next-token click's ~50 ms of server CPU for the stage and its bars, to send the dict we
    started from. Here `to_dict()` copies the spec with its arrays packed as plotly packs them (base64 typed arrays)
    and adds the default template as go.Figure does.
    Whoever reads the figure (`.data`, `.layout`, `.figure`: a test, a chart's text) gets plotly's real objects,
    built on first read. The specs are validated by tests/test_stage_figures_fast.py, which also checks that they
    serialise exactly as plotly's own API builds them. Read-only: build a new one rather than update it."""

    def __init__(self, spec: dict) -> None:  # deliberately not go.Figure.__init__: no object tree per click
        self._spec = spec

    @functools.cached_property
    def figure(self) -> go.Figure:
        return go.Figure(_spec_copy(self._spec, pack=False))

    @property
    def data(self) -> tuple:
        return self.figure.data

    @property
    def layout(self) -> go.Layout:
        return self.figure.layout

    def to_dict(self) -> dict:
        out = _spec_copy(self._spec, pack=True)  # a copy: the spec keeps its arrays for a later read
        layout = out.setdefault("layout", {})
        if "template" not in layout:  # as go.Figure adds plotly's default template (Streamlit's own, once imported):
            layout["template"] = _default_template(pio.templates.default)  # shared, read-only, as the figure is
        return out

    def __repr__(self) -> str:
        return f"SpecFigure({self.figure!r})"


@functools.lru_cache(maxsize=4)
def _default_template(name: str | None) -> dict:
    return pio.templates[name].to_plotly_json() if name else {}


def _spec_copy(value, pack: bool, key: str | None = None):
    """A copy of the dicts and lists of a spec (tuples become lists, as in JSON). pack: every numpy array that is a
    dict's value packed as plotly's to_dict() packs it (_plotly_utils.utils.convert_to_base64: a base64 typed
    array, except under the keys plotly leaves alone). Lists of numbers or strings are copied whole, not walked:
    plotly's walk visits every element (a third of a stage figure's send)."""
    if isinstance(value, dict):
        return {k: _spec_copy(v, pack, k) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_spec_copy(v, pack) if isinstance(v, (dict, list, tuple)) else v for v in value]
    if pack and key is not None and isinstance(value, np.ndarray) and not is_skipped_key(key):
        return to_typed_array_spec(value)
    return value


def readable(fig: go.Figure, font_px: int = MIN_TICK_FONT_PX) -> go.Figure:
    """Every text of the figure at font_px or more, set on each axis (Streamlit's plotly theme would otherwise
    draw ticks at about 12 px): ticks, axis titles, legend, annotations (subplot titles included), colour bars."""
    font_px = max(font_px, MIN_TICK_FONT_PX)
    fig.update_xaxes(tickfont_size=font_px, title_font_size=font_px)
    fig.update_yaxes(tickfont_size=font_px, title_font_size=font_px)
    fig.update_annotations(font_size=font_px)
    fig.update_layout(
        font={"size": font_px}, hoverlabel={"font_size": font_px}, legend_font_size=font_px, title_font_size=font_px + 2
    )
    fig.update_coloraxes(colorbar_tickfont_size=font_px)
    for trace in fig.data:  # a trace's own colour bar (heatmaps without a shared colour axis)
        if "colorbar" in trace:
            trace.update(colorbar_tickfont_size=font_px)
    return fig


def top_legend(entries: int, title_px: int = 50, row_px: int = 24) -> tuple[dict, int]:
    """(legend, top margin px): a legend between the title and the plot, two entries per row (long names would
    otherwise wrap one per row into the title), and the top margin that holds the title and those rows."""
    rows = max(1, -(-entries // 2))
    legend = dict(
        orientation="h",
        x=0,
        xanchor="left",
        y=1.02,
        yanchor="bottom",
        entrywidth=0.5,
        entrywidthmode="fraction",
        traceorder="normal",
    )  # "normal": legend groups share rows
    return legend, title_px + row_px * rows


def log_ticks(values: Iterable[float]) -> dict:
    """Axis settings for a readable log axis over `values`: ticks at 1, 2, 5 x 10^k (powers of ten only past three
    decades), printed in full ("0.05", "20", "1,000"): never plotly's stacked minor digits nor one lonely tick."""
    positive = [float(v) for v in values if v is not None and v > 0 and math.isfinite(v)]
    if not positive:
        return {"type": "log"}
    lo, hi = min(positive), max(positive)
    first, last = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    steps = (1,) if last - first > 3 else (1, 2, 5)
    ticks = [m * 10.0**k for k in range(first, last + 1) for m in steps if lo / 1.5 <= m * 10.0**k <= hi * 1.5]
    if len(ticks) < 2:  # less than a factor of 2 between lo and hi: label both ends
        ticks = sorted({lo, hi})
    return {"type": "log", "tickvals": ticks, "ticktext": [f"{t:,.6g}" for t in ticks]}


def counted_axis(fig: go.Figure) -> go.Figure:
    """The y values are counts (ops, bytes) drawn in the language's own scale: divided by the largest scale word
    that fits the peak (numbers.axis_scale: thousands in English, 万 or 亿 in Chinese) and the word named on the
    axis title, so ticks read 5, 10, 15 under "…, 单位：万", never plotly's "50k" (k is no Chinese unit). The
    hover says the count in the same words and exactly ("157：125.3 亿（12,530,257,920）"); customdata keeps
    the exact integers."""
    peak = max((max(t.y) for t in fig.data if t.y is not None and len(t.y)), default=0)
    factor, word = numbers.axis_scale(peak)
    for trace in fig.data:
        exact = [int(v) for v in trace.y]
        xs = list(trace.x) if trace.x is not None else list(range(len(exact)))
        trace.update(
            y=[v / factor for v in exact],
            customdata=exact,
            hovertext=[_hover_count(x, v, factor) for x, v in zip(xs, exact, strict=True)],
            hovertemplate="%{hovertext}<extra>%{fullData.name}</extra>",
        )
    if word:
        fig.update_yaxes(title_text=_("{title}, {scale}").format(title=fig.layout.yaxis.title.text, scale=word))
    fig.update_yaxes(exponentformat="none", separatethousands=True)
    return fig


def bytes_axis(fig: go.Figure) -> go.Figure:
    """The y values are bytes: drawn in the binary unit that fits the peak (KiB, MiB, GiB: 1 KiB = 1,024 B), named
    with its size on the axis title ("…, KiB (1,024 bytes)"), in every language (bytes never take 万 or 亿). The
    hover says the bytes exactly; customdata keeps the exact integers."""
    from kvviz.memory.units import binary_unit, format_bytes  # memory's one byte formatter (no torch)

    peak = max((max(t.y) for t in fig.data if t.y is not None and len(t.y)), default=0)
    unit, size = binary_unit(int(peak))
    for trace in fig.data:
        exact = [int(v) for v in trace.y]
        xs = list(trace.x) if trace.x is not None else list(range(len(exact)))
        trace.update(
            y=[v / size for v in exact],
            customdata=exact,
            hovertext=[
                _("{where}: {count}").format(where=f"{x:,}" if isinstance(x, int) else str(x), count=format_bytes(v))
                for x, v in zip(xs, exact, strict=True)
            ],
            hovertemplate="%{hovertext}<extra>%{fullData.name}</extra>",
        )
    if size > 1:
        fig.update_yaxes(
            title_text=_("{title}, {unit} ({size:,} bytes)").format(
                title=fig.layout.yaxis.title.text, unit=unit, size=size
            )
        )
    fig.update_yaxes(exponentformat="none", separatethousands=True)
    return fig


def _hover_count(x, count: int, factor: int) -> str:
    """ "157: 125.3 亿 (12,530,257,920)": where it is, the count as the axis reads it, and exactly."""
    exact = numbers.format_number(count)
    words = numbers.count_in_words(count, scale_from=factor) if factor > 1 else exact
    shown = exact if words == exact else _("{count_in_words} ({exact})").format(count_in_words=words, exact=exact)
    where = f"{x:,}" if isinstance(x, int) else str(x)
    return _("{where}: {count}").format(where=where, count=shown)


def legend_entries(fig: go.Figure) -> int:
    """How many entries the figure's legend shows, as plotly draws it: every trace not marked showlegend=False,
    and none at all for a single-trace figure unless the layout asks for a legend."""
    shown = [t for t in fig.data if t.showlegend is not False]
    if fig.layout.showlegend is False or (fig.layout.showlegend is None and len(fig.data) <= 1):
        return 0
    return len(shown)


# Plotly's own words in the browser: the mode bar's button titles and its notices. The plotly.js inside Streamlit
# registers only the "en" and "en-US" locales, and neither it nor the plotly package ships plotly's zh-CN locale
# file, so the dictionary travels in each chart's config (plotly's config.locales), translated in the catalog.
# Streamlit's own Fullscreen button on the mode bar is not plotly's: its title stays as Streamlit writes it.
PLOTLY_CHROME = (
    N_("Download plot as a PNG"),
    N_("Download plot"),
    N_("Zoom"),
    N_("Pan"),
    N_("Box Select"),
    N_("Lasso Select"),
    N_("Zoom in"),
    N_("Zoom out"),
    N_("Autoscale"),
    N_("Reset axes"),
    N_("Reset view"),
    N_("Reset views"),
    N_("Reset"),
    N_("Toggle Spike Lines"),
    N_("Show closest data on hover"),
    N_("Compare data on hover"),
    N_("Toggle show closest data on hover"),
    N_("Double-click to zoom back out"),
    N_("Double-click on legend to isolate one trace"),
    N_("Preparing image - this may take a few seconds"),
    N_("Image download succeeded"),
    N_("Sorry, there was a problem downloading your image!"),
)


def chart_config(config: dict | None = None) -> dict:
    """plotly's `config` for st.plotly_chart, with plotly's own words (PLOTLY_CHROME) in the reader's language: in
    English the config as given; in another language its locale and the dictionary beside it."""
    config = dict(config or {})
    language = current()
    if language != ENGLISH:
        config["locale"] = language
        config["locales"] = {language: {"dictionary": {m: _(m) for m in PLOTLY_CHROME}}}
    return config


def export_config(filename: str = "kvviz") -> dict:
    """plotly config for st.plotly_chart(config=...): the mode bar's camera button saves a 2x PNG for slides,
    drawn in the browser (works offline); no plotly logo."""
    return {"displaylogo": False, "toImageButtonOptions": {"format": "png", "scale": 2, "filename": filename}}


# ----- a chart's data as text, for a reader who cannot see it -----
MAX_DESCRIBED_TRACES = 8  # the rest are counted, not read out
# An unnamed series is read out by what it is, in the reader's language (never plotly's "bar", "scatter").
TRACE_KINDS = {"bar": N_("bars"), "scatter": N_("line"), "heatmap": N_("heat map")}
MAX_LISTED_POINTS = 12  # a bar chart up to this many bars is read bar by bar; past it, its extent and its highest


def describe(fig: go.Figure) -> str:
    """Any figure's data as sentences, read from its traces, for a screen reader: its title; then per trace its
    name and what it draws (bars label by label; a line's points from first to last and its highest; a heatmap's
    cells and value range). The stage, the race and the memory charts have their own, richer texts
    (kvviz.figures.step, kvviz.figures.memory); this is every other chart's."""
    title = _plain(fig.layout.title.text) if fig.layout.title and fig.layout.title.text else ""
    parts = [_("Chart: {title}.").format(title=title) if title else _("Chart.")]
    traces = list(fig.data)
    for trace in traces[:MAX_DESCRIBED_TRACES]:
        kind = _kind(trace)
        name = _plain(trace.name) if getattr(trace, "name", None) else kind
        try:
            parts.append(_trace_text(trace, name))
        except (TypeError, ValueError):  # data of a shape this reader does not know: name the series, never fail
            parts.append(_("{name} ({kind}).").format(name=name, kind=kind))
    if len(traces) > MAX_DESCRIBED_TRACES:
        parts.append(_("{n} more series not read out.").format(n=len(traces) - MAX_DESCRIBED_TRACES))
    return join_sentences(parts)


def _trace_text(trace, name: str) -> str:
    if trace.type == "heatmap" and trace.z is not None:
        z = np.asarray(trace.z, dtype=float)
        if z.ndim == 2 and np.isfinite(z).any():
            return _("{name}: {rows} x {cols} cells, values from {low} to {high}.").format(
                name=name, rows=z.shape[0], cols=z.shape[1], low=_num(np.nanmin(z)), high=_num(np.nanmax(z))
            )
    if trace.type in ("bar", "scatter"):
        horizontal = getattr(trace, "orientation", None) == "h"
        labels, values = (trace.y, trace.x) if horizontal else (trace.x, trace.y)
        values = [] if values is None else list(values)
        labels = list(range(len(values))) if labels is None else list(labels)
        if not any(_number(v) is not None for v in values) and any(_number(v) is not None for v in labels):
            labels, values = values, labels  # plotly draws bars sideways when x holds the numbers, orientation unset
        points = [(label, _number(v)) for label, v in zip(labels, values, strict=True) if _number(v) is not None]
        if not points:
            return _("{name}: no points.").format(name=name)
        top = max(points, key=lambda p: p[1])
        if trace.type == "bar" and len(points) <= MAX_LISTED_POINTS:
            return _("{name}: {points}.").format(
                name=name, points=list_sep().join(f"{_plain(label)} {_num(value)}" for label, value in points)
            )
        return _("{name}: {n} points, from {x0} ({y0}) to {x1} ({y1}); highest {top} at {at}.").format(
            name=name,
            n=len(points),
            x0=_plain(points[0][0]),
            y0=_num(points[0][1]),
            x1=_plain(points[-1][0]),
            y1=_num(points[-1][1]),
            top=_num(top[1]),
            at=_plain(top[0]),
        )
    return _("{name} ({kind}).").format(name=name, kind=_kind(trace))


def _kind(trace) -> str:
    return _(TRACE_KINDS[trace.type]) if trace.type in TRACE_KINDS else trace.type


def _number(value) -> float | None:
    """A finite number, or None for a category, a gap (None, NaN) or an infinity."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _num(value: float) -> str:
    """A number as the chart's hover would print it, about four significant figures, thousands separated."""
    return f"{value:,.4g}" if abs(value) < 1e15 else f"{value:.3g}"


def _plain(text) -> str:
    """A label or title without plotly's HTML (<br>, <b>, <sub>) and its entities."""
    return html.unescape(re.sub(r"<[^>]+>", " ", str(text))).replace("  ", " ").strip()
