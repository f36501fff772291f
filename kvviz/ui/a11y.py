"""Accessibility: the style that keeps text readable (READABLE_CSS, the class MUTED), and text for a screen reader
beside what the eye reads off a chart (chart, screen_reader_text); tables drawn with pandas imported late."""

from __future__ import annotations

import html

import streamlit as st

from kvviz.ui import assets

MUTED = "kvviz-muted"  # muted text kvviz draws itself: readable.css gives it the captions' one rule
READABLE_CSS = assets.style("readable.css")  # text readable at WCAG AA's 4.5:1 in both themes: see the file


# Visually hidden, read by a screen reader (the usual "sr-only" rules): a chart's data as text.
SCREEN_READER_ONLY = (
    "position:absolute;width:1px;height:1px;padding:0;margin:-1px;overflow:hidden;"
    "clip:rect(0,0,0,0);white-space:nowrap;border:0"
)


def table(rows: list[dict], **kwargs) -> None:
    """st.dataframe of `rows`, one dict a row (its keys are the columns, in order). pandas is imported here, when a
    table is drawn, not at a page's top: a fresh server's first visit runs the page's imports before anything is
    drawn, and pandas' ~0.6 s (more with a core busy) would come before the sidebar and the title (bench/first_render.py)."""
    import pandas as pd

    st.dataframe(pd.DataFrame(rows), **kwargs)


def text_table(rows: list[dict], *, alt: str | None = None) -> None:
    """A table of a few rows whose cells are words (a verdict, a reason, a yes/no), as st.table: every column
    fits the page's width and a long cell wraps. st.dataframe draws on a canvas at each column's content width and
    cuts the columns past the right edge (a Chinese header is wider), which a projector's reader cannot scroll to.
    Cells may hold markdown (a link: [name](url)). `alt`: what the table shows, for a screen reader."""
    import pandas as pd

    st.table(pd.DataFrame(rows), hide_index=True, alt=alt)


def screen_reader_span(text: str) -> str:
    """`text` (escaped) in a visually hidden span: a screen reader reads it, the eye does not see it. A chart's data
    as a sentence (kvviz.figures' *_figure_text), put inside an element already drawn beside the chart (the stage's
    readout)."""
    return f'<span class="kvviz-chart-text" style="{SCREEN_READER_ONLY}">{html.escape(text)}</span>'


def screen_reader_text(text: str, where=None) -> None:
    """screen_reader_span as an element of its own, drawn in `where` (a column or container; the page when None)
    right after its chart. READABLE_CSS takes that element out of the page's flow, so it leaves no gap either."""
    (st if where is None else where).html(f'<div class="kvviz-sr-only">{screen_reader_span(text)}</div>')


def plot(where, fig, **kwargs) -> None:
    """`where`.plotly_chart(fig, **kwargs) (where: st, a column or a container), plotly's own words (its mode bar's
    titles) in the reader's language: every chart kvviz draws goes through here."""
    from kvviz.figures import chart_config  # plotly, imported by the pages that draw a chart anyway

    where.plotly_chart(fig, **{**kwargs, "config": chart_config(kwargs.get("config"))})


def chart(where, fig, text: str | None = None, **kwargs) -> None:
    """plot(where, fig, **kwargs), then the chart's data as visually hidden text for a screen reader: `text`, or
    what kvviz.figures.describe reads off the figure's traces."""
    from kvviz.figures import describe  # plotly, imported by the pages that draw a chart anyway

    plot(where, fig, **kwargs)
    screen_reader_text(describe(fig) if text is None else text, None if where is st else where)
