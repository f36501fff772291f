"""Accessibility: the style that keeps text readable (READABLE_CSS, the class MUTED), and text for a screen reader
beside what the eye reads off a chart (chart, screen_reader_text); tables drawn with pandas imported late."""
from __future__ import annotations

import html

import streamlit as st


# Text readable at WCAG AA's 4.5:1 in both themes (issue 35; tests/test_browser_axe.py). Streamlit draws captions,
# radio captions and a button's shortcut hint at 60% opacity of the text colour (3.88:1 on white): kvviz puts
# essential text there (sources, the counting convention, model names), so 80% (about 7:1 on white, 10:1 on the
# dark theme). A selected segment (the language switch, the lesson's step) and a slider's value were drawn in the
# primary red on its 10% tint (4.23:1; 3.25:1 dark): the text colour instead, the selection still shown by its
# tint, its border and a heavier weight, never by colour alone. A page's sections are st.header (h2, under the
# page's h1 title: headings in order), drawn at st.subheader's size as before. A link reached with Tab (the sidebar's
# pages, every page link) showed its focus only as a 15% grey tint: it gets an outline in the text's colour. A chart's
# text for a screen reader drawn as an element of its own (screen_reader_text) is out of the flow: no gap on screen.
# Muted text kvviz draws itself (a hint in the stage's readout, the token strip's note) takes the class MUTED: the
# captions' one rule, never an opacity of its own (tests/test_figures_readable.py finds any).
MUTED = "kvviz-muted"
READABLE_CSS = """<style>
[data-testid="stCaptionContainer"], kbd[aria-label^="Shortcut"], .kvviz-muted { opacity: 0.8 !important; }
button[data-selected="true"][data-variant] { color: inherit !important; font-weight: 600; }
[data-testid="stSliderThumbValue"] { color: inherit !important; }
[data-testid="stMain"] h2 { font-size: 1.75rem !important; }
a:focus-visible { outline: 2px solid currentColor !important; outline-offset: 1px; }
[data-testid="stElementContainer"]:has(.kvviz-sr-only) { position: absolute !important; width: 1px !important;
  min-width: 0 !important; height: 1px !important; padding: 0 !important; margin: -1px !important;
  overflow: hidden !important; clip: rect(0,0,0,0) !important; }
</style>"""


# Visually hidden, read by a screen reader (the usual "sr-only" rules): a chart's data as text (issue 35).
SCREEN_READER_ONLY = ("position:absolute;width:1px;height:1px;padding:0;margin:-1px;overflow:hidden;"
                      "clip:rect(0,0,0,0);white-space:nowrap;border:0")


def table(rows: list[dict], **kwargs) -> None:
    """st.dataframe of `rows`, one dict a row (its keys are the columns, in order). pandas is imported here, when a
    table is drawn, not at a page's top: a fresh server's first visit runs the page's imports before anything is
    drawn, and pandas' ~0.6 s (more with a core busy) came before the sidebar and the title (bench/first_render.py)."""
    import pandas as pd

    st.dataframe(pd.DataFrame(rows), **kwargs)


def screen_reader_span(text: str) -> str:
    """`text` (escaped) in a visually hidden span: a screen reader reads it, the eye does not see it. A chart's data
    as a sentence (kvviz.figures' *_figure_text), put inside an element already drawn beside the chart (the stage's
    readout)."""
    return f'<span class="kvviz-chart-text" style="{SCREEN_READER_ONLY}">{html.escape(text)}</span>'


def screen_reader_text(text: str, where=None) -> None:
    """screen_reader_span as an element of its own, drawn in `where` (a column or container; the page when None)
    right after its chart. READABLE_CSS takes that element out of the page's flow, so it leaves no gap either."""
    (st if where is None else where).html(f'<div class="kvviz-sr-only">{screen_reader_span(text)}</div>')


def chart(where, fig, text: str | None = None, **kwargs) -> None:
    """`where`.plotly_chart(fig, **kwargs) (where: st, a column or a container), then the chart's data as visually
    hidden text for a screen reader: `text`, or what kvviz.figures.describe reads off the figure's traces."""
    from kvviz.figures import describe  # plotly, imported by the pages that draw a chart anyway

    where.plotly_chart(fig, **kwargs)
    screen_reader_text(describe(fig) if text is None else text, None if where is st else where)
